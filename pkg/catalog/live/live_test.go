package live

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/catalog/internal/awsfake"
	"github.com/joist-dev/joist/pkg/model"
)

var start = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// world is a small us-east-1: four types, one of them unknown to the
// embedded data, with zonal spot prices and Pricing API prices that differ
// from the embedded ones so the test can tell where each figure came from.
type world struct {
	ec2     *awsfake.EC2
	pricing *awsfake.Pricing
	clock   *clocktesting.FakeClock
}

func newWorld(t *testing.T) *world {
	f := awsfake.NewEC2(t)
	f.Types = []awsfake.Type{
		{Name: "m5.large", VCPU: 2, MemoryMiB: 8192, Arch: "x86_64", Manufacturer: "Intel", ENIs: 3, DefaultENIs: 3, IPv4PerENI: 10, Hypervisor: "nitro", UsageClasses: []string{"on-demand", "spot"}, EBSMaxMbps: 4750},
		{Name: "c5.large", VCPU: 2, MemoryMiB: 4096, Arch: "x86_64", Manufacturer: "Intel", ENIs: 3, DefaultENIs: 3, IPv4PerENI: 10, Hypervisor: "nitro", UsageClasses: []string{"on-demand"}, EBSMaxMbps: 4750},
		{Name: "m5.metal", VCPU: 96, MemoryMiB: 393216, Arch: "x86_64", Manufacturer: "Intel", ENIs: 15, DefaultENIs: 15, IPv4PerENI: 50, BareMetal: true, UsageClasses: []string{"on-demand", "spot"}, EBSMaxMbps: 19000},
		{Name: "m99g.large", VCPU: 2, MemoryMiB: 8192, Arch: "arm64", Manufacturer: "AWS", ENIs: 3, DefaultENIs: 3, IPv4PerENI: 10, Hypervisor: "nitro", UsageClasses: []string{"on-demand", "spot"}, NVMeGB: 118, EBSMaxMbps: 10000},
		{Name: "m1.small", VCPU: 1, MemoryMiB: 1740, Arch: "i386", Manufacturer: "Intel", ENIs: 2, DefaultENIs: 2, IPv4PerENI: 4, Hypervisor: "xen", UsageClasses: []string{"on-demand"}},
	}
	f.Zones = map[string][]string{
		"m5.large":   {"us-east-1a", "us-east-1b", "us-east-1c"},
		"c5.large":   {"us-east-1a", "us-east-1b"},
		"m5.metal":   {"us-east-1b"},
		"m99g.large": {"us-east-1a"},
		"m1.small":   {"us-east-1a"},
		// offered but not described: ignored
		"x9.huge": {"us-east-1a"},
	}
	f.Spot = []awsfake.Spot{
		{Type: "m5.large", Zone: "us-east-1a", Price: "0.0300", At: start.Add(-time.Hour)},
		{Type: "m5.large", Zone: "us-east-1a", Price: "0.0310", At: start.Add(-2 * time.Hour)}, // older: ignored
		{Type: "m5.large", Zone: "us-east-1b", Price: "0.0350", At: start.Add(-time.Hour)},
		{Type: "m99g.large", Zone: "us-east-1a", Price: "0.0200", At: start.Add(-time.Hour)},
	}
	p := awsfake.NewPricing(t)
	p.Region = "us-east-1"
	p.Shared["us-east-1"] = map[string]float64{"m5.large": 0.1, "c5.large": 0.09, "m99g.large": 0.08, "m1.small": 0.044}
	p.Metal["us-east-1"] = map[string]float64{"m5.metal": 5.0}
	return &world{ec2: f, pricing: p, clock: clocktesting.NewFakeClock(start)}
}

