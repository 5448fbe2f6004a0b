package scheduling_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Karpenter's minValues cases on keys the offerings decide (suite_test.go,
// "with zone requirements"): a pool's minValues on the zone (or capacity
// type) counts the zones (capacity types) a new node may still be
// launched in, not instance type labels.

// zonalTypes are one type per name, 4 cpu, offered spot in the zones.
func zonalTypes(zones []string, names ...string) []*scheduling.InstanceType {
	var out []*scheduling.InstanceType
	for _, n := range names {
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("10")}
		it := &scheduling.InstanceType{Name: n, Capacity: capacity, Allocatable: capacity,
			Labels: map[string]string{corev1.LabelInstanceTypeStable: n, corev1.LabelArchStable: "arm64", corev1.LabelOSStable: "linux"}}
		for _, z := range zones {
			it.Offerings = append(it.Offerings, scheduling.Offering{Zone: z, CapacityType: model.CapacityTypeSpot, Price: 0.52})
		}
		out = append(out, it)
	}
	return out
}

// zoneMinValuesInput is one 900m pod, a pool allowing zones a, b and c
// with minValues n on the zone, and instance-type-1 offered in zones.
func zoneMinValuesInput(n int, zones ...string) scheduling.Input {
	p := pool("p", withReq(model.LabelCapacityType, "In", model.CapacityTypeSpot),
		withMinValues(corev1.LabelTopologyZone, "In", n, "test-1a", "test-1b", "test-1c"))
	return scheduling.Input{Pods: pods("a", 1, "900m", "900Mi"), Pools: []*model.Pool{p},
		InstanceTypes: zonalTypes(zones, "instance-type-1"), Region: "test-1"}
}

// withZonalClaim gives the pods a WaitForFirstConsumer claim whose class
// allows test-1a only.
func withZonalClaim(in scheduling.Input) scheduling.Input {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	in.StorageClasses = []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, Provisioner: ebsDriver, VolumeBindingMode: &wffc,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"test-1a"}}}}}}}
	class := "zonal"
	in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class}}}
	for _, p := range in.Pods {
		usesClaims("data")(p)
	}
	return in
}

// zonesAtLeast checks the one new node may be launched in n zones.
func zonesAtLeast(n int) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		if len(plan.NewNodes) != 1 || len(plan.NewNodes[0].Zones) < n {
			t.Errorf("new nodes %+v, want one with at least %d zones", plan.NewNodes, n)
		}
	}
}

func TestKarpenterZoneMinValues(t *testing.T) {
	runK(t, []kcase{
		{name: "should not schedule when zone minValues requirement is not met", in: func() scheduling.Input {
			return zoneMinValuesInput(3, "test-1a", "test-1b")
		}, unschedulable: 1, reason: "needs 3 distinct topology.kubernetes.io/zone values"},
		{name: "should not schedule when pod volume topology narrows zones below minValues", in: func() scheduling.Input {
			return withZonalClaim(zoneMinValuesInput(3, "test-1a", "test-1b", "test-1c"))
		}, unschedulable: 1, reason: "needs 3 distinct topology.kubernetes.io/zone values"},
		// Joist's own: what the two cases above imply.
		{name: "zone minValues met by offerings in three zones", in: func() scheduling.Input {
			return zoneMinValuesInput(3, "test-1a", "test-1b", "test-1c")
		}, check: zonesAtLeast(3)},
		{name: "capacity-type minValues met by on-demand and spot offerings", in: func() scheduling.Input {
			two := 2
			p := pool("p", withReq(model.LabelCapacityType, "In", model.CapacityTypeOnDemand, model.CapacityTypeSpot))
			p.Requirements[len(p.Requirements)-1].MinValues = &two
			return input(pods("a", 1, "900m", "900Mi"), p)
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes) != 1 || len(plan.NewNodes[0].CapacityTypes) != 2 {
				t.Errorf("new nodes %+v, want one with both capacity types", plan.NewNodes)
			}
		}},
	})
}

// Karpenter's MinValuesPolicy=BestEffort cases (suite_test.go, "with
// MinValuesPolicy set to BestEffort"): the pool's minValues do not stop a
// node; its requirement carries what the options offer, and the node is
// marked relaxed.

// bestEffortInput is one 900m pod, instance-type-1 offered (spot) in
// test-1a and instance-type-2 in test-1b, both at $0.52, and the pools,
// planned with MinValuesBestEffort.
func bestEffortInput(pools ...*model.Pool) scheduling.Input {
	types := append(zonalTypes([]string{"test-1a"}, "instance-type-1"), zonalTypes([]string{"test-1b"}, "instance-type-2")...)
	return scheduling.Input{Pods: pods("a", 1, "900m", "900Mi"), Pools: pools, InstanceTypes: types, Region: "test-1",
		Options: scheduling.Options{MinValuesBestEffort: true}}
}

// typeMinValuesPool is a spot pool allowing instance types 1 to 3 with
// minValues n, of weight w.
func typeMinValuesPool(name string, w int32, n int) *model.Pool {
	p := pool(name, withReq(model.LabelCapacityType, "In", model.CapacityTypeSpot), withWeight(w))
	p.Requirements = append(p.Requirements, model.Requirement{Key: corev1.LabelInstanceTypeStable, Operator: "In",
		Values: []string{"instance-type-1", "instance-type-2", "instance-type-3"}})
	if n > 0 {
		p.Requirements[len(p.Requirements)-1].MinValues = &n
	}
	return p
}

