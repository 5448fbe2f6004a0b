package scheduling_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
	"github.com/joist-dev/joist/pkg/scheduling/verify"
)

// withCPULimit is in with every pool limited to cpu CPUs.
func withCPULimit(in scheduling.Input, cpu string) scheduling.Input {
	pools := in.Pools
	in.Pools = nil
	for _, p := range pools {
		q := *p
		q.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		in.Pools = append(in.Pools, &q)
	}
	return in
}

// TestLimitsFirst_NonBindingLimitChangesNothing: a pool limit no plan
// comes near (as most NodePools carry) plans as no limit does; planned
// with the limits at once, few-big, many-shapes and daemonsets were up to
// 11% dearer.
func TestLimitsFirst_NonBindingLimitChangesNothing(t *testing.T) {
	defer scheduling.SetLimitsFirst(true)
	for _, name := range []string{"small-uniform", "few-big", "many-shapes", "daemonsets", "zone-spread"} {
		in := generated(t, name, 250, 1)
		free := summarize(scheduling.Solve(in))
		lim := withCPULimit(in, "100000")
		plan := scheduling.Solve(lim)
		for _, err := range verify.Plan(lim, plan) {
			t.Fatalf("%s: %v", name, err)
		}
		if got := summarize(plan); !reflect.DeepEqual(got, free) {
			t.Errorf("%s: with a 100,000-CPU limit $%.2f/h, without $%.2f/h: want the same plan", name, got.Price, free.Price)
		}
	}
}

// TestLimitsFirst_BindingLimitPlansWithLimits: when the plan made
// without the limits breaks one, the solve plans with the limits as
// before (spot-limits: the spot pool's CPU limit binds; a limit of 8 CPUs
// on few-big's pool leaves pods unschedulable).
func TestLimitsFirst_BindingLimitPlansWithLimits(t *testing.T) {
	defer scheduling.SetLimitsFirst(true)
	spot := generated(t, "spot-limits", 250, 1)
	few := generated(t, "few-big", 50, 1)
	for name, in := range map[string]scheduling.Input{"spot-limits": spot, "few-big, 8 CPUs": withCPULimit(few, "8")} {
		scheduling.SetLimitsFirst(true)
		plan := scheduling.Solve(in)
		for _, err := range verify.Plan(in, plan) {
			t.Fatalf("%s: %v", name, err)
		}
		scheduling.SetLimitsFirst(false)
		at := scheduling.Solve(in)
		if !reflect.DeepEqual(summarize(plan), summarize(at)) {
			t.Errorf("%s: plan $%.2f/h, with the limits at once $%.2f/h: want the same", name, plan.TotalPricePerHour, at.TotalPricePerHour)
		}
	}
}

// TestMinValuesFirst_NonBindingChangesNothing: a pool's minValues that
// every node's options meet anyway (two instance families) plans as no
// minValues does, each node's options offering two families and its
// requirements carrying the minValues; planned with the minValues at
// once, few-big was dearer.
func TestMinValuesFirst_NonBindingChangesNothing(t *testing.T) {
	defer scheduling.SetLimitsFirst(true)
	const family = "karpenter.k8s.aws/instance-family"
	for _, name := range []string{"small-uniform", "few-big", "many-shapes"} {
		in := generated(t, name, 250, 1)
		free := summarize(scheduling.Solve(in))
		two := 2
		mv := in
		mv.Pools = nil
		for _, p := range in.Pools {
			q := *p
			q.Requirements = append(append([]model.Requirement(nil), p.Requirements...), model.Requirement{Key: family, Operator: "Exists", MinValues: &two})
			mv.Pools = append(mv.Pools, &q)
		}
		plan := scheduling.Solve(mv)
		for _, err := range verify.Plan(mv, plan) {
			t.Fatalf("%s: %v", name, err)
		}
		if got := summarize(plan); !reflect.DeepEqual(got, free) {
			t.Errorf("%s: with minValues 2 on families $%.2f/h, without $%.2f/h: want the same plan", name, got.Price, free.Price)
		}
		families := map[string]string{}
		for _, it := range mv.InstanceTypes {
			families[it.Name] = it.Labels[family]
		}
		for i, nn := range plan.NewNodes {
			seen := map[string]bool{}
			for _, o := range nn.InstanceTypeOptions {
				seen[families[o.Name]] = true
			}
			if len(seen) < 2 {
				t.Errorf("%s: node %d's options offer %d families", name, i, len(seen))
			}
			carried := false
			for _, r := range nn.Requirements {
				carried = carried || r.Key == family && r.MinValues != nil && *r.MinValues == 2
			}
			if !carried {
				t.Errorf("%s: node %d's requirements do not carry minValues 2 on %s", name, i, family)
			}
		}
	}
}