func (w *world) provider(t *testing.T, opts Options) *Provider {
	t.Helper()
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	opts.Clock = w.clock
	if opts.PricingBudget == 0 {
		opts.PricingBudget = 10 * time.Second
	}
	p, err := New(awsfake.EC2Client(t, w.ec2, opts.Region), awsfake.PricingClient(t, w.pricing), opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func offeringsOf(t *testing.T, c *catalog.Catalog, name string) []catalog.Offering {
	t.Helper()
	if _, ok := c.Lookup(name); !ok {
		t.Fatalf("%s is not in the catalog", name)
	}
	return c.Offerings(name)
}

func TestCatalogComesFromEC2AndThePricingAPI(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, Options{})
	c, err := p.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); st.Types != SourceAWS || st.Offerings != SourceAWS || st.Spot != SourceAWS || st.OnDemand != SourceAWS || len(st.Errors) != 0 {
		t.Errorf("status %+v, want everything from AWS", st)
	}
	var names []string
	for _, it := range c.Types() {
		names = append(names, it.Name)
	}
	if want := []string{"c5.large", "m5.large", "m5.metal", "m99g.large"}; !reflect.DeepEqual(names, want) {
		t.Errorf("types %v, want %v (i386-only m1.small and undescribed x9.huge left out)", names, want)
	}
	if want := []string{"us-east-1a", "us-east-1b", "us-east-1c"}; !reflect.DeepEqual(c.Zones(), want) {
		t.Errorf("zones %v", c.Zones())
	}

	tests := []struct {
		name string
		want []catalog.Offering
	}{
		{"m5.large", []catalog.Offering{
			off("us-east-1a", model.CapacityTypeOnDemand, 0.1),
			off("us-east-1a", model.CapacityTypeSpot, 0.03),
			off("us-east-1b", model.CapacityTypeOnDemand, 0.1),
			off("us-east-1b", model.CapacityTypeSpot, 0.035),
			off("us-east-1c", model.CapacityTypeOnDemand, 0.1),
			// no zonal price in c: the type's lowest live price
			off("us-east-1c", model.CapacityTypeSpot, 0.03),
		}},
		// spot is not a supported usage class
		{"c5.large", []catalog.Offering{
			off("us-east-1a", model.CapacityTypeOnDemand, 0.09),
			off("us-east-1b", model.CapacityTypeOnDemand, 0.09),
		}},
		// bare metal prices come from the second Pricing query; no live
		// spot price, so the embedded regional figure stands in
		{"m5.metal", []catalog.Offering{
			off("us-east-1b", model.CapacityTypeOnDemand, 5.0),
			off("us-east-1b", model.CapacityTypeSpot, mustEmbedded(t, "m5.metal").SpotPrice["us-east-1"]),
		}},
		{"m99g.large", []catalog.Offering{
			off("us-east-1a", model.CapacityTypeOnDemand, 0.08),
			off("us-east-1a", model.CapacityTypeSpot, 0.02),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := offeringsOf(t, c, tc.name); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("offerings\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}

	m5, _ := c.Lookup("m5.large")
	if m5.OnDemandPrice["us-east-1"] != 0.1 || m5.SpotPrice["us-east-1"] != 0.03 {
		t.Errorf("m5.large regional prices %v %v", m5.OnDemandPrice["us-east-1"], m5.SpotPrice["us-east-1"])
	}
	if embedded := mustEmbedded(t, "m5.large"); embedded.OnDemandPrice["us-east-1"] != 0.096 {
		t.Errorf("the live catalog changed the shared embedded type: %v", embedded.OnDemandPrice["us-east-1"])
	}
	if a := m5.Allocatable(nil); a.Cpu().String() != "1930m" || a.Memory().String() != "6903Mi" || a.Pods().Value() != 29 {
		t.Errorf("m5.large allocatable %v %v %v", a.Cpu(), a.Memory(), a.Pods())
	}
}

func off(zone, capacityType string, price float64) catalog.Offering {
	return catalog.Offering{Zone: zone, CapacityType: capacityType, Price: price}
}

func mustEmbedded(t *testing.T, name string) *catalog.InstanceType {
	t.Helper()
	it, ok := catalog.Lookup(name)
	if !ok {
		t.Fatalf("%s not embedded", name)
	}
	return it
}

func TestATypeUnknownToTheEmbeddedDataIsDescribedFromEC2(t *testing.T) {
	w := newWorld(t)
	c, err := w.provider(t, Options{}).Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	it, ok := c.Lookup("m99g.large")
	if !ok {
		t.Fatal("m99g.large missing")
	}
	labels := it.Labels()
	for k, v := range map[string]string{
		"kubernetes.io/arch":                          "arm64",
		"karpenter.k8s.aws/instance-category":         "m",
		"karpenter.k8s.aws/instance-generation":       "99",
		"karpenter.k8s.aws/instance-family":           "m99g",
		"karpenter.k8s.aws/instance-size":             "large",
		"karpenter.k8s.aws/instance-cpu-manufacturer": "aws",
		"karpenter.k8s.aws/instance-local-nvme":       "118",
		"karpenter.k8s.aws/instance-ebs-bandwidth":    "10000",
		"karpenter.k8s.aws/instance-hypervisor":       "nitro",
	} {
		if labels[k] != v {
			t.Errorf("%s = %q, want %q", k, labels[k], v)
		}
	}
	if _, ok := labels[catalog.LabelInstanceNetworkBandwidth]; ok {
		t.Error("network bandwidth label set without data")
	}
	// arm64: 8192 − 64 − ceil(8128 × 7.5%) − (11 × 29 + 255) − 100
	if a := it.Allocatable(nil); a.Memory().String() != "6844Mi" || a.Pods().Value() != 29 {
		t.Errorf("allocatable memory %v pods %v", a.Memory(), a.Pods())
	}
}

func TestCatalogHonoursConfiguredZones(t *testing.T) {
	w := newWorld(t)
	c, err := w.provider(t, Options{Zones: []string{"b"}}).Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Zones(), []string{"us-east-1b"}) {
		t.Errorf("zones %v", c.Zones())
	}
	if _, ok := c.Lookup("m99g.large"); ok {
		t.Error("m99g.large is only offered in us-east-1a but is in the catalog")
	}
	for _, it := range c.Types() {
		for _, o := range c.Offerings(it.Name) {
			if o.Zone != "us-east-1b" {
				t.Errorf("%s offered in %s", it.Name, o.Zone)
			}
		}
	}
}

func TestCatalogReusesAnswersWithinTheirTTL(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, Options{})
	ctx := context.Background()
	if _, err := p.Catalog(ctx); err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	for _, a := range []string{"DescribeInstanceTypes", "DescribeInstanceTypeOfferings", "DescribeSpotPriceHistory"} {
		calls[a] = w.ec2.Count(a)
	}
	pricingCalls := w.pricing.Calls()
	w.clock.Step(10 * time.Minute)
	if _, err := p.Catalog(ctx); err != nil {
		t.Fatal(err)
	}
	for a, n := range calls {
		if got := w.ec2.Count(a); got != n {
			t.Errorf("%s called %d times after a warm call, want %d", a, got, n)
		}
	}
	if got := w.pricing.Calls(); got != pricingCalls {
		t.Errorf("Pricing called %d times, want %d", got, pricingCalls)
	}
	// Past the spot TTL only spot prices are asked again.
	w.clock.Step(DefaultSpotTTL)
	if _, err := p.Catalog(ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.ec2.Count("DescribeSpotPriceHistory"); got <= calls["DescribeSpotPriceHistory"] {
		t.Error("spot prices were not refreshed after their TTL")
	}
	if got := w.ec2.Count("DescribeInstanceTypes"); got != calls["DescribeInstanceTypes"] {
		t.Error("instance types were refreshed before their TTL")
	}
}

func TestCatalogFallsBackToTheEmbeddedDataWhenAWSFails(t *testing.T) {
	w := newWorld(t)
	for _, a := range []string{"DescribeInstanceTypes", "DescribeInstanceTypeOfferings", "DescribeSpotPriceHistory"} {
		w.ec2.SetFail(a, "UnauthorizedOperation")
	}
	w.pricing.SetFail("AccessDeniedException")
	p := w.provider(t, Options{})
	c, err := p.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := p.Status()
	if st.Types != SourceEmbedded || st.Offerings != SourceEmbedded || st.Spot != SourceEmbedded || st.OnDemand != SourceEmbedded {
		t.Errorf("status %+v, want everything embedded", st)
	}
	if len(st.Errors) != 4 || !strings.Contains(strings.Join(st.Errors, " "), "UnauthorizedOperation") {
		t.Errorf("errors %v", st.Errors)
	}
	offline, err := catalog.Offline("us-east-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Types()) != len(offline.Types()) {
		t.Errorf("%d types, the offline catalog has %d", len(c.Types()), len(offline.Types()))
	}
	if !reflect.DeepEqual(c.Offerings("m5.large"), offline.Offerings("m5.large")) {
		t.Errorf("m5.large offerings %+v, offline %+v", c.Offerings("m5.large"), offline.Offerings("m5.large"))
	}
}

func TestCatalogKeepsStaleAnswersWhenARefreshFails(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, Options{})
	ctx := context.Background()
	first, err := p.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.clock.Step(DefaultOnDemandTTL + time.Minute)
	for _, a := range []string{"DescribeInstanceTypes", "DescribeInstanceTypeOfferings", "DescribeSpotPriceHistory"} {
		w.ec2.SetFail(a, "RequestLimitExceeded")
	}
	w.pricing.SetFail("ThrottlingException")
	second, err := p.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := p.Status()
	if st.Types != SourceStale || st.Offerings != SourceStale || st.Spot != SourceStale || st.OnDemand != SourceStale {
		t.Errorf("status %+v, want everything stale", st)
	}
	if !reflect.DeepEqual(first.Offerings("m5.large"), second.Offerings("m5.large")) {
		t.Errorf("stale catalog differs:\n%+v\n%+v", first.Offerings("m5.large"), second.Offerings("m5.large"))
	}
}

func TestOnDemandPricesWaitOnlyForTheBudgetOnAColdStart(t *testing.T) {
	w := newWorld(t)
	gate := make(chan struct{})
	w.pricing.SetGate(gate)
	p := w.provider(t, Options{PricingBudget: 50 * time.Millisecond})
	ctx := context.Background()

	began := time.Now()
	c, err := p.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Catalog took %v with a 50ms pricing budget", took)
	}
	if st := p.Status(); st.OnDemand != SourceEmbedded {
		t.Errorf("on-demand source %s, want embedded while Pricing is slow", st.OnDemand)
	}
	if got := c.Offerings("m5.large")[0]; got.Price != 0.096 {
		t.Errorf("m5.large on-demand %v, want the embedded 0.096", got.Price)
	}

	// The fetch goes on; once it lands the next call uses it.
	p.mu.Lock()
	inflight := p.odInflight
	p.mu.Unlock()
	if inflight == nil {
		t.Fatal("no background fetch in flight")
	}
	close(gate)
	<-inflight
	c, err = p.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); st.OnDemand != SourceAWS {
		t.Errorf("on-demand source %s after the fetch landed", st.OnDemand)
	}
	if got := c.Offerings("m5.large")[0]; got.Price != 0.1 {
		t.Errorf("m5.large on-demand %v, want the live 0.1", got.Price)
	}
}

