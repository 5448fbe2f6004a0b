package scheduling

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// Refill: an exchange of pods between a lopsided node and a few others,
// the local search's last step (on small plans its first after the first
// round: refillFirst, solve.go). The packer fills a node biggest
// pods first, so a node may end full in one resource with much of
// another idle (a c node's CPU full with a fifth of its memory unused),
// while the pods that could use that idle room sit on other nodes,
// paying for it a second time (memory-heavy pods on r nodes). No drain
// finds it (the lopsided node has no room in its full resource) and no
// rebuild of a few nodes does (they are packed again the same way). Two
// halves of the workload planned apart fill their nodes differently and
// may not waste it, so the whole cost more than its halves.
//
// The step takes the pods of a lopsided node X and of a few other nodes
// off, fills a node of X's type again with a balanced choice of those
// pods (balancedFill: each pod the one whose requests best match the
// room left, resource by resource), and packs the rest alone at the
// prices of the LP for those pods: first as a rebuild does (placeIndexed,
// as rebuildAlone), and when that is not cheaper, node by node, each of
// the type worth the most per dollar for what is left, filled the same
// balanced way (packBalanced). Every node is right-sized, and the result
// is kept only when the plan got cheaper. The other nodes tried with X
// are the least utilised 2 and 4 free nodes of its pool and each of the
// other most lopsided nodes. It changes plans whose nodes mix pods of
// different memory per CPU (web-six, many-shapes; docs/scheduling.md).
//
// A try takes pods off, solves an LP, re-prices every node and packs
// again, and most tries find nothing; so a set is tried only when
// refillEstimate, the same refill priced without touching the plan (the
// rest packed as packBalanced would, at the current prices, knowing no
// other node's room; none when the pods share no zone and capacity type
// with x), is cheaper than the nodes it replaces. Over the
// halves test's 720 solves that gate let through 2% of the sets, and 96%
// of those made the plan cheaper; it misses the refills that gain from
// other nodes' room or from the rebuild's own LP prices.

// refillTop is how many of the most lopsided free nodes are tried, and
// refillRounds how many times the step starts again after a kept change.
const refillTop, refillRounds = 3, 3

// refill tries the exchanges; it tells whether any was kept.
func (s *solver) refill() bool {
	if !s.rebuildable() {
		return false
	}
	improved := false
	// tried are the groups tried this round: the sets of different x
	// overlap (the least utilised nodes with each lopsided one), and a
	// group met again in another order fares as it did (the plan is as
	// it was: every try of the round so far failed).
	var tried []refillKey
	for round := 0; round < refillRounds; round++ {
		// Nodes of free pods only (rebuildtopo.go).
		cand := s.freeBins(false)
		if len(cand) < 2 {
			break
		}
		top := s.lopsided(cand)
		kept := false
		tried = tried[:0] // a kept refill changed the plan
	tries:
		for _, x := range top {
			for _, set := range refillSets(x, cand, top) {
				if key, ok := refillKeyOf(x, set); ok && !refillTriedOff {
					if slices.Contains(tried, key) {
						continue
					}
					tried = append(tried, key)
				}
				if !s.canBalance(x, set) {
					continue
				}
				// Only when a refill priced without touching the plan
				// is cheaper than the nodes it replaces.
				limit := groupPrice(x, set) - 1e-9
				cut := limit
				if estimateCutOff {
					cut = math.Inf(1)
				}
				if s.refillEstimate(x, set, cut) >= limit {
					continue
				}
				if s.tryRefill(x, set, false) || s.tryRefill(x, set, true) {
					kept = true
					break tries
				}
			}
		}
		if !kept {
			break
		}
		improved = true
	}
	return improved
}

// refillTriedOff makes refill try again a group it tried in another
// order the same round; estimateCutOff makes refillEstimate price the
// whole refill after its cost reached the nodes' price (tests compare).
var refillTriedOff, estimateCutOff bool

// refillKey names a try whatever the order of its other nodes: x's id,
// then theirs ascending, -1 past the last.
type refillKey [5]int

