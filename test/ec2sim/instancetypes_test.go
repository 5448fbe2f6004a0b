package ec2sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestDescribeInstanceTypes(t *testing.T) {
	f := newFixture(t, Options{})
	cases := []struct {
		name string
		in   *ec2.DescribeInstanceTypesInput
		want []string
		code string
	}{
		{"by name", &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"t3.xlarge", "g5.xlarge"}}, []string{"g5.xlarge", "t3.xlarge"}, ""},
		{"instance-type with *", &ec2.DescribeInstanceTypesInput{Filters: filtersOf(map[string][]string{"instance-type": {"t3.*"}})}, []string{"t3.large", "t3.xlarge"}, ""},
		{"Karpenter's filters", &ec2.DescribeInstanceTypesInput{Filters: filtersOf(map[string][]string{
			"supported-virtualization-type": {"hvm"}, "processor-info.supported-architecture": {"arm64"}})}, []string{"c6g.large"}, ""},
		{"bare metal", &ec2.DescribeInstanceTypesInput{Filters: filtersOf(map[string][]string{"bare-metal": {"true"}})}, []string{"x1.metal"}, ""},
		{"unknown type", &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"t3.large", "z9.huge"}}, nil, "InvalidInstanceType"},
		{"MaxResults over 100", &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(101)}, nil, "InvalidParameterValue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribeInstanceTypes(f.ctx, tc.in)
			wantCode(t, err, tc.code)
			if err != nil {
				return
			}
			var got []string
			for _, it := range out.InstanceTypes {
				got = append(got, string(it.InstanceType))
			}
			if !equalStrings(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	out, err := f.ec2.DescribeInstanceTypes(f.ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"g5.xlarge", "x1.metal"}})
	mustNil(t, err)
	g5, metal := out.InstanceTypes[0], out.InstanceTypes[1]
	if aws.ToInt32(g5.VCpuInfo.DefaultVCpus) != 4 || aws.ToInt64(g5.MemoryInfo.SizeInMiB) != 16384 ||
		g5.ProcessorInfo.SupportedArchitectures[0] != types.ArchitectureTypeX8664 || g5.Hypervisor != types.InstanceTypeHypervisorNitro ||
		aws.ToInt32(g5.NetworkInfo.MaximumNetworkInterfaces) != 4 || aws.ToInt32(g5.NetworkInfo.Ipv4AddressesPerInterface) != 15 ||
		len(g5.SupportedUsageClasses) != 2 || g5.GpuInfo == nil || aws.ToInt32(g5.GpuInfo.Gpus[0].Count) != 1 ||
		aws.ToString(g5.GpuInfo.Gpus[0].Name) != "A10G" || aws.ToInt32(g5.GpuInfo.Gpus[0].MemoryInfo.SizeInMiB) != 24576 {
		t.Errorf("g5.xlarge %+v", g5)
	}
	if !aws.ToBool(metal.BareMetal) || metal.Hypervisor != "" || len(metal.SupportedUsageClasses) != 1 || metal.GpuInfo != nil {
		t.Errorf("x1.metal %+v", metal)
	}
}

// EC2 pages DescribeInstanceTypes at 100 even without MaxResults, so a
// caller that does not follow NextToken misses types.
func TestDescribeInstanceTypesPaging(t *testing.T) {
	var many []InstanceTypeInfo
	for i := range 130 {
		many = append(many, InstanceTypeInfo{Name: fmt.Sprintf("m9.size%03d", i), Arch: "x86_64", VCPU: 2, MemoryMiB: 4096, OnDemandPrice: 0.1})
	}
	f := newFixture(t, Options{InstanceTypes: many})
	first, err := f.ec2.DescribeInstanceTypes(f.ctx, &ec2.DescribeInstanceTypesInput{})
	mustNil(t, err)
	if len(first.InstanceTypes) != 100 || first.NextToken == nil {
		t.Fatalf("first page: %d types, token %v", len(first.InstanceTypes), first.NextToken)
	}
	p := ec2.NewDescribeInstanceTypesPaginator(f.ec2, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(40)})
	total, pages := 0, 0
	for p.HasMorePages() {
		page, err := p.NextPage(f.ctx)
		mustNil(t, err)
		total += len(page.InstanceTypes)
		pages++
	}
	if total != 130 || pages != 4 {
		t.Errorf("%d types over %d pages, want 130 over 4", total, pages)
	}
}

