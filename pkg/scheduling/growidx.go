package scheduling

import (
	"math"
	"slices"
)

// The growth index: while packing, the open new nodes ordered by an upper
// bound on the efficiency of their best upgrade for any pending class, so
// that bestGrowth looks at the few nodes that can win instead of every
// open node (at 50,000 pods: thousands of nodes at every growth step).
//
// Why a bound that ignores the class is enough. An upgrade's efficiency
// is (u(new) - u(cur)) / dp, u being usefulValue. With k copies of the
// class fitting (k no more than fit), the room left is worth
// V(free) - k·value(req), so u = min(V(free), k·value(req) + O), O being
// the worth of the other pending pods. Hence u(new) <= V(free new) and,
// while O is at least V(free cur) (the node's room at its type), u(cur)
// is V(free cur): the gain is at most value(new) - value(cur), what
// upgradeFor ranks types by. The types a class may upgrade a node to hold
// the node's pods and a pod of the class, so they are among those
// holding the pods and the smallest pending request; they cost at least
// the node's cheapest offering of them; so the best of those types over
// that price bounds every class's upgrade. The current type (and others
// at no added price) hold no pod of the class here: the packer fills
// paid room (fillPaid) before it grows, and for classes free of
// topology, in pools without minValues, it fills that room to the full
// (with host ports: one pod on every node with room and no conflict).
//
// When O falls below some node's room (the last pods), in pools with
// minValues, in the local search (price-capped splits; the index is on
// there only for regroup's rebuilds, which start one of their own:
// regroup.go placeIndexed) and under negative prices, bestGrowth scans
// every open node as before. Classes with topology use the index too (see
// fastUpgrades).
//
// The bounds are kept lazily: a node that changes is queued (growDirty)
// and its bound recomputed at the next query; bounds computed for a
// smaller minimum pending request stay valid (the minimum only grows
// while packing) and are tightened when they reach the top.

// growIdx is the heap of bounds and the queue of changed nodes.
type growIdx struct {
	h growHeap
	// room holds the worth of each node's room at its type (growItem.ub
	// is that worth there), to compare the largest with O.
	room   growHeap
	dirty  []int32
	queued []bool
	// min is the smallest pending request the bounds were computed for;
	// gen is s.minGen then.
	min vec
	gen uint32
	off bool // prices or pools rule the index out for this solve
	// groups are the nodes in the heap by shape (twins), grp each node's
	// group (nil: none, or a node alone in the heap after a hash collision).
	groups map[twinKey]*twinGroup
	grp    []*twinGroup
	// free are groups emptied, for new shapes (slabs.go).
	free []*twinGroup
	// popped, effs and cands are fastUpgrades' scratch; rest bounds the
	// efficiency of every node its last answer left out of its candidates
	// (-Inf: none), but for the candidates' twins.
	rest   float64
	popped []growItem
	effs   []float64
	cands  []*growth
	// paid is fillPaid's list of nodes with paid room (paidroom.go).
	paid paidRoom
	// unfilled are the new nodes the last fillPaid (of level unfilledFor)
	// left with room for a pod of its class at their type: topology
	// refused more there (see fastUpgrades). Any placement after that
	// fillPaid clears unfilledFor.
	unfilled    []*bin
	unfilledFor *level
	// ord is fillPaid's order of the nodes with room (paidorder.go).
	ord *paidOrder
}

type growItem struct {
	ub  float64
	id  int32
	ver uint32
	gen uint32
}

// growHeap is a max-heap by bound (ties: node order).
type growHeap = heapOf[growItem]

//lint:ignore U1000 called through heapOf's type constraint, which staticcheck does not follow
func (a growItem) before(b growItem) bool {
	if a.ub != b.ub {
		return a.ub > b.ub
	}
	return a.id < b.id
}

// growTie is bestGrowth's tolerance between two upgrades' efficiencies:
// closer than that, the smaller added price wins.
const growTie = 1e-3

// tieLow is the lowest efficiency that can still matter to bestGrowth's
// sequential rule given the efficiencies found: from the best down, each
// next one within growTie of the one before. A node below that by more
// than growTie loses to every node above it, so it never takes part
// (neither beating them nor being beaten by them in a way they are not
// beaten otherwise): the scan over the nodes above picks the same node.
func tieLow(e []float64) float64 {
	sortDesc(e)
	low := e[0]
	for _, v := range e[1:] {
		if v < low*(1-growTie) {
			break
		}
		low = v
	}
	return low
}

