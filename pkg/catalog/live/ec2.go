package live

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/joist-dev/joist/pkg/catalog"
)

// refreshTypes returns the instance types, asking EC2 when the cache is
// stale. On failure it keeps the last answer (stale) or returns nil so the
// embedded types stand in.
func (p *Provider) refreshTypes(ctx context.Context, now time.Time) (*typeSet, Source, error) {
	p.mu.Lock()
	c := p.types
	p.mu.Unlock()
	if c.fresh(now, p.opts.TypesTTL) {
		return &c.value, SourceAWS, nil
	}
	ts, err := p.fetchTypes(ctx)
	if err != nil {
		if c.ok {
			return &c.value, SourceStale, err
		}
		return nil, SourceEmbedded, err
	}
	p.mu.Lock()
	p.types = cached[typeSet]{value: *ts, fetched: now, ok: true}
	p.mu.Unlock()
	return ts, SourceAWS, nil
}

func (p *Provider) fetchTypes(ctx context.Context) (*typeSet, error) {
	ts := &typeSet{types: map[string]*catalog.InstanceType{}, usage: map[string]usageClasses{}}
	pages := ec2.NewDescribeInstanceTypesPaginator(p.ec2, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstanceTypes: %w", err)
		}
		for i := range out.InstanceTypes {
			info := &out.InstanceTypes[i]
			t, ok := fromEC2(info)
			if !ok {
				continue
			}
			ts.types[t.Name] = t
			ts.usage[t.Name] = usageOf(info)
		}
	}
	if len(ts.types) == 0 {
		return nil, fmt.Errorf("DescribeInstanceTypes returned no instance types")
	}
	return ts, nil
}

func usageOf(info *ec2types.InstanceTypeInfo) usageClasses {
	if len(info.SupportedUsageClasses) == 0 {
		return usageClasses{onDemand: true, spot: true}
	}
	var u usageClasses
	for _, c := range info.SupportedUsageClasses {
		switch c {
		case ec2types.UsageClassTypeOnDemand:
			u.onDemand = true
		case ec2types.UsageClassTypeSpot:
			u.spot = true
		}
	}
	return u
}

// instanceTypeScheme splits a name into category and generation, as
// Karpenter labels them (e.g. u-6tb1.metal is category u, generation 1).
var instanceTypeScheme = regexp.MustCompile(`^([a-z]+)(-[0-9]+tb)?([0-9]+).*\.`)

// fromEC2 turns DescribeInstanceTypes' answer into a catalog type. It
// starts from the embedded type when there is one, for what EC2 does not
// say (network bandwidth and branch interfaces come from Karpenter's
// generated tables, not from the API; prices), and takes every spec EC2
// states over it. A type with an architecture Kubernetes cannot run
// (i386 only) is skipped.
func fromEC2(info *ec2types.InstanceTypeInfo) (*catalog.InstanceType, bool) {
	name := string(info.InstanceType)
	family, size, ok := strings.Cut(name, ".")
	if !ok {
		return nil, false
	}
	var t *catalog.InstanceType
	if e, found := catalog.Lookup(name); found {
		t = e.Clone()
	} else {
		t = &catalog.InstanceType{Name: name, Family: family, Size: size, CurrentGeneration: true}
		if m := instanceTypeScheme.FindStringSubmatch(name); m != nil {
			t.Category = m[1]
			t.Generation, _ = strconv.Atoi(m[3])
		}
	}
	if pi := info.ProcessorInfo; pi != nil {
		arch := ""
		for _, a := range pi.SupportedArchitectures {
			switch a {
			case ec2types.ArchitectureTypeX8664, ec2types.ArchitectureTypeX8664Mac:
				arch = "amd64"
			case ec2types.ArchitectureTypeArm64, ec2types.ArchitectureTypeArm64Mac:
				arch = "arm64"
			}
			if arch != "" {
				break
			}
		}
		if arch == "" && len(pi.SupportedArchitectures) > 0 {
			return nil, false
		}
		if arch != "" {
			t.Arch = arch
		}
		if pi.Manufacturer != nil {
			t.CPUManufacturer = kebab(*pi.Manufacturer)
		}
	}
	if t.Arch == "" {
		return nil, false
	}
	if v := info.VCpuInfo; v != nil && v.DefaultVCpus != nil {
		t.VCPU = int64(*v.DefaultVCpus)
	}
	if m := info.MemoryInfo; m != nil && m.SizeInMiB != nil {
		t.MemoryMiB = *m.SizeInMiB
	}
	if t.VCPU <= 0 || t.MemoryMiB <= 0 {
		return nil, false
	}
	applyAccelerators(t, info)
	if s := info.InstanceStorageInfo; s != nil {
		t.LocalNVMeGB = 0
		if s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && s.TotalSizeInGB != nil {
			t.LocalNVMeGB = *s.TotalSizeInGB
		}
	} else if info.InstanceStorageSupported != nil && !*info.InstanceStorageSupported {
		t.LocalNVMeGB = 0
	}
	if e := info.EbsInfo; e != nil {
		t.EBSBandwidthMbps = 0
		if e.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault && e.EbsOptimizedInfo != nil && e.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
			t.EBSBandwidthMbps = int64(*e.EbsOptimizedInfo.MaximumBandwidthInMbps)
		}
	}
	if n := info.NetworkInfo; n != nil {
		if n.MaximumNetworkInterfaces != nil {
			t.MaxENIs = int64(*n.MaximumNetworkInterfaces)
		}
		if n.Ipv4AddressesPerInterface != nil {
			t.IPv4PerENI = int64(*n.Ipv4AddressesPerInterface)
		}
		def := int32(0)
		if n.DefaultNetworkCardIndex != nil {
			def = *n.DefaultNetworkCardIndex
		}
		for _, card := range n.NetworkCards {
			if card.NetworkCardIndex != nil && *card.NetworkCardIndex == def && card.MaximumNetworkInterfaces != nil {
				t.MaxENIsDefaultCard = int64(*card.MaximumNetworkInterfaces)
			}
		}
		t.EFACount = 0
		if n.EfaInfo != nil && n.EfaInfo.MaximumEfaInterfaces != nil {
			t.EFACount = int64(*n.EfaInfo.MaximumEfaInterfaces)
		}
	}
	if info.Hypervisor != "" || info.BareMetal != nil {
		t.Hypervisor, t.HypervisorKnown = string(info.Hypervisor), true
	}
	if info.BareMetal != nil {
		t.BareMetal = *info.BareMetal
	}
	if info.BurstablePerformanceSupported != nil {
		t.Burstable = *info.BurstablePerformanceSupported
	}
	if info.CurrentGeneration != nil {
		t.CurrentGeneration = *info.CurrentGeneration
	}
	if len(info.SupportedUsageClasses) > 0 {
		t.SpotSupported = usageOf(info).spot
	}
	return t, true
}