// TestLimitedRebuildsKeepTheLimits: with a limit that binds, the local
// search's rebuilds run (the packing checks every node it grows or
// opens against the limits), and each plan holds the limits, places as
// many pods and costs no more than without them; spot-limits at 700 and
// 2,000 pods and weighted-tainted-pools and zonal-volumes under CPU
// limits were 0.6-16 % dearer without.
func TestLimitedRebuildsKeepTheLimits(t *testing.T) {
	defer scheduling.SetLimitRebuilds(true)
	type tc struct {
		name string
		in   scheduling.Input
	}
	var cases []tc
	for _, n := range []int{50, 700, 2000} {
		cases = append(cases, tc{fmt.Sprintf("spot-limits/%d", n), generated(t, "spot-limits", n, 2)})
	}
	for _, c := range []struct {
		shape string
		pods  int
		cpu   string
	}{{"weighted-tainted-pools", 100, "24"}, {"weighted-tainted-pools", 400, "100"}, {"zonal-volumes", 100, "30"}, {"many-shapes", 100, "50"}} {
		cases = append(cases, tc{fmt.Sprintf("%s/%d, %s CPUs", c.shape, c.pods, c.cpu), withCPULimit(generated(t, c.shape, c.pods, 1), c.cpu)})
	}
	cheaper := 0
	for _, c := range cases {
		scheduling.SetLimitRebuilds(false)
		without := scheduling.Solve(c.in)
		scheduling.SetLimitRebuilds(true)
		plan := scheduling.Solve(c.in)
		for _, err := range verify.Plan(c.in, plan) {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(plan.Unschedulable) != len(without.Unschedulable) {
			t.Errorf("%s: %d pods unschedulable, %d without rebuilds", c.name, len(plan.Unschedulable), len(without.Unschedulable))
		}
		if plan.TotalPricePerHour > without.TotalPricePerHour+1e-9 {
			t.Errorf("%s: $%.4f/h, $%.4f/h without rebuilds", c.name, plan.TotalPricePerHour, without.TotalPricePerHour)
		}
		if plan.TotalPricePerHour < without.TotalPricePerHour-1e-9 {
			cheaper++
		}
		t.Logf("%s: $%.4f/h, $%.4f/h without rebuilds", c.name, plan.TotalPricePerHour, without.TotalPricePerHour)
	}
	if cheaper == 0 {
		t.Errorf("no plan cheaper with rebuilds under limits")
	}
}

// TestReusedClassesAreBuiltClasses: the solve that follows a failed
// limits-free attempt takes that attempt's classes instead of hashing
// every pod again, and they are, field by field after setup, the classes
// it would build: the same pods in the same order, requests, ports,
// volume zones, errors and skipped pods. Inputs: spot-limits and mix
// (generated), and one limited pool with pods of every kind buildClasses
// tells apart (a DaemonSet's pod and a bound one skipped, host ports,
// a claim's zone, a missing claim, a pod asking one port twice).
func TestReusedClassesAreBuiltClasses(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-1b")}}}}},
	}}
	useClaim := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
		}
	}
	var ps []*corev1.Pod
	ps = append(ps, pods("web", 6, "1", "2Gi")...)
	ps = append(ps, pods("ports", 2, "500m", "1Gi", hostPort(8080))...)
	ps = append(ps, pods("twice", 1, "500m", "1Gi", hostPort(9090), hostPort(9090))...)
	ps = append(ps, pods("db", 1, "2", "4Gi", useClaim("data"))...)
	ps = append(ps, pods("lost", 1, "1", "1Gi", useClaim("nope"))...)
	ps = append(ps, pods("agent", 1, "100m", "64Mi", func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: &yes}}
	})...)
	ps = append(ps, pods("bound", 1, "1", "1Gi", func(p *corev1.Pod) { p.Spec.NodeName = "n1" })...)
	kinds := withCPULimit(input(ps), "4")
	kinds.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim}
	kinds.PersistentVolumes = []*corev1.PersistentVolume{pv}
	for name, in := range map[string]scheduling.Input{
		"spot-limits/250": generated(t, "spot-limits", 250, 1),
		"mix/299 seed 2":  generated(t, "mix", 299, 2),
		"every kind":      kinds,
	} {
		reused, built := scheduling.ClassesBothWays(in)
		if reused != built {
			t.Errorf("%s: the classes taken from the limits-free attempt\n%s\ndiffer from those built\n%s", name, reused, built)
		}
		if !strings.Contains(built, "class ") {
			t.Errorf("%s: no classes", name)
		}
	}
	if reused, _ := scheduling.ClassesBothWays(kinds); !strings.Contains(reused, "skipped agent-0") || !strings.Contains(reused, "twice") || !strings.Contains(reused, "not found") {
		t.Errorf("the case of every kind lost a kind:\n%s", reused)
	}
}

