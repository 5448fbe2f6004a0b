package scheduling

import (
	"slices"
	"sort"
)

// Regrouping: a step of the local search's second round (settle). The
// packer values types and pods at the dual prices of the LP for the
// whole workload, so every node is chosen for the average pod; a part of
// the workload planned alone gets its own prices and may choose other
// types (an m node for the memory-heavy pods where the whole fills c
// nodes' memory first).
// That is how two halves planned apart can cost less than the whole. So
// groups of nodes (the least utilised 2, 4, 8, ... and the nodes of each
// instance type) have their pods taken off and packed again at the prices
// of the LP for those pods alone, as if they came alone; a group's
// rebuild is kept only when the plan gets cheaper.

// regroupMax bounds the group sizes tried (nodes), so the step costs a
// few re-packs of a bounded number of nodes whatever the plan's size.
const regroupMax = 64

// regroupRounds bounds how many times the groups are tried again after
// a rebuild was kept (each kept one changes the least utilised nodes).
const regroupRounds = 4

// settle starts the local search's second round: every new node
// right-sized to the cheapest type holding its pods (as finish would),
// then the regrouping. It tells whether the plan changed; improve then
// runs again: judged at the nodes' final prices it finds drains, merges
// and rebuilds that the room bought for pods that went elsewhere had
// hidden. (Running it again always finds a little more, e.g. web-six at
// 2,000 pods $70.99 → $69.61/h, but doubles the local search's time on
// small inputs.)
func (s *solver) settle() bool {
	changed := false
	for _, b := range s.bins {
		if b.node == nil && len(b.entries) > 0 {
			was := b.typ
			s.rightSize(b)
			if b.typ != was {
				changed = true
			}
		}
	}
	if s.regroup() {
		changed = true
	}
	return changed
}

// rebuildable tells whether groups of nodes may be rebuilt at their own
// prices (regroup, refill): rebuilds take pods off nodes and pack them
// again, which pool limits (the other nodes' sizes count) and minValues
// (a node's type list) would make wrong, and the prices they value
// types at must not be negative.
func (s *solver) rebuildable() bool {
	if s.boundPools {
		return false
	}
	for _, p := range s.unitPrice {
		if p < 0 {
			return false
		}
	}
	return true
}

// poolsBound tells whether some pool has limits or minValues: what a
// node may become then depends on more than its own pods (the other
// nodes' sizes, a node's type list), which the rebuilds (rebuildable,
// tailSplit) and growth chains (growchain.go) cannot see. Asked once, in
// setup (s.boundPools).
func (s *solver) poolsBound() bool {
	for _, ps := range s.pools {
		if ps.hasLimits || len(ps.minValues) > 0 {
			return true
		}
	}
	return false
}

// regroupAllColumns makes rebuildAlone's LP take every pool's types
// (tests compare).
var regroupAllColumns bool

// regroup tries the groups; it tells whether any rebuild was kept
// (none when !rebuildable); the nodes must be right-sized (settle).
func (s *solver) regroup() bool {
	if !s.rebuildable() {
		return false
	}
	improved := false
	// The plan changes only when a round keeps a rebuild: whether it is
	// near the bound (nearbound.go) is asked once a round.
	for round := 0; round < regroupRounds && !s.nearBound(); round++ {
		cand := s.freeBins(false)
		if len(cand) < 2 {
			break
		}
		kept := false
		var groups [][]*bin
		for k := 2; ; k *= 2 {
			if k > len(cand) {
				k = len(cand)
			}
			groups = append(groups, cand[:k])
			if k == len(cand) || k >= regroupMax {
				break
			}
		}
		byType := map[*ptype][]*bin{}
		var types []*ptype
		for _, b := range cand {
			t := b.pool.types[b.typ]
			if len(byType[t]) == 0 {
				types = append(types, t)
			}
			if len(byType[t]) < regroupMax {
				byType[t] = append(byType[t], b)
			}
		}
		for _, t := range types {
			if g := byType[t]; len(g) >= 2 && len(g) < len(cand) {
				groups = append(groups, g)
			}
		}
		for _, g := range groups {
			if s.rebuildAlone(g) {
				kept, improved = true, true
				break
			}
		}
		if !kept {
			break
		}
	}
	return improved
}

