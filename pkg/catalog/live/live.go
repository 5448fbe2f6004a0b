// Package live builds a catalog.Catalog from AWS: instance types and their
// zones from EC2 DescribeInstanceTypes and DescribeInstanceTypeOfferings,
// on-demand prices from the Pricing API, spot prices per zone from
// DescribeSpotPriceHistory.
//
// It is an adapter: every answer is cached in memory with a TTL, so a warm
// Lambda reuses it across invocations, and anything AWS does not answer
// (an error, a missing price, a type the account cannot see described)
// falls back to the embedded catalog, so a plan can always be made. The
// Pricing API is slow (a dozen pages); on a cold start Catalog waits for it
// only PricingBudget and otherwise uses the embedded prices while the fetch
// goes on in the background for the next call.
package live

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/catalog/internal/awsdata"
	"github.com/joist-dev/joist/pkg/model"
)

// EC2API is the part of the EC2 client the live catalog uses:
// DescribeInstanceTypes, DescribeInstanceTypeOfferings and
// DescribeSpotPriceHistory. An *ec2.Client is one.
type EC2API = awsdata.EC2API

// PricingAPI is the part of the Pricing client the live catalog uses:
// GetProducts. The client must talk to the Pricing endpoint of
// PricingRegion (us-east-1 for every commercial region), not to the
// cluster's region. A *pricing.Client is one.
type PricingAPI = awsdata.PricingAPI

// PricingRegion is the region whose Pricing API endpoint serves prices for
// region: the API lives in a few regions only and answers for all.
func PricingRegion(region string) string { return awsdata.PricingRegion(region) }

// Defaults for Options. Instance types and on-demand prices change a few
// times a year; which zones offer a type changes rarely but matters for
// launches; spot prices move daily.
const (
	DefaultTypesTTL       = 6 * time.Hour
	DefaultOfferingsTTL   = 30 * time.Minute
	DefaultOnDemandTTL    = 12 * time.Hour
	DefaultSpotTTL        = time.Hour
	DefaultPricingBudget  = 1500 * time.Millisecond
	DefaultPricingTimeout = 2 * time.Minute
)

// Options configure a Provider. Zero values take the defaults above.
type Options struct {
	// Region is the cluster's region. Required.
	Region string
	// Zones limits the offerings to these zones (names, or letters such as
	// "a"); empty means every zone EC2 offers the type in.
	Zones []string
	// TypesTTL, OfferingsTTL, OnDemandTTL and SpotTTL are how long each
	// answer is reused before it is asked again.
	TypesTTL, OfferingsTTL, OnDemandTTL, SpotTTL time.Duration
	// PricingBudget is how long Catalog waits for on-demand prices when it
	// has none cached yet.
	PricingBudget time.Duration
	// PricingTimeout bounds the background on-demand price fetch.
	PricingTimeout time.Duration
	// Clock is the clock (nil: the real one; tests pass a
	// k8s.io/utils/clock/testing clock).
	Clock clock.PassiveClock
}

// Source names where a part of the catalog came from.
type Source string

// Sources of catalog data.
const (
	SourceAWS      Source = "aws"      // fetched now or within its TTL
	SourceStale    Source = "stale"    // an older AWS answer, kept because the refresh failed
	SourceEmbedded Source = "embedded" // the embedded catalog
)

// Status tells where the last catalog's parts came from and what failed.
type Status struct {
	Types     Source `json:"types"`
	Offerings Source `json:"offerings"`
	OnDemand  Source `json:"onDemand"`
	Spot      Source `json:"spot"`
	// Errors are the failures of the last Catalog call, for logging.
	Errors []string `json:"errors,omitempty"`
}

// Provider builds live catalogs and caches what AWS answered. It is safe
// for concurrent use.
type Provider struct {
	ec2     EC2API
	pricing PricingAPI
	opts    Options
	zones   []string // normalized Options.Zones, nil for all

	refreshMu sync.Mutex // serializes the synchronous EC2 refreshes

	mu         sync.Mutex
	types      cached[typeSet]
	offerings  cached[map[string][]string]
	spot       cached[map[string]map[string]float64]
	onDemand   cached[map[string]float64]
	odInflight chan struct{}
	odErr      error
	odFailedAt time.Time
	status     Status
}

type cached[T any] struct {
	value   T
	fetched time.Time
	ok      bool
}

func (c *cached[T]) fresh(now time.Time, ttl time.Duration) bool {
	return c.ok && now.Sub(c.fetched) < ttl
}

// New makes a Provider. pricing may be nil, for regions the Pricing API
// does not serve (GovCloud): the embedded on-demand prices are used then.
func New(ec2api EC2API, pricingapi PricingAPI, opts Options) (*Provider, error) {
	if ec2api == nil {
		return nil, errors.New("live catalog: no EC2 client")
	}
	if opts.Region == "" {
		return nil, errors.New("live catalog: no region")
	}
	var zones []string
	if len(opts.Zones) > 0 {
		z, err := catalog.NormalizeZones(opts.Region, opts.Zones)
		if err != nil {
			return nil, fmt.Errorf("live catalog: %w", err)
		}
		zones = z
	}
	setDefault(&opts.TypesTTL, DefaultTypesTTL)
	setDefault(&opts.OfferingsTTL, DefaultOfferingsTTL)
	setDefault(&opts.OnDemandTTL, DefaultOnDemandTTL)
	setDefault(&opts.SpotTTL, DefaultSpotTTL)
	setDefault(&opts.PricingBudget, DefaultPricingBudget)
	setDefault(&opts.PricingTimeout, DefaultPricingTimeout)
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	// GovCloud has no Pricing API endpoint of its own and us-east-1's does
	// not answer for it; the embedded GovCloud prices are recent.
	if strings.HasPrefix(opts.Region, "us-gov-") {
		pricingapi = nil
	}
	return &Provider{ec2: ec2api, pricing: pricingapi, opts: opts, zones: zones}, nil
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// Status reports the sources of the last catalog built.
func (p *Provider) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.status
	s.Errors = append([]string(nil), s.Errors...)
	return s
}

