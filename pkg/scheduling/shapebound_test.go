package scheduling_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
)

// TestShapeBoundSeesPodShapes: pods of 1 CPU and 3 GiB on c (about 2 GiB
// per CPU) and m (4 GiB per CPU) types. The resource LP covers the
// demand's CPU and memory with a c/m mixture at about $1.36/h for 30
// pods, but no node can hold that mixture: on a c node memory runs out at
// 10 pods of 16 CPU. Per pod, an m.4xlarge ($0.80) is cheapest: its 15.9
// CPU allocatable hold 15 whole pods of 1 CPU (the bound rounds each
// type's room down to a multiple of the pods' requests; it read 30 x
// $0.80 / 15.9 = $1.51 before), so the shape bound is 30 x $0.80 / 15,
// the two m.4xlarge every plan needs.
func TestShapeBoundSeesPodShapes(t *testing.T) {
	in := input(pods("web", 30, "1", "3Gi"), pool("default", withReq("karpenter.k8s.aws/instance-category", "In", "c", "m")))
	plan := solve(t, in)
	want := 30 * 0.80 / 15
	if math.Abs(plan.LowerBoundPricePerHour-want) > 1e-6 {
		t.Errorf("bound $%.4f/h, want $%.4f/h", plan.LowerBoundPricePerHour, want)
	}
	if plan.TotalPricePerHour < plan.LowerBoundPricePerHour {
		t.Errorf("plan $%.4f/h under its bound $%.4f/h", plan.TotalPricePerHour, plan.LowerBoundPricePerHour)
	}
}

// TestShapeBoundClimbsToTheGPUTypes: GPU pods on a tainted GPU pool
// beside CPU pods (the generated gpu shape). The shape bound's ascent must
// first move the GPU types' prices onto the GPU before the CPU pods'
// types can rise, which takes it five or six sweeps; stopped after three
// it reported bounds 6 to 30 % under the plans (gpu at 100 pods, seed 1:
// $8.66 against an $11.27 plan, whose GPU nodes alone cost more than
// that). Each bound is checked against its plan from below too.
func TestShapeBoundClimbsToTheGPUTypes(t *testing.T) {
	for _, c := range []struct {
		pods int
		seed int64
	}{{100, 1}, {100, 3}, {250, 1}, {2000, 1}} {
		plan := solve(t, generated(t, "gpu", c.pods, c.seed))
		ratio := plan.TotalPricePerHour / plan.LowerBoundPricePerHour
		if ratio > 1.05 || ratio < 1-1e-9 {
			t.Errorf("gpu/%d seed %d: plan $%.4f/h, bound $%.4f/h (ratio %.3f), want a bound within 5 %% under the plan",
				c.pods, c.seed, plan.TotalPricePerHour, plan.LowerBoundPricePerHour, ratio)
		}
	}
}

// TestBoundAtMostOptimum: on small random workloads whose cheapest plan
// can be found by trying every way to group the pods onto nodes, the
// reported bound (the shape bound included) is never above it. Pools of c
// and m types only, so that the search sees every type the solver may use.
func TestBoundAtMostOptimum(t *testing.T) {
	types := testInstanceTypes()
	specs := cmSpecs()
	rnd := rand.New(rand.NewSource(1))
	cases := 300
	if testing.Short() {
		cases = 50
	}
	above := 0
	for i := 0; i < cases; i++ {
		n := 1 + rnd.Intn(7)
		bc := randomBrute(rnd, n, 250, 24, 256, 96)
		in := input(bc.pods, pool("default", withReq("karpenter.k8s.aws/instance-category", "In", "c", "m")))
		in.InstanceTypes = types
		plan := solve(t, in)
		if len(plan.Unschedulable) > 0 {
			t.Fatalf("case %d: unschedulable: %s", i, plan.Unschedulable[0].Reason)
		}
		// cost[m]: the cheapest type holding the pods of mask m.
		full := 1<<n - 1
		cost := make([]float64, full+1)
		for m := 1; m <= full; m++ {
			cost[m] = math.Inf(1)
			for _, s := range specs {
				if bc.holds(s, m) && s.od < cost[m] {
					cost[m] = s.od
				}
			}
		}
		// best[m]: the cheapest grouping of mask m's pods onto nodes.
		best := make([]float64, full+1)
		for m := 1; m <= full; m++ {
			low := m & -m
			best[m] = math.Inf(1)
			for sub := m; sub > 0; sub = (sub - 1) & m {
				if sub&low != 0 {
					best[m] = math.Min(best[m], cost[sub]+best[m^sub])
				}
			}
		}
		if plan.LowerBoundPricePerHour > best[full]+1e-9 {
			t.Errorf("case %d (%d pods, cpu %v, mem %v): bound $%.4f/h above the optimum $%.4f/h", i, n, bc.cpu, bc.mem, plan.LowerBoundPricePerHour, best[full])
		}
		if plan.LowerBoundPricePerHour > best[full]*0.999 {
			above++
		}
	}
	t.Logf("bound within 0.1%% of the optimum in %d of %d cases", above, cases)
}