// freeBins are the new nodes whose pods carry no constraint between pods
// or, when constrained (tailSplit), any but host ports (rebuildtopo.go),
// least utilised first.
func (s *solver) freeBins(constrained bool) []*bin {
	constrained = constrained && !rebuildTopoOff
	var cand []*bin
	for _, b := range s.bins {
		if b.node == nil && len(b.entries) > 0 && (constrained && !b.holdsPorts() || b.holdsOnlyFree()) {
			cand = append(cand, b)
		}
	}
	util := func(b *bin) float64 {
		if b.offer.price <= 0 {
			return 1
		}
		return s.valueOf(b.used) / b.offer.price
	}
	sort.SliceStable(cand, func(i, j int) bool { return util(cand[i]) < util(cand[j]) })
	return cand
}

// rebuildAlone is tryRebuild at the prices of the LP for the group's pods,
// over the types of the group's pools: the pods came from them, and an LP
// over every pool's types (a GPU pool's, a tainted pool's) prices the
// same demand with many more columns (mix at 250 pods: 7 % of a solve;
// same plans over every generated shape, TestRegroupPoolColumnsSamePlans
// and the 120-plan digest).
func (s *solver) rebuildAlone(group []*bin) bool {
	demand := make([]float64, s.dims.n())
	var pools []*poolState
	for _, b := range group {
		for i, v := range b.used {
			demand[i] += float64(v)
		}
		if !slices.Contains(pools, b.pool) {
			pools = append(pools, b.pool)
		}
	}
	cols := s.allColumns()
	okPools := 0
	for _, ps := range s.pools {
		if ps.ok {
			okPools++
		}
	}
	if !regroupAllColumns && len(pools) < okPools {
		cols = s.columns(func(ps *poolState, _ *ptype) bool { return slices.Contains(pools, ps) })
	}
	_, y := solveCover(cols, demand)
	s.setPrices(y)
	ok := s.tryRebuildBy(group, func(work []removed) bool {
		if !s.placeIndexed(work) {
			return false
		}
		for _, p := range s.jrPlaced {
			if p.b.node == nil && len(p.b.entries) > 0 {
				s.rightSize(p.b)
			}
		}
		return true
	})
	s.restorePrices()
	return ok
}

// setPrices makes y the prices the packer values types and pods at (pool
// types' values, classes' values; every node's cached upgrade answers are
// made stale) until restorePrices puts the old ones back. Calls nest:
// each setPrices is undone by the next restorePrices.
//
// The types' values and the saved ones are in buffers kept by depth of
// nesting (priceSave), not made afresh: the local search sets prices
// for every group it rebuilds alone, and a pool's values are one float
// per instance type. Only y is kept as it is (the memos by node shape
// keep the prices they were asked at: shapememo.go).
func (s *solver) setPrices(y []float64) {
	if len(s.priceSaves) == s.priceDepth {
		s.priceSaves = append(s.priceSaves, new(priceSave))
	}
	sv := s.priceSaves[s.priceDepth]
	s.priceDepth++
	sv.unit = s.unitPrice
	sv.values = sv.values[:0]
	sv.class = sv.class[:0]
	s.unitPrice = y
	for i, ps := range s.pools {
		sv.values = append(sv.values, ps.values)
		if len(sv.bufs) == i {
			sv.bufs = append(sv.bufs, make([]float64, len(ps.types)))
		}
		ps.setValues(sv.bufs[i])
		for k, t := range ps.types {
			ps.values[k] = s.valueOf(t.net)
		}
	}
	for _, c := range s.classes {
		sv.class = append(sv.class, c.value)
		c.value = s.valueOf(c.req)
	}
	s.pricesChanged()
}

// restorePrices puts back the prices of before the last setPrices.
func (s *solver) restorePrices() {
	s.priceDepth--
	sv := s.priceSaves[s.priceDepth]
	s.unitPrice = sv.unit
	for i, ps := range s.pools {
		ps.setValues(sv.values[i])
	}
	for i, c := range s.classes {
		c.value = sv.class[i]
	}
	s.pricesChanged()
}

// priceSave is what one setPrices replaced (unit, values by pool, class
// values by class), and bufs the pools' values at its prices.
type priceSave struct {
	unit   []float64
	values [][]float64
	class  []float64
	bufs   [][]float64
}

