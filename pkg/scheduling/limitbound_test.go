package scheduling_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// spotAndOnDemand is pods on a spot pool limited to cpu CPUs (weighted
// first, as spot pools are) beside an unlimited on-demand pool, both of
// c and m types.
func spotAndOnDemand(ps []*corev1.Pod, cpu string) scheduling.Input {
	cm := withReq("karpenter.k8s.aws/instance-category", "In", "c", "m")
	in := input(ps,
		pool("spot", cm, withReq(model.LabelCapacityType, "In", "spot"), withWeight(50), withLimits("cpu", cpu)),
		pool("on-demand", cm))
	in.InstanceTypes = testInstanceTypes()
	return in
}

// TestLimitBoundSeesPoolLimits: 40 one-CPU pods, spot limited to 4 CPUs.
// Without the limits the bound prices every pod on spot; with them at
// most 4 CPUs are spot and the rest on-demand, so the bound is more than
// twice as high, and still no more than the plan.
func TestLimitBoundSeesPoolLimits(t *testing.T) {
	in := spotAndOnDemand(pods("p", 40, "1", "1Gi"), "4")
	plan := solve(t, in)
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %s", plan.Unschedulable[0].Reason)
	}
	free := solve(t, spotAndOnDemand(pods("p", 40, "1", "1Gi"), "1000"))
	t.Logf("plan $%.4f, bound $%.4f; unlimited bound $%.4f", plan.TotalPricePerHour, plan.LowerBoundPricePerHour, free.LowerBoundPricePerHour)
	if plan.LowerBoundPricePerHour > plan.TotalPricePerHour+1e-9 {
		t.Fatalf("bound $%.4f above the plan $%.4f", plan.LowerBoundPricePerHour, plan.TotalPricePerHour)
	}
	// 36 pods' CPU on c at $0.04 per CPU at least: $1.44, 4 on spot.
	if plan.LowerBoundPricePerHour < 1.44 {
		t.Errorf("bound $%.4f: the spot limit is not seen (the unlimited bound is $%.4f)", plan.LowerBoundPricePerHour, free.LowerBoundPricePerHour)
	}
}

// TestLimitBoundAtMostOptimum brute-forces the cheapest plan of up to 7
// pods on a spot pool limited to 0-12 CPUs beside an unlimited on-demand
// pool (every grouping of the pods onto nodes, each node of any type
// holding its pods, spot when the limit has room for the type's CPUs),
// and checks that the bound is never above it.
func TestLimitBoundAtMostOptimum(t *testing.T) {
	specs := cmSpecs()
	rnd := rand.New(rand.NewSource(1))
	cases := 200
	if testing.Short() {
		cases = 40
	}
	tight := 0
	for i := 0; i < cases; i++ {
		n := 1 + rnd.Intn(7)
		limit := rnd.Intn(13)
		bc := randomBrute(rnd, n, 500, 8, 256, 32)
		in := spotAndOnDemand(bc.pods, fmt.Sprint(limit))
		plan := solve(t, in)
		if len(plan.Unschedulable) > 0 {
			t.Fatalf("case %d: unschedulable: %s", i, plan.Unschedulable[0].Reason)
		}
		full := 1<<n - 1
		// best[m][u]: the cheapest plan for the pods of mask m with at
		// most u spot CPUs.
		best := make([][]float64, full+1)
		for m := range best {
			best[m] = make([]float64, limit+1)
			for u := range best[m] {
				if m != 0 {
					best[m][u] = math.Inf(1)
				}
			}
		}
		for m := 1; m <= full; m++ {
			low := m & -m
			for sub := m; sub > 0; sub = (sub - 1) & m {
				if sub&low == 0 {
					continue
				}
				for _, s := range specs {
					if !bc.holds(s, sub) {
						continue
					}
					for u := 0; u <= limit; u++ {
						best[m][u] = math.Min(best[m][u], s.od+best[m^sub][u])
						if int64(u) >= s.cpu {
							best[m][u] = math.Min(best[m][u], s.spot+best[m^sub][u-int(s.cpu)])
						}
					}
				}
			}
		}
		opt := best[full][limit]
		if plan.LowerBoundPricePerHour > opt+1e-9 {
			t.Errorf("case %d (%d pods, cpu %v, mem %v, spot limit %d): bound $%.4f/h above the optimum $%.4f/h", i, n, bc.cpu, bc.mem, limit, plan.LowerBoundPricePerHour, opt)
		}
		if plan.LowerBoundPricePerHour > opt*0.8 {
			tight++
		}
	}
	t.Logf("bound within 20%% of the optimum in %d of %d cases", tight, cases)
}

// TestLimitBoundSameInTheLimitsFirstSolve: the limits-first solve plans
// without the pools' limits (limitsfirst.go) and keeps that plan when it
// holds them; its bound must still see the limits, as the solve with the
// limits at once does (mix's pools are limited: the plan without them
// holds them, and its bound was the unlimited one).
func TestLimitBoundSameInTheLimitsFirstSolve(t *testing.T) {
	defer scheduling.SetLimitsFirst(true)
	for _, n := range []int{150, 250} {
		in := generated(t, "mix", n, 1)
		first := scheduling.Solve(in)
		scheduling.SetLimitsFirst(false)
		atOnce := scheduling.Solve(in)
		scheduling.SetLimitsFirst(true)
		placed := func(p scheduling.Plan) int {
			k := 0
			for _, nn := range p.NewNodes {
				k += len(nn.Pods)
			}
			return k
		}
		if placed(first) != placed(atOnce) {
			t.Fatalf("mix/%d: %d pods placed limits first, %d with the limits at once", n, placed(first), placed(atOnce))
		}
		if math.Abs(first.LowerBoundPricePerHour-atOnce.LowerBoundPricePerHour) > 1e-9*atOnce.LowerBoundPricePerHour {
			t.Errorf("mix/%d: bound $%.4f limits first, $%.4f with the limits at once", n, first.LowerBoundPricePerHour, atOnce.LowerBoundPricePerHour)
		}
	}
}