// TestShapeSplitSameBoundsAndPlans: the shape bound is not made where the
// LP's own solution, split class by class between its types, prices no
// higher than the bound without it (bound.go, withShapes); every
// generated shape's plan and bound are the ones making it gives.
func TestShapeSplitSameBoundsAndPlans(t *testing.T) {
	bySwitch(t, scheduling.SetShapeSplit, func(t *testing.T, got, want scheduling.Plan) {
		if a, b := planShape(got), planShape(want); a != b {
			t.Errorf("plan differs with the shape bound skipped:\n%s\n--- made:\n%s", a, b)
		}
		if d := math.Abs(got.LowerBoundPricePerHour - want.LowerBoundPricePerHour); d > 1e-9*want.LowerBoundPricePerHour {
			t.Errorf("bound %.6f with the shape bound skipped, %.6f made", got.LowerBoundPricePerHour, want.LowerBoundPricePerHour)
		}
	})
}

// TestShapeSplitPricesAShapeSolution: shapeSplit's price is that of a
// solution of the shape LP, so no shape bound (a lower bound on that
// LP's optimum) is above it: on few-big, where the bound matters (pods
// of 2-4 GiB per CPU cannot fill the c family), the split prices what
// the LP's c/m mixture cannot reach, above the shape bound; on
// many-shapes, where every ratio is in some pod, it prices the LP's
// mixture within the final bound, so the ascent is skipped.
func TestShapeSplitPricesAShapeSolution(t *testing.T) {
	skipped := map[string]int{}
	for _, name := range []string{"few-big", "many-shapes", "web-six", "memory-heavy", "small-uniform"} {
		sh, _ := workloadgen.ShapeByName(name)
		for _, n := range []int{100, 299} {
			for seed := int64(1); seed <= 3; seed++ {
				in, err := workloadgen.Input(sh, n, seed)
				if err != nil {
					t.Fatal(err)
				}
				shape, split, ok, bound := scheduling.ShapeBoundAndSplit(in)
				if !ok {
					continue
				}
				if shape > split*(1+1e-9) {
					t.Errorf("%s/%d/%d: shape bound %.6f above the split's price %.6f, a solution of its LP", name, n, seed, shape, split)
				}
				if split <= bound*(1+1e-9) {
					skipped[name]++
				}
			}
		}
	}
	// And the bound skips the ascent there: many-shapes at 200 pods,
	// where the split prices within the bound on every seed, makes none.
	made := 0
	scheduling.SetShapeRan(func() { made++ })
	defer scheduling.SetShapeRan(nil)
	for seed := int64(1); seed <= 3; seed++ {
		scheduling.Solve(generated(t, "many-shapes", 200, seed))
	}
	if made > 0 {
		t.Errorf("many-shapes/200: %d shape bounds made over 3 solves; the split should skip them", made)
	}
	if skipped["few-big"] > 0 {
		t.Errorf("few-big: the split priced within the bound %d times; its pods cannot fill the LP's mixture", skipped["few-big"])
	}
	if skipped["many-shapes"] < 4 {
		t.Errorf("many-shapes: the shape bound skipped on %d of 6 plans; want most", skipped["many-shapes"])
	}
}