// pricesChanged gives every node a new version: b.ver+1 may be one b had
// at the old prices.
func (s *solver) pricesChanged() {
	for _, b := range s.bins {
		s.changed(b)
	}
}

// placeIndexed is placeWork with the growth index and the lists of
// nodes with paid room (growidx.go, paidroom.go) on, as while packing: a
// group's pods are pending as a workload of their own, and a rebuild at
// 10,000 pods otherwise scans every open node at every growth step. The
// index is made for the rebuild (the prices are the group's) and dropped
// before anything takes pods off a node. The group's classes count as
// pending (pendmin.go) until their last pods are placed, so the smallest
// pending request, which bounds the index and closes full nodes
// (live.go), covers what is still to place and only grows; the index
// gives the plans the scan gives (TestGrowIndexSamePlans).
func (s *solver) placeIndexed(work []removed) bool {
	p := s.pendingMin()
	var back []*class
	for _, w := range work {
		if c := w.l.cls; p.done[c.idx] {
			p.undone(c)
			back = append(back, c)
		}
	}
	s.startGrowIndex()
	ok := true
	for i, w := range work {
		if n, _ := s.placeAt(w.l, w.n); n < w.n {
			s.pending.addScaled(w.l.cls.req, -int64(w.n-n))
			ok = false
			break
		}
		if i+1 == len(work) || work[i+1].l.cls != w.l.cls {
			if !p.done[w.l.cls.idx] && slices.Contains(back, w.l.cls) {
				s.classDone(w.l.cls)
			}
		}
	}
	s.gidx = nil
	for _, c := range back {
		s.classDone(c)
	}
	return ok
}

// undone counts class c again in the minimum (classDone's inverse).
func (p *pendMin) undone(c *class) {
	p.done[c.idx] = false
	i := p.n + c.idx
	copy(p.t[i*p.d:i*p.d+p.d], c.req)
	for i /= 2; i >= 1; i /= 2 {
		p.pull(i)
	}
}

// tailSplit: for the least utilised nodes, alone and in groups of the
// least utilised 2 and 4 of a pool, pack their pods again on nodes each
// no bigger than the pods still to place fill (placeFilling), and a node
// alone also on nodes capped at each of the next few cheaper types; keep
// whatever makes the plan cheaper. Nodes of constrained pods too, whose
// rebuild must leave every topology count as it was (rebuildtopo.go).
func (s *solver) tailSplit() bool {
	if s.boundPools {
		return false
	}
	cand := s.freeBins(true)
	if len(cand) > tailWorst {
		cand = cand[:tailWorst]
	}
	improved := false
	worth := 1 - s.gap
	// A node is not tried when its twin was, since the last kept
	// rebuild (rebuildtwins.go).
	s.rbTried = s.rbTried[:0]
	for _, b := range cand {
		if !tailWorthOff && b.holdsOnlyFree() && b.offer.price > 0 && s.valueOf(b.used) >= worth*b.offer.price {
			continue
		}
		if len(b.entries) == 0 || s.twinTried(rebuildTail, b, nil) {
			continue
		}
		kept := s.tryFilling([]*bin{b}) || s.tryCaps(b)
		s.noteTried(rebuildTail, b, nil, kept)
		if kept {
			improved = true
		}
	}
	// Groups: the least utilised 2 and 4 nodes of each pool.
	var groups [][]*bin
	cand = s.freeBins(true)
	for _, ps := range s.pools {
		var g []*bin
		for _, b := range cand {
			if b.pool == ps && len(g) < 4 {
				g = append(g, b)
			}
		}
		if len(g) >= 2 {
			groups = append(groups, g[:2])
		}
		if len(g) == 4 {
			groups = append(groups, g)
		}
	}
	for _, g := range groups {
		live := true
		for _, b := range g {
			live = live && len(b.entries) > 0
		}
		if live && s.tryFilling(g) {
			improved = true
		}
	}
	return improved
}

// Budgets of tailSplit: the least utilised nodes tried alone, and the
// cheaper types each is capped at.
const tailWorst, tailCaps = 8, 4

