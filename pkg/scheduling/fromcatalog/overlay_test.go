package fromcatalog

import (
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// offeringPrice is the price of a type's offering in a pool's list of the
// input (the shared list when the pool has none); -1 when absent.
func offeringPrice(in scheduling.Input, pool, typ, zone, ct string) float64 {
	list, ok := in.PoolInstanceTypes[pool]
	if !ok {
		list = in.InstanceTypes
	}
	for _, t := range list {
		if t.Name != typ {
			continue
		}
		for _, o := range t.Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return o.Price
			}
		}
	}
	return -1
}

func catalogPrice(cat *catalog.Catalog, typ, zone, ct string) float64 {
	for _, o := range cat.Offerings(typ) {
		if o.Zone == zone && o.CapacityType == ct {
			return o.Price
		}
	}
	return -1
}

// podRequesting is a pending pod with the requests.
func podRequesting(requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}}},
	}
}

func req(key, op string, values ...string) model.Requirement {
	return model.Requirement{Key: key, Operator: op, Values: values}
}

func TestOverlaysChangeTheSelectedOfferingsPrices(t *testing.T) {
	cat, err := catalog.Offline("us-east-1", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	const a, b = "us-east-1a", "us-east-1b"
	od, spot := model.CapacityTypeOnDemand, model.CapacityTypeSpot
	pools := []*model.Pool{{Name: "web", API: model.APIV1}, {Name: "batch", API: model.APIV1, Labels: map[string]string{"team": "data"}}}
	type want struct {
		pool, typ, zone, ct string
		price               func(base float64) float64
	}
	same := func(p float64) float64 { return p }
	tests := []struct {
		name      string
		overlays  []*model.Overlay
		zoneIDs   map[string]string
		want      []want
		conflicts []string
	}{
		{
			name: "an adjustment of one pool's spot offerings",
			overlays: []*model.Overlay{{Name: "half", PriceAdjustment: "-50%",
				Requirements: []model.Requirement{req(model.LabelNodePool, "In", "web"), req(model.LabelCapacityType, "In", spot)}}},
			want: []want{
				{"web", "m5.large", a, spot, func(p float64) float64 { return p / 2 }},
				{"web", "m5.large", a, od, same},
				{"batch", "m5.large", a, spot, same},
			},
		},
		{
			name: "the heavier overlay sets a price the lighter one also selects",
			overlays: []*model.Overlay{
				{Name: "m5-cheap", Weight: 10, Price: "0.01", Requirements: []model.Requirement{req("karpenter.k8s.aws/instance-family", "In", "m5")}},
				{Name: "all-plus", Weight: 1, PriceAdjustment: "+1"},
			},
			want: []want{
				{"web", "m5.large", a, od, func(float64) float64 { return 0.01 }},
				{"web", "c5.large", a, od, func(p float64) float64 { return p + 1 }},
				{"batch", "m5.xlarge", b, spot, func(float64) float64 { return 0.01 }},
			},
		},
		{
			name:     "a pool's template labels select it",
			overlays: []*model.Overlay{{Name: "data", Weight: 1, Price: "0.02", Requirements: []model.Requirement{req("team", "In", "data")}}},
			want: []want{
				{"batch", "c5.large", a, od, func(float64) float64 { return 0.02 }},
				{"web", "c5.large", a, od, same},
			},
		},
		{
			name:     "a zone selects its offerings only",
			overlays: []*model.Overlay{{Name: "zone-b", PriceAdjustment: "+0.5", Requirements: []model.Requirement{req(model.LabelZone, "In", b)}}},
			want: []want{
				{"web", "m5.large", b, od, func(p float64) float64 { return p + 0.5 }},
				{"web", "m5.large", a, od, same},
			},
		},
		{
			// The same overlay as the next case: the zones' IDs are part
			// of what the overlaid lists are kept by.
			name:     "a zone ID selects the offerings of its zone",
			overlays: []*model.Overlay{{Name: "az6", PriceAdjustment: "+0.5", Requirements: []model.Requirement{req(scheduling.LabelZoneID, "In", "use1-az6")}}},
			zoneIDs:  map[string]string{a: "use1-az4", b: "use1-az6"},
			want: []want{
				{"web", "m5.large", b, od, func(p float64) float64 { return p + 0.5 }},
				{"batch", "c5.large", b, spot, func(p float64) float64 { return p + 0.5 }},
				{"web", "m5.large", a, od, same},
			},
		},
		{
			name:     "without the zones' IDs a zone ID selects nothing",
			overlays: []*model.Overlay{{Name: "az6", PriceAdjustment: "+0.5", Requirements: []model.Requirement{req(scheduling.LabelZoneID, "In", "use1-az6")}}},
			want:     []want{{"web", "m5.large", b, od, same}, {"web", "m5.large", a, od, same}},
		},
		{
			name:     "NotIn a zone ID selects the other zones, and those of no known ID",
			overlays: []*model.Overlay{{Name: "not-az6", PriceAdjustment: "+0.5", Requirements: []model.Requirement{req(scheduling.LabelZoneID, "NotIn", "use1-az6")}}},
			zoneIDs:  map[string]string{b: "use1-az6"},
			want: []want{
				{"web", "m5.large", a, od, func(p float64) float64 { return p + 0.5 }},
				{"web", "m5.large", b, od, same},
			},
		},
		{
			name:     "an adjustment never makes a price negative",
			overlays: []*model.Overlay{{Name: "free", PriceAdjustment: "-1000"}},
			want:     []want{{"web", "m5.large", a, od, func(float64) float64 { return 0 }}},
		},
		{
			name: "an overlay meeting another of its weight applies nowhere",
			overlays: []*model.Overlay{
				{Name: "z-first", Weight: 5, Price: "0.03", Requirements: []model.Requirement{req(corev1.LabelInstanceTypeStable, "In", "m5.large")}},
				{Name: "m-second", Weight: 5, Price: "9", Requirements: []model.Requirement{req("karpenter.k8s.aws/instance-family", "In", "m5", "c5")}},
			},
			want: []want{
				{"web", "m5.large", a, od, func(float64) float64 { return 0.03 }},
				{"web", "c5.large", a, od, same},
			},
			conflicts: []string{`NodeOverlay "m-second": conflicts with another overlay of weight 5 on the price of an offering in pool`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Cluster{Pools: pools, Overlays: tc.overlays, ZoneIDs: tc.zoneIDs}
			in := Input(cat, c)
			if !maps.Equal(in.ZoneIDs, tc.zoneIDs) {
				t.Errorf("Input's ZoneIDs %v, want the cluster's %v", in.ZoneIDs, tc.zoneIDs)
			}
			for _, w := range tc.want {
				base := catalogPrice(cat, w.typ, w.zone, w.ct)
				got := offeringPrice(in, w.pool, w.typ, w.zone, w.ct)
				if base < 0 || math.Abs(got-w.price(base)) > 1e-9 {
					t.Errorf("%s %s %s %s: $%.4f/h, want $%.4f/h (catalog $%.4f/h)", w.pool, w.typ, w.zone, w.ct, got, w.price(base), base)
				}
			}
			got := OverlayConflicts(cat, c)
			if len(got) != len(tc.conflicts) {
				t.Fatalf("conflicts %v, want %v", got, tc.conflicts)
			}
			for i, e := range got {
				if !strings.Contains(e.Error(), tc.conflicts[i]) {
					t.Errorf("conflict %q, want %q", e, tc.conflicts[i])
				}
			}
		})
	}
}

// TestOverlaysLeaveUnselectedPoolsTheirLists: a pool no overlay changes
// keeps the shared list (no copy, no preparation).
func TestOverlaysLeaveUnselectedPoolsTheirLists(t *testing.T) {
	cat, err := catalog.Offline("us-east-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	in := Input(cat, Cluster{
		Pools:    []*model.Pool{{Name: "web"}, {Name: "gpu"}},
		Overlays: []*model.Overlay{{Name: "g", Price: "1", Requirements: []model.Requirement{req(model.LabelNodePool, "In", "gpu")}}},
	})
	if _, ok := in.PoolInstanceTypes["web"]; ok {
		t.Error("web got a list of its own")
	}
	if _, ok := in.PoolInstanceTypes["gpu"]; !ok {
		t.Error("gpu has no list of its own")
	}
}