// growDirty queues a changed node for the growth index (new nodes) and
// the list of nodes with paid room (paidroom.go).
func (s *solver) growDirty(b *bin) {
	g := s.gidx
	if g == nil {
		return
	}
	g.paid.paidDirty(b)
	if g.ord != nil {
		g.ord.queue(b)
	}
	g.unfilledFor = nil
	if b.node != nil {
		return
	}
	for len(g.queued) <= b.id {
		g.queued = append(g.queued, false)
	}
	if !g.queued[b.id] {
		g.queued[b.id] = true
		g.dirty = append(g.dirty, int32(b.id))
	}
}

// growIndexOff makes bestGrowth scan every node (tests compare).
var growIndexOff bool

// topoGrowIndexOff makes bestGrowth scan every node for classes with
// topology (tests compare).
var topoGrowIndexOff bool

// startGrowIndex turns the index on for packing.
func (s *solver) startGrowIndex() {
	g := &growIdx{off: growIndexOff}
	for _, p := range s.unitPrice {
		if p < 0 {
			g.off = true
		}
	}
	for _, ps := range s.pools {
		if len(ps.minValues) > 0 {
			g.off = true
		}
	}
	s.gidx = g
	for _, b := range s.bins {
		s.growDirty(b)
	}
}

// growBound is the upper bound of bin b's upgrade efficiency (-Inf: no
// type holds its pods and the smallest pending request; +Inf: one does
// at no added price).
func (s *solver) growBound(b *bin, minReq vec) float64 {
	if b.node != nil || len(b.entries) == 0 || b.typ < 0 {
		return math.Inf(-1)
	}
	if boundMemoOff || !s.boundStats.serves() {
		return s.growBoundOf(b, minReq)
	}
	h := shapeHash(b, s.unitPrice)
	for _, v := range minReq {
		h = (h ^ uint64(v)) * fnvPrime
	}
	if m := s.bounds[h]; m != nil && slices.Equal(m.min, minReq) && m.shape.matches(b, s.unitPrice) {
		s.boundStats.hits++
		return m.ub
	}
	s.boundStats.misses++
	ub := s.growBoundOf(b, minReq)
	if s.bounds == nil {
		s.bounds = map[uint64]*boundMemo{}
	}
	if _, taken := s.bounds[h]; !taken {
		m := s.newBoundMemo()
		*m = boundMemo{shape: s.shapeAt(b, s.unitPrice), min: s.copyVec(minReq), ub: ub}
		s.bounds[h] = m
	}
	return ub
}

// boundMemoOff makes growBound compute every bound (tests compare).
var boundMemoOff bool

// growBoundOf is growBound computed.
func (s *solver) growBoundOf(b *bin, minReq vec) float64 {
	ub := s.growBoundScan(b, minReq, true)
	if growBoundCheck != nil {
		growBoundCheck(ub, s.growBoundScan(b, minReq, false))
	}
	return ub
}

// growBoundCheck, when set, is handed each bound growBoundOf returns and
// the one of a scan of every type (tests compare).
var growBoundCheck func(cut, full float64)

// growBoundScan is growBoundOf's scan of the types, stopped at the
// efficiency ceiling when stop is set.
func (s *solver) growBoundScan(b *bin, minReq vec, stop bool) float64 {
	ps := b.pool
	curValue := ps.values[b.typ]
	need := b.used.clone()
	need.add(minReq)
	ub := math.Inf(-1)
	ceil := ps.upgradeCeil()
	// The types that may hold need, in list order (the others are
	// skipped below anyway; the ceiling only falls along the list, so
	// where one of them would have stopped the scan, the next type that
	// holds need does).
	walk := s.typesWalk(ps, s.searchList(b, nil), need, b.types, b.types)
	for {
		i, more := walk.next()
		if !more {
			break
		}
		if i == b.typ {
			continue
		}
		t := ps.types[i]
		// The list is cheapest first: once no later type can be worth
		// more (effCeil), ub is the bound.
		if ub >= 0 && stop {
			if num, den, ok := effCeil(ceil[i], t.minPrice, curValue, b.offer.price); ok && (num <= 0 || num*(1+1e-9) <= ub*den) {
				break
			}
		}
		if need[dimCPU] > t.net[dimCPU] || need[dimMemory] > t.net[dimMemory] || !need.le(t.net) || !b.types.has(i) || t.zoneMask&b.zoneMask == 0 || t.ctMask&b.ctMask == 0 {
			continue
		}
		o, ok := t.price(b.zoneMask, b.ctMask)
		if !ok {
			continue
		}
		dp := o.price - b.offer.price
		if dp <= 1e-12 {
			return math.Inf(1)
		}
		ub = math.Max(ub, math.Max(0, (ps.values[i]-curValue)/dp))
	}
	return ub
}

