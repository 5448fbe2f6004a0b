package scheduling_test

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/verify"
)

// genInput draws a random cluster: pools with taints, labels, limits and
// weights; some existing nodes with pods; DaemonSets; and pending pods in
// classes drawn from a menu of constraints.
func genInput(t *rapid.T) scheduling.Input {
	var pools []*model.Pool
	nPools := rapid.IntRange(1, 3).Draw(t, "pools")
	for i := 0; i < nPools; i++ {
		p := pool(fmt.Sprintf("p%d", i))
		p.Weight = int32(rapid.IntRange(0, 2).Draw(t, "weight"))
		if rapid.Bool().Draw(t, "spot") {
			withReq(model.LabelCapacityType, "In", "spot", "on-demand")(p)
		}
		if rapid.IntRange(0, 3).Draw(t, "taint") == 0 {
			withTaint("team", fmt.Sprint(i), corev1.TaintEffectNoSchedule)(p)
		}
		if rapid.Bool().Draw(t, "label") {
			withLabel("tier", rapid.SampledFrom([]string{"web", "db"}).Draw(t, "tier"))(p)
		}
		if rapid.IntRange(0, 3).Draw(t, "limit") == 0 {
			p.Limits = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(rapid.IntRange(4, 64).Draw(t, "cpuLimit")), resource.DecimalSI)}
		}
		if rapid.IntRange(0, 4).Draw(t, "zoneReq") == 0 {
			withReq(corev1.LabelTopologyZone, "In", rapid.SampledFrom(testZones).Draw(t, "poolZone"))(p)
		}
		pools = append(pools, p)
	}
	var all []*corev1.Pod
	nClasses := rapid.IntRange(1, 7).Draw(t, "classes")
	for c := 0; c < nClasses; c++ {
		app := fmt.Sprintf("app%d", c)
		var mods []func(*corev1.Pod)
		for _, pick := range rapid.SliceOfN(rapid.IntRange(0, 15), 0, 3).Draw(t, "constraints") {
			switch pick {
			case 0:
				mods = append(mods, nodeSelector(corev1.LabelArchStable, rapid.SampledFrom([]string{"amd64", "arm64"}).Draw(t, "arch")))
			case 1:
				mods = append(mods, nodeSelector(corev1.LabelTopologyZone, rapid.SampledFrom(testZones).Draw(t, "zone")))
			case 2:
				mods = append(mods, nodeSelector("tier", rapid.SampledFrom([]string{"web", "db"}).Draw(t, "tierSel")))
			case 3:
				mods = append(mods, tolerate("team", fmt.Sprint(rapid.IntRange(0, 2).Draw(t, "tol")), corev1.TaintEffectNoSchedule))
			case 4:
				mods = append(mods, antiAffinity(corev1.LabelHostname, app))
			case 5:
				mods = append(mods, antiAffinity(corev1.LabelTopologyZone, app))
			case 6:
				mods = append(mods, affinity(corev1.LabelTopologyZone, app))
			case 7:
				mods = append(mods, spread(corev1.LabelTopologyZone, int32(rapid.IntRange(1, 2).Draw(t, "skew")), corev1.DoNotSchedule, app))
			case 8:
				mods = append(mods, spread(corev1.LabelHostname, int32(rapid.IntRange(1, 3).Draw(t, "hskew")), corev1.DoNotSchedule, app))
			case 9:
				mods = append(mods, spread(corev1.LabelTopologyZone, 1, corev1.ScheduleAnyway, app))
			case 10:
				mods = append(mods, hostPort(int32(rapid.IntRange(8080, 8082).Draw(t, "port"))))
			case 11:
				mods = append(mods, request("nvidia.com/gpu", "1"))
			case 12:
				other := fmt.Sprintf("app%d", rapid.IntRange(0, nClasses-1).Draw(t, "other"))
				mods = append(mods, affinity(corev1.LabelHostname, other))
			case 13:
				other := fmt.Sprintf("app%d", rapid.IntRange(0, nClasses-1).Draw(t, "otherAnti"))
				mods = append(mods, antiAffinity(corev1.LabelTopologyZone, other))
			case 14:
				// Keys only the instance type decides: pinned per node.
				other := fmt.Sprintf("app%d", rapid.IntRange(0, nClasses-1).Draw(t, "otherArch"))
				if rapid.Bool().Draw(t, "archAnti") {
					mods = append(mods, antiAffinity(corev1.LabelArchStable, other))
				} else {
					mods = append(mods, affinity(corev1.LabelArchStable, other))
				}
			case 15:
				mods = append(mods, spread(corev1.LabelArchStable, 1, corev1.DoNotSchedule, app))
			}
		}
		cpu := rapid.SampledFrom([]string{"100m", "250m", "500m", "1", "1500m", "3", "7"}).Draw(t, "cpu")
		mem := rapid.SampledFrom([]string{"100Mi", "512Mi", "1Gi", "4Gi", "12Gi"}).Draw(t, "mem")
		all = append(all, pods(app, rapid.IntRange(1, 8).Draw(t, "n"), cpu, mem, mods...)...)
	}
	in := input(all, pools...)
	for i := 0; i < rapid.IntRange(0, 2).Draw(t, "nodes"); i++ {
		var held []*corev1.Pod
		if rapid.Bool().Draw(t, "held") {
			app := fmt.Sprintf("app%d", rapid.IntRange(0, nClasses-1).Draw(t, "heldApp"))
			held = pods(fmt.Sprintf("old%d", i), rapid.IntRange(1, 3).Draw(t, "heldN"), "1", "1Gi", func(p *corev1.Pod) { p.Labels["app"] = app })
			if rapid.Bool().Draw(t, "heldAnti") {
				for _, p := range held {
					antiAffinity(corev1.LabelHostname, fmt.Sprintf("app%d", rapid.IntRange(0, nClasses-1).Draw(t, "heldAntiApp")))(p)
				}
			}
		}
		n := existingNode(fmt.Sprintf("n%d", i), rapid.SampledFrom(testZones).Draw(t, "nodeZone"), held...)
		n.Pool = pools[0].Name
		n.InFlight = rapid.Bool().Draw(t, "inflight")
		in.Nodes = append(in.Nodes, n)
	}
	if rapid.Bool().Draw(t, "ds") {
		in.DaemonSets = []*appsv1.DaemonSet{daemonSet("agent", rapid.SampledFrom([]string{"100m", "500m"}).Draw(t, "dsCPU"), "128Mi")}
	}
	return in
}

