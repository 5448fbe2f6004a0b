package main

// The -refresh-regions path: instance types and prices from live AWS APIs
// merged into the records made from the shared data file.
//
// It does not import package catalog or catalog/live: both need the
// embedded file this command makes (see package record), so the AWS answers
// are converted straight to records here. The conversion follows
// live.fromEC2 and the queries follow live's; keep them in step.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"

	"github.com/joist-dev/joist/pkg/catalog/internal/record"
)

// ec2API is the part of the EC2 client the refresh uses (the same calls as
// live.EC2API).
type ec2API interface {
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeSpotPriceHistory(context.Context, *ec2.DescribeSpotPriceHistoryInput, ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
}

// pricingAPI is the part of the Pricing client the refresh uses.
type pricingAPI interface {
	GetProducts(context.Context, *pricing.GetProductsInput, ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// clientsFunc makes the clients for one region.
type clientsFunc func(ctx context.Context, region string) (ec2API, pricingAPI, error)

// pricingRegion is the region whose Pricing API endpoint answers for
// region (as live.PricingRegion).
func pricingRegion(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "cn-northwest-1"
	}
	return "us-east-1"
}

// awsClients loads the default SDK configuration for region and checks
// that the default credential chain finds credentials, so a missing login
// fails here, once and clearly, rather than as a signing error per call.
func awsClients(ctx context.Context, region string) (ec2API, pricingAPI, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, nil, fmt.Errorf("loading the AWS configuration for %s: %w", region, err)
	}
	if cfg.Credentials == nil {
		return nil, nil, fmt.Errorf("no AWS credentials for %s: -refresh-regions needs credentials from the default chain (environment, shared config or SSO profile, IMDS)", region)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, nil, fmt.Errorf("no AWS credentials for %s: -refresh-regions needs credentials from the default chain (environment, shared config or SSO profile, IMDS): %w", region, err)
	}
	pcfg := cfg.Copy()
	pcfg.Region = pricingRegion(region)
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
			return nil, nil, fmt.Errorf("refreshing %s: %w", region, err)
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
func fetchRegion(ctx context.Context, e ec2API, p pricingAPI, region string, now time.Time) (*liveRegion, error) {
	lr := &liveRegion{Region: region}
	var err error
	if lr.Types, err = fetchTypes(ctx, e); err != nil {
		return nil, err
	}
	offered, err := fetchOffered(ctx, e)
	if err != nil {
		return nil, err
	}
	kept := lr.Types[:0]
	for _, t := range lr.Types {
		if offered[t.Name] {
			kept = append(kept, t)
		}
	}
	lr.Types = kept
	if lr.Spot, err = fetchSpot(ctx, e, now); err != nil {
		return nil, err
	}
	if lr.OnDemand, err = fetchOnDemand(ctx, p, region); err != nil {
		return nil, err
	}
	return lr, nil
}

func fetchTypes(ctx context.Context, e ec2API) ([]record.Type, error) {
	var types []record.Type
	pages := ec2.NewDescribeInstanceTypesPaginator(e, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstanceTypes: %w", err)
		}
		for i := range out.InstanceTypes {
			if t, ok := recordFromEC2(&out.InstanceTypes[i]); ok {
				types = append(types, t)
			}
		}
	}
	if len(types) == 0 {
		return nil, errors.New("DescribeInstanceTypes returned no instance types")
	}
	return types, nil
}

// fetchOffered returns the types offered in at least one zone of the
// region: only those are added to the catalog.
func fetchOffered(ctx context.Context, e ec2API) (map[string]bool, error) {
	offered := map[string]bool{}
	pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(e, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		MaxResults:   aws.Int32(1000),
	})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstanceTypeOfferings: %w", err)
		}
		for _, o := range out.InstanceTypeOfferings {
			if o.Location != nil {
				offered[string(o.InstanceType)] = true
			}
		}
	}
	if len(offered) == 0 {
		return nil, errors.New("DescribeInstanceTypeOfferings returned no offerings")
	}
	return offered, nil
}

// instanceTypeScheme splits a name into category and generation, as
// Karpenter labels them (e.g. u-6tb1.metal is category u, generation 1).
var instanceTypeScheme = regexp.MustCompile(`^([a-z]+)(-[0-9]+tb)?([0-9]+).*\.`)