// refillKeyOf is the key of refilling x with others; false when their
// order may change the try: more than 4 of them, or two levels of one
// class among the pods (a rebuild takes a class's levels in the order of
// the nodes holding them, and refillEstimate, fills and balancedFill
// break ties by that order). Otherwise the try sees the same levels in
// class order and the same counts either way.
func refillKeyOf(x *bin, others []*bin) (refillKey, bool) {
	var k refillKey
	if len(others) >= len(k) {
		return k, false
	}
	var buf [16]*level
	seen := buf[:0]
	for i := -1; i < len(others); i++ {
		b := x
		if i >= 0 {
			b = others[i]
		}
		for _, e := range b.entries {
			known := false
			for _, l := range seen {
				if l == e.l {
					known = true
					break
				}
				if l.cls == e.l.cls {
					return k, false
				}
			}
			if !known {
				seen = append(seen, e.l)
			}
		}
	}
	k[0] = x.id
	for i := range k[1:] {
		k[i+1] = -1
		if i < len(others) {
			k[i+1] = others[i].id
		}
	}
	slices.Sort(k[1 : 1+len(others)])
	return k, true
}

// refillSets are the nodes tried with x, all of x's pool: the least
// utilised 2 and 4 free nodes (cand is least utilised first), and each
// other lopsided node alone and with the least utilised 2; no set twice
// in a row.
func refillSets(x *bin, cand, top []*bin) [][]*bin {
	var tail []*bin
	for _, b := range cand {
		if b != x && b.pool == x.pool && len(tail) < 4 {
			tail = append(tail, b)
		}
	}
	sets := [][]*bin{tail[:min(2, len(tail))]}
	if len(tail) > 2 {
		sets = append(sets, tail)
	}
	for _, y := range top {
		if y == x || y.pool != x.pool {
			continue
		}
		sets = append(sets, []*bin{y})
		with := []*bin{y}
		for _, b := range tail {
			if b != y && len(with) < 3 {
				with = append(with, b)
			}
		}
		sets = append(sets, with)
	}
	out := sets[:1]
	for _, set := range sets[1:] {
		if !sameBins(out[len(out)-1], set) {
			out = append(out, set)
		}
	}
	return out
}

// lopsided are the refillTop nodes of cand with the most room idle in
// one resource while another is full: price × (the highest fill − the
// lowest), of CPU and memory; only nodes at least 1% lopsided.
func (s *solver) lopsided(cand []*bin) []*bin {
	type scored struct {
		b *bin
		v float64
	}
	var out []scored
	for _, b := range cand {
		net := b.pool.types[b.typ].net
		if net[dimCPU] <= 0 || net[dimMemory] <= 0 {
			continue
		}
		fc := float64(b.used[dimCPU]) / float64(net[dimCPU])
		fm := float64(b.used[dimMemory]) / float64(net[dimMemory])
		d := fc - fm
		if d < 0 {
			d = -d
		}
		if d >= 0.01 {
			out = append(out, scored{b, d * b.offer.price})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].v > out[j].v })
	if len(out) > refillTop {
		out = out[:refillTop]
	}
	bins := make([]*bin, len(out))
	for i, o := range out {
		bins[i] = o.b
	}
	return bins
}

// canBalance tells whether some pod of others asks more of x's idle
// resource (CPU or memory, the one x has filled less of) per unit of
// the other than x's pods do on average: only such a pod can fill x
// more evenly (without one, a refill is only a rebuild of the group,
// which the earlier steps tried).
func (s *solver) canBalance(x *bin, others []*bin) bool {
	net := x.pool.types[x.typ].net
	idle, full := dimMemory, dimCPU
	if float64(x.used[dimCPU])/float64(net[dimCPU]) < float64(x.used[dimMemory])/float64(net[dimMemory]) {
		idle, full = dimCPU, dimMemory
	}
	for _, b := range others {
		for _, e := range b.entries {
			r := e.l.cls.req
			// r[idle]/r[full] > used[idle]/used[full], without dividing.
			if float64(r[idle])*float64(x.used[full]) > float64(x.used[idle])*float64(r[full]) {
				return true
			}
		}
	}
	return false
}

