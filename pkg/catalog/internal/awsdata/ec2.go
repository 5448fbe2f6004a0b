package awsdata

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/joist-dev/joist/pkg/catalog/internal/record"
)

// Type is one instance type as DescribeInstanceTypes describes it.
type Type struct {
	// Type holds the facts in the record shape. What EC2 does not state
	// (network bandwidth in Mbps and branch interfaces, which come from
	// Karpenter's generated tables; Karpenter's published max pods; prices)
	// is zero, which the catalog reads as unknown. A field EC2 left out is
	// zero too, except SpotSupported, which is true when EC2 lists no usage
	// classes.
	record.Type
	// Stated tells which fields EC2 stated, so a caller that starts from
	// what it already knows about the type (the live catalog starts from
	// the embedded type) overrides only those.
	Stated Stated
	// OnDemand and Spot tell whether the type may run on demand and on
	// spot; both are true when EC2 lists no usage classes.
	OnDemand, Spot bool
}

// Stated names the fields of a Type that DescribeInstanceTypes stated.
// GPUs covers GPUCount, GPUName, GPUManufacturer, GPUMemoryMiB and
// HabanaGaudiCount; Accelerators covers AcceleratorName,
// AcceleratorManufacturer, AcceleratorCount and NeuronCoreCount.
type Stated struct {
	Arch, CPUManufacturer, VCPU, MemoryMiB  bool
	GPUs, Accelerators, LocalNVMe, EBS      bool
	MaxENIs, IPv4PerENI, MaxENIsDefaultCard bool
	EFA, Hypervisor, BareMetal, Burstable   bool
	CurrentGeneration, SpotSupported        bool
}

// FetchTypes lists every instance type EC2 describes in the client's
// region, converted by FromEC2; types FromEC2 skips are left out.
func FetchTypes(ctx context.Context, e EC2API) ([]Type, error) {
	var types []Type
	pages := ec2.NewDescribeInstanceTypesPaginator(e, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstanceTypes: %w", err)
		}
		for i := range out.InstanceTypes {
			if t, ok := FromEC2(&out.InstanceTypes[i]); ok {
				types = append(types, t)
			}
		}
	}
	return types, nil
}

// instanceTypeScheme splits a name into category and generation, as
// Karpenter labels them (e.g. u-6tb1.metal is category u, generation 1).
var instanceTypeScheme = regexp.MustCompile(`^([a-z]+)(-[0-9]+tb)?([0-9]+).*\.`)

// FromEC2 converts one DescribeInstanceTypes answer. A name without a dot,
// or a type whose architectures Kubernetes cannot run (i386 only), is
// skipped. The caller still checks that the type it ends with has an
// architecture, vCPUs and memory, as EC2 may leave them out.
func FromEC2(info *ec2types.InstanceTypeInfo) (Type, bool) {
	name := string(info.InstanceType)
	family, size, ok := strings.Cut(name, ".")
	if !ok {
		return Type{}, false
	}
	t := Type{Type: record.Type{Name: name, Family: family, Size: size}}
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
		if t.Arch == "" && len(pi.SupportedArchitectures) > 0 {
			return Type{}, false
		}
		t.Stated.Arch = t.Arch != ""
		t.CPUManufacturer = kebab(aws.ToString(pi.Manufacturer))
		t.Stated.CPUManufacturer = pi.Manufacturer != nil
	}
	if v := info.VCpuInfo; v != nil && v.DefaultVCpus != nil {
		t.VCPU, t.Stated.VCPU = int64(*v.DefaultVCpus), true
	}
	if m := info.MemoryInfo; m != nil && m.SizeInMiB != nil {
		t.MemoryMiB, t.Stated.MemoryMiB = *m.SizeInMiB, true
	}
	applyAccelerators(&t, info)
	if s := info.InstanceStorageInfo; s != nil {
		t.Stated.LocalNVMe = true
		if s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported {
			t.LocalNVMeGB = aws.ToInt64(s.TotalSizeInGB)
		}
	} else if info.InstanceStorageSupported != nil && !*info.InstanceStorageSupported {
		t.Stated.LocalNVMe = true
	}
	if e := info.EbsInfo; e != nil {
		t.Stated.EBS = true
		if e.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault && e.EbsOptimizedInfo != nil {
			t.EBSBandwidthMbps = int64(aws.ToInt32(e.EbsOptimizedInfo.MaximumBandwidthInMbps))
		}
	}
	if n := info.NetworkInfo; n != nil {
		if n.MaximumNetworkInterfaces != nil {
			t.MaxENIs, t.Stated.MaxENIs = int64(*n.MaximumNetworkInterfaces), true
		}
		if n.Ipv4AddressesPerInterface != nil {
			t.IPv4PerENI, t.Stated.IPv4PerENI = int64(*n.Ipv4AddressesPerInterface), true
		}
		def := aws.ToInt32(n.DefaultNetworkCardIndex)
		for _, card := range n.NetworkCards {
			if card.NetworkCardIndex != nil && *card.NetworkCardIndex == def && card.MaximumNetworkInterfaces != nil {
				t.MaxENIsDefaultCard, t.Stated.MaxENIsDefaultCard = int64(*card.MaximumNetworkInterfaces), true
			}
		}
		t.Stated.EFA = true
		if n.EfaInfo != nil {
			t.EFACount = int64(aws.ToInt32(n.EfaInfo.MaximumEfaInterfaces))
		}
	}
	if info.Hypervisor != "" || info.BareMetal != nil {
		h := string(info.Hypervisor)
		t.Hypervisor, t.Stated.Hypervisor = &h, true
	}
	t.BareMetal, t.Stated.BareMetal = aws.ToBool(info.BareMetal), info.BareMetal != nil
	t.Burstable, t.Stated.Burstable = aws.ToBool(info.BurstablePerformanceSupported), info.BurstablePerformanceSupported != nil
	t.CurrentGeneration, t.Stated.CurrentGeneration = aws.ToBool(info.CurrentGeneration), info.CurrentGeneration != nil
	t.OnDemand, t.Spot = usage(info)
	t.SpotSupported, t.Stated.SpotSupported = t.Spot, len(info.SupportedUsageClasses) > 0
	return t, true
}

