package scheduling

import (
	"cmp"
	"math"
	"slices"
)

// Rebalance: each pool's nodes of free pods packed again the balanced
// way, before the local search (kept only when that brings the plan
// within the near-bound stop, which then ends the search) and after it
// (kept when cheaper than where the search ended).
//
// The packer takes classes biggest first and grows each node by the
// upgrade worth the most per dollar, counting the room the pending pods
// could use. On a workload of many pod shapes that room is not used: the
// CPU-heavy pods come first and fill a big node's CPU (many-shapes at 299
// pods, seed 1: an m6a.48xlarge at 100 % of its CPU and 55 % of its
// memory), so the memory-heavy pods that come last find no CPU beside
// that memory and open small nodes of their own, half their CPU idle. The
// packed plan is 7-12 % over the bound, and the local search spent most
// of a small solve's time (3-6 ms at 299 pods) bringing it to 1-3 %.
//
// Packed the balanced way instead, node by node: for each type of the
// pool's frontier, the node a balanced choice of the pods left would make
// of it (balancedFill: each pod the one whose requests best match the
// room left, resource by resource), and the type whose fill is worth the
// most per dollar of its price (bestFillType). The fill, not the type's
// allocatable (what packBalanced, the refill's, goes by), is what a type
// is judged by: an m node's memory is worth its price only where pods can
// fill it beside its CPU, which the fill finds out and the allocatable
// does not. many-shapes at 299 pods, seeds 1-4: 0.4-0.5 % over the bound,
// cheaper than where the whole local search had ended (1.2-2.3 %).
//
// The packing is priced first without touching the plan
// (balancedEstimate, each node at the cheapest type holding its fill) and
// made only when that price passes (replayBalanced opens the nodes the
// estimate chose); every node is then right-sized, and tryRebuildBy keeps
// it or puts the plan back. It works on the nodes of free pods (no
// topology, no host ports: they can be packed again without looking at
// anybody else) a pool at a time, where rebuilds may run at all
// (rebuildable: no pool limits or minValues, no negative prices), and
// only on pools whose nodes hold at most rebalanceMaxPods pods.

// rebalanceOff turns the step off (tests compare).
var rebalanceOff bool

// rebalanceMaxPods is the most pods a pool's nodes may hold for the step
// to pack them again. Each node it opens searches the frontier's fills
// over every class left, so its cost grows faster than the plan (many-
// shapes: 13 ms for the estimate at 2,000 pods, 117 ms at 5,000, 4.1 s
// at 20,000), and past a few thousand pods it fills small types exactly
// and opens ever more nodes (301 where the packer opens 43 at 5,000
// pods). The local search's rebuilds, of a few nodes each, keep their
// bounded cost there.
const rebalanceMaxPods = 1000

// podsOn counts the pods on nodes.
func podsOn(bins []*bin) int {
	n := 0
	for _, b := range bins {
		for _, e := range b.entries {
			n += e.n
		}
	}
	return n
}

// rebalance packs each pool's nodes of free pods again the balanced way
// and keeps each pool's rebuild that makes the plan cheaper, or, atStop,
// that brings it within the near-bound stop; it tells whether one was
// kept. A pool's rebuild is priced first without touching the plan
// (balancedEstimate) and tried only when that price passes.
func (s *solver) rebalance(atStop bool) bool {
	if rebalanceOff || !s.rebuildable() {
		return false
	}
	cand := s.freeBins(false)
	improved := false
	sc := &s.balanceBuf
	for _, ps := range s.pools {
		group := sc.group[:0]
		for _, b := range cand {
			if b.pool == ps {
				group = append(group, b)
			}
		}
		sc.group = group[:0]
		if len(group) < 2 || podsOn(group) > rebalanceMaxPods {
			continue
		}
		limit := groupPrice(group[0], group[1:])
		if atStop {
			// The whole-node search may raise the bound for a plan
			// within intReach of the stop (nearBound).
			limit = min(limit, s.stopPrice*(1+intReach)-(s.newPrice()-limit))
		}
		if s.balancedEstimate(group, ps, limit-1e-9) >= limit-1e-9 {
			continue
		}
		if s.tryRebuildBy(group, func(work []removed) bool {
			return s.placeBalanced(work, ps) && (!atStop || s.nearBound())
		}) {
			improved = true
		}
	}
	return improved
}

