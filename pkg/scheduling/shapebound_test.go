package scheduling_test

import (
	"math"
	"math/rand"
	"testing"
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
