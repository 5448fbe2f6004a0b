package live

import (
	"context"
	"fmt"
	"time"

	"github.com/joist-dev/joist/pkg/catalog/internal/awsdata"
)

// onDemandPrices returns on-demand prices per type. With a fresh cache it
// answers at once; with a stale one it answers with the stale prices and
// refreshes in the background; with none it starts the fetch and waits at
// most PricingBudget, after which the embedded prices stand in (nil) while
// the fetch goes on for a later call. The fetch is detached from ctx so a
// finished invocation does not cancel it; it is bounded by PricingTimeout.
func (p *Provider) onDemandPrices(ctx context.Context, now time.Time) (map[string]float64, Source, error) {
	if p.pricing == nil {
		return nil, SourceEmbedded, nil
	}
	p.mu.Lock()
	c := p.onDemand
	lastErr := p.odErr
	if c.fresh(now, p.opts.OnDemandTTL) {
		p.mu.Unlock()
		return c.value, SourceAWS, nil
	}
	done := p.odInflight
	if done == nil {
		if !p.odFailedAt.IsZero() && now.Sub(p.odFailedAt) < pricingRetryAfter {
			// A recent fetch failed: do not hammer the API on every call.
			p.mu.Unlock()
			if c.ok {
				return c.value, SourceStale, lastErr
			}
			return nil, SourceEmbedded, lastErr
		}
		done = make(chan struct{})
		p.odInflight = done
		go p.fetchOnDemandInBackground(context.WithoutCancel(ctx), now, done)
	}
	p.mu.Unlock()

	if c.ok {
		return c.value, SourceStale, lastErr
	}
	timer := time.NewTimer(p.opts.PricingBudget)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		return nil, SourceEmbedded, fmt.Errorf("no answer within %v; using embedded prices while the fetch goes on", p.opts.PricingBudget)
	case <-ctx.Done():
		return nil, SourceEmbedded, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.onDemand.ok {
		return p.onDemand.value, SourceAWS, nil
	}
	return nil, SourceEmbedded, p.odErr
}

// pricingRetryAfter is how long a failed on-demand fetch is not retried.
const pricingRetryAfter = time.Minute

// fetchOnDemandInBackground fetches and stores on-demand prices. started is
// the caller's clock reading, used as the fetch time so the TTL and retry
// delay follow the injected clock.
func (p *Provider) fetchOnDemandInBackground(ctx context.Context, started time.Time, done chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.PricingTimeout)
	defer cancel()
	prices, err := awsdata.FetchOnDemand(ctx, p.pricing, p.opts.Region)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.onDemand = cached[map[string]float64]{value: prices, fetched: started, ok: true}
		p.odFailedAt = time.Time{}
	} else {
		p.odFailedAt = started
	}
	p.odErr = err
	p.odInflight = nil
	close(done)
}