func TestAFailedPricingFetchIsNotRetriedAtOnce(t *testing.T) {
	w := newWorld(t)
	w.pricing.SetFail("ThrottlingException")
	p := w.provider(t, Options{})
	ctx := context.Background()
	if _, err := p.Catalog(ctx); err != nil {
		t.Fatal(err)
	}
	n := w.pricing.Calls()
	if n == 0 {
		t.Fatal("Pricing was never asked")
	}
	w.clock.Step(30 * time.Second)
	if _, err := p.Catalog(ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.pricing.Calls(); got != n {
		t.Errorf("Pricing asked again %d times within a minute of a failure", got-n)
	}
	w.pricing.SetFail("")
	w.clock.Step(pricingRetryAfter)
	if _, err := p.Catalog(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); st.OnDemand != SourceAWS {
		t.Errorf("on-demand source %s after the retry delay", st.OnDemand)
	}
}

func TestGovCloudNeverAsksThePricingAPI(t *testing.T) {
	w := newWorld(t)
	for _, it := range w.ec2.Types {
		w.ec2.Zones[it.Name] = []string{"us-gov-west-1a"}
	}
	w.ec2.Spot = nil
	w.ec2.SetFail("DescribeSpotPriceHistory", "UnsupportedOperation")
	p := w.provider(t, Options{Region: "us-gov-west-1"})
	c, err := p.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.pricing.Calls() != 0 {
		t.Error("the Pricing API was asked for a GovCloud region")
	}
	if got := c.Offerings("m5.large"); len(got) == 0 || got[0].Price != mustEmbedded(t, "m5.large").OnDemandPrice["us-gov-west-1"] {
		t.Errorf("m5.large offerings %+v, want the embedded GovCloud price", got)
	}
}

func TestCatalogFailsOnlyWhenNothingCanBeOffered(t *testing.T) {
	w := newWorld(t)
	for _, a := range []string{"DescribeInstanceTypes", "DescribeInstanceTypeOfferings", "DescribeSpotPriceHistory"} {
		w.ec2.SetFail(a, "AuthFailure")
	}
	w.pricing.SetFail("AccessDeniedException")
	p := w.provider(t, Options{Region: "mars-north-1"})
	if _, err := p.Catalog(context.Background()); err == nil || !strings.Contains(err.Error(), "AuthFailure") {
		t.Errorf("error %v, want one naming the EC2 failure", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	w := newWorld(t)
	client := awsfake.EC2Client(t, w.ec2, "us-east-1")
	tests := []struct {
		name string
		ec2  EC2API
		opts Options
		want string
	}{
		{"no EC2 client", nil, Options{Region: "us-east-1"}, "no EC2 client"},
		{"no region", client, Options{}, "no region"},
		{"foreign zone", client, Options{Region: "us-east-1", Zones: []string{"eu-west-1a"}}, "not in region"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.ec2, nil, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPricingRegion(t *testing.T) {
	for region, want := range map[string]string{"us-east-1": "us-east-1", "ap-northeast-2": "us-east-1", "eu-west-1": "us-east-1", "cn-north-1": "cn-northwest-1"} {
		if got := PricingRegion(region); got != want {
			t.Errorf("PricingRegion(%s) = %s, want %s", region, got, want)
		}
	}
}
