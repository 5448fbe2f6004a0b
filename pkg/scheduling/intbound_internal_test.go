package scheduling

import (
	"math"
	"math/rand"
	"testing"
)

// wholeNodeCase is a small cover: columns of two or three resources and
// a demand small enough to find the whole-node optimum by dynamic
// programming over what is left to cover.
type wholeNodeCase struct {
	cols   []lpColumn
	demand []float64
}

func randomWholeNodeCase(rnd *rand.Rand) wholeNodeCase {
	nd := 2 + rnd.Intn(2)
	var c wholeNodeCase
	for d := 0; d < nd; d++ {
		c.demand = append(c.demand, float64(1+rnd.Intn(18)))
	}
	for j := 0; j < 2+rnd.Intn(5); j++ {
		col := lpColumn{cap: make([]float64, nd)}
		worth := 0.0
		for d := range col.cap {
			col.cap[d] = float64(rnd.Intn(9))
			worth += col.cap[d]
		}
		// Prices near the worth, so that types trade off.
		col.cost = math.Round((0.5+worth)*(0.8+0.4*rnd.Float64())*100) / 100
		c.cols = append(c.cols, col)
	}
	return c
}

// optimum is the least price of whole nodes covering the demand (+Inf
// when some resource no column has is demanded).
func (c wholeNodeCase) optimum() float64 {
	nd := len(c.demand)
	size := make([]int, nd)
	total := 1
	for d, v := range c.demand {
		size[d] = int(v) + 1
		total *= size[d]
	}
	best := make([]float64, total) // by what is left to cover
	left := make([]int, nd)
	for s := 1; s < total; s++ {
		r := s
		for d := 0; d < nd; d++ {
			left[d], r = r%size[d], r/size[d]
		}
		best[s] = math.Inf(1)
		for _, col := range c.cols {
			// What is left after one node of this column.
			next, mul, moved := 0, 1, false
			for d := 0; d < nd; d++ {
				l := max(0, left[d]-int(col.cap[d]))
				if l < left[d] {
					moved = true
				}
				next += l * mul
				mul *= size[d]
			}
			if moved {
				best[s] = math.Min(best[s], col.cost+best[next])
			}
		}
	}
	return best[total-1]
}

// wholeNodeCases draws n random covers (seeded) and keeps those some
// whole-node solution covers, with its optimum.
func wholeNodeCases(seed int64, n int) (cases []wholeNodeCase, opts []float64) {
	rnd := rand.New(rand.NewSource(seed))
	for i := 0; i < n; i++ {
		c := randomWholeNodeCase(rnd)
		if opt := c.optimum(); !math.IsInf(opt, 1) {
			cases, opts = append(cases, c), append(opts, opt)
		}
	}
	return cases, opts
}

// TestKnapBoundBetweenLPAndWholeNodes: on random small covers the
// knapsack's bound is never above the whole-node optimum (also when its
// search is cut short) and never below the LP, and it is above the LP
// where whole nodes cost more.
func TestKnapBoundBetweenLPAndWholeNodes(t *testing.T) {
	cases, opts := wholeNodeCases(7, 400)
	raised := 0
	for i, c := range cases {
		opt := opts[i]
		lp, y := solveCover(c.cols, c.demand)
		for _, budget := range []int{1, 16, 1 << 20} {
			kb := knapBound(c.cols, y, c.demand, budget)
			if kb > opt*(1+1e-9) {
				t.Fatalf("case %d (budget %d): knapsack bound %.6f above the whole-node optimum %.6f (LP %.6f; %+v)", i, budget, kb, opt, lp, c)
			}
			if kb < lp*(1-1e-6)-1e-9 {
				t.Fatalf("case %d (budget %d): knapsack bound %.6f below the LP %.6f", i, budget, kb, lp)
			}
			if budget == 1<<20 && kb > lp*(1+1e-6) {
				raised++
			}
		}
	}
	if raised == 0 {
		t.Fatal("the knapsack never rose above the LP: the cases test nothing")
	}
	t.Logf("above the LP in %d of %d cases", raised, len(cases))
}

// TestIPSearchAtMostWholeNodes: the branch and bound's bound, asked for
// any target, is never above the whole-node optimum and never below where
// it started; it rises above the knapsack's in some cases.
func TestIPSearchAtMostWholeNodes(t *testing.T) {
	cases, opts := wholeNodeCases(11, 400)
	raised := 0
	for i, c := range cases {
		opt := opts[i]
		var full cover
		full.demand = c.demand
		full.bound, full.y = solveCoverBasic(c.cols, c.demand, func(j int, x float64) {
			full.basic = append(full.basic, basicCol{j, x})
		})
		root := math.Max(full.bound, knapBound(c.cols, full.y, c.demand, knapRootBudget))
		b := newIPSearch(c.cols, full, root).raise(math.Inf(1))
		if b > opt*(1+1e-9) {
			t.Fatalf("case %d: search bound %.6f above the whole-node optimum %.6f (root %.6f; %+v)", i, b, opt, root, c)
		}
		if b < root*(1-1e-12) {
			t.Fatalf("case %d: search bound %.6f below its root's %.6f", i, b, root)
		}
		if b > root*(1+1e-6) {
			raised++
		}
	}
	if raised == 0 {
		t.Fatal("the search never rose above the knapsack: the cases test nothing")
	}
	t.Logf("above the knapsack in %d of %d cases", raised, len(cases))
}

// TestKnapBoundAllocatesNothingOnceWarm: knapBound keeps its buffers
// between calls (the branch and bound asks it at every search node), so a
// call after the first allocates nothing, and its answer is the same.
func TestKnapBoundAllocatesNothingOnceWarm(t *testing.T) {
	cases, _ := wholeNodeCases(11, 50)
	c := cases[len(cases)-1]
	_, y := solveCover(c.cols, c.demand)
	want := knapBound(c.cols, y, c.demand, knapRootBudget)
	var got float64
	if n := testing.AllocsPerRun(100, func() { got = knapBound(c.cols, y, c.demand, knapRootBudget) }); n != 0 {
		t.Errorf("knapBound allocates %.0f times a call once warm, want 0", n)
	}
	if got != want {
		t.Errorf("knapBound %v, first call %v", got, want)
	}
}