// growRefresh recomputes the queued nodes' bounds, or every node's when
// the smallest pending request fell (the local search put pods back).
func (s *solver) growRefresh() {
	g := s.gidx
	if g.min != nil {
		for i, v := range s.minPending {
			if v < g.min[i] {
				g.h, g.room = g.h[:0], g.room[:0]
				g.dirty = g.dirty[:0]
				for i := range g.queued {
					g.queued[i] = false
				}
				clear(g.groups)
				clear(g.grp)
				for _, b := range s.bins {
					s.growDirty(b)
				}
				break
			}
		}
	}
	if g.min == nil || g.gen != s.minGen {
		g.min = append(g.min[:0], s.minPending...)
		g.gen = s.minGen
	}
	for _, id := range g.dirty {
		g.queued[id] = false
		b := s.bins[id]
		s.leaveGroup(b)
		if ub := s.growBound(b, g.min); !math.IsInf(ub, -1) {
			if s.joinGroup(b) {
				g.h.push(growItem{ub: ub, id: id, ver: b.ver, gen: g.gen})
			}
			room := b.pool.values[b.typ] - s.valueOf(b.used)
			g.room.push(growItem{ub: room, id: id, ver: b.ver})
		}
	}
	g.dirty = g.dirty[:0]
	for len(g.room) > 0 && g.room[0].ver != s.bins[g.room[0].id].ver {
		g.room.pop()
	}
}

