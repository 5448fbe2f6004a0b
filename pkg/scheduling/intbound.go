package scheduling

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

// Whole nodes. The resource LP (bound.go) buys fractions of nodes; a plan
// of a few nodes cannot. daemonsets at 150 pods costs at least $3.030 by
// the LP and $3.060 in whole nodes, its plan's price: the plan is optimal,
// which the LP could not tell. Where a plan's price sat between the two,
// the local search went on looking for savings no plan has (the near-bound
// stop, nearbound.go, is 2 % over the bound): zonal-volumes at 150 pods,
// 2.9 % over the LP and 1.6 % over the whole-node optimum.
//
// The LP in whole nodes,
//
//	minimise Σ_t price_t · n_t  subject to  Σ_t alloc_t · n_t ≥ demand,  n_t ∈ {0, 1, 2, ...},
//
// bounds every plan as the LP does (a plan buys whole nodes holding every
// pod) and no less. Two bounds on it, each valid whatever it stops at:
//
//   - the surrogate knapsack (knapBound): with the LP's duals as weights,
//     one constraint instead of one per resource, solved in whole nodes.
//     Cheap (microseconds: a few dozen types), it is the whole-node
//     optimum on most small plans; lowerBound asks it where the LP buys
//     few nodes (intNodes).
//   - a best-first branch and bound over the LP (ipSearch), each search
//     node bounded by its LP and its own knapsack. It costs LPs, so it
//     runs only from the near-bound stop, when a plan is just over the
//     stop (within intReach of it), and only as far as the stop needs
//     (the price the plan is at, less the gap), at most intSolves LPs a
//     solve, and only where the whole-node bounds lead the others (the
//     shape bound, the limit bound). many-shapes at 150 pods: the LP
//     $8.250, the knapsack $8.256, the plan $8.429, the stop needs $8.264,
//     the search gets there.
//
// Only types no other of the same pool dominates (as much of everything
// for no more money) take part: a solution using a dominated type costs
// no less with its dominator instead.

// intBoundOff turns both whole-node bounds off (tests compare).
var intBoundOff bool

const (
	// intNodes is the most nodes the LP may buy for the whole-node
	// bounds to be asked: past a few dozen nodes a fraction of one is
	// a hundredth of the price or less (the knapsack raised
	// small-uniform's bound by 1.5 % at 150 pods, 0.3 % at 299 and
	// 0.01 % at 2,000).
	intNodes = 40
	// intReach is how far over the near-bound stop a plan may be for the
	// branch and bound to run.
	intReach = 0.01
	// intSolves caps the LPs the branch and bound solves in one solve.
	intSolves = 8
	// intFix is the most nodes of one type a branch fixes one by one
	// (n_t = 0, 1, ..., v, and n_t ≥ v+1).
	intFix = 4
)

// knapsack is the knapsack's bound over the LP full (over cols), or -1
// where the whole-node bounds are not asked.
func (s *solver) knapsack(cols []lpColumn, full cover) float64 {
	if intBoundOff || !fewNodes(full) {
		return -1
	}
	return knapBound(cols, full.y, full.demand, knapRootBudget)
}

// wholeNodesAt is lowerBound's last step: best, the other bounds', or
// the knapsack's kb (knapsack) where that is higher, with the branch and
// bound readied for the near-bound stop (s.ip) where the whole-node
// bounds lead.
func (s *solver) wholeNodesAt(best, kb float64, cols []lpColumn, full cover) float64 {
	s.ip = nil
	if kb < 0 || kb < best {
		return best
	}
	s.ip = newIPSearch(cols, full, kb)
	return kb
}

// fewNodes tells whether the LP full buys at most intNodes nodes.
func fewNodes(full cover) bool {
	n := 0.0
	for _, b := range full.basic {
		n += b.x
	}
	return n <= intNodes
}

// ipFix is one branching decision: n_col = v (exact) or n_col ≥ v.
type ipFix struct {
	col   int
	v     int
	exact bool
}

