package scheduling_test

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
)

// halvesSlack is how much dearer than its two halves a whole workload's
// plan may be. The aim is 0 (the halves' plans side by side are a plan
// for the whole); the packer is a heuristic and misses it by up to about
// 2% on some seeds (docs/scheduling.md), so the test holds it to 3%, which
// catches the failure it was written for: one huge node for everything.
const halvesSlack = 0.03

// TestWholeNoDearerThanHalves: solving a workload costs no more than
// solving two halves of it separately and adding the plans (within
// halvesSlack). Seeded random workloads of the unconstrained generated
// shapes, split at random by Deployment or by pod.
func TestWholeNoDearerThanHalves(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	strict, total := 0, 0
	defer func() { t.Logf("whole dearer than its halves in %d of %d cases (within the slack)", strict, total) }()
	for _, sh := range workloadgen.Shapes {
		if !sh.Unconstrained {
			continue
		}
		for seed := int64(1); seed <= int64(seeds); seed++ {
			rnd := rand.New(rand.NewSource(seed))
			n := 20 + rnd.Intn(400)
			name := fmt.Sprintf("%s/%d/seed%d", sh.Name, n, seed)
			t.Run(name, func(t *testing.T) {
				in, err := workloadgen.Input(sh, n, seed)
				if err != nil {
					t.Fatal(err)
				}
				byPod := rnd.Intn(2) == 0
				owners := map[string]bool{}
				var a, b []*corev1.Pod
				for _, p := range in.Pods {
					key := p.Labels["app"]
					if byPod {
						key = p.Name
					}
					side, ok := owners[key]
					if !ok {
						side = rnd.Intn(2) == 0
						owners[key] = side
					}
					if side {
						a = append(a, p)
					} else {
						b = append(b, p)
					}
				}
				whole := solve(t, in)
				inA, inB := in, in
				inA.Pods, inB.Pods = a, b
				pa, pb := solve(t, inA), solve(t, inB)
				if len(whole.Unschedulable)+len(pa.Unschedulable)+len(pb.Unschedulable) > 0 {
					t.Fatalf("unschedulable pods: whole %d, halves %d+%d", len(whole.Unschedulable), len(pa.Unschedulable), len(pb.Unschedulable))
				}
				sum := pa.TotalPricePerHour + pb.TotalPricePerHour
				total++
				if whole.TotalPricePerHour > sum+1e-6 {
					strict++
				}
				if whole.TotalPricePerHour > sum*(1+halvesSlack)+1e-6 {
					t.Errorf("whole $%.3f/h (%d nodes) > halves $%.3f + $%.3f = $%.3f/h (%d+%d nodes, split by pod %v)",
						whole.TotalPricePerHour, len(whole.NewNodes), pa.TotalPricePerHour, pb.TotalPricePerHour, sum, len(pa.NewNodes), len(pb.NewNodes), byPod)
				}
			})
		}
	}
}

// TestGeneratedUnconstrainedNearBound: every unconstrained generated
// shape of at least 200 pods is planned within 1.10× the lower bound.
func TestGeneratedUnconstrainedNearBound(t *testing.T) {
	sizes := []int{200, 500, 2000}
	for _, sh := range workloadgen.Shapes {
		if !sh.Unconstrained {
			continue
		}
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(t *testing.T) {
				in, err := workloadgen.Input(sh, n, 1)
				if err != nil {
					t.Fatal(err)
				}
				plan := solve(t, in)
				if len(plan.Unschedulable) > 0 {
					t.Fatalf("%d unschedulable: %s", len(plan.Unschedulable), plan.Unschedulable[0].Reason)
				}
				r := plan.TotalPricePerHour / plan.LowerBoundPricePerHour
				t.Logf("%d nodes $%.2f/h bound $%.2f/h ratio %.3f", len(plan.NewNodes), plan.TotalPricePerHour, plan.LowerBoundPricePerHour, r)
				if r > 1.10 {
					t.Errorf("%.3f× the bound ($%.2f/h against $%.2f/h)", r, plan.TotalPricePerHour, plan.LowerBoundPricePerHour)
				}
			})
		}
	}
}
