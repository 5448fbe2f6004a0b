package main

// The -refresh-regions path: instance types and prices from live AWS APIs
// merged into the records made from the shared data file.
//
// It does not import package catalog or catalog/live: both need the
// embedded file this command makes (see package record). The AWS calls and
// the conversion to records are package awsdata's, shared with the live
// catalog.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/joist-dev/joist/pkg/catalog/internal/awsdata"
	"github.com/joist-dev/joist/pkg/catalog/internal/record"
)

// clientsFunc makes the clients for one region.
type clientsFunc func(ctx context.Context, region string) (awsdata.EC2API, awsdata.PricingAPI, error)

// awsClients loads the default SDK configuration for region and checks
// that the default credential chain finds credentials, so a missing login
// fails here, once and clearly, rather than as a signing error per call.
func awsClients(ctx context.Context, region string) (awsdata.EC2API, awsdata.PricingAPI, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, nil, fmt.Errorf("load the AWS configuration for %s: %w", region, err)
	}
	if cfg.Credentials == nil {
		return nil, nil, fmt.Errorf("no AWS credentials for %s: -refresh-regions needs credentials from the default chain (environment, shared config or SSO profile, IMDS)", region)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, nil, fmt.Errorf("no AWS credentials for %s: -refresh-regions needs credentials from the default chain (environment, shared config or SSO profile, IMDS): %w", region, err)
	}
	pcfg := cfg.Copy()
	pcfg.Region = awsdata.PricingRegion(region)
	return ec2.NewFromConfig(cfg), pricing.NewFromConfig(pcfg), nil
}

// liveRegion is what AWS answered for one region.
type liveRegion struct {
	Region string
	// Types are the instance types DescribeInstanceTypes lists, converted;
	// they are added when the file lacks them.
	Types []record.Type
	// OnDemand is the hourly USD on-demand price per type.
	OnDemand map[string]float64
	// Spot is the current spot price per type and zone.
	Spot map[string]map[string]float64
}

// mergeStats counts what a merge changed in one region.
type mergeStats struct {
	// Added are the types added.
	Added []string
	// OnDemandSet and SpotSet count the types priced from AWS.
	OnDemandSet, SpotSet int
	// OnDemandDropped and SpotDropped count the types that had a price in
	// the region and have none now, because AWS quoted none.
	OnDemandDropped, SpotDropped int
}

// merge returns a copy of f with the live data of each region merged in
// (f is not changed): the region's on-demand and spot prices are replaced
// by AWS's (a type AWS does not price there loses its old price there; the
// spot price is the lowest zone's, as in the data file), types AWS lists
// that f lacks are added with the specs DescribeInstanceTypes gives, and
// nothing is removed. asOf (a date) becomes the region's
// OnDemandPriceAsOf and its entry in Refreshed.
func merge(f *record.File, regions []liveRegion, asOf string) (*record.File, map[string]mergeStats) {
	out := *f
	out.OnDemandPriceAsOf = copyMap(f.OnDemandPriceAsOf)
	out.Refreshed = copyMap(f.Refreshed)
	out.StaleRegionalPrices = append([]string(nil), f.StaleRegionalPrices...)
	out.Types = make([]record.Type, len(f.Types))
	index := map[string]int{}
	for i, t := range f.Types {
		t.OnDemandPrice = copyMap(t.OnDemandPrice)
		t.SpotPrice = copyMap(t.SpotPrice)
		out.Types[i] = t
		index[t.Name] = i
	}
	stats := map[string]mergeStats{}
	for _, lr := range regions {
		var st mergeStats
		for _, t := range lr.Types {
			if _, ok := index[t.Name]; ok {
				continue
			}
			t.OnDemandPrice, t.SpotPrice = nil, nil
			index[t.Name] = len(out.Types)
			out.Types = append(out.Types, t)
			st.Added = append(st.Added, t.Name)
		}
		for i := range out.Types {
			t := &out.Types[i]
			var dropped bool
			t.OnDemandPrice, dropped = replacePrice(t.OnDemandPrice, lr.Region, lr.OnDemand[t.Name])
			st.OnDemandDropped += boolInt(dropped)
			if _, ok := t.OnDemandPrice[lr.Region]; ok {
				st.OnDemandSet++
			}
			spot, _ := minPrice(lr.Spot[t.Name])
			t.SpotPrice, dropped = replacePrice(t.SpotPrice, lr.Region, spot)
			st.SpotDropped += boolInt(dropped)
			if _, ok := t.SpotPrice[lr.Region]; ok {
				st.SpotSet++
			}
		}
		if out.OnDemandPriceAsOf == nil {
			out.OnDemandPriceAsOf = map[string]string{}
		}
		out.OnDemandPriceAsOf[lr.Region] = asOf
		if out.Refreshed == nil {
			out.Refreshed = map[string]string{}
		}
		out.Refreshed[lr.Region] = asOf
		sort.Strings(st.Added)
		stats[lr.Region] = st
	}
	sort.Slice(out.Types, func(i, j int) bool { return out.Types[i].Name < out.Types[j].Name })
	return &out, stats
}