// ipNode is a node of the search: its decisions, bound and LP solution.
type ipNode struct {
	fixes []ipFix
	bound float64
	basic []basicCol
}

// ipSearch is the branch and bound, kept between the near-bound stop's
// asks: it goes on from the open nodes it left. It is set up at its first
// ask (most solves never ask).
type ipSearch struct {
	cols   []lpColumn // every column (the LP's indices)
	full   cover
	root   float64
	base   []lpColumn // the undominated columns
	open   []*ipNode
	solves int
	done   bool // at the optimum, or nothing left to branch on
	// scratch
	lp  []lpColumn
	idx []int
	d   []float64
}

// newIPSearch readies the search at the LP full (over cols) whose bound,
// with the knapsack's, is root.
func newIPSearch(cols []lpColumn, full cover, root float64) *ipSearch {
	return &ipSearch{cols: cols, full: full, root: root}
}

// start makes the root node; false where the LP bought a dominated type.
func (ip *ipSearch) start() bool {
	at := make([]int, len(ip.cols)) // column → undominated column, -1: dominated
	for j, c := range ip.cols {
		at[j] = -1
		if c.dom == 0 {
			at[j] = len(ip.base)
			ip.base = append(ip.base, lpColumn{cost: c.cost, cap: c.cap})
		}
	}
	n := &ipNode{bound: ip.root}
	for _, b := range ip.full.basic {
		if at[b.col] < 0 {
			return false
		}
		n.basic = append(n.basic, basicCol{at[b.col], b.x})
	}
	ip.open = []*ipNode{n}
	return true
}

// spent tells whether the search can raise its bound no more: at its
// end, or out of LPs.
func (ip *ipSearch) spent() bool { return ip.done || ip.solves >= intSolves }

// raise searches until its bound reaches target, the search ends or its
// LPs run out, and returns its bound: the least bound of its open nodes
// (each bounds every whole-node solution below it).
func (ip *ipSearch) raise(target float64) float64 {
	if ip.open == nil && !ip.start() {
		ip.done = true
		return ip.root
	}
	for !ip.spent() {
		k := ip.least()
		n := ip.open[k]
		if n.bound >= target {
			break
		}
		col, x := branchCol(n.basic, ip.base)
		if col < 0 {
			// Whole nodes already (the LP's optimum is the whole-node
			// optimum below it, and it is the least), or counts too
			// large to branch on one by one.
			ip.done = true
			break
		}
		ip.open = append(ip.open[:k], ip.open[k+1:]...)
		fl := int(math.Floor(x))
		for v := 0; v <= fl+1; v++ {
			f := ipFix{col, v, v <= fl}
			if c := ip.child(n, f); c != nil {
				ip.open = append(ip.open, c)
			}
		}
		if len(ip.open) == 0 {
			// No whole-node solution at all (cannot be: the plan is
			// one); keep what the node had.
			ip.open = append(ip.open, n)
			ip.done = true
		}
	}
	return ip.open[ip.least()].bound
}

// least is the index of the open node of least bound.
func (ip *ipSearch) least() int {
	k := 0
	for i, n := range ip.open {
		if n.bound < ip.open[k].bound {
			k = i
		}
	}
	return k
}

// child solves the node below n with decision f: the fixed nodes off the
// demand and into the price, types fixed exactly out of the LP. nil when
// some demand is left that no type left has.
func (ip *ipSearch) child(n *ipNode, f ipFix) *ipNode {
	ip.solves++
	fixes := make([]ipFix, len(n.fixes), len(n.fixes)+1)
	copy(fixes, n.fixes)
	fixes = append(fixes, f)
	ip.d = append(ip.d[:0], ip.full.demand...)
	cost := 0.0
	for _, f := range fixes {
		c := ip.base[f.col]
		for d := range ip.d {
			ip.d[d] -= float64(f.v) * c.cap[d]
		}
		cost += float64(f.v) * c.cost
	}
	for d := range ip.d {
		ip.d[d] = math.Max(0, ip.d[d])
	}
	ip.lp, ip.idx = ip.lp[:0], ip.idx[:0]
	for j, c := range ip.base {
		if !fixedExactly(fixes, j) {
			ip.lp = append(ip.lp, c)
			ip.idx = append(ip.idx, j)
		}
	}
	for d, v := range ip.d {
		if v > 0 && !slices.ContainsFunc(ip.lp, func(c lpColumn) bool { return c.cap[d] > 0 }) {
			return nil
		}
	}
	c := &ipNode{fixes: fixes}
	lp, y := solveCoverBasic(ip.lp, ip.d, func(j int, x float64) {
		c.basic = append(c.basic, basicCol{ip.idx[j], x})
	})
	c.bound = cost + math.Max(lp, knapBound(ip.lp, y, ip.d, knapNodeBudget))
	return c
}