// TestOverlayCapacityMakesPodsOfTheResourceSchedulable: a pod requesting
// an extended resource no type offers is unschedulable; with an overlay
// adding it to the arm64 types, it is planned on one of those.
func TestOverlayCapacityMakesPodsOfTheResourceSchedulable(t *testing.T) {
	cat, err := catalog.Offline("us-east-1", []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	pod := podRequesting(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "example.com/dongle": resource.MustParse("1")})
	pools := []*model.Pool{{Name: "default", API: model.APIV1}}
	plan := func(overlays []*model.Overlay) scheduling.Plan {
		in := Input(cat, Cluster{Pools: pools, Overlays: overlays})
		in.Pods = []*corev1.Pod{pod}
		return scheduling.Solve(in)
	}
	if p := plan(nil); len(p.Unschedulable) != 1 {
		t.Fatalf("without the overlay: %d unschedulable, want 1", len(p.Unschedulable))
	}
	p := plan([]*model.Overlay{{Name: "dongles", Capacity: corev1.ResourceList{"example.com/dongle": resource.MustParse("2")},
		Requirements: []model.Requirement{req(corev1.LabelArchStable, "In", "arm64")}}})
	if len(p.Unschedulable) != 0 || len(p.NewNodes) != 1 {
		t.Fatalf("with the overlay: %d unschedulable, %d nodes", len(p.Unschedulable), len(p.NewNodes))
	}
	for _, o := range p.NewNodes[0].InstanceTypeOptions {
		if t2, ok := cat.Lookup(o.Name); !ok || t2.Arch != "arm64" {
			t.Errorf("option %s is not an arm64 type", o.Name)
		}
	}
}