// fastUpgrades is bestGrowth's search of upgrades through the index: the
// upgrades of the nodes whose bound reaches the efficiencies that can
// matter (tieLow), in node order. ok is false when the index does not
// apply (see above); the caller then scans every open node.
//
// Classes with topology (spreads, pod affinity and anti-affinity, or
// members of such groups) read the same efficiencies: topology only says
// which nodes may take a pod (allowance), not what an upgrade is worth,
// so the bound holds for them too. Two things differ. Their paid room is
// not filled to the full (fillPaid places what topology allows): a node
// fillPaid left with room at its type for a pod of the class may have
// an upgrade to that same type, which the bound (over the other types)
// does not cover, so those nodes (unfilled) are asked directly. And a
// group's first node may be refused where a twin is not (twins have the
// same resources but not the same pods): the group's first node that
// topology accepts stands for it. Only terms keyed by hostname read a
// node's pods (and custom keys its pinned values); where the class has
// none (level.twinsAgree: its terms are by zone or capacity type, which
// twins share), the first node answers for the group as without
// topology. The walk it spares was most of mix's packing at 50,000 pods
// (3.7 million nodes asked, 140,000 walks: hostPort and zone-affinity
// classes refused by whole groups).
func (s *solver) fastUpgrades(l *level, want int, excluded []*bin) (cands []*growth, ok bool) {
	g := s.gidx
	if g == nil || g.off || s.priceCap > 0 || s.capPool != nil {
		return nil, false
	}
	topo := !noTopology(l)
	if topo && (topoGrowIndexOff || g.unfilledFor != l) {
		return nil, false
	}
	// O: the other pending pods' worth.
	other := 0.0
	for i, p := range s.unitPrice {
		if o := s.pending[i] - int64(want)*l.cls.req[i]; o > 0 {
			other += p * float64(o)
		}
	}
	s.growRefresh()
	if len(g.room) > 0 && other < g.room[0].ub*(1+1e-9)+1e-12 {
		return nil, false
	}
	popped := g.popped[:0]
	cands = g.cands[:0]
	effs := g.effs[:0]
	maxEff := math.Inf(-1)
	low := math.Inf(1)
	fresh := false // effs below low came since tieLow
	defer func() {
		for _, it := range popped {
			g.h.push(it)
		}
		g.popped, g.cands, g.effs = popped[:0], cands[:0], effs[:0]
	}()
	add := func(u *growth) bool {
		if math.IsInf(u.eff, 0) || math.IsNaN(u.eff) {
			return false
		}
		cands = append(cands, u)
		effs = append(effs, u.eff)
		if u.eff > maxEff {
			maxEff, low = u.eff, u.eff
		} else if u.eff < low {
			fresh = true
		}
		return true
	}
	// accepts: a node topology accepts, not excluded.
	accepts := func(n *bin) bool {
		return !sliceHas(excluded, n) && s.allowance(l, n, 1, anyType).k > 0
	}
	if topo {
		for _, b := range g.unfilled {
			cp := l.pools[b.pool.idx]
			if !cp.ok || !accepts(b) {
				continue
			}
			if u := s.upgradeCached(l, b, cp, want); u != nil && !add(u) {
				return nil, false
			}
		}
	}
	for len(g.h) > 0 {
		top := g.h[0]
		b := s.bins[top.id]
		if top.ver != b.ver || !g.leads(b) {
			g.h.pop() // stale: the node changed and was queued again, or another node leads its group
			continue
		}
		if top.gen != g.gen {
			g.h.pop()
			if ub := s.growBound(b, g.min); !math.IsInf(ub, -1) {
				g.h.push(growItem{ub: ub, id: top.id, ver: b.ver, gen: g.gen})
			} else {
				g.dropGroup(b)
			}
			continue
		}
		if maxEff > 0 && top.ub < low*(1-2*growTie) {
			if fresh {
				low, fresh = tieLow(effs), false
			}
			if top.ub < low*(1-2*growTie) {
				break
			}
		}
		g.h.pop()
		popped = append(popped, top)
		cp := l.pools[b.pool.idx]
		if !cp.ok {
			continue
		}
		if topo && (!l.twinsAgree || twinsAgreeOff) {
			// The group's first node topology accepts (and not
			// excluded) stands for it.
			b = g.firstWith(b, s.bins, accepts)
			if b == nil {
				continue
			}
		} else {
			// Without topology, or with only what twins share
			// (level.twinsAgree), allowance answers the group's nodes
			// alike: its first node not excluded stands for it.
			if sliceHas(excluded, b) {
				b = g.firstNotIn(b, s.bins, excluded)
				if b == nil {
					continue
				}
			}
			if s.allowance(l, b, 1, anyType).k == 0 {
				if twinsAgreeCheck != nil && topo {
					twinsAgreeCheck(g.firstWith(b, s.bins, accepts) == nil)
				}
				continue
			}
		}
		u := s.upgradeCached(l, b, cp, want)
		if u == nil {
			continue
		}
		if !add(u) {
			return nil, false
		}
	}
	// What the candidates leave out is bounded by the first bound left
	// in the heap (growth chains read it: growchain.go).
	g.rest = math.Inf(-1)
	if len(g.h) > 0 {
		g.rest = g.h[0].ub
	}
	sortByNode(cands)
	// A node both unfilled and in the heap: the same upgrade twice.
	cands = slices.CompactFunc(cands, func(a, b *growth) bool { return a.b == b.b })
	return cands, true
}

// twinsAgreeOff makes fastUpgrades walk a twin group for a node
// topology accepts even for levels whose topology twins share (tests
// compare); twinsAgreeCheck, when set, is told for each group refused
// by its first node whether a walk of the group refused it too.
var (
	twinsAgreeOff   bool
	twinsAgreeCheck func(agreed bool)
)

func sliceHas(bs []*bin, b *bin) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// noTopology tells whether a level's pods have no topology constraints
// (host ports they may have: allowance rules out nodes with a conflict,
// and fillPaid fills every node without one that has room).
func noTopology(l *level) bool {
	c := l.cls
	return len(l.anti) == 0 && len(l.aff) == 0 && len(l.spreads) == 0 && len(c.invAnti) == 0 && len(c.memberOf) == 0
}

// twinKey is what upgradeFor and allowance read of a node, its
// resources, types and host ports hashed (equal nodes have them equal in
// the same order).
type twinKey struct {
	pool, typ     int
	zones, cts    uint64
	labelCut      bool
	custom        *reqs
	usedH, typesH uint64
	portsH        uint64
	ports         int
}

// twinGroup is the nodes of one shape (twinKey, with equal resources
// and types) in the heap, by id. Such nodes have the same bound, upgrade,
// efficiency and added price, so only the first can win bestGrowth's rule
// (a later equal one never beats it): the heap holds one item per group,
// for its first node. gpu at 50,000 pods has thousands of equal nodes,
// which the search popped and skipped at every growth step.
type twinGroup struct {
	key twinKey
	ids []int32 // ascending
}