// branchCol picks the fractional count to branch on: the one with the
// fewest whole nodes below it (fewest children), then the dearest type;
// -1 when none is fractional or every fractional count is above intFix.
func branchCol(basic []basicCol, base []lpColumn) (int, float64) {
	best, bx := -1, 0.0
	for _, b := range basic {
		if math.Abs(b.x-math.Round(b.x)) <= 1e-6*math.Max(1, b.x) || math.Floor(b.x) > intFix {
			continue
		}
		if best < 0 || math.Floor(b.x) < math.Floor(bx) || (math.Floor(b.x) == math.Floor(bx) && base[b.col].cost > base[best].cost) {
			best, bx = b.col, b.x
		}
	}
	return best, bx
}

// fixedExactly tells whether column j's count is fixed exactly.
func fixedExactly(fixes []ipFix, j int) bool {
	for _, f := range fixes {
		if f.col == j && f.exact {
			return true
		}
	}
	return false
}

// knapItem is one type in the surrogate knapsack: its worth (the weighted
// capacity) and price.
type knapItem struct{ s, c float64 }

// knapScratch is knapBound's buffers, kept between calls: the branch and
// bound asks it at every search node, and its items were a twentieth of
// a small solve's bytes (many-shapes at 250 pods: ~37 KB of ~790 KB).
type knapScratch struct {
	items   []knapItem
	minFrom []float64
}

var knapPool = sync.Pool{New: func() any { return new(knapScratch) }}

// Caps on the knapsack search's nodes: at lowerBound's root, and at each
// node of the branch and bound. Past them it stops at the least bound of
// what it left. A node costs some 30 ns with its children's checks: the
// root's search some 15 µs at most, a few on most small plans.
const (
	knapRootBudget = 512
	knapNodeBudget = 64
)

// knapTol: once a cover costs within this share of the root's bound, the
// knapsack search stops at the root's bound.
const knapTol = 1e-4

