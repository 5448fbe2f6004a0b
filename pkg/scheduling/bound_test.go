package scheduling

import (
	"cmp"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/model"
)

// A covering LP with a known optimum: cpu 10, memory 40.
//
//	c: 2 cpu 4 mem $1; m: 2 cpu 8 mem $1.2; r: 2 cpu 16 mem $1.6
//
// Only c: 10 needed by memory ($10). The optimum mixes c and r:
// 2a+2b ≥ 10, 4a+16b ≥ 40 → a = 10/3, b = 5/3 → $6.00.
func TestSolveCoverKnownOptimum(t *testing.T) {
	cols := []lpColumn{
		{cost: 1, cap: []float64{2, 4}},
		{cost: 1.2, cap: []float64{2, 8}},
		{cost: 1.6, cap: []float64{2, 16}},
	}
	bound, y := solveCover(cols, []float64{10, 40})
	if math.Abs(bound-6) > 1e-6 {
		t.Errorf("bound %.6f, want 6", bound)
	}
	for _, c := range cols {
		if v := c.cap[0]*y[0] + c.cap[1]*y[1]; v > c.cost+1e-9 {
			t.Errorf("dual infeasible: %.6f > %.6f", v, c.cost)
		}
	}
}

func TestSolveCoverEdgeCases(t *testing.T) {
	if b, _ := solveCover(nil, []float64{1}); b != 0 {
		t.Errorf("no columns: %v", b)
	}
	if b, _ := solveCover([]lpColumn{{cost: 1, cap: []float64{1, 0}}}, []float64{0, 5}); b != 0 {
		t.Errorf("uncoverable dimension must be left out: %v", b)
	}
	b, y := solveCover([]lpColumn{{cost: 3, cap: []float64{4}}}, []float64{10})
	if math.Abs(b-7.5) > 1e-9 || math.Abs(y[0]-0.75) > 1e-9 {
		t.Errorf("single column: %v %v", b, y)
	}
}

// TestLowerBoundReusesOnlyItsOwnLP checks the bound after packing against
// one computed with nothing kept from before packing: the same whether
// the LP before packing is reused (every pod placed, some maybe in an
// existing node's room: the same demand) or not (pods a pool's limit
// left unplaced: another demand), on random catalogs and pods.
func TestLowerBoundReusesOnlyItsOwnLP(t *testing.T) {
	reused, fresh := 0, 0
	for seed := int64(1); seed <= 60; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		list := randomTypes(rnd)
		var pods []*corev1.Pod
		for i := 0; i < 5+rnd.Intn(40); i++ {
			p := cpuPod(i, int64(100+rnd.Intn(1500)))
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = *resource.NewQuantity(int64(1+rnd.Intn(1024))<<20, resource.BinarySI)
			pods = append(pods, p)
		}
		in := Input{Pods: pods, Pools: []*model.Pool{{Name: "all"}}, InstanceTypes: list}
		if seed%3 == 0 {
			in.Pools[0].Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		}
		if seed%2 == 0 {
			alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
				corev1.ResourcePods: resource.MustParse("20")}
			in.Nodes = []*Node{{Name: "old", Labels: map[string]string{corev1.LabelHostname: "old"}, Allocatable: alloc}}
		}
		s := newSolver(&in)
		s.setup()
		s.pack()
		s.improve()
		got := s.lowerBound()
		if d := s.coverAll(s.full.demand); d.bound != s.full.bound {
			t.Fatalf("seed %d: the same demand was not answered from the LP before packing", seed)
		}
		total := make([]float64, s.dims.n())
		for _, c := range s.classes {
			for i, v := range c.req {
				total[i] += float64(v) * float64(len(c.pods)-c.remaining)
			}
		}
		free := s.freeBefore
		for i := range total {
			total[i] = math.Max(0, total[i]-float64(free[i]))
		}
		if slices.Equal(total, s.full.demand) {
			reused++
		} else {
			fresh++
		}
		s.full = cover{}
		if want := s.lowerBound(); got != want {
			t.Errorf("seed %d: bound %v, %v with nothing kept", seed, got, want)
		}
	}
	if reused == 0 || fresh == 0 {
		t.Errorf("the LP before packing was reused in %d cases, not in %d: both must happen", reused, fresh)
	}
}