// balancedEstimate prices packing the pods of group again the balanced
// way on new nodes of ps, node by node of the type bestFillType chooses,
// each at the cheapest type holding its fill, without touching the plan; +Inf
// when the pods share no zone or capacity type (a fill would mix pods
// pinned apart) or some pod finds no type. It stops once the price
// reaches limit and returns the price so far.
func (s *solver) balancedEstimate(group []*bin, ps *poolState, limit float64) float64 {
	sc := &s.balanceBuf
	ls, counts := sc.ls[:0], sc.counts[:0]
	defer func() { sc.ls, sc.counts = ls[:0], counts[:0] }()
	zones, cts := ^uint64(0), ^uint64(0)
	for _, b := range group {
		for _, e := range b.entries {
			if i := slices.Index(ls, e.l); i >= 0 {
				counts[i] += e.n
				continue
			}
			cp := e.l.pools[ps.idx]
			zones &= cp.zoneMask
			cts &= cp.ctMask
			ls = append(ls, e.l)
			counts = append(counts, e.n)
		}
	}
	if zones == 0 || cts == 0 {
		return math.Inf(1)
	}
	// In class order, as a rebuild's work is.
	sc.order = sortLevels(ls, counts, sc.order)
	sc.plan, sc.sels = sc.plan[:0], sc.sels[:0]
	sc.memo.reset(len(ps.types), len(ls))
	sc.fill.dom.prepare(ls)
	sc.planLs = append(sc.planLs[:0], ls...)
	total := 0.0
	for total < limit {
		allowed, ok := typesAllowing(ps, ls, counts, sc.allowed)
		sc.allowed = allowed
		if !ok {
			return total
		}
		best, sel := s.bestFillType(ps, allowed, ls, counts, &sc.memo)
		if best < 0 {
			return math.Inf(1)
		}
		sc.plan = append(sc.plan, best)
		sc.sels = append(sc.sels, sel...)
		var price float64
		price, sc.held = fillPrice(ps, ls, sel, sc.used, sc.held)
		total += price
		for i := range counts {
			counts[i] -= sel[i]
		}
	}
	return total
}

// fillPrice is the price of the cheapest type of ps holding the fill sel
// of levels ls, among the types all its pods allow, by its cheapest
// offering (+Inf for an empty fill or none holding it); used gets the
// fill's requests, and held, scratch that it returns, those types.
func fillPrice(ps *poolState, ls []*level, sel []int, used vec, held bitset) (float64, bitset) {
	clear(used)
	for i, l := range ls {
		used.addScaled(l.cls.req, int64(sel[i]))
	}
	held, ok := typesAllowing(ps, ls, sel, held)
	if !ok {
		return math.Inf(1), held
	}
	return ps.cheapestHolding(held, used), held
}

// typesAllowing is the types of ps that every level with pods in counts
// allows, in buf (scratch, returned); false when no level has pods.
func typesAllowing(ps *poolState, ls []*level, counts []int, buf bitset) (bitset, bool) {
	buf = buf[:0]
	first := true
	for i, l := range ls {
		if counts[i] == 0 {
			continue
		}
		if cp := l.pools[ps.idx]; first {
			buf = append(buf, cp.types...)
			first = false
		} else {
			buf.and(cp.types)
		}
	}
	return buf, !first
}

// cheapestHolding is the price of the cheapest type of ps among allowed
// that holds used, by its cheapest offering; +Inf when none does.
func (ps *poolState) cheapestHolding(allowed bitset, used vec) float64 {
	for i, t := range ps.types {
		if allowed.has(i) && used.le(t.net) {
			return t.minPrice
		}
	}
	return math.Inf(1)
}

