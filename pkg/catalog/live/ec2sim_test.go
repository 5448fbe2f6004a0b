package live

import (
	"context"
	"reflect"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/catalog/internal/awsfake"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/test/ec2sim"
)

// The live catalog against the team's EC2 simulator, through the real SDK:
// the zones, usage classes and zonal spot prices the simulator reports
// decide the offerings; on-demand prices come from the embedded data (no
// Pricing client, as in GovCloud or when the role lacks pricing:GetProducts).
func TestCatalogAgainstTheEC2Simulator(t *testing.T) {
	clock := clocktesting.NewFakeClock(start)
	sim := ec2sim.New(ec2sim.Options{
		Region: "ap-northeast-2",
		Clock:  clock,
		InstanceTypes: []ec2sim.InstanceTypeInfo{
			{Name: "m5.large", Arch: "x86_64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10, Hypervisor: "nitro", SpotSupported: true, SpotPrice: 0.04, OnDemandPrice: 0.118},
			{Name: "m6g.large", Arch: "arm64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10, Hypervisor: "nitro", OnDemandPrice: 0.094, Zones: []string{"ap-northeast-2a"}},
		},
	})
	clock.Step(time.Minute)
	if err := sim.SetSpotPrice("m5.large", "ap-northeast-2b", 0.05); err != nil {
		t.Fatal(err)
	}
	clock.Step(time.Minute)
	client := ec2.NewFromConfig(awsfake.SDKConfig("ap-northeast-2"), func(o *ec2.Options) { o.BaseEndpoint = aws.String(sim.Start(t)) })
	p, err := New(client, nil, Options{Region: "ap-northeast-2", Clock: clocktesting.NewFakePassiveClock(clock.Now())})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); st.Types != SourceAWS || st.Offerings != SourceAWS || st.Spot != SourceAWS || st.OnDemand != SourceEmbedded {
		t.Errorf("status %+v", st)
	}
	if got, want := c.Zones(), []string{"ap-northeast-2a", "ap-northeast-2b", "ap-northeast-2c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("zones %v", got)
	}
	od := func(z string, p float64) catalog.Offering {
		return catalog.Offering{Zone: z, CapacityType: model.CapacityTypeOnDemand, Price: p}
	}
	spot := func(z string, p float64) catalog.Offering {
		return catalog.Offering{Zone: z, CapacityType: model.CapacityTypeSpot, Price: p}
	}
	seoulM5 := mustEmbedded(t, "m5.large").OnDemandPrice["ap-northeast-2"]
	want := map[string][]catalog.Offering{
		"m5.large": {
			od("ap-northeast-2a", seoulM5), spot("ap-northeast-2a", 0.04),
			od("ap-northeast-2b", seoulM5), spot("ap-northeast-2b", 0.05),
			od("ap-northeast-2c", seoulM5), spot("ap-northeast-2c", 0.04),
		},
		"m6g.large": {od("ap-northeast-2a", mustEmbedded(t, "m6g.large").OnDemandPrice["ap-northeast-2"])},
	}
	if len(c.Types()) != len(want) {
		t.Errorf("%d types, want %d", len(c.Types()), len(want))
	}
	for name, w := range want {
		if got := offeringsOf(t, c, name); !reflect.DeepEqual(got, w) {
			t.Errorf("%s offerings\n got %+v\nwant %+v", name, got, w)
		}
	}
	m6g, _ := c.Lookup("m6g.large")
	if a := m6g.Allocatable(nil); a.Memory().String() != "6844Mi" || a.Pods().Value() != 29 || a.Cpu().String() != "1930m" {
		t.Errorf("m6g.large allocatable %v %v %v", a.Cpu(), a.Memory(), a.Pods())
	}
}