func TestDescribeInstanceTypeOfferings(t *testing.T) {
	f := newFixture(t, Options{})
	cases := []struct {
		name string
		in   *ec2.DescribeInstanceTypeOfferingsInput
		want []string
		code string
	}{
		{"region by default", &ec2.DescribeInstanceTypeOfferingsInput{Filters: filtersOf(map[string][]string{"instance-type": {"g5.*"}})},
			[]string{"g5.xlarge@" + testRegion}, ""},
		{"zones, limited by the type's Zones", &ec2.DescribeInstanceTypeOfferingsInput{LocationType: types.LocationTypeAvailabilityZone,
			Filters: filtersOf(map[string][]string{"instance-type": {"g5.xlarge", "t3.large"}})},
			[]string{"g5.xlarge@" + zoneA, "t3.large@" + zoneA, "t3.large@" + zoneB, "t3.large@" + zoneC}, ""},
		{"location filter", &ec2.DescribeInstanceTypeOfferingsInput{LocationType: types.LocationTypeAvailabilityZone,
			Filters: filtersOf(map[string][]string{"location": {zoneC}, "instance-type": {"t3.*", "g5.xlarge"}})},
			[]string{"t3.large@" + zoneC, "t3.xlarge@" + zoneC}, ""},
		{"zone ids", &ec2.DescribeInstanceTypeOfferingsInput{LocationType: types.LocationTypeAvailabilityZoneId,
			Filters: filtersOf(map[string][]string{"instance-type": {"g5.xlarge"}})}, []string{"g5.xlarge@apne2-az1"}, ""},
		{"bad location type", &ec2.DescribeInstanceTypeOfferingsInput{LocationType: "planet"}, nil, "InvalidParameterValue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribeInstanceTypeOfferings(f.ctx, tc.in)
			wantCode(t, err, tc.code)
			if err != nil {
				return
			}
			var got []string
			for _, o := range out.InstanceTypeOfferings {
				got = append(got, string(o.InstanceType)+"@"+aws.ToString(o.Location))
			}
			if !equalStrings(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDescribeSpotPriceHistory(t *testing.T) {
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	f := newFixture(t, Options{Clock: clock})
	clock.Step(time.Hour)
	mustNil(t, f.sim.SetSpotPrice("t3.large", zoneA, 0.035))
	clock.Step(time.Hour)

	cases := []struct {
		name string
		in   *ec2.DescribeSpotPriceHistoryInput
		want []string // type zone price time
	}{
		{"whole history of one pool, newest first", &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"t3.large"}, AvailabilityZone: aws.String(zoneA)},
			[]string{"t3.large ap-northeast-2a 0.035000 10:00", "t3.large ap-northeast-2a 0.030000 09:00"}},
		{"a window opening after the last change still has the price in effect", &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"t3.large"},
			AvailabilityZone: aws.String(zoneA), StartTime: aws.Time(start.Add(90 * time.Minute))},
			[]string{"t3.large ap-northeast-2a 0.035000 10:00"}},
		{"Karpenter's product descriptions", &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"c6g.large"}, ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
			StartTime: aws.Time(start.Add(2 * time.Hour)), AvailabilityZone: aws.String(zoneB)},
			[]string{"c6g.large ap-northeast-2b 0.027000 09:00", "c6g.large ap-northeast-2b 0.027000 09:00"}},
		{"Windows is not simulated", &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"t3.large"}, ProductDescriptions: []string{"Windows"}}, nil},
		{"no spot for a type without spot", &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"x1.metal"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribeSpotPriceHistory(f.ctx, tc.in)
			mustNil(t, err)
			var got []string
			for _, p := range out.SpotPriceHistory {
				got = append(got, fmt.Sprintf("%s %s %s %s", p.InstanceType, aws.ToString(p.AvailabilityZone), aws.ToString(p.SpotPrice), p.Timestamp.UTC().Format("15:04")))
			}
			if !equalStrings(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	// Every spot-capable type in every zone it is offered in, paged.
	p := ec2.NewDescribeSpotPriceHistoryPaginator(f.ec2, &ec2.DescribeSpotPriceHistoryInput{MaxResults: aws.Int32(5),
		StartTime: aws.Time(clock.Now()), ProductDescriptions: []string{"Linux/UNIX"}})
	total := 0
	for p.HasMorePages() {
		page, err := p.NextPage(f.ctx)
		mustNil(t, err)
		total += len(page.SpotPriceHistory)
	}
	if want := 4*3 + 1; total != want { // t3.large, t3.xlarge, m5.large, c6g.large in 3 zones; g5.xlarge in one
		t.Errorf("%d price points, want %d", total, want)
	}
}