// placeBalanced places a rebuild's work on new nodes of pool ps as
// balancedEstimate chose (replayBalanced), right-sizing each.
func (s *solver) placeBalanced(work []removed, ps *poolState) bool {
	ls, counts := levelsOf(work)
	if !s.replayBalanced(ls, counts, ps) {
		return false
	}
	for _, p := range s.jrPlaced {
		if p.b.node == nil && len(p.b.entries) > 0 {
			s.rightSize(p.b)
		}
	}
	return true
}

// replayBalanced opens the nodes balancedEstimate chose for these very
// levels (in the same order: a rebuild's work is in class order, and the
// estimate sorted its levels so), each with the fill it chose; it tells
// whether every pod found its place (a node may take fewer where an
// offering or the node's allowance says so, and the rebuild is then
// undone).
func (s *solver) replayBalanced(ls []*level, counts []int, ps *poolState) bool {
	sc := &s.balanceBuf
	if !slices.Equal(ls, sc.planLs) {
		return false
	}
	for k, typ := range sc.plan {
		if s.fillNode(ls, counts, sc.sels[k*len(ls):(k+1)*len(ls)], ps, typ) == nil {
			return false
		}
	}
	return !slices.ContainsFunc(counts, func(n int) bool { return n > 0 })
}

// bestFillType is the type of ps among allowed (its frontier) whose
// balanced fill with the pods left (counts) is worth the most per dollar
// of its price at the current prices, and that fill; -1 when no type
// takes a pod. A type's fill is worth no more than its allocatable capped
// at what is left (bestValueType's measure), so the types are filled in
// that measure's order and the search stops at the first whose measure
// is not above the best fill found; a fill that falls below the best
// found gives up early (fillAbove). Ties go to the type filled first.
// (Bounding a type's fill by its fill for the node before, as lazy greedy
// does, tried four times fewer fills but chose worse: the fills are not
// monotone, and the plans' gain over the packer's fell from 0.20 % to
// 0.08 % over the generated shapes.)
func (s *solver) bestFillType(ps *poolState, allowed bitset, ls []*level, counts []int, memo *fillMemo) (int, []int) {
	if allowed == nil {
		return -1, nil
	}
	sc := &s.balanceBuf
	if len(sc.used) != s.dims.n() {
		sc.used, sc.left = s.dims.zero(), s.dims.zero()
	}
	left, used := sc.left, sc.used
	clear(left)
	for i, l := range ls {
		left.addScaled(l.cls.req, int64(counts[i]))
	}
	sc.cand = sc.cand[:0]
	for _, i := range ps.frontier {
		t := ps.types[i]
		if !allowed.has(i) || t.minPrice <= 0 {
			continue
		}
		sc.cand = append(sc.cand, typeBound{i, s.cappedWorth(t, left)})
	}
	slices.SortStableFunc(sc.cand, func(a, b typeBound) int { return cmp.Compare(b.ub, a.ub) })
	dens := !densityOff && sc.dens.prepare(s, ls, counts)
	best, bestEff := -1, 0.0
	for _, c := range sc.cand {
		if best >= 0 && c.ub <= bestEff {
			break
		}
		t := ps.types[c.typ]
		sel := memo.get(c.typ, counts)
		if sel == nil {
			// A type no fill of which can beat the best is not filled.
			if best >= 0 && dens && sc.dens.worth(t.net)/t.minPrice <= bestEff {
				continue
			}
			if memo != nil {
				memo.fills++
			}
			if best < 0 {
				sel = sc.fill.fill(ls, counts, t.net)
			} else if sel = sc.fill.fillAbove(ls, counts, t.net, s.unitPrice, bestEff*t.minPrice); sel == nil {
				continue
			}
			sel = memo.put(c.typ, sel)
		}
		clear(used)
		n := 0
		for k, l := range ls {
			used.addScaled(l.cls.req, int64(sel[k]))
			n += sel[k]
		}
		if n == 0 {
			continue
		}
		if eff := s.valueOf(used) / t.minPrice; best < 0 || eff > bestEff {
			best, bestEff = c.typ, eff
			sc.best = append(sc.best[:0], sel...)
		}
	}
	return best, sc.best
}