// Catalog returns the region's catalog from AWS, the cache and, for what
// neither has, the embedded data. It fails only when no instance type at
// all can be offered (for example an unknown region while EC2 is down).
func (p *Provider) Catalog(ctx context.Context) (*catalog.Catalog, error) {
	now := p.opts.Clock.Now()
	var st Status
	var errs []string
	note := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", what, err))
		}
	}

	p.refreshMu.Lock()
	types, src, err := p.refreshTypes(ctx, now)
	st.Types = src
	note("instance types", err)
	offerings, src, err := p.refreshOfferings(ctx, now)
	st.Offerings = src
	note("instance type offerings", err)
	spot, src, err := p.refreshSpot(ctx, now)
	st.Spot = src
	note("spot prices", err)
	p.refreshMu.Unlock()

	onDemand, src, err := p.onDemandPrices(ctx, now)
	st.OnDemand = src
	note("on-demand prices", err)

	cat := p.build(types, offerings, spot, onDemand)
	st.Errors = errs
	p.mu.Lock()
	p.status = st
	p.mu.Unlock()
	if len(cat.Types()) == 0 {
		return nil, fmt.Errorf("live catalog: no instance type can be offered in %s (%s)", p.opts.Region, strings.Join(errs, "; "))
	}
	return cat, nil
}

// typeSet is what DescribeInstanceTypes said, converted.
type typeSet struct {
	types map[string]*catalog.InstanceType
	// usage says which capacity types each type supports.
	usage map[string]usageClasses
}

type usageClasses struct{ onDemand, spot bool }

// build joins the parts. A part that is nil was never fetched: the
// embedded data stands in.
func (p *Provider) build(ts *typeSet, zonesByType map[string][]string, spot map[string]map[string]float64, onDemand map[string]float64) *catalog.Catalog {
	region := p.opts.Region
	var types []*catalog.InstanceType
	usage := map[string]usageClasses{}
	if ts != nil {
		for _, t := range ts.types {
			types = append(types, t)
		}
		usage = ts.usage
	} else {
		for _, t := range catalog.All() {
			if _, ok := t.OnDemandPrice[region]; ok {
				types = append(types, t)
			} else if _, ok := t.SpotPrice[region]; ok {
				types = append(types, t)
			}
		}
	}

	allZones := p.zones
	if allZones == nil {
		seen := map[string]bool{}
		for _, zs := range zonesByType {
			for _, z := range zs {
				seen[z] = true
			}
		}
		for z := range seen {
			allZones = append(allZones, z)
		}
		sort.Strings(allZones)
		if len(allZones) == 0 {
			allZones = catalog.DefaultZones(region)
		}
	}
	wanted := map[string]bool{}
	for _, z := range allZones {
		wanted[z] = true
	}

	out := make([]*catalog.InstanceType, 0, len(types))
	offerings := map[string][]catalog.Offering{}
	for _, base := range types {
		t := base.Clone()
		u, known := usage[t.Name]
		if !known {
			u = usageClasses{onDemand: true, spot: true}
		}

		// base carries the embedded prices of a type the embedded data
		// knows; they stand in for what AWS did not price.
		od, hasOD := onDemand[t.Name]
		if !hasOD {
			od, hasOD = base.OnDemandPrice[region]
		}
		zonal := spot[t.Name]
		regionalSpot, hasRegionalSpot := minPrice(zonal)
		if !hasRegionalSpot {
			regionalSpot, hasRegionalSpot = base.SpotPrice[region]
		}
		if t.OnDemandPrice == nil {
			t.OnDemandPrice = map[string]float64{}
		}
		if t.SpotPrice == nil {
			t.SpotPrice = map[string]float64{}
		}
		delete(t.OnDemandPrice, region)
		delete(t.SpotPrice, region)
		if hasOD {
			t.OnDemandPrice[region] = od
		}
		if hasRegionalSpot {
			t.SpotPrice[region] = regionalSpot
		}

		zones := allZones
		if zonesByType != nil {
			zones = nil
			for _, z := range zonesByType[t.Name] {
				if wanted[z] {
					zones = append(zones, z)
				}
			}
			sort.Strings(zones)
		}
		var offs []catalog.Offering
		for _, z := range zones {
			if u.onDemand && hasOD {
				offs = append(offs, catalog.Offering{Zone: z, CapacityType: model.CapacityTypeOnDemand, Price: od})
			}
			if !u.spot {
				continue
			}
			if price, ok := zonal[z]; ok {
				offs = append(offs, catalog.Offering{Zone: z, CapacityType: model.CapacityTypeSpot, Price: price})
			} else if hasRegionalSpot {
				offs = append(offs, catalog.Offering{Zone: z, CapacityType: model.CapacityTypeSpot, Price: regionalSpot})
			}
		}
		out = append(out, t)
		offerings[t.Name] = offs
	}
	return catalog.New(region, allZones, out, offerings)
}

func minPrice(m map[string]float64) (float64, bool) {
	best, found := 0.0, false
	for _, p := range m {
		if !found || p < best {
			best, found = p, true
		}
	}
	return best, found
}