// tryRefill rebuilds x and others: a node of x's type (pool, type)
// filled with a balanced choice of their pods, the rest packed alone.
func (s *solver) tryRefill(x *bin, others []*bin, balanced bool) bool {
	for _, b := range others {
		if len(b.entries) == 0 {
			return false
		}
	}
	ps, typ := x.pool, x.typ
	group := append([]*bin{x}, others...)
	return s.tryRebuildBy(group, func(work []removed) bool {
		// The pods by level, in class order (work's).
		ls, counts := levelsOf(work)
		b := s.fillNode(ls, counts, balancedFill(ls, counts, ps.types[typ].net), ps, typ)
		var rest []removed
		demand := make([]float64, s.dims.n())
		for i, l := range ls {
			if counts[i] > 0 {
				rest = append(rest, removed{l: l, n: counts[i]})
				for d, v := range l.cls.req {
					demand[d] += float64(v) * float64(counts[i])
				}
			}
		}
		ok := true
		if len(rest) > 0 {
			// The refilled node keeps its type while the rest is packed:
			// its room left may be filled, but it must not grow into the
			// node it was refilled to avoid.
			var types bitset
			if b != nil {
				types = b.types
				b.types = newBitset(len(ps.types))
				b.types.set(typ)
				s.changed(b)
			}
			_, y := solveCover(s.allColumns(), demand)
			s.setPrices(y)
			if balanced {
				ok = s.packBalanced(ls, counts, ps)
			} else {
				ok = s.placeIndexed(rest)
			}
			s.restorePrices()
			if b != nil {
				for _, e := range b.entries {
					types.and(e.l.pools[ps.idx].types)
				}
				b.types = types
				s.changed(b)
			}
		}
		if ok {
			for _, p := range s.jrPlaced {
				if p.b.node == nil && len(p.b.entries) > 0 {
					s.rightSize(p.b)
				}
			}
		}
		return ok
	})
}

// balancedFill chooses how many pods of each level (counts available)
// one node of allocatable net takes: pod by pod, among those that still
// fit, the one whose requests, each resource a share of net, have the
// largest dot product with the room left (also in shares), so that the
// node fills in every resource together.
//
// It takes the pods in runs: when a level wins, the scores every level
// would have after k more of its pods are linear in k, so the run lasts
// while the winner stays ahead of every other level that fits now by a
// margin far above rounding (levels that do not fit never fit again),
// and the next choice is scored afresh. The choices are those of one
// pod at a time (TestBalancedFillRunsAsPodByPod), at a cost per run, not
// per pod: a node of 200 small pods is a few runs.
func balancedFill(ls []*level, counts []int, net vec) []int {
	return new(fillScratch).fill(ls, counts, net)
}

// fillScratch is balancedFill's buffers, for a caller that fills many
// nodes (refillEstimate).
type fillScratch struct {
	sel    []int
	room   vec
	inv    []float64
	scores []float64
	act    []int32 // the levels in the running (fill)
	reqs   []vec   // their requests
	left   vec     // their pods' requests not taken (fillAbove)
	dom    levelDom
}

// fill is balancedFill with f's buffers; the answer is f's too, good
// until the next fill.
func (f *fillScratch) fill(ls []*level, counts []int, net vec) []int {
	return f.fillAbove(ls, counts, net, nil, 0)
}