// densityOff makes bestFillType fill every type its capped allocatable
// lets through (tests compare).
var densityOff bool

// densityBound bounds what a fill of a type can be worth, resource by
// resource: the pods a node holds use at most its room of each resource
// r, so they are worth at most the best fractional choice of the pods
// left whose r fits that room, the pods of most worth per unit of r
// first (a fractional knapsack: pods using none of r come in whole).
// The least of these over the priced resources bounds a fill where the
// capped allocatable (cappedWorth) counts a memory-rich type's memory in
// full though the pods left cannot fill it beside its CPU (few-big at
// 200-299 pods: half the fills it let through are not made; many-shapes:
// a tenth). A level's worth is its class's value at the current prices
// (class.value), none below 0.
type densityBound struct {
	dims []densityDim
	// The orders are by level and prices: the estimate asks for node
	// after node with the same levels, fewer pods left each time.
	forLs    []*level
	forPrice *float64
}

// densityDim is one resource's knapsack: ord, the levels using it in
// order of worth per unit; for the pods left, cum (their use, summed),
// worth (their worth, summed) and per (each one's worth per unit), and
// free, the worth of the pods that do not use it.
type densityDim struct {
	d     int
	ord   []int
	free  float64
	cum   []float64
	worth []float64
	per   []float64
}

// prepare sets the bound up for the levels ls with counts pods left, at
// the current prices; false when no resource is priced. The orders are
// made once for the same levels and prices, the sums for every call.
func (db *densityBound) prepare(s *solver, ls []*level, counts []int) bool {
	if len(ls) == 0 || len(s.unitPrice) == 0 {
		return false
	}
	if !slices.Equal(db.forLs, ls) || db.forPrice != &s.unitPrice[0] {
		db.forLs, db.forPrice = append(db.forLs[:0], ls...), &s.unitPrice[0]
		db.dims = db.dims[:0]
		for d, p := range s.unitPrice {
			if p <= 0 {
				continue
			}
			if cap(db.dims) > len(db.dims) {
				db.dims = db.dims[:len(db.dims)+1]
			} else {
				db.dims = append(db.dims, densityDim{})
			}
			dd := &db.dims[len(db.dims)-1]
			dd.d, dd.ord = d, dd.ord[:0]
			for i, l := range ls {
				if l.cls.req[d] > 0 {
					dd.ord = append(dd.ord, i)
				}
			}
			slices.SortStableFunc(dd.ord, func(a, b int) int {
				return cmp.Compare(levelWorth(ls[b])/float64(ls[b].cls.req[d]), levelWorth(ls[a])/float64(ls[a].cls.req[d]))
			})
		}
	}
	for i := range db.dims {
		dd := &db.dims[i]
		d := dd.d
		dd.free = 0
		for j, l := range ls {
			if l.cls.req[d] <= 0 {
				dd.free += levelWorth(l) * float64(counts[j])
			}
		}
		dd.cum, dd.worth, dd.per = dd.cum[:0], dd.worth[:0], dd.per[:0]
		c, w := 0.0, 0.0
		for _, j := range dd.ord {
			if counts[j] == 0 {
				continue
			}
			c += float64(ls[j].cls.req[d]) * float64(counts[j])
			w += levelWorth(ls[j]) * float64(counts[j])
			dd.cum = append(dd.cum, c)
			dd.worth = append(dd.worth, w)
			dd.per = append(dd.per, levelWorth(ls[j])/float64(ls[j].cls.req[d]))
		}
	}
	return len(db.dims) > 0
}

// levelWorth is what one pod of l is worth to densityBound: its class's
// value at the current prices, none below 0 (a pod worth less is left
// out of the best choice).
func levelWorth(l *level) float64 { return max(0, l.cls.value) }