// keyOf is b's twinKey.
func keyOf(b *bin) twinKey {
	k := twinKey{pool: b.pool.idx, typ: b.typ, zones: b.zoneMask, cts: b.ctMask, labelCut: b.labelCut, custom: b.custom}
	h := uint64(14695981039346656037)
	for _, v := range b.used {
		h = (h ^ uint64(v)) * 1099511628211
	}
	k.usedH = h
	for _, w := range b.types {
		h = (h ^ w) * 1099511628211
	}
	k.typesH = h
	for _, p := range b.ports {
		h = (h ^ uint64(p.port)) * 1099511628211
	}
	k.portsH, k.ports = h, len(b.ports)
	return k
}

// joinGroup puts b (just given a bound) in its shape's group and tells
// whether b now leads it, so the heap needs an item for b. A node whose
// key is taken by a group of another shape (hash collision) stays alone.
func (s *solver) joinGroup(b *bin) bool {
	g := s.gidx
	k := keyOf(b)
	if g.groups == nil {
		g.groups = map[twinKey]*twinGroup{}
	}
	grp, ok := g.groups[k]
	if !ok {
		grp = g.newGroup(k)
		g.groups[k] = grp
	} else if o := s.bins[grp.ids[0]]; !slices.Equal(o.used, b.used) || !slices.Equal(o.types, b.types) || !slices.Equal(o.ports, b.ports) {
		return true
	}
	id := int32(b.id)
	at, _ := slices.BinarySearch(grp.ids, id)
	grp.ids = slices.Insert(grp.ids, at, id)
	for len(g.grp) <= b.id {
		g.grp = append(g.grp, nil)
	}
	g.grp[b.id] = grp
	return at == 0
}

// leaveGroup takes a changed node out of its group; when it led the
// group, the next node leads and gets the heap item.
func (s *solver) leaveGroup(b *bin) {
	g := s.gidx
	if b.id >= len(g.grp) || g.grp[b.id] == nil {
		return
	}
	grp := g.grp[b.id]
	g.grp[b.id] = nil
	at, _ := slices.BinarySearch(grp.ids, int32(b.id))
	grp.ids = slices.Delete(grp.ids, at, at+1)
	if len(grp.ids) == 0 {
		g.deleteGroup(grp)
		return
	}
	if at == 0 {
		n := s.bins[grp.ids[0]]
		if ub := s.growBound(n, g.min); !math.IsInf(ub, -1) {
			g.h.push(growItem{ub: ub, id: int32(n.id), ver: n.ver, gen: g.gen})
		} else {
			g.dropGroupOf(grp)
		}
	}
}

// twins tells whether b stands in the heap for other nodes of its shape.
func (g *growIdx) twins(b *bin) bool {
	return b.id < len(g.grp) && g.grp[b.id] != nil && len(g.grp[b.id].ids) > 1
}

// leads tells whether b is first in its group (or alone).
func (g *growIdx) leads(b *bin) bool {
	return b.id >= len(g.grp) || g.grp[b.id] == nil || g.grp[b.id].ids[0] == int32(b.id)
}

// dropGroup forgets b's group: its nodes have no upgrade left for any
// pending class (their bound fell to -Inf); each comes back when it
// changes.
func (g *growIdx) dropGroup(b *bin) {
	if b.id < len(g.grp) && g.grp[b.id] != nil {
		g.dropGroupOf(g.grp[b.id])
	}
}

func (g *growIdx) dropGroupOf(grp *twinGroup) {
	for _, id := range grp.ids {
		g.grp[id] = nil
	}
	g.deleteGroup(grp)
}

// firstWith is the first node of b's group (b alone: b) that ok accepts,
// nil if none.
func (g *growIdx) firstWith(b *bin, bins []*bin, ok func(*bin) bool) *bin {
	if b.id >= len(g.grp) || g.grp[b.id] == nil {
		if ok(b) {
			return b
		}
		return nil
	}
	for _, id := range g.grp[b.id].ids {
		if n := bins[id]; ok(n) {
			return n
		}
	}
	return nil
}

// firstNotIn is the first node of b's group not among excluded (b itself
// when alone and not excluded), nil if none.
func (g *growIdx) firstNotIn(b *bin, bins []*bin, excluded []*bin) *bin {
	if b.id >= len(g.grp) || g.grp[b.id] == nil {
		return nil // alone, and excluded
	}
	for _, id := range g.grp[b.id].ids {
		if n := bins[id]; !sliceHas(excluded, n) {
			return n
		}
	}
	return nil
}