// TestLimitsBindUnpacked: the check before the limits-free packing says
// a limit binds only where that packing then breaks it (it saves the
// packing, never changes the answer), and it does say so for the usual
// pools: spot-limits' spot pool (the only pool of its weight, a CPU limit
// a quarter of the pods' requests), and one pool with a limit of 8 CPUs.
// weighted-tainted-pools with 8 CPUs a pool: its general pool is the only
// one of the highest weight every pod may use. A limit no plan comes
// near, two pools of one weight, and classes with topology are left to
// the packing.
func TestLimitsBindUnpacked(t *testing.T) {
	cases := []struct {
		name string
		in   scheduling.Input
		bind bool
	}{
		{"spot-limits/250", generated(t, "spot-limits", 250, 1), true},
		{"spot-limits/60", generated(t, "spot-limits", 60, 1), true},
		{"few-big, 8 CPUs", withCPULimit(generated(t, "few-big", 50, 1), "8"), true},
		{"many-shapes, 100,000 CPUs", withCPULimit(generated(t, "many-shapes", 250, 1), "100000"), false},
		{"weighted-tainted-pools, 8 CPUs each", withCPULimit(generated(t, "weighted-tainted-pools", 250, 1), "8"), true},
		{"few-big, 8 CPUs, a twin pool of its weight", withTwinPool(withCPULimit(generated(t, "few-big", 50, 1), "8")), false},
		{"zone-spread, 8 CPUs", withCPULimit(generated(t, "zone-spread", 250, 1), "8"), false},
	}
	for _, c := range cases {
		bind, within := scheduling.LimitsBindBothWays(c.in)
		if bind != c.bind {
			t.Errorf("%s: the check says %v, want %v", c.name, bind, c.bind)
		}
		if bind && within {
			t.Errorf("%s: the check says a limit binds, yet the packing kept every limit", c.name)
		}
	}
}

// withTwinPool is in with a copy of its first pool under another name.
func withTwinPool(in scheduling.Input) scheduling.Input {
	twin := *in.Pools[0]
	twin.Name += "-twin"
	in.Pools = append(append([]*model.Pool(nil), in.Pools...), &twin)
	return in
}

// TestLimitsBindUnpackedSamePlans: skipping the limits-free packing the
// check says must break a limit gives the plans packing it and refusing
// it gave, on every generated shape with every pool limited to a few
// CPUs, and on spot-limits as generated.
func TestLimitsBindUnpackedSamePlans(t *testing.T) {
	defer scheduling.SetLimitsBindCheck(true)
	var ins []scheduling.Input
	var names []string
	for _, sh := range workloadgen.Shapes {
		in := generated(t, sh.Name, 120, 2)
		if sh.Name != "spot-limits" {
			in = withCPULimit(in, "24")
		}
		ins, names = append(ins, in), append(names, sh.Name)
	}
	for i, in := range ins {
		scheduling.SetLimitsBindCheck(false)
		want := scheduling.Solve(in)
		scheduling.SetLimitsBindCheck(true)
		got := scheduling.Solve(in)
		if a, b := planShape(got), planShape(want); a != b {
			t.Errorf("%s: plan with the check differs:\n%s\n--- packed and refused:\n%s", names[i], a, b)
		}
	}
}