// TestLowerBoundCountsExistingRoomOnce: pods placed in an existing node's
// room are in the bound's demand, so the room subtracted from it is the
// room before packing. Subtracting what is left after packing counted
// those pods twice: ten 1-CPU pods beside a node with 4 CPUs free were
// bounded as if ten CPUs had to be bought, above the price of the plan
// that buys six (the reported bound, capped at the plan's price, hid it).
// The bound unclipped must stay within the plan's price on random cases
// with existing room, and be 0 when that room holds every pod.
func TestLowerBoundCountsExistingRoomOnce(t *testing.T) {
	alloc := func(cpu string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods: resource.MustParse("110")}
	}
	boundAndPlan := func(in Input) (float64, Plan) {
		s := newSolver(&in)
		s.setup()
		s.pack()
		// The local search moves pods, never places or drops any: the
		// bound is the same before it, and the solver's tables are gone
		// after (release).
		bound := s.lowerBound()
		return bound, s.improveAndFinish()
	}
	var inExisting int
	for seed := int64(1); seed <= 60; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		var pods []*corev1.Pod
		for i := 0; i < 5+rnd.Intn(30); i++ {
			pods = append(pods, cpuPod(i, int64(250+rnd.Intn(1750))))
		}
		in := Input{Pods: pods, Pools: []*model.Pool{{Name: "all"}}, InstanceTypes: randomTypes(rnd)}
		for i := 0; i <= rnd.Intn(3); i++ {
			name := fmt.Sprintf("old%d", i)
			in.Nodes = append(in.Nodes, &Node{Name: name, Labels: map[string]string{corev1.LabelHostname: name},
				Allocatable: alloc(fmt.Sprint(2 + rnd.Intn(8)))})
		}
		bound, plan := boundAndPlan(in)
		if len(plan.Unschedulable) > 0 {
			continue
		}
		if len(plan.Existing) > 0 {
			inExisting++
		}
		if bound > plan.TotalPricePerHour+1e-9 {
			t.Errorf("seed %d: bound $%.4f/h above the plan's $%.4f/h (%d pods in existing room)", seed, bound, plan.TotalPricePerHour, len(plan.Existing))
		}
	}
	if inExisting == 0 {
		t.Fatal("no case put pods in existing room")
	}
	var pods []*corev1.Pod
	for i := 0; i < 4; i++ {
		pods = append(pods, cpuPod(i, 1000))
	}
	in := Input{Pods: pods, Pools: []*model.Pool{{Name: "all"}}, InstanceTypes: randomTypes(rand.New(rand.NewSource(1))),
		Nodes: []*Node{{Name: "old", Labels: map[string]string{corev1.LabelHostname: "old"}, Allocatable: alloc("4")}}}
	if bound, plan := boundAndPlan(in); bound != 0 || len(plan.NewNodes) != 0 {
		t.Errorf("four 1-CPU pods in 4 free CPUs: bound $%.4f/h, %d new nodes; want 0 and none", bound, len(plan.NewNodes))
	}
}

// cpuPod is pod p<i> of namespace default requesting milli millicores.
func cpuPod(i int, milli int64) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace = fmt.Sprintf("p%02d", i), "default"
	p.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}}}}
	return p
}