// TestPropertyPlansAreValid: every placement satisfies every hard
// constraint against its node's labels, taints and neighbours; no node is
// over allocatable; no pool goes over its limits (Verify checks all of
// these, with code independent of the packer).
func TestPropertyPlansAreValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		plan := scheduling.Solve(in)
		for _, err := range verify.Plan(in, plan) {
			t.Fatal(err)
		}
		if plan.LowerBoundPricePerHour > plan.TotalPricePerHour+1e-9 {
			t.Fatalf("bound %.4f above price %.4f", plan.LowerBoundPricePerHour, plan.TotalPricePerHour)
		}
	})
}

// summary is a plan with pods reduced to names, for comparisons.
type summary struct {
	Existing      map[string][]string
	New           []string
	Unschedulable []string
	Price, Bound  float64
}

func summarize(plan scheduling.Plan) summary {
	s := summary{Existing: map[string][]string{}, Price: plan.TotalPricePerHour, Bound: plan.LowerBoundPricePerHour}
	for _, pl := range plan.Existing {
		for _, p := range pl.Pods {
			s.Existing[pl.Node] = append(s.Existing[pl.Node], p.Name)
		}
	}
	for _, n := range plan.NewNodes {
		line := fmt.Sprintf("%s %s %v %v %d", n.Pool, n.Cheapest.InstanceType, n.Zones, n.CapacityTypes, len(n.InstanceTypeOptions))
		for _, p := range n.Pods {
			line += " " + p.Name
		}
		s.New = append(s.New, line)
	}
	for _, f := range plan.Unschedulable {
		s.Unschedulable = append(s.Unschedulable, f.Pod.Name+": "+f.Reason)
	}
	return s
}

// TestPropertyDeterministic: the same input gives the same plan, also with
// the pending pods in another order.
func TestPropertyDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		first := summarize(scheduling.Solve(in))
		again := summarize(scheduling.Solve(in))
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("two solves differ:\n%+v\n%+v", first, again)
		}
		perm := rapid.Permutation(in.Pods).Draw(t, "order")
		shuffled := in
		shuffled.Pods = perm
		if got := summarize(scheduling.Solve(shuffled)); !reflect.DeepEqual(first, got) {
			t.Fatalf("pod order changed the plan:\n%+v\n%+v", first, got)
		}
	})
}

// TestPropertyExactCutsSamePlans: the cuts that only spare work which
// cannot change the outcome (a rebuild whose pending pods must raise the
// price floor to the price before it, the shape bound where the LP's own
// solution split by class prices no higher, the balanced estimate's
// types a per-resource knapsack rules out, the fills' covered levels, a
// twin group answered by its first node, a label-cut node's own types
// walked) give the plans and bounds of
// doing that work, on random clusters (existing nodes, limits, taints,
// constraints) as on the generated shapes.
func TestPropertyExactCutsSamePlans(t *testing.T) {
	set := func(on bool) {
		scheduling.SetPendingFloor(on)
		scheduling.SetShapeSplit(on)
		scheduling.SetDensityBound(on)
		scheduling.SetLimitCache(on)
		scheduling.SetRebuildTwins(on)
		scheduling.SetDrainFit(on)
		scheduling.SetRebuildPaid(on)
		scheduling.SetFillCovers(on)
		scheduling.SetTwinsAgree(on)
		scheduling.SetOwnTypes(on)
	}
	defer set(true)
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		set(false)
		want := summarize(scheduling.Solve(in))
		set(true)
		got := summarize(scheduling.Solve(in))
		// The shape bound is skipped where it is within 1e-9 of the
		// bound (float noise of the same LP optimum).
		if math.Abs(got.Bound-want.Bound) > 1e-8*math.Max(1, want.Bound) {
			t.Fatalf("bound %.9f with the cuts, %.9f without", got.Bound, want.Bound)
		}
		got.Bound = want.Bound
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plans differ with the cuts:\n%+v\nwithout:\n%+v", got, want)
		}
	})
}
