package scheduling

import (
	"cmp"
	"encoding/binary"
	"iter"
	"math"
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// The shape bound: a lower bound that sees each pod's shape, where the
// resource LP (bound.go) pools all requests into one demand vector.
//
// The resource LP may cover memory with one family and CPU with another,
// as if a pod's CPU and memory could sit on different nodes. When every
// pod asks more memory per CPU than the c family has (few big pods at 2
// to 4 GiB per CPU against c's 1.8), no plan can fill a c node's CPU, and
// the LP's c/m mixture is out of reach: its bound is then about 8% under
// any plan (`few-big` in docs/scheduling.md).
//
// The LP with one variable per (class, type) pair sees that:
//
//	minimise   Σ_t price_t · n_t
//	subject to Σ_i req_{i,r} · x_{i,t} ≤ net_{t,r} · n_t   for every t, r
//	           Σ_t x_{i,t} ≥ N_i                            for every class i
//
// (x_{i,t}: pods of class i on nodes of type t, only for types the class
// may use; n_t: nodes of type t). Any plan of new nodes is a feasible
// (x, n), so its optimum bounds every plan. Its dual is
//
//	maximise   Σ_i N_i · π_i
//	subject to π_i ≤ req_i · w_t   for every type t class i may use
//	           net_t · w_t ≤ price_t, w_t ≥ 0   for every type t
//
// so any prices w_t per type, each within its type's price, give the
// bound Σ_i N_i · min_t req_i · w_t (weak duality: no LP solve needed,
// and rounding can only lower it once each w_t is checked feasible). The
// w_t are found by coordinate ascent from the resource LP's duals (scaled
// up to each type's price, so the bound starts no lower than the LP's),
// trying for each type prices that put its whole price on one resource or
// split it between two. Only frontier types are searched: a dominated
// type takes its dominator's w, which is within its own price (it has no
// more of anything and costs no less), and a class that may use it may
// use the dominator when no label requirement cuts the frontier
// (classPool.labelAll; otherwise the shape bound is not used).
//
// Nodes hold whole pods, so net_{t,r} above is each type's room
// (allocatable less DaemonSet overhead) rounded down to a multiple of
// g_r, the greatest common divisor of the pods' requests of r: what a
// node uses of r is a sum of requests, so a multiple of g_r, and no more
// than its room. Every plan is still feasible, and the prices a type's
// room may be worth in full rise. The generated few-big's pods of 4 to 24
// CPU, all even, use at most 94 of an m5a.24xlarge's 95.69 CPU: its
// bounds rose about 1 % (the resource LP's columns are shared between
// solves and keep the room as it is).

// shapeBoundCells caps groups × frontier types, so the bound's cost stays
// small beside the packing on inputs of thousands of distinct pod shapes.
const shapeBoundCells = 50_000

// The ascent sweeps over the columns until a sweep moves none, at most as
// many sweeps as fit in shapeSweepCells groups × columns (a sweep prices
// every group at each moved column's candidates), within [3, 20]. The
// ascent moves one column at a time, so where the cheapest columns of some
// classes must move before others can (GPU types taking their price onto
// the GPU before the other classes' CPU types can rise), it climbs for
// several sweeps: gpu at 250 pods reads 17.1, 19.9, 23.8, 24.0, 24.6
// after sweeps 1 to 5 against a $24.67 plan, and three sweeps stopped it
// at 23.8. Many classes on many types (many-shapes at 250 pods: 155 × 90)
// keep three sweeps: the bound is already about a sixth of such a solve.
const (
	shapeSweepCells = 45_000
	shapeSweepsMin  = 3
	shapeSweepsMax  = 20
)

// shapeBound is the bound above, or 0 where it does not apply: existing
// or in-flight nodes (their free room would need its own prices), or a
// class whose label requirements cut a pool's frontier. y are the
// resource LP's duals.
func (s *solver) shapeBound(y []float64) float64 {
	if len(s.existingBins) > 0 {
		return 0
	}
	nd := s.dims.n()
	// The columns, groups and their keys live in scratch kept between
	// solves (a solve of many classes made some 80 KB of them).
	sc := shapePool.Get().(*shapeScratch)
	defer shapePool.Put(sc)
	cols := sc.cols[:0]
	for _, ps := range s.pools {
		if !ps.ok {
			continue
		}
		idx := ps.frontier
		if len(idx) == 0 {
			idx = ps.allIdx
		}
		for _, i := range idx {
			cols = append(cols, shapeCol{ps.types[i], ps.idx})
		}
	}
	sc.cols = cols
	// Groups: placed pods by request and usable frontier types, their
	// rows carved from arenas grown once to what every class could need.
	groups := sc.groups[:0]
	sc.reqArr = slices.Grow(sc.reqArr[:0], len(s.classes)*nd)
	sc.allowArr = slices.Grow(sc.allowArr[:0], len(s.classes)*len(cols))
	if sc.byKey == nil {
		sc.byKey = map[string]int32{}
	}
	clear(sc.byKey)
	kb := sc.kb[:0]
	defer func() { sc.groups, sc.kb = groups[:0], kb[:0] }()
	total := make([]float64, nd)
	// step: per resource, the greatest common divisor of the requests
	// (whole pods, above).
	step := make([]int64, nd)
	for c, l := range s.placedLevels() {
		placed := c.placed()
		addPods(total, step, c.req, placed)
		// Key: the request and, per pool, the types the class may use
		// (which decide its usable columns).
		kb = kb[:0]
		for _, v := range c.req {
			kb = binary.LittleEndian.AppendUint64(kb, uint64(v))
		}
		for _, cp := range l.pools {
			kb = append(kb, '|')
			if cp.ok && !cp.labelAll {
				return 0
			}
			if cp.ok {
				for _, x := range cp.types {
					kb = binary.LittleEndian.AppendUint64(kb, x)
				}
			}
		}
		if gi, ok := sc.byKey[string(kb)]; ok {
			groups[gi].n += float64(placed)
			continue
		}
		r0, a0 := len(sc.reqArr), len(sc.allowArr)
		sc.reqArr = sc.reqArr[:r0+nd]
		sc.allowArr = sc.allowArr[:a0+len(cols)]
		g := shapeGroup{req: sc.reqArr[r0 : r0+nd : r0+nd], n: float64(placed), allowed: sc.allowArr[a0 : a0+len(cols) : a0+len(cols)]}
		clear(g.allowed)
		for r, v := range c.req {
			g.req[r] = float64(max(v, 0))
		}
		usable := false
		for k, cl := range cols {
			cp := l.pools[cl.pool]
			if cp.ok && cp.types.has(cl.t.idx) && c.req.le(cl.t.net) {
				g.allowed[k], usable = true, true
			}
		}
		if !usable {
			return 0
		}
		sc.byKey[string(kb)] = int32(len(groups))
		groups = append(groups, g)
		if len(groups)*len(cols) > shapeBoundCells {
			return 0
		}
	}
	if len(groups) == 0 {
		return 0
	}
	caps := sc.capRows(len(cols), nd)
	for k, cl := range cols {
		for r, v := range cl.t.net {
			caps[k][r] = wholePods(v, step[r])
		}
	}
	var used []int // requested resources
	for r, v := range total {
		if v > 0 {
			used = append(used, r)
		}
	}
	// candidates calls f with each candidate price vector of column k (in
	// a buffer f must copy to keep).
	buf := make([]float64, nd)
	candidates := func(k int, f func(w []float64)) {
		net, cost := caps[k], cols[k].t.minPrice
		emit := func() {
			feasiblePrices(buf, net, cost)
			f(buf)
		}
		if scaledDuals(buf, y, net, cost) > 0 {
			emit()
		}
		for a, ra := range used {
			if net[ra] <= 0 {
				continue
			}
			clear(buf)
			buf[ra] = cost / float64(net[ra])
			emit()
			for _, rb := range used[a+1:] {
				if net[rb] <= 0 {
					continue
				}
				for _, lam := range [...]float64{0.25, 0.5, 0.75} {
					clear(buf)
					buf[ra] = lam * cost / float64(net[ra])
					buf[rb] = (1 - lam) * cost / float64(net[rb])
					emit()
				}
			}
		}
	}
	dot := func(a, b []float64) float64 {
		x := 0.0
		for i := range a {
			x += a[i] * b[i]
		}
		return x
	}
	// Start: each column's candidate worth most for the total demand: its
	// whole price on one resource or the scaled duals (a split between
	// two resources is worth a mean of the two prices alone, never more).
	w := sc.rows(&sc.w, &sc.wArr, len(cols), nd)
	for k, cl := range cols {
		net, cost := caps[k], cl.t.minPrice
		best, bestR := -1.0, -1
		for _, r := range used {
			if net[r] > 0 {
				if v := total[r] * cost / float64(net[r]); v > best {
					best, bestR = v, r
				}
			}
		}
		if scaledDuals(w[k], y, net, cost) == 0 || dot(w[k], total) <= best {
			if bestR < 0 {
				return 0
			}
			clear(w[k])
			w[k][bestR] = cost / float64(net[bestR])
		}
		feasiblePrices(w[k], net, cost)
	}
	// val[g][k] = req_g · w_k; per group the smallest two over its types
	// (values and columns), so that a column's change is scored without a
	// pass over every type.
	val := sc.rows(&sc.val, &sc.valArr, len(groups), len(cols))
	lo := slices.Grow(sc.lo[:0], len(groups))[:len(groups)]
	sc.lo = lo
	recompute := func(gi int) {
		m := shapeLeast{math.Inf(1), math.Inf(1), -1, -1}
		for j, v := range val[gi] {
			if !groups[gi].allowed[j] {
				continue
			}
			if v < m.v1 {
				m.v2, m.k2 = m.v1, m.k1
				m.v1, m.k1 = v, j
			} else if v < m.v2 {
				m.v2, m.k2 = v, j
			}
		}
		lo[gi] = m
	}
	for gi := range groups {
		g := &groups[gi]
		for k := range cols {
			val[gi][k] = dot(g.req, w[k])
		}
		recompute(gi)
	}
	// Ascent over the columns some group finds cheapest: raising any
	// other column's prices cannot raise a group's minimum.
	others := slices.Grow(sc.others[:0], len(groups))[:len(groups)]
	sc.others = others
	seen := slices.Grow(sc.seen[:0], len(cols))[:len(cols)]
	clear(seen)
	sc.seen = seen
	active := sc.active[:0]
	defer func() { sc.active = active[:0] }()
	sweeps := min(shapeSweepsMax, max(shapeSweepsMin, shapeSweepCells/(len(groups)*len(cols))))
	nz := make([]int, 0, nd)
	for sweep := 0; sweep < sweeps; sweep++ {
		changed := false
		for _, k := range active {
			seen[k] = false
		}
		active = active[:0]
		for gi := range groups {
			if k := lo[gi].k1; !seen[k] {
				seen[k] = true
				active = append(active, k)
			}
		}
		sort.Ints(active)
		for _, k := range active {
			for gi := range groups {
				others[gi] = lo[gi].v1
				if lo[gi].k1 == k {
					others[gi] = lo[gi].v2
				}
			}
			// score reads only wk's nonzero prices (a candidate prices one
			// or two resources): the same sums, in the same order, as dot.
			score := func(wk []float64) float64 {
				nz = nz[:0]
				for r, v := range wk {
					if v != 0 {
						nz = append(nz, r)
					}
				}
				x := 0.0
				for gi := range groups {
					g := &groups[gi]
					o := others[gi]
					if g.allowed[k] {
						d := 0.0
						for _, r := range nz {
							d += g.req[r] * wk[r]
						}
						o = math.Min(o, d)
					}
					x += g.n * o
				}
				return x
			}
			cur := score(w[k])
			moved := false
			candidates(k, func(c []float64) {
				if v := score(c); v > cur*(1+1e-9) {
					cur, moved = v, true
					w[k] = append(w[k][:0], c...)
				}
			})
			if !moved {
				continue
			}
			changed = true
			for gi := range groups {
				g := &groups[gi]
				if !g.allowed[k] {
					continue
				}
				v := dot(g.req, w[k])
				val[gi][k] = v
				m := &lo[gi]
				switch {
				case m.k1 == k || m.k2 == k:
					recompute(gi)
				case v < m.v1:
					m.v2, m.k2, m.v1, m.k1 = m.v1, m.k1, v, k
				case v < m.v2:
					m.v2, m.k2 = v, k
				}
			}
		}
		if !changed {
			break
		}
	}
	bound := 0.0
	for gi := range groups {
		g := &groups[gi]
		recompute(gi)
		bound += g.n * lo[gi].v1
	}
	if math.IsInf(bound, 0) || math.IsNaN(bound) {
		return 0
	}
	return bound
}

// shapeScratch holds shapeBound's price and value rows between solves
// (a catalog's frontier, or a limited pool's every type, is up to
// thousands of rows a solve).
type shapeScratch struct {
	w, val       [][]float64
	wArr, valArr []float64
	caps         []vec
	capArr       vec
	cols         []shapeCol
	groups       []shapeGroup
	reqArr       []float64
	allowArr     []bool
	// byKey indexes groups by key (kb: a key, scratch).
	byKey  map[string]int32
	kb     []byte
	lo     []shapeLeast
	others []float64
	seen   []bool
	active []int
}

// shapeLeast is a group's two least values over its columns (and the
// columns).
type shapeLeast struct {
	v1, v2 float64
	k1, k2 int
}

// shapeCol is a column of the shape bound: a frontier type of a pool.
type shapeCol struct {
	t    *ptype
	pool int
}

// shapeGroup is the placed pods of one request and usable columns: n
// pods asking req each, allowed per column.
type shapeGroup struct {
	req     []float64
	n       float64
	allowed []bool
}

var shapePool = sync.Pool{New: func() any { return new(shapeScratch) }}

// rows makes *rs n rows of m zeros each, over *arr.
func (*shapeScratch) rows(rs *[][]float64, arr *[]float64, n, m int) [][]float64 {
	if cap(*arr) < n*m {
		*arr = make([]float64, n*m)
	}
	a := (*arr)[:n*m]
	clear(a)
	if cap(*rs) < n {
		*rs = make([][]float64, n)
	}
	r := (*rs)[:n]
	for i := range r {
		r[i] = a[i*m : (i+1)*m : (i+1)*m]
	}
	return r
}

// capRows makes n rows of m int64s each (for the columns' rounded room).
func (sc *shapeScratch) capRows(n, m int) []vec {
	if cap(sc.capArr) < n*m {
		sc.capArr = make(vec, n*m)
	}
	if cap(sc.caps) < n {
		sc.caps = make([]vec, n)
	}
	r := sc.caps[:n]
	for i := range r {
		r[i] = sc.capArr[i*m : (i+1)*m : (i+1)*m]
	}
	return r
}

// feasiblePrices scales prices w for a type of capacity net and price
// cost down, if rounding put them over, so that its capacity at them is
// worth no more than its price (the dual constraint the bound rests on).
func feasiblePrices(w []float64, net vec, cost float64) {
	v := 0.0
	for r := range w {
		v += w[r] * float64(max(net[r], 0))
	}
	if v > cost {
		for r := range w {
			w[r] *= cost / v * (1 - 1e-12)
		}
	}
}

// scaledDuals sets w to the resource LP's duals y (negatives as 0) scaled
// so that a type of capacity net is worth its price cost at them, and
// returns the scale's divisor, the capacity at y (0: y prices nothing the
// type has, and w is left all zero).
func scaledDuals(w, y []float64, net vec, cost float64) float64 {
	clear(w)
	yv := 0.0
	for r := range y {
		yv += max(y[r], 0) * float64(max(net[r], 0))
	}
	if yv > 0 {
		for r := range y {
			w[r] = max(y[r], 0) * cost / yv
		}
	}
	return yv
}

// gcd64 is the greatest common divisor of a and b (b when a is 0).
func gcd64(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// shapeSplit prices a solution of the shape LP above made from the
// resource LP's (full's) own: where that buys one type, every class on
// it; where it buys two, A and B, each class split between them so
// that A gets the CPU the LP's A nodes have and, as near as the classes
// allow, their memory. For a CPU amount, the memory a fractional choice
// of classes can bring lies between taking the classes of least memory
// per CPU first and taking those of most first (the set of choices is
// convex), so a mix of those two choices meets it when it is in between.
// Each side's nodes are then as many (fractional) as its most used
// resource needs, at each type's room rounded to whole pods as the
// shape bound rounds it. ok is false where that does not apply: more
// than two types, a class that may not use one of them, existing nodes
// (the shape bound is not made then either).
func (s *solver) shapeSplit(full cover) (price float64, ok bool) {
	if len(s.existingBins) > 0 {
		return 0, false
	}
	var types [2]*ptype
	var pools [2]*poolState
	var xs [2]float64
	k := 0
	for _, b := range full.basic {
		if b.x <= 1e-12 {
			continue
		}
		if k == 2 {
			return 0, false
		}
		ps, t := s.columnAt(b.col)
		if t == nil {
			return 0, false
		}
		types[k], pools[k], xs[k] = t, ps, b.x
		k++
	}
	if k == 0 {
		return 0, false
	}
	nd := s.dims.n()
	sc := &s.split
	sc.reqs, sc.n, sc.idx = sc.reqs[:0], sc.n[:0], sc.idx[:0]
	step := make([]int64, nd)
	demand := make([]float64, nd)
	for c, l := range s.placedLevels() {
		for j, t := range types[:k] {
			cp := l.pools[pools[j].idx]
			if !cp.ok || !cp.types.has(t.idx) || !c.req.le(t.net) {
				return 0, false
			}
		}
		addPods(demand, step, c.req, c.placed())
		sc.idx = append(sc.idx, len(sc.n))
		sc.reqs = append(sc.reqs, c.req)
		sc.n = append(sc.n, float64(c.placed()))
	}
	room := func(t *ptype) []float64 {
		out := make([]float64, nd)
		for r, v := range t.net {
			out[r] = float64(max(wholePods(v, step[r]), 0))
		}
		return out
	}
	// nodes is how many nodes of room hold v (fractional).
	nodes := func(v, room []float64) float64 {
		n := 0.0
		for r := range v {
			if v[r] > 1e-9 {
				if room[r] <= 0 {
					return math.Inf(1)
				}
				n = max(n, v[r]/room[r])
			}
		}
		return n
	}
	a := room(types[0])
	if k == 1 {
		return nodes(demand, a) * types[0].minPrice, true
	}
	b := room(types[1])
	cpu, mem := s.dims.index[corev1.ResourceCPU], s.dims.index[corev1.ResourceMemory]
	perCPU := func(i int) float64 {
		if r := sc.reqs[i]; r[cpu] > 0 {
			return float64(r[mem]) / float64(r[cpu])
		}
		return math.Inf(1)
	}
	slices.SortStableFunc(sc.idx, func(i, j int) int { return cmp.Compare(perCPU(i), perCPU(j)) })
	cpuA := min(demand[cpu], xs[0]*a[cpu])
	// take sums the requests of the classes in order until their CPU is
	// cpuA (the last one in part).
	take := func(from, to, dir int) []float64 {
		v := make([]float64, nd)
		left := cpuA
		for p := from; p != to && left > 0; p += dir {
			i := sc.idx[p]
			req, n := sc.reqs[i], sc.n[i]
			if c := float64(req[cpu]) * n; c > left {
				n = left / float64(req[cpu])
			}
			for r, x := range req {
				v[r] += float64(max(x, 0)) * n
			}
			left -= float64(req[cpu]) * n
		}
		return v
	}
	lo := take(0, len(sc.idx), 1)
	hi := take(len(sc.idx)-1, -1, -1)
	lam := 0.0
	if want := xs[0] * a[mem]; hi[mem] > lo[mem] {
		lam = min(1, max(0, (want-lo[mem])/(hi[mem]-lo[mem])))
	}
	rest := make([]float64, nd)
	for r := range lo {
		lo[r] = (1-lam)*lo[r] + lam*hi[r]
		rest[r] = max(0, demand[r]-lo[r])
	}
	return nodes(lo, a)*types[0].minPrice + nodes(rest, b)*types[1].minPrice, true
}

// splitScratch is shapeSplit's, kept by the solver.
type splitScratch struct {
	reqs []vec
	n    []float64
	idx  []int
}

// columnAt is allColumns' column k as its pool and type.
func (s *solver) columnAt(k int) (*poolState, *ptype) {
	for _, ps := range s.pools {
		if !ps.ok {
			continue
		}
		if k < len(ps.types) {
			return ps, ps.types[k]
		}
		k -= len(ps.types)
	}
	return nil, nil
}

// placedLevels yields each class with pods placed and its last (most
// relaxed) level: what the bounds read of a class.
func (s *solver) placedLevels() iter.Seq2[*class, *level] {
	return func(yield func(*class, *level) bool) {
		for _, c := range s.classes {
			if c.placed() == 0 || len(c.levels) == 0 {
				continue
			}
			if !yield(c, c.levels[len(c.levels)-1]) {
				return
			}
		}
	}
}

// placed is how many of the class's pods are placed.
func (c *class) placed() int { return len(c.pods) - c.remaining }

// addPods adds n pods of requests req to total, and each requested
// resource's amount to step's greatest common divisor (whole pods).
func addPods(total []float64, step []int64, req vec, n int) {
	for r, v := range req {
		total[r] += float64(n) * float64(max(v, 0))
		if v > 0 {
			step[r] = gcd64(step[r], v)
		}
	}
}

// wholePods is room v of a resource rounded down to a multiple of step,
// the greatest common divisor of the pods' requests of it: what pods use
// of it is such a multiple.
func wholePods(v, step int64) int64 {
	if v > 0 && step > 1 {
		return v / step * step
	}
	return v
}