// recordFromEC2 converts one DescribeInstanceTypes answer. What EC2 does
// not state (network bandwidth in Mbps, branch interfaces, Karpenter's
// published max pods) stays zero, which the catalog reads as unknown. A
// type Kubernetes cannot run (i386 only) or without vCPUs or memory is
// skipped.
func recordFromEC2(info *ec2types.InstanceTypeInfo) (record.Type, bool) {
	name := string(info.InstanceType)
	family, size, ok := strings.Cut(name, ".")
	if !ok || family == "" || size == "" {
		return record.Type{}, false
	}
	t := record.Type{Name: name, Family: family, Size: size, CurrentGeneration: aws.ToBool(info.CurrentGeneration)}
	if m := instanceTypeScheme.FindStringSubmatch(name); m != nil {
		t.Category = m[1]
		t.Generation, _ = strconv.Atoi(m[3])
	}
	if pi := info.ProcessorInfo; pi != nil {
		for _, a := range pi.SupportedArchitectures {
			switch a {
			case ec2types.ArchitectureTypeX8664, ec2types.ArchitectureTypeX8664Mac:
				t.Arch = "amd64"
			case ec2types.ArchitectureTypeArm64, ec2types.ArchitectureTypeArm64Mac:
				t.Arch = "arm64"
			}
			if t.Arch != "" {
				break
			}
		}
		t.CPUManufacturer = kebab(aws.ToString(pi.Manufacturer))
	}
	if info.VCpuInfo != nil {
		t.VCPU = int64(aws.ToInt32(info.VCpuInfo.DefaultVCpus))
	}
	if info.MemoryInfo != nil {
		t.MemoryMiB = aws.ToInt64(info.MemoryInfo.SizeInMiB)
	}
	if t.Arch == "" || t.VCPU <= 0 || t.MemoryMiB <= 0 {
		return record.Type{}, false
	}
	if g := info.GpuInfo; g != nil {
		for i, gpu := range g.Gpus {
			count := int64(aws.ToInt32(gpu.Count))
			manufacturer := kebab(aws.ToString(gpu.Manufacturer))
			if manufacturer == "habana" {
				t.HabanaGaudiCount += count
			}
			if i == 0 && len(g.Gpus) == 1 {
				t.GPUName = kebab(aws.ToString(gpu.Name))
				t.GPUManufacturer = manufacturer
				t.GPUCount = count
				if gpu.MemoryInfo != nil {
					t.GPUMemoryMiB = int64(aws.ToInt32(gpu.MemoryInfo.SizeInMiB))
				}
			}
		}
	}
	if n := info.NeuronInfo; n != nil && len(n.NeuronDevices) > 0 {
		t.AcceleratorName = kebab(aws.ToString(n.NeuronDevices[0].Name))
		t.AcceleratorManufacturer = "aws"
		for _, d := range n.NeuronDevices {
			t.AcceleratorCount += int64(aws.ToInt32(d.Count))
		}
		if d := n.NeuronDevices[0]; d.CoreInfo != nil {
			t.NeuronCoreCount = int64(aws.ToInt32(d.Count)) * int64(aws.ToInt32(d.CoreInfo.Count))
		}
	} else if a := info.InferenceAcceleratorInfo; a != nil && len(a.Accelerators) == 1 {
		acc := a.Accelerators[0]
		t.AcceleratorName = kebab(aws.ToString(acc.Name))
		t.AcceleratorManufacturer = kebab(aws.ToString(acc.Manufacturer))
		t.AcceleratorCount = int64(aws.ToInt32(acc.Count))
	}
	if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported {
		t.LocalNVMeGB = aws.ToInt64(s.TotalSizeInGB)
	}
	if e := info.EbsInfo; e != nil && e.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault && e.EbsOptimizedInfo != nil {
		t.EBSBandwidthMbps = int64(aws.ToInt32(e.EbsOptimizedInfo.MaximumBandwidthInMbps))
	}
	if n := info.NetworkInfo; n != nil {
		t.MaxENIs = int64(aws.ToInt32(n.MaximumNetworkInterfaces))
		t.IPv4PerENI = int64(aws.ToInt32(n.Ipv4AddressesPerInterface))
		def := aws.ToInt32(n.DefaultNetworkCardIndex)
		for _, card := range n.NetworkCards {
			if card.NetworkCardIndex != nil && *card.NetworkCardIndex == def {
				t.MaxENIsDefaultCard = int64(aws.ToInt32(card.MaximumNetworkInterfaces))
			}
		}
		if n.EfaInfo != nil {
			t.EFACount = int64(aws.ToInt32(n.EfaInfo.MaximumEfaInterfaces))
		}
	}
	if info.Hypervisor != "" || info.BareMetal != nil {
		h := string(info.Hypervisor)
		t.Hypervisor = &h
	}
	t.BareMetal = aws.ToBool(info.BareMetal)
	t.Burstable = aws.ToBool(info.BurstablePerformanceSupported)
	t.SpotSupported = len(info.SupportedUsageClasses) == 0
	for _, c := range info.SupportedUsageClasses {
		if c == ec2types.UsageClassTypeSpot {
			t.SpotSupported = true
		}
	}
	return t, true
}