// TestOverlayPriceChangesThePlan: a pool allowed c, m and r types plans a
// small pod on the cheapest; an overlay making r5 nearly free plans it
// on an r5, and PoolPrices gives the provisioner that price to launch at.
func TestOverlayPriceChangesThePlan(t *testing.T) {
	cat, err := catalog.Offline("us-east-1", []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	pod := podRequesting(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")})
	pools := []*model.Pool{{Name: "default", API: model.APIV1, Requirements: []model.Requirement{
		req("karpenter.k8s.aws/instance-category", "In", "c", "m", "r"), req(model.LabelCapacityType, "In", model.CapacityTypeOnDemand)}}}
	overlays := []*model.Overlay{{Name: "r5", Price: "0.001", Requirements: []model.Requirement{req("karpenter.k8s.aws/instance-family", "In", "r5")}}}
	solve := func(overlays []*model.Overlay) scheduling.NewNode {
		in := Input(cat, Cluster{Pools: pools, Overlays: overlays})
		in.Pods = []*corev1.Pod{pod}
		p := scheduling.Solve(in)
		if len(p.NewNodes) != 1 {
			t.Fatalf("%d nodes", len(p.NewNodes))
		}
		return p.NewNodes[0]
	}
	if n := solve(nil); strings.HasPrefix(n.Cheapest.InstanceType, "r5.") {
		t.Fatalf("without the overlay the plan is already an r5 (%s): the case tests nothing", n.Cheapest.InstanceType)
	}
	n := solve(overlays)
	if !strings.HasPrefix(n.Cheapest.InstanceType, "r5.") || n.Cheapest.PricePerHour != 0.001 {
		t.Fatalf("with the overlay: %s at $%.4f/h, want an r5 at $0.001/h", n.Cheapest.InstanceType, n.Cheapest.PricePerHour)
	}
	prices := PoolPrices(cat, Cluster{Pools: pools, Overlays: overlays}, "default")
	if got := prices[OfferingKey(n.Cheapest.InstanceType, "us-east-1a", model.CapacityTypeOnDemand)]; got != 0.001 {
		t.Errorf("PoolPrices = $%v for the planned offering, want $0.001", got)
	}
	if _, ok := prices[OfferingKey("m5.large", "us-east-1a", model.CapacityTypeOnDemand)]; ok {
		t.Error("PoolPrices lists an offering no overlay changes")
	}
}

// BenchmarkApplyOverlays is the cost of a pass whose overlays or pools
// changed (the cache misses): three pools, three overlays selecting by
// pool, family and capacity type, over the embedded catalog's types,
// and the overlaid lists prepared.
func BenchmarkApplyOverlays(b *testing.B) {
	cat, err := catalog.Offline("us-east-1", nil)
	if err != nil {
		b.Fatal(err)
	}
	pools := []*model.Pool{{Name: "web"}, {Name: "batch", Labels: map[string]string{"team": "data"}}, {Name: "gpu"}}
	overlays := []*model.Overlay{
		{Name: "spot", Weight: 3, PriceAdjustment: "-10%", Requirements: []model.Requirement{req(model.LabelCapacityType, "In", model.CapacityTypeSpot)}},
		{Name: "data", Weight: 2, Price: "0.5", Requirements: []model.Requirement{req("team", "In", "data"), req("karpenter.k8s.aws/instance-family", "In", "r5", "r6i")}},
		{Name: "dev", Weight: 1, Capacity: corev1.ResourceList{"example.com/dev": resource.MustParse("2")}, Requirements: []model.Requirement{req(model.LabelNodePool, "In", "gpu")}},
	}
	shared := Prepared(cat, nil).Types()
	listOf := func(*model.Pool) []*scheduling.InstanceType { return shared }
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range applyOverlays(overlays, pools, listOf, nil).lists {
			scheduling.PrepareTypes(l)
		}
	}
}

// TestOverlayCapacityConflictAppliesNowhere is Karpenter's "should that
// there is not a partial application for nodepools": two capacity
// overlays of one weight adding the same resource meet on one type; the
// one applied second (by name, descending) is in conflict and adds
// nothing, not even to the type only it selects; the first keeps its
// types. A third, heavier overlay adds another resource beside them.
func TestOverlayCapacityConflictAppliesNowhere(t *testing.T) {
	cat, err := catalog.Offline("us-east-1", []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	dev := corev1.ResourceName("smarter-devices/buz")
	byType := func(names ...string) []model.Requirement {
		return []model.Requirement{req(corev1.LabelInstanceTypeStable, "In", names...)}
	}
	c := Cluster{Pools: []*model.Pool{{Name: "default"}}, Overlays: []*model.Overlay{
		{Name: "heavy", Weight: 20, Capacity: corev1.ResourceList{"example.com/other": resource.MustParse("1")}, Requirements: byType("m5.large")},
		{Name: "overlay-b", Weight: 10, Capacity: corev1.ResourceList{dev: resource.MustParse("21")}, Requirements: byType("c5.large", "r5.large")},
		{Name: "overlay-a", Weight: 10, Capacity: corev1.ResourceList{dev: resource.MustParse("54")}, Requirements: byType("m5.large", "c5.large")},
	}}
	in := Input(cat, c)
	got := map[string]string{}
	for _, t := range in.PoolInstanceTypes["default"] {
		if q, ok := t.Allocatable[dev]; ok {
			got[t.Name] = q.String()
		}
		if _, ok := t.Allocatable["example.com/other"]; ok {
			got[t.Name+"+other"] = "yes"
		}
	}
	want := map[string]string{"c5.large": "21", "r5.large": "21", "m5.large+other": "yes"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("added resources %v, want %v", got, want)
	}
	if errs := OverlayConflicts(cat, c); len(errs) != 1 || !strings.Contains(errs[0].Error(), `NodeOverlay "overlay-a": conflicts with another overlay of weight 10 on the capacity smarter-devices/buz`) {
		t.Errorf("conflicts %v", errs)
	}
}