// worth is the most a fill of room net can be worth (see densityBound).
func (db *densityBound) worth(net vec) float64 {
	best := math.Inf(1)
	for i := range db.dims {
		dd := &db.dims[i]
		room := float64(max(net[dd.d], 0))
		// k: how many of the ordered pods' classes fit whole.
		k, _ := slices.BinarySearch(dd.cum, room)
		if k < len(dd.cum) && dd.cum[k] == room {
			k++
		}
		v := dd.free
		if k > 0 {
			v += dd.worth[k-1]
			room -= dd.cum[k-1]
		}
		if k < len(dd.cum) {
			v += room * dd.per[k]
		}
		best = min(best, v)
	}
	return best
}

// typeBound is a type and the most its fill can be worth per dollar.
type typeBound struct {
	typ int
	ub  float64
}

// balanceScratch is bestFillType's buffers.
type balanceScratch struct {
	fill       fillScratch
	dens       densityBound
	used, left vec
	cand       []typeBound
	best       []int
	// balancedEstimate's and rebalance's
	ls      []*level
	counts  []int
	allowed bitset
	held    bitset
	order   []levelCount
	group   []*bin
	// balancedEstimate's nodes, for replayBalanced: each one's type
	// and fill (len(planLs) counts a node), over the levels planLs.
	plan   []int
	sels   []int
	planLs []*level
	memo   fillMemo
}

// fillMemo keeps, over the nodes of one balancedEstimate, each type's
// last balanced fill. The fill is the pod-by-pod greedy choice of the
// best scoring level (TestBalancedFillRunsAsPodByPod), and between two
// nodes the counts only fall: while a type's last fill still fits in the
// counts, every level it took from had, at each of its steps, as many
// pods as then, and a level that ran out since was never the choice
// after the point where it now runs out (else the fill would take more
// of it than it has): the greedy makes the same choices, so the fill is
// the same (TestFillMemoSameEstimates). few-big at 250 pods: one fill in
// ten made.
type fillMemo struct {
	slot  []int32 // by type: its fill's place in sel, -1 none
	sel   []int   // the fills, n counts each
	n     int
	hits  int // fills not made again (tests read it)
	fills int // fills begun (tests read it)
}

// reset readies the memo for types types over n levels, empty.
func (m *fillMemo) reset(types, n int) {
	m.n, m.hits, m.fills = n, 0, 0
	m.slot = m.slot[:0]
	for range types {
		m.slot = append(m.slot, -1)
	}
	m.sel = m.sel[:0]
}

// get is type typ's last fill when it fits in counts; nil otherwise (or
// on a nil memo).
func (m *fillMemo) get(typ int, counts []int) []int {
	if m == nil || fillMemoOff || m.slot[typ] < 0 {
		return nil
	}
	at := int(m.slot[typ]) * m.n
	sel := m.sel[at : at+m.n]
	for i, k := range sel {
		if k > counts[i] {
			return nil
		}
	}
	m.hits++
	return sel
}

// put keeps sel as type typ's fill and returns the kept copy (sel itself
// on a nil memo).
func (m *fillMemo) put(typ int, sel []int) []int {
	if m == nil {
		return sel
	}
	if m.slot[typ] < 0 {
		m.slot[typ] = int32(len(m.sel) / m.n)
		m.sel = append(m.sel, sel...)
	} else {
		at := int(m.slot[typ]) * m.n
		copy(m.sel[at:at+m.n], sel)
	}
	at := int(m.slot[typ]) * m.n
	return m.sel[at : at+m.n]
}

// fillMemoOff makes every fill be made again (tests compare).
var fillMemoOff bool

// levelsOf is a rebuild's work by level, in the order the levels first
// come, with each level's pods summed.
func levelsOf(work []removed) ([]*level, []int) {
	var ls []*level
	var counts []int
	for _, w := range work {
		if n := len(ls); n > 0 && ls[n-1] == w.l {
			counts[n-1] += w.n
		} else if i := slices.Index(ls, w.l); i >= 0 {
			counts[i] += w.n
		} else {
			ls = append(ls, w.l)
			counts = append(counts, w.n)
		}
	}
	return ls, counts
}