// fillAbove is fill that gives up (nil) once the fill cannot be worth
// more than floor at prices (none when prices is nil): what it holds plus
// the room left, capped per resource at what the levels still in the
// running could put there, falls as levels drop out, and is the fill's
// worth at its end (bestFillType's losers stop early).
func (f *fillScratch) fillAbove(ls []*level, counts []int, net vec, prices []float64, floor float64) []int {
	f.sel = append(f.sel[:0], make([]int, len(ls))...)
	f.room = append(f.room[:0], net...)
	f.inv = append(f.inv[:0], make([]float64, len(net))...)
	f.scores = append(f.scores[:0], make([]float64, len(ls))...)
	sel, room, inv, scores := f.sel, f.room, f.inv, f.scores
	for d, v := range net {
		if v > 0 {
			inv[d] = 1 / (float64(v) * float64(v))
		}
	}
	// The levels still in the running, with their requests: a level
	// used up or that no longer fits never comes back (the room only
	// shrinks), so each run scores only the others (gpu at 2,000 pods
	// fills nodes from lists of hundreds of classes, most of them out
	// after the first runs). With covers (levelDom), a level joins only
	// once its cover is out.
	act, reqs := f.act[:0], f.reqs[:0]
	// left: the requests of the pods of the levels in the running not
	// taken yet (kept only for a cut).
	left := f.left
	if prices != nil {
		f.left = append(f.left[:0], make(vec, len(net))...)
		left = f.left
	}
	dom := f.dom.of(ls)
	for i, l := range ls {
		if prices != nil && counts[i] > 0 {
			left.addScaled(l.cls.req, int64(counts[i]))
		}
		// Without covers, the levels with pods; with them, every level
		// no other covers (one with no pods goes out at once, and those
		// it covers join).
		if dom == nil && counts[i] > 0 || dom != nil && dom.dom[i] < 0 {
			act = append(act, int32(i))
			reqs = append(reqs, l.cls.req)
		}
	}
	defer func() { f.act, f.reqs = act[:0], reqs[:0] }()
	for {
		best, bestScore := -1, 0.0
		// Each level in the running is scored; a level used up or that
		// does not fit goes out for good (its pods left leave left), and
		// the levels it covers join at the end, to be scored this pass.
		n := 0
		for k := 0; k < len(act); k++ {
			i32, req := act[k], reqs[k]
			i := int(i32)
			if sel[i] < counts[i] {
				if score, fits := fillScore(req, room, inv); fits {
					act[n], reqs[n] = i32, req
					n++
					scores[i] = score
					if best < 0 || score > bestScore || (score == bestScore && i < best) {
						best, bestScore = i, score // ties to the first level
					}
					continue
				}
				if prices != nil {
					left.addScaled(req, -int64(counts[i]-sel[i]))
				}
			}
			if dom != nil {
				for _, j := range dom.kids(i) {
					act, reqs = append(act, j), append(reqs, ls[j].cls.req)
				}
			}
		}
		act, reqs = act[:n], reqs[:n]
		if best < 0 {
			return sel
		}
		if prices != nil {
			v := 0.0
			for d, p := range prices {
				v += p * float64(net[d]-room[d]+min(room[d], left[d]))
			}
			if v < floor-1e-12*math.Abs(floor) {
				return nil
			}
		}
		rb := ls[best].cls.req
		// k: how many of best in a row, at most what is left and fits.
		k := counts[best] - sel[best]
		for d, r := range rb {
			if r > 0 {
				k = min(k, int(room[d]/r))
			}
		}
		if k > 1 {
			// After j more pods of best, level i's score falls by j·g_i.
			gb := 0.0
			for d, r := range rb {
				gb += float64(r) * float64(r) * inv[d]
			}
			for k2, i32 := range act {
				i := int(i32)
				if i == best {
					continue
				}
				gi := 0.0
				for d, r := range reqs[k2] {
					gi += float64(r) * float64(rb[d]) * inv[d]
				}
				if gb <= gi {
					continue // best's lead never shrinks
				}
				lead := bestScore - scores[i] - 1e-9*(math.Abs(bestScore)+math.Abs(scores[i])+1e-9)
				if lead <= 0 {
					k = 1
					break
				}
				// best still wins after j pods while j·(gb−gi) < lead.
				if j := lead / (gb - gi); j < float64(k-1) {
					k = 1 + int(j)
				}
			}
		}
		sel[best] += k
		room.addScaled(rb, -int64(k))
		if prices != nil {
			left.addScaled(rb, -int64(k))
		}
	}
}