func kebab(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) }

// spotProducts are the product descriptions of Linux spot prices.
var spotProducts = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

// fetchSpot returns the spot price in effect at now per type and zone.
func fetchSpot(ctx context.Context, e ec2API, now time.Time) (map[string]map[string]float64, error) {
	type latest struct {
		price float64
		at    time.Time
	}
	seen := map[string]map[string]latest{}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(e, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: spotProducts,
		StartTime:           aws.Time(now),
		MaxResults:          aws.Int32(1000),
	})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeSpotPriceHistory: %w", err)
		}
		for _, sp := range out.SpotPriceHistory {
			price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if err != nil || price <= 0 || sp.AvailabilityZone == nil {
				continue
			}
			at, name := aws.ToTime(sp.Timestamp), string(sp.InstanceType)
			if seen[name] == nil {
				seen[name] = map[string]latest{}
			}
			if cur, ok := seen[name][*sp.AvailabilityZone]; ok && !at.After(cur.at) {
				continue
			}
			seen[name][*sp.AvailabilityZone] = latest{price, at}
		}
	}
	if len(seen) == 0 {
		return nil, errors.New("DescribeSpotPriceHistory returned no prices")
	}
	prices := make(map[string]map[string]float64, len(seen))
	for name, zones := range seen {
		prices[name] = make(map[string]float64, len(zones))
		for z, l := range zones {
			prices[name][z] = l.price
		}
	}
	return prices, nil
}

// fetchOnDemand asks the Pricing API for Linux on-demand prices in region:
// shared-tenancy instances, and bare metal, which the API lists as
// dedicated "Compute Instance (bare metal)" products.
func fetchOnDemand(ctx context.Context, p pricingAPI, region string) (map[string]float64, error) {
	prices := map[string]float64{}
	for _, q := range [][2]string{{"Shared", "Compute Instance"}, {"Dedicated", "Compute Instance (bare metal)"}} {
		if err := fetchProducts(ctx, p, region, q[0], q[1], prices); err != nil {
			return nil, err
		}
	}
	if len(prices) == 0 {
		return nil, errors.New("the Pricing API returned no on-demand prices")
	}
	return prices, nil
}

func fetchProducts(ctx context.Context, p pricingAPI, region, tenancy, productFamily string, prices map[string]float64) error {
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	pages := pricing.NewGetProductsPaginator(p, &pricing.GetProductsInput{
		ServiceCode:   aws.String("AmazonEC2"),
		FormatVersion: aws.String("aws_v1"),
		Filters: []pricingtypes.Filter{
			term("regionCode", region),
			term("serviceCode", "AmazonEC2"),
			term("preInstalledSw", "NA"),
			term("operatingSystem", "Linux"),
			term("capacitystatus", "Used"),
			term("marketoption", "OnDemand"),
			term("tenancy", tenancy),
			term("productFamily", productFamily),
		},
	})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("GetProducts (%s): %w", productFamily, err)
		}
		for _, item := range out.PriceList {
			if name, price, ok := parsePriceItem(item); ok {
				prices[name] = price
			}
		}
	}
	return nil
}

// priceItem is the part of a Pricing API price list item read here.
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

// parsePriceItem reads the hourly USD price of one price list item.
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
			if price, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64); err == nil && price > 0 {
				return name, price, true
			}
		}
	}
	return "", 0, false
}