// A node of unconstrained pods worth, at the LP's prices, within the
// stop's gap (nearbound.go) of its price is no tail: re-packed on new
// nodes alone its pods cost at least their worth (the prices are dual
// feasible: no type holds more worth than its price), so splitting it
// saves at most that gap of it unless other nodes' free room takes its
// pods, which the rebuild pass and the groups below try. On a small plan
// of one big full node and a tail (many-shapes at 150 pods: a
// c6a.48xlarge of 109 pods worth 99.97 % of its price, and five small
// nodes) its five tries alone were a sixth of the solve, never kept: the
// alone tries now skip such nodes. No plan changed over the generated
// shapes at 50 to 3,000 pods, seeds 1-3 (495 plans; TestTailWorthSamePlans).
// Nodes of constrained pods are still tried: skipping them made
// pod-affinity/1,000 3 % dearer and zone-spread/1,500 0.9 %; a fixed 5 %
// instead of the gap made hostname-anti/100 4.6 % dearer.
//
// tailWorthOff makes the tail split try every node alone (tests
// compare).
var tailWorthOff bool

// tryFilling rebuilds the group (nodes of one pool) with placeFilling.
func (s *solver) tryFilling(group []*bin) bool {
	ps := group[0].pool
	allowed := group[0].types.clone()
	for _, b := range group[1:] {
		allowed.and(b.types)
	}
	return s.tryRebuildBy(group, func(work []removed) bool {
		return s.placeFilling(work, ps, allowed)
	})
}

// tryCaps rebuilds node b with growth in its pool capped at each of the
// tailCaps next cheaper frontier types it may be, dearest first, until
// one makes the plan cheaper.
func (s *solver) tryCaps(b *bin) bool {
	ps := b.pool
	var caps []float64
	for _, i := range ps.frontier {
		if !b.types.has(i) {
			continue
		}
		o, ok := ps.types[i].price(b.zoneMask, b.ctMask)
		if ok && o.price < b.offer.price-1e-9 && !slices.Contains(caps, o.price) {
			caps = append(caps, o.price)
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(caps)))
	if len(caps) > tailCaps {
		caps = caps[:tailCaps]
	}
	for _, c := range caps {
		s.priceCap, s.capPool = c+1e-9, ps
		ok := s.tryRebuild([]*bin{b})
		s.priceCap, s.capPool = 0, nil
		if ok {
			return true
		}
	}
	return false
}

// placeFilling places work with growth in pool ps capped at the dearest
// type of allowed that the pods still pending fill (fillCap), which falls
// as they are placed: each class in runs of as many pods as leave the cap
// where it is. A pod no capped node takes is placed uncapped.
func (s *solver) placeFilling(work []removed, ps *poolState, allowed bitset) bool {
	defer func() { s.priceCap, s.capPool = 0, nil }()
	if s.setWorkMin(work) {
		defer s.endWorkMin()
	}
	s.capPool = ps
	for i, w := range work {
		s.nextWork(i)
		for k := 0; k < w.n; {
			var floor float64
			s.priceCap, floor = s.fillCap(ps, allowed)
			run := 1
			if v := w.l.cls.value; v > 0 && s.priceCap > 0 {
				run = max(1, min(w.n-k, int((s.valueOf(s.pending)-floor)/v)))
			}
			n, _ := s.placeAt(w.l, run)
			if n == 0 && s.priceCap > 0 {
				s.priceCap = 0
				n, _ = s.placeAt(w.l, 1)
			}
			if n == 0 {
				s.pending.addScaled(w.l.cls.req, -int64(w.n-k))
				return false
			}
			k += n
		}
	}
	return true
}

// fillCap is just above the price of the dearest type of ps in allowed
// whose allocatable is worth no more than the pending pods (at the dual
// prices), 0 if none, and that type's worth.
func (s *solver) fillCap(ps *poolState, allowed bitset) (float64, float64) {
	pv := s.valueOf(s.pending) * (1 + 1e-9)
	best, worth := 0.0, 0.0
	for _, i := range ps.frontier {
		if allowed.has(i) && ps.values[i] <= pv && ps.types[i].minPrice > best {
			best, worth = ps.types[i].minPrice, ps.values[i]
		}
	}
	if best == 0 {
		return 0, 0
	}
	return best + 1e-9, worth
}