// relaxedNode checks the one new node: its pool, cheapest type, that it
// is marked relaxed, and the minValues its requirements carry by key
// (with the values, when given).
func relaxedNode(pool, cheapest string, minValues map[string]int, values map[string][]string) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		if len(plan.NewNodes) != 1 {
			t.Fatalf("%d new nodes, want 1", len(plan.NewNodes))
		}
		n := plan.NewNodes[0]
		if n.Pool != pool || (cheapest != "" && n.Cheapest.InstanceType != cheapest) || !n.MinValuesRelaxed {
			t.Errorf("node of pool %s, cheapest %s, relaxed %t; want %s, %s, relaxed", n.Pool, n.Cheapest.InstanceType, n.MinValuesRelaxed, pool, cheapest)
		}
		for key, want := range minValues {
			found := false
			for _, r := range n.Requirements {
				if r.Key != key || r.MinValues == nil {
					continue
				}
				found = true
				if *r.MinValues != want {
					t.Errorf("%s minValues %d, want %d", key, *r.MinValues, want)
				}
				if v, ok := values[key]; ok && !slices.Equal(r.Values, v) {
					t.Errorf("%s values %v, want %v", key, r.Values, v)
				}
			}
			if !found {
				t.Errorf("no %s requirement with minValues in %+v", key, n.Requirements)
			}
		}
	}
}

func TestKarpenterMinValuesBestEffort(t *testing.T) {
	it, zone := corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone
	bestEffort := func(in scheduling.Input) scheduling.Input {
		in.Options.MinValuesBestEffort = true
		return in
	}
	runK(t, []kcase{
		{name: "should schedule even when minValues requirement is not met", in: func() scheduling.Input {
			return bestEffortInput(typeMinValuesPool("default", 100, 3))
		}, check: relaxedNode("default", "instance-type-1", map[string]int{it: 2}, map[string][]string{it: {"instance-type-1", "instance-type-2"}})},
		{name: "should relax minValues before falling back to other nodepools", in: func() scheduling.Input {
			return bestEffortInput(typeMinValuesPool("default", 100, 3), typeMinValuesPool("no-min-values", 10, 0))
		}, check: relaxedNode("default", "instance-type-1", map[string]int{it: 2}, map[string][]string{it: {"instance-type-1", "instance-type-2"}})},
		{name: "should choose nodepool with higher weight when relaxing minValues", in: func() scheduling.Input {
			return bestEffortInput(typeMinValuesPool("default", 100, 3), typeMinValuesPool("lower-weight", 10, 3))
		}, check: relaxedNode("default", "instance-type-1", map[string]int{it: 2}, map[string][]string{it: {"instance-type-1", "instance-type-2"}})},
		{name: "should schedule even when zone minValues requirement is not met", in: func() scheduling.Input {
			return bestEffort(zoneMinValuesInput(3, "test-1a", "test-1b"))
		}, check: all(relaxedNode("p", "instance-type-1", map[string]int{zone: 2}, nil), zonesAtLeast(2))},
		{name: "should relax minValues when pod volume topology narrows zones below minValues", in: func() scheduling.Input {
			return bestEffort(withZonalClaim(zoneMinValuesInput(3, "test-1a", "test-1b", "test-1c")))
		}, check: relaxedNode("p", "instance-type-1", map[string]int{zone: 1}, map[string][]string{zone: {"test-1a"}})},
		{name: "should schedule when minValues requirement is not met (instance type and zone)", in: func() scheduling.Input {
			in := bestEffort(zoneMinValuesInput(3, "test-1a", "test-1b"))
			three := 3
			in.Pools[0].Requirements = append(in.Pools[0].Requirements, model.Requirement{Key: it, Operator: "In",
				Values: []string{"instance-type-1", "instance-type-2", "instance-type-3"}, MinValues: &three})
			return in
		}, check: relaxedNode("p", "instance-type-1", map[string]int{it: 1, zone: 2}, map[string][]string{it: {"instance-type-1"}})},
		// Joist's own.
		{name: "with the strict policy a node's requirements carry the pool's minValues", in: func() scheduling.Input {
			in := bestEffortInput(typeMinValuesPool("default", 100, 2))
			in.Options.MinValuesBestEffort = false
			return in
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes) != 1 || plan.NewNodes[0].MinValuesRelaxed {
				t.Fatalf("new nodes %+v, want one, not relaxed", plan.NewNodes)
			}
			for _, r := range plan.NewNodes[0].Requirements {
				if r.Key == it && (r.MinValues == nil || *r.MinValues != 2) {
					t.Errorf("instance-type requirement %+v, want minValues 2", r)
				}
			}
		}},
		{name: "best effort packs as if there were no minValues", in: func() scheduling.Input {
			// The strict policy keeps each node small enough for two
			// families (TestMinValuesDuringPacking); best effort packs
			// the memory-heavy pods onto the cheapest nodes.
			two := 2
			p := pool("p")
			p.Requirements = append(p.Requirements, model.Requirement{Key: "karpenter.k8s.aws/instance-family", Operator: "In", Values: []string{"c", "m"}, MinValues: &two})
			in := input(pods("a", 16, "100m", "7Gi"), p)
			in.Options.MinValuesBestEffort = true
			return in
		}, check: func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
			free := in
			free.Options.MinValuesBestEffort = false
			free.Pools = []*model.Pool{pool("p", withReq("karpenter.k8s.aws/instance-family", "In", "c", "m"))}
			want := scheduling.Solve(free).TotalPricePerHour
			if plan.TotalPricePerHour != want {
				t.Errorf("$%.2f/h, want $%.2f/h as without minValues", plan.TotalPricePerHour, want)
			}
		}},
	})
}