// usage tells whether the type may run on demand and on spot. EC2 lists no
// usage classes for some types; both are assumed then.
func usage(info *ec2types.InstanceTypeInfo) (onDemand, spot bool) {
	if len(info.SupportedUsageClasses) == 0 {
		return true, true
	}
	for _, c := range info.SupportedUsageClasses {
		switch c {
		case ec2types.UsageClassTypeOnDemand:
			onDemand = true
		case ec2types.UsageClassTypeSpot:
			spot = true
		}
	}
	return onDemand, spot
}

// applyAccelerators sets GPUs, Neuron devices and other inference
// accelerators the way Karpenter reads them: labels only for a single
// device kind; Neuron cores from the first device.
func applyAccelerators(t *Type, info *ec2types.InstanceTypeInfo) {
	if g := info.GpuInfo; g != nil {
		t.Stated.GPUs = true
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
		t.Stated.Accelerators = true
		t.AcceleratorName = kebab(aws.ToString(n.NeuronDevices[0].Name))
		t.AcceleratorManufacturer = "aws"
		for _, d := range n.NeuronDevices {
			t.AcceleratorCount += int64(aws.ToInt32(d.Count))
		}
		if d := n.NeuronDevices[0]; d.CoreInfo != nil {
			t.NeuronCoreCount = int64(aws.ToInt32(d.Count)) * int64(aws.ToInt32(d.CoreInfo.Count))
		}
	} else if a := info.InferenceAcceleratorInfo; a != nil && len(a.Accelerators) == 1 {
		t.Stated.Accelerators = true
		acc := a.Accelerators[0]
		t.AcceleratorName = kebab(aws.ToString(acc.Name))
		t.AcceleratorManufacturer = kebab(aws.ToString(acc.Manufacturer))
		t.AcceleratorCount = int64(aws.ToInt32(acc.Count))
	}
}

func kebab(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) }

// FetchOfferings returns, per type, the zones EC2 offers it in. No
// offering at all is an error.
func FetchOfferings(ctx context.Context, e EC2API) (map[string][]string, error) {
	zones := map[string][]string{}
	pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(e, &ec2.DescribeInstanceTypeOfferingsInput{
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
		return nil, errors.New("DescribeInstanceTypeOfferings returned no offerings")
	}
	return zones, nil
}

// spotProducts are the product descriptions of Linux spot prices (EC2
// still reports some under the old EC2-Classic-era VPC name).
var spotProducts = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

// FetchSpot returns the spot price in effect at now per type and zone. No
// price at all is an error.
func FetchSpot(ctx context.Context, e EC2API, now time.Time) (map[string]map[string]float64, error) {
	type latest struct {
		price float64
		at    time.Time
	}
	seen := map[string]map[string]latest{}
	// A StartTime of now asks for the price in effect now: one record per
	// type, zone and product.
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