// replacePrice sets m[region] to p, or deletes it when p is not above zero
// (no live figure), and tells whether an old price was dropped. An empty
// map becomes nil, as the generator writes absent prices.
func replacePrice(m map[string]float64, region string, p float64) (map[string]float64, bool) {
	_, had := m[region]
	if p > 0 {
		if m == nil {
			m = map[string]float64{}
		}
		m[region] = p
		return m, false
	}
	delete(m, region)
	if len(m) == 0 {
		m = nil
	}
	return m, had
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func copyMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	c := make(map[string]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func minPrice(m map[string]float64) (float64, bool) {
	best, found := 0.0, false
	for _, p := range m {
		if p > 0 && (!found || p < best) {
			best, found = p, true
		}
	}
	return best, found
}

// refresh fetches each region from AWS and merges it into f.
func refresh(ctx context.Context, f *record.File, regions []string, clients clientsFunc, now time.Time) (*record.File, map[string]mergeStats, error) {
	var live []liveRegion
	for _, region := range regions {
		e, p, err := clients(ctx, region)
		if err != nil {
			return nil, nil, err
		}
		lr, err := fetchRegion(ctx, e, p, region, now)
		if err != nil {
			return nil, nil, fmt.Errorf("refresh %s: %w", region, err)
		}
		live = append(live, *lr)
	}
	out, stats := merge(f, live, now.UTC().Format("2006-01-02"))
	return out, stats, nil
}

// parseRegions splits the -refresh-regions value; empty means none.
func parseRegions(s string) ([]string, error) {
	var regions []string
	seen := map[string]bool{}
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !regionName.MatchString(r) {
			return nil, fmt.Errorf("-refresh-regions: %q is not a region name", r)
		}
		if strings.HasPrefix(r, "us-gov-") {
			return nil, fmt.Errorf("-refresh-regions: the Pricing API does not serve GovCloud (%s); its embedded prices are recent", r)
		}
		if !seen[r] {
			seen[r] = true
			regions = append(regions, r)
		}
	}
	return regions, nil
}

var regionName = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// fetchRegion asks AWS for a region's instance types and prices. Unlike
// the live catalog it has no fallback: any failure, or an empty answer,
// is an error, so a refresh never writes half a region.
func fetchRegion(ctx context.Context, e awsdata.EC2API, p awsdata.PricingAPI, region string, now time.Time) (*liveRegion, error) {
	lr := &liveRegion{Region: region}
	var err error
	if lr.Types, err = fetchTypes(ctx, e); err != nil {
		return nil, err
	}
	// Only types offered in at least one zone of the region are added.
	zones, err := awsdata.FetchOfferings(ctx, e)
	if err != nil {
		return nil, err
	}
	kept := lr.Types[:0]
	for _, t := range lr.Types {
		if len(zones[t.Name]) > 0 {
			kept = append(kept, t)
		}
	}
	lr.Types = kept
	if lr.Spot, err = awsdata.FetchSpot(ctx, e, now); err != nil {
		return nil, err
	}
	if lr.OnDemand, err = awsdata.FetchOnDemand(ctx, p, region); err != nil {
		return nil, err
	}
	return lr, nil
}

// fetchTypes returns the region's instance types as records. What EC2
// does not state (network bandwidth in Mbps, branch interfaces, Karpenter's
// published max pods) stays zero, which the catalog reads as unknown. A
// type without a family or size, an architecture Kubernetes runs, vCPUs or
// memory is skipped.
func fetchTypes(ctx context.Context, e awsdata.EC2API) ([]record.Type, error) {
	described, err := awsdata.FetchTypes(ctx, e)
	if err != nil {
		return nil, err
	}
	var types []record.Type
	for _, a := range described {
		t := a.Type
		if t.Family == "" || t.Size == "" || t.Arch == "" || t.VCPU <= 0 || t.MemoryMiB <= 0 {
			continue
		}
		types = append(types, t)
	}
	if len(types) == 0 {
		return nil, errors.New("DescribeInstanceTypes returned no instance types")
	}
	return types, nil
}