// fillScore is a level's score in room (requests req, each resource a
// share of the node's: inv), and whether it fits.
func fillScore(req, room vec, inv []float64) (float64, bool) {
	score := 0.0
	for d, r := range req {
		if r > room[d] {
			return 0, false
		}
		score += float64(r) * float64(room[d]) * inv[d]
	}
	return score, true
}

// refillScratch is refillEstimate's lists and vectors, reused.
type refillScratch struct {
	ls         []*level
	counts     []int
	order      []levelCount
	used, left vec
	allowed    bitset
	fill       fillScratch
}

// levelCount is n pods of level l.
type levelCount struct {
	l *level
	n int
}

// sortLevels sorts levels and their counts together in class order (a
// stable sort's order is the same whatever the algorithm), with order as
// scratch, which it returns.
func sortLevels(ls []*level, counts []int, order []levelCount) []levelCount {
	order = order[:0]
	for i, l := range ls {
		order = append(order, levelCount{l, counts[i]})
	}
	slices.SortStableFunc(order, func(a, b levelCount) int { return cmp.Compare(a.l.cls.idx, b.l.cls.idx) })
	for i, lc := range order {
		ls[i], counts[i] = lc.l, lc.n
	}
	return order
}

// sameBins tells whether two groups hold the same nodes in the same order.
func sameBins(a, b []*bin) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fillNode opens a node of pool ps and type typ holding sel[i] pods of
// each level ls[i] (as many as allowance lets it), taking them off
// counts and the pending requests; nil when it holds none.
func (s *solver) fillNode(ls []*level, counts, sel []int, ps *poolState, typ int) *bin {
	var b *bin
	for i, l := range ls {
		k := sel[i]
		if k == 0 {
			continue
		}
		var ch choice
		if b == nil {
			g, _ := s.newBinFor(l, ps, k)
			if g == nil {
				continue
			}
			ch = s.allowance(l, g.template, k, typ)
			if ch.k <= 0 {
				continue
			}
			g.typ, g.ch = typ, ch
			b = s.openBin(g)
		} else if ch = s.allowance(l, b, k, typ); ch.k <= 0 {
			continue
		}
		s.place(l, b, ch)
		s.pending.addScaled(l.cls.req, -int64(ch.k))
		counts[i] -= ch.k
	}
	return b
}

// packBalanced places the pods left (counts) on new nodes of pool ps,
// one at a time: the type whose allocatable, capped per resource at
// what is left to place, is worth the most per dollar at the current
// prices, filled by balancedFill.
func (s *solver) packBalanced(ls []*level, counts []int, ps *poolState) bool {
	var allowed bitset
	for i, l := range ls {
		if counts[i] > 0 {
			cp := l.pools[ps.idx]
			if !cp.ok || len(cp.types) == 0 {
				return false
			}
			if allowed == nil {
				allowed = cp.types.clone()
			} else {
				allowed.and(cp.types)
			}
		}
	}
	left := s.dims.zero()
	for {
		clear(left)
		for i, l := range ls {
			left.addScaled(l.cls.req, int64(counts[i]))
		}
		if !slices.ContainsFunc(counts, func(n int) bool { return n > 0 }) {
			return true
		}
		best := s.bestValueType(ps, allowed, left)
		if best < 0 {
			return false
		}
		sel := balancedFill(ls, counts, ps.types[best].net)
		b := s.fillNode(ls, counts, sel, ps, best)
		if b == nil {
			return false
		}
	}
}

// bestValueType is the frontier type of ps among allowed whose
// allocatable, capped per resource at left, is worth the most per dollar
// (its cheapest offering's) at the current prices; -1 when there is none
// (allowed nil: no type).
func (s *solver) bestValueType(ps *poolState, allowed bitset, left vec) int {
	if allowed == nil {
		return -1
	}
	best, bestEff := -1, 0.0
	for _, i := range ps.frontier {
		t := ps.types[i]
		if !allowed.has(i) || t.minPrice <= 0 {
			continue
		}
		if eff := s.cappedWorth(t, left); best < 0 || eff > bestEff {
			best, bestEff = i, eff
		}
	}
	return best
}