// applyAccelerators sets GPUs, Neuron devices and other inference
// accelerators the way Karpenter reads them: labels only for a single
// device kind; Neuron cores from the first device.
func applyAccelerators(t *catalog.InstanceType, info *ec2types.InstanceTypeInfo) {
	if g := info.GpuInfo; g != nil {
		t.GPUCount, t.GPUName, t.GPUManufacturer, t.GPUMemoryMiB, t.HabanaGaudiCount = 0, "", "", 0, 0
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
		t.AcceleratorCount = 0
		for _, d := range n.NeuronDevices {
			t.AcceleratorCount += int64(aws.ToInt32(d.Count))
		}
		t.NeuronCoreCount = 0
		if d := n.NeuronDevices[0]; d.CoreInfo != nil {
			t.NeuronCoreCount = int64(aws.ToInt32(d.Count)) * int64(aws.ToInt32(d.CoreInfo.Count))
		}
	} else if a := info.InferenceAcceleratorInfo; a != nil && len(a.Accelerators) == 1 {
		acc := a.Accelerators[0]
		t.AcceleratorName = kebab(aws.ToString(acc.Name))
		t.AcceleratorManufacturer = kebab(aws.ToString(acc.Manufacturer))
		t.AcceleratorCount = int64(aws.ToInt32(acc.Count))
		t.NeuronCoreCount = 0
	}
}

func kebab(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) }

// refreshOfferings returns, per type, the zones EC2 offers it in.
func (p *Provider) refreshOfferings(ctx context.Context, now time.Time) (map[string][]string, Source, error) {
	p.mu.Lock()
	c := p.offerings
	p.mu.Unlock()
	if c.fresh(now, p.opts.OfferingsTTL) {
		return c.value, SourceAWS, nil
	}
	zones, err := p.fetchOfferings(ctx)
	if err != nil {
		if c.ok {
			return c.value, SourceStale, err
		}
		return nil, SourceEmbedded, err
	}
	p.mu.Lock()
	p.offerings = cached[map[string][]string]{value: zones, fetched: now, ok: true}
	p.mu.Unlock()
	return zones, SourceAWS, nil
}

func (p *Provider) fetchOfferings(ctx context.Context) (map[string][]string, error) {
	zones := map[string][]string{}
	pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		MaxResults:   aws.Int32(1000),
	})
	n := 0
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstanceTypeOfferings: %w", err)
		}
		for _, o := range out.InstanceTypeOfferings {
			if o.Location == nil {
				continue
			}
			name := string(o.InstanceType)
			zones[name] = append(zones[name], *o.Location)
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("DescribeInstanceTypeOfferings returned no offerings")
	}
	return zones, nil
}

// spotProducts are the product descriptions of Linux spot prices (EC2
// still reports some under the old EC2-Classic-era VPC name).
var spotProducts = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

// refreshSpot returns the current spot price per type and zone.
func (p *Provider) refreshSpot(ctx context.Context, now time.Time) (map[string]map[string]float64, Source, error) {
	p.mu.Lock()
	c := p.spot
	p.mu.Unlock()
	if c.fresh(now, p.opts.SpotTTL) {
		return c.value, SourceAWS, nil
	}
	prices, err := p.fetchSpot(ctx, now)
	if err != nil {
		if c.ok {
			return c.value, SourceStale, err
		}
		return nil, SourceEmbedded, err
	}
	p.mu.Lock()
	p.spot = cached[map[string]map[string]float64]{value: prices, fetched: now, ok: true}
	p.mu.Unlock()
	return prices, SourceAWS, nil
}

func (p *Provider) fetchSpot(ctx context.Context, now time.Time) (map[string]map[string]float64, error) {
	type latest struct {
		price float64
		at    time.Time
	}
	seen := map[string]map[string]latest{}
	// A StartTime of now asks for the price in effect now: one record per
	// type, zone and product.
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, &ec2.DescribeSpotPriceHistoryInput{
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
			at := aws.ToTime(sp.Timestamp)
			name := string(sp.InstanceType)
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
		return nil, fmt.Errorf("DescribeSpotPriceHistory returned no prices")
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
