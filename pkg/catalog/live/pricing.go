package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
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
	prices, err := p.fetchOnDemand(ctx)
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

// fetchOnDemand asks the Pricing API for Linux, shared-tenancy, on-demand
// prices in the region. Bare metal types are listed by the API as
// dedicated-tenancy "Compute Instance (bare metal)" products, so they are
// a second query, as in Karpenter; the two run at once.
func (p *Provider) fetchOnDemand(ctx context.Context) (map[string]float64, error) {
	queries := [][2]string{
		{"Shared", "Compute Instance"},
		{"Dedicated", "Compute Instance (bare metal)"},
	}
	results := make([]map[string]float64, len(queries))
	errs := make([]error, len(queries))
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Go(func() {
			results[i], errs[i] = p.fetchProducts(ctx, q[0], q[1])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	prices := map[string]float64{}
	for _, r := range results {
		for k, v := range r {
			prices[k] = v
		}
	}
	if len(prices) == 0 {
		return nil, errors.New("the Pricing API returned no on-demand prices")
	}
	return prices, nil
}

func (p *Provider) fetchProducts(ctx context.Context, tenancy, productFamily string) (map[string]float64, error) {
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	input := &pricing.GetProductsInput{
		ServiceCode:   aws.String("AmazonEC2"),
		FormatVersion: aws.String("aws_v1"),
		Filters: []pricingtypes.Filter{
			term("regionCode", p.opts.Region),
			term("serviceCode", "AmazonEC2"),
			term("preInstalledSw", "NA"),
			term("operatingSystem", "Linux"),
			term("capacitystatus", "Used"),
			term("marketoption", "OnDemand"),
			term("tenancy", tenancy),
			term("productFamily", productFamily),
		},
	}
	prices := map[string]float64{}
	pages := pricing.NewGetProductsPaginator(p.pricing, input)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("GetProducts (%s): %w", productFamily, err)
		}
		for _, item := range out.PriceList {
			name, price, ok := parsePriceItem(item)
			if ok {
				prices[name] = price
			}
		}
	}
	return prices, nil
}

// priceItem is the part of a Pricing API price list item Joist reads.
type priceItem struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// parsePriceItem reads the hourly USD price of one price list item. Items
// without an instance type, an hourly dimension or a positive price are
// not instance prices and are skipped.
func parsePriceItem(item string) (string, float64, bool) {
	var pi priceItem
	if err := json.Unmarshal([]byte(item), &pi); err != nil {
		return "", 0, false
	}
	name := pi.Product.Attributes.InstanceType
	if name == "" {
		return "", 0, false
	}
	for _, term := range pi.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			if dim.Unit != "" && dim.Unit != "Hrs" {
				continue
			}
			price, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64)
			if err != nil || price <= 0 {
				continue
			}
			return name, price, true
		}
	}
	return "", 0, false
}
