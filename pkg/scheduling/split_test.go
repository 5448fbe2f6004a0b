package scheduling_test

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
)

// halvesSlack is how much dearer than its two halves a whole workload's
// plan may be. The aim is 0 (the halves' plans side by side are a plan
// for the whole), but a heuristic cannot promise it for every split: the
// same local search that makes the whole cheaper makes the halves
// cheaper too. Over 240 seeded cases (seeds 1 to 40 of each shape) the
// whole was dearer in 24, by up to 1.8% (22, by up to 2.4%, before the
// refill of refill.go; 31, by up to 6.3%, before the tail split of
// regroup.go; docs/scheduling.md), so each case is held to 2%, and the
// sum over all cases to no slack at all.
const halvesSlack = 0.02

// halvesCase is seeded case seed of a shape: a workload of 20 to 419
// pods split at random into two halves by Deployment or by pod.
func halvesCase(t *testing.T, sh workloadgen.Shape, seed int64) (name string, whole, a, b scheduling.Input, byPod bool) {
	t.Helper()
	rnd := rand.New(rand.NewSource(seed))
	n := 20 + rnd.Intn(400)
	name = fmt.Sprintf("%s/%d/seed%d", sh.Name, n, seed)
	in, err := workloadgen.Input(sh, n, seed)
	if err != nil {
		t.Fatal(err)
	}
	byPod = rnd.Intn(2) == 0
	owners := map[string]bool{}
	var pa, pb []*corev1.Pod
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
			pa = append(pa, p)
		} else {
			pb = append(pb, p)
		}
	}
	a, b = in, in
	a.Pods, b.Pods = pa, pb
	return name, in, a, b, byPod
}

// solveHalves plans the whole and the halves; it fails the test on any
// unschedulable pod.
func solveHalves(t *testing.T, whole, a, b scheduling.Input) (w, pa, pb scheduling.Plan) {
	t.Helper()
	w, pa, pb = solve(t, whole), solve(t, a), solve(t, b)
	if len(w.Unschedulable)+len(pa.Unschedulable)+len(pb.Unschedulable) > 0 {
		t.Fatalf("unschedulable pods: whole %d, halves %d+%d", len(w.Unschedulable), len(pa.Unschedulable), len(pb.Unschedulable))
	}
	return w, pa, pb
}

// TestWholeNoDearerThanHalves: solving a workload costs no more than
// solving two halves of it separately and adding the plans: each case
// within halvesSlack, all cases together with no slack. Seeded random
// workloads of the unconstrained generated shapes, split at random by
// Deployment or by pod.
func TestWholeNoDearerThanHalves(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 2
	}
	strict, total := 0, 0
	var sumWhole, sumHalves float64
	for _, sh := range workloadgen.Shapes {
		if !sh.Unconstrained {
			continue
		}
		for seed := int64(1); seed <= int64(seeds); seed++ {
			name, in, inA, inB, byPod := halvesCase(t, sh, seed)
			t.Run(name, func(t *testing.T) {
				whole, pa, pb := solveHalves(t, in, inA, inB)
				sum := pa.TotalPricePerHour + pb.TotalPricePerHour
				total++
				sumWhole += whole.TotalPricePerHour
				sumHalves += sum
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
	t.Logf("whole dearer than its halves in %d of %d cases (within the slack); all wholes $%.2f/h, all halves $%.2f/h", strict, total, sumWhole, sumHalves)
	if sumWhole > sumHalves+1e-6 {
		t.Errorf("the wholes cost $%.2f/h together, more than their halves' $%.2f/h", sumWhole, sumHalves)
	}
}

// TestWholeNoDearerThanHalves_Regrouped: cases where the whole was
// dearer than its halves (by 0.2–0.3%) until the local search's second
// round (regroup.go): the whole, its nodes right-sized and groups of them
// packed again at their own pods' prices, now costs no more, with no
// slack. (few-big/228 seed 3 was a third; since the refill of
// refill.go its halves cost $119.85/h, $0.15 less than before and than
// the whole, which the refill leaves as it was.)
func TestWholeNoDearerThanHalves_Regrouped(t *testing.T) {
	wholeNoDearerThanHalves(t, []shapeSeed{{"web-six", 2}, {"memory-heavy", 3}})
}

// TestWholeNoDearerThanHalves_TailSplit: cases where the whole was
// dearer than its halves (by 0.2% to 6.3%) until the tail split
// (regroup.go): the whole's last nodes were one node too big for the pods
// left (daemonsets: one c6a.24xlarge where c6a.16xlarge, 4xlarge,
// 2xlarge, xlarge and large hold the same pods for less); now the whole
// costs no more than its halves, with no slack.
func TestWholeNoDearerThanHalves_TailSplit(t *testing.T) {
	wholeNoDearerThanHalves(t, []shapeSeed{
		{"daemonsets", 17}, {"daemonsets", 25}, {"few-big", 23}, {"few-big", 31}, {"memory-heavy", 32}, {"many-shapes", 31},
	})
}

// TestWholeNoDearerThanHalves_Refill: cases where the whole was dearer
// than its halves (by 1.2% to 2.4%) until the refill (refill.go): a node
// full in CPU with memory idle (or the other way round) beside nodes
// holding the pods that could use that memory (many-shapes/71 seed 25:
// a c6a.24xlarge with 34 GiB idle and two r5a.xlarge and an r7a.medium
// for memory-heavy pods, where the halves fill their c nodes' memory and
// need an m5a.2xlarge and an m5a.large); now the whole costs no more
// than its halves, with no slack. (web-six/331 seed 18, /306 seed 7 and
// many-shapes/220 seed 21 were also fixed by the refill when it tried
// every set; since it tries only those its estimate finds cheaper, they
// are not: docs/scheduling.md.)
func TestWholeNoDearerThanHalves_Refill(t *testing.T) {
	wholeNoDearerThanHalves(t, []shapeSeed{
		{"many-shapes", 25}, {"many-shapes", 20}, {"many-shapes", 38}, {"many-shapes", 17},
	})
}

// shapeSeed names one generated case of the halves test.
type shapeSeed struct {
	shape string
	seed  int64
}

// wholeNoDearerThanHalves checks, with no slack, that each case's whole
// costs no more than its halves planned apart, with the local search's
// rebuilds going on to the end: these cases are about what the rebuilds
// can reach. With the stop near the bound (nearbound.go) the whole may end
// within the gap of its bound and dearer than its halves, which
// TestWholeNoDearerThanHalves holds to halvesSlack (memory-heavy/228 seed
// 3, web-six/406 seed 2 and memory-heavy/294 seed 32 do: 0.1 % to 0.9 %).
func wholeNoDearerThanHalves(t *testing.T, cases []shapeSeed) {
	t.Helper()
	scheduling.SetNearBound(false)
	defer scheduling.SetNearBound(true)
	for _, tc := range cases {
		var sh workloadgen.Shape
		for _, s := range workloadgen.Shapes {
			if s.Name == tc.shape {
				sh = s
			}
		}
		name, in, inA, inB, _ := halvesCase(t, sh, tc.seed)
		t.Run(name, func(t *testing.T) {
			whole, pa, pb := solveHalves(t, in, inA, inB)
			if sum := pa.TotalPricePerHour + pb.TotalPricePerHour; whole.TotalPricePerHour > sum+1e-9 {
				t.Errorf("whole $%.4f/h (%d nodes) > halves $%.4f/h", whole.TotalPricePerHour, len(whole.NewNodes), sum)
			}
		})
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