// cappedWorth is what t's allocatable, capped per resource at left, is
// worth per dollar of its cheapest offering at the current prices.
func (s *solver) cappedWorth(t *ptype, left vec) float64 {
	v := 0.0
	for d, p := range s.unitPrice {
		v += p * float64(min(t.net[d], left[d]))
	}
	return v / t.minPrice
}

// groupPrice is the price of x and others.
func groupPrice(x *bin, others []*bin) float64 {
	p := x.offer.price
	for _, b := range others {
		p += b.offer.price
	}
	return p
}

// refillEstimate prices refilling x with the pods of others without
// touching the plan: a node of x's type filled by balancedFill, the rest
// on new nodes of x's pool chosen and filled as packBalanced does at the
// current prices, each priced at the cheapest type (by its cheapest
// offering) holding what it got. It knows no other node's room, which the
// real refill may use; +Inf when some pod finds no type. It stops as
// soon as the price reaches limit (the refill cannot win then), and
// returns the price so far.
//
// Its lists and vectors are the solver's scratch (refillScratch): the
// refill pass prices every candidate set this way, and most are cut.
func (s *solver) refillEstimate(x *bin, others []*bin, limit float64) float64 {
	ps := x.pool
	sc := &s.refillBuf
	ls, counts := sc.ls[:0], sc.counts[:0]
	defer func() { sc.ls, sc.counts = ls[:0], counts[:0] }()
	zones, cts := x.zoneMask, x.ctMask
	add := func(b *bin) {
		for _, e := range b.entries {
			i := slices.Index(ls, e.l)
			if i < 0 {
				ls = append(ls, e.l)
				counts = append(counts, 0)
				i = len(ls) - 1
				cp := e.l.pools[ps.idx]
				zones &= cp.zoneMask
				cts &= cp.ctMask
			}
			counts[i] += e.n
		}
	}
	add(x)
	for _, b := range others {
		add(b)
	}
	if zones == 0 || cts == 0 {
		// Pods pinned apart (zonal volumes): the fill below would mix
		// them on one node.
		return math.Inf(1)
	}
	// In class order, as a rebuild's work is.
	sc.order = sortLevels(ls, counts, sc.order)
	if len(sc.used) != s.dims.n() {
		sc.used, sc.left = s.dims.zero(), s.dims.zero()
	}
	used, left := sc.used, sc.left
	var allowed bitset
	// and narrows allowed to cp's types (the first: a copy of them).
	and := func(cp *classPool) {
		if allowed == nil {
			allowed = append(sc.allowed[:0], cp.types...)
			sc.allowed = allowed
		} else {
			allowed.and(cp.types)
		}
	}
	// cheapest is the price of the cheapest type holding sel.
	cheapest := func(sel []int) float64 {
		p, held := fillPrice(ps, ls, sel, used, sc.allowed)
		sc.allowed, allowed = held, nil
		return p
	}
	sel := sc.fill.fill(ls, counts, ps.types[x.typ].net)
	total := cheapest(sel)
	if total >= limit {
		return total
	}
	for i := range counts {
		counts[i] -= sel[i]
	}
	for {
		clear(left)
		allowed = nil
		for i, l := range ls {
			if counts[i] > 0 {
				left.addScaled(l.cls.req, int64(counts[i]))
				and(l.pools[ps.idx])
			}
		}
		if allowed == nil {
			return total
		}
		best := s.bestValueType(ps, allowed, left)
		if best < 0 {
			return math.Inf(1)
		}
		sel = sc.fill.fill(ls, counts, ps.types[best].net)
		n := 0
		for i := range counts {
			counts[i] -= sel[i]
			n += sel[i]
		}
		if n == 0 {
			return math.Inf(1)
		}
		total += cheapest(sel)
		if total >= limit {
			return total
		}
	}
}