// knapBound is the surrogate bound: for weights w >= 0, every whole-node
// cover also covers Σ_t (w·alloc_t) n_t >= w·demand, one constraint, whose
// least price in whole nodes (an unbounded knapsack, solved by depth-first
// branch and bound) bounds every plan. With w the LP's duals the LP of
// this knapsack is the resource LP; whole nodes raise it where the types'
// worths do not add up to the demand's.
func knapBound(cols []lpColumn, w, demand []float64, budget int) float64 {
	need := 0.0
	for d, v := range demand {
		need += w[d] * v
	}
	if need <= 0 {
		return 0
	}
	sc := knapPool.Get().(*knapScratch)
	defer knapPool.Put(sc)
	items := sc.items[:0]
	defer func() { sc.items = items[:0] }()
	for _, c := range cols {
		if c.dom != 0 {
			continue
		}
		s := 0.0
		for d, v := range c.cap {
			s += w[d] * v
		}
		if s > 0 {
			items = append(items, knapItem{s, c.cost})
		}
	}
	if len(items) == 0 {
		return 0
	}
	eps := 1e-9 * need
	// The best worth per dollar (ties: the bigger), and a first cover:
	// as many of it as fit, the rest by the cheapest item covering it
	// (or one more of it).
	top := items[0]
	for _, it := range items[1:] {
		if rt, ri := top.c/top.s, it.c/it.s; ri < rt || (ri == rt && it.s > top.s) {
			top = it
		}
	}
	rate0 := top.c / top.s
	k := math.Floor((need - eps) / top.s)
	rest := need - k*top.s
	best := (k + 1) * top.c // the least price found of a cover
	for _, it := range items {
		if it.s >= rest-eps {
			best = math.Min(best, k*top.c+it.c)
		}
	}
	// An item j in a cover makes it cost at least need at the best rate
	// plus j's worth at the rate it loses: items that cannot be in a
	// cheaper cover than the first are left out (most of them).
	kept := items[:0]
	for _, it := range items {
		if need*rate0+(it.c/it.s-rate0)*it.s < best {
			kept = append(kept, it)
		}
	}
	items = kept
	// Best worth per dollar first; an item with no more worth for no
	// less money than another is never needed.
	slices.SortFunc(items, func(a, b knapItem) int {
		if ra, rb := a.c/a.s, b.c/b.s; ra != rb {
			return cmp.Compare(ra, rb)
		}
		return cmp.Compare(b.s, a.s)
	})
	kept = items[:0]
	for _, it := range items {
		dominated := false
		for _, k := range kept {
			if k.s >= it.s && k.c <= it.c {
				dominated = true
				break
			}
		}
		if !dominated {
			kept = append(kept, it)
		}
	}
	items = kept
	// minFrom[i] is the least price of items i and after: buying
	// anything costs at least that.
	minFrom := slices.Grow(sc.minFrom[:0], len(items)+1)[:len(items)+1]
	sc.minFrom = minFrom
	minFrom[len(items)] = math.Inf(1)
	for i := len(items) - 1; i >= 0; i-- {
		minFrom[i] = math.Min(minFrom[i+1], items[i].c)
	}
	cut := math.Inf(1) // the least bound of a subtree left unsearched
	visits := 0
	// lb is what covering r more with items i and after costs at least.
	// lb is what covering r more with items i and after costs at least:
	// either the k items i that cover it alone, or at most k-1 of them
	// and the rest at the next item's rate (items after i cost no less
	// per worth).
	lb := func(i int, r float64) float64 {
		if r <= eps {
			return 0
		}
		if i == len(items) {
			return math.Inf(1)
		}
		it := items[i]
		k := math.Ceil((r - eps) / it.s)
		next := k * it.c
		if i+1 < len(items) {
			next = math.Min(next, (k-1)*it.c+(r-(k-1)*it.s)*items[i+1].c/items[i+1].s)
		}
		return math.Max(math.Max(r*it.c/it.s, next), minFrom[i])
	}
	root := lb(0, need)
	var dfs func(i int, r, cost float64)
	dfs = func(i int, r, cost float64) {
		if r <= eps {
			best = math.Min(best, cost)
			return
		}
		if i == len(items) {
			return
		}
		b := cost + lb(i, r)
		if b >= best || b >= cut {
			return
		}
		// A cover within a hair of the bound at the root: what is left
		// to prove is not worth the search.
		if best <= root*(1+knapTol) {
			cut = math.Min(cut, root)
			return
		}
		if visits++; visits > budget {
			cut = b
			return
		}
		it := items[i]
		top := int(math.Ceil((r - eps) / it.s))
		dfs(i+1, r-float64(top)*it.s, cost+float64(top)*it.c)
		if i+1 == len(items) {
			return
		}
		// Fewer items i leave more to the next items, which cost no
		// less per worth: the LP bound of x items i only rises as x
		// falls, so the first x it rules out rules out all below.
		rate := items[i+1].c / items[i+1].s
		for x := top - 1; x >= 0; x-- {
			if cost+float64(x)*it.c+(r-float64(x)*it.s)*rate >= math.Min(best, cut) {
				break
			}
			dfs(i+1, r-float64(x)*it.s, cost+float64(x)*it.c)
		}
	}
	dfs(0, need, 0)
	return math.Min(best, cut) * (1 - 1e-9)
}