// TestSolveCoverDominanceSameAnswers: solveCover skipping the columns an
// earlier column dominates (lpDominance) gives the bound and duals
// pricing every column gives, to the last bit, on random column lists
// full of dominated columns, ties and duplicates. It fails when equal
// scores let a later column win (a skipped column's dominator must be
// entered where it would have been) or a dearer column counts as a
// dominator. (A dominated column whose dominator is basic could only
// win by rounding; solveCover prices it all the same, which no case
// here needs.)
func TestSolveCoverDominanceSameAnswers(t *testing.T) {
	defer func() { lpDomOff = false }()
	skipped := 0
	for seed := int64(1); seed <= 3000; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		nd := 2 + rnd.Intn(4)
		n := 2 + rnd.Intn(60)
		ps := &poolState{cols: make([]lpColumn, n)}
		for j := range ps.cols {
			c := lpColumn{cost: float64(1+rnd.Intn(12)) / 4, cap: make([]float64, nd)}
			for d := range c.cap {
				c.cap[d] = float64(rnd.Intn(6)) * float64(1+d*1000)
			}
			if j > 0 && rnd.Intn(5) == 0 {
				// A duplicate, or a near one.
				o := ps.cols[rnd.Intn(j)]
				c.cost, c.cap = o.cost, slices.Clone(o.cap)
				if rnd.Intn(2) == 0 {
					c.cost += 0.25
				}
			}
			ps.cols[j] = c
		}
		if seed%2 == 0 {
			// Cheapest first, as a pool's types are.
			slices.SortStableFunc(ps.cols, func(a, b lpColumn) int { return cmp.Compare(a.cost, b.cost) })
		}
		ps.lpDominance()
		demand := make([]float64, nd)
		for d := range demand {
			demand[d] = float64(rnd.Intn(40)) * float64(1+d*1000) / 3
		}
		lpDomOff = true
		wantB, wantY := solveCover(ps.cols, demand)
		lpDomOff = false
		gotB, gotY := solveCover(ps.cols, demand)
		if gotB != wantB || !slices.Equal(gotY, wantY) {
			t.Fatalf("seed %d: bound %v duals %v skipping dominated columns, %v %v pricing all", seed, gotB, gotY, wantB, wantY)
		}
		for _, c := range ps.cols {
			if c.dom > 0 {
				skipped++
			}
		}
	}
	if skipped == 0 {
		t.Fatal("no column was dominated: the test exercises nothing")
	}
}

// TestJointColumnsKeptPerPools: a solve with several pools keeps its
// bound's columns laid end to end with its first pool's kept types, and
// a later solve reuses them only if its pools have the very same kept
// types: solves whose first pool is the same but whose other pools
// differ (arm64 or spot instead) each get the bound and duals of a
// solve keeping nothing, and a solve of the same pools again gets the
// kept list.
func TestJointColumnsKeptPerPools(t *testing.T) {
	defer func() { keptOptsOff = false }()
	for seed := int64(1); seed <= 20; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		list := randomTypes(rnd)
		prep := PrepareTypes(list)
		pool := func(name string, weight int32, key string, values ...string) *model.Pool {
			return &model.Pool{Name: name, Weight: weight, Requirements: []model.Requirement{{Key: key, Operator: "In", Values: values}}}
		}
		first := pool("first", 10, corev1.LabelArchStable, "amd64")
		others := []*model.Pool{
			pool("other", 0, corev1.LabelArchStable, "arm64"),
			pool("other", 0, model.LabelCapacityType, model.CapacityTypeSpot),
			pool("other", 0, "karpenter.k8s.aws/instance-category", "c"),
		}
		var pods []*corev1.Pod
		for i := 0; i < 8; i++ {
			pods = append(pods, cpuPod(i, int64(200+rnd.Intn(900))))
		}
		solve := func(other *model.Pool, keep bool) (*solver, Plan) {
			keptOptsOff = !keep
			in := Input{Pods: pods, Pools: []*model.Pool{first, other}, InstanceTypes: list, Prepared: []*PreparedTypes{prep}}
			s := newSolver(&in)
			s.setup()
			s.pack()
			s.finish()
			return s, s.plan
		}
		for round := 0; round < 2; round++ {
			for _, other := range others {
				_, want := solve(other, false)
				s, got := solve(other, true)
				if got.LowerBoundPricePerHour != want.LowerBoundPricePerHour {
					t.Fatalf("seed %d, pools first and %v: bound %v with kept joint columns, %v keeping nothing",
						seed, other.Requirements, got.LowerBoundPricePerHour, want.LowerBoundPricePerHour)
				}
				if _, ok := s.keptJoint(); round == 1 && !ok {
					t.Fatalf("seed %d: the second round kept no joint columns", seed)
				}
				ws, _ := solve(other, false)
				if !slices.Equal(s.unitPrice, ws.unitPrice) {
					t.Fatalf("seed %d, pools first and %v: dual prices %v with kept joint columns, %v keeping nothing", seed, other.Requirements, s.unitPrice, ws.unitPrice)
				}
			}
		}
	}
}
