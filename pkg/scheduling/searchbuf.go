package scheduling

import (
	"cmp"
	"slices"
	"sort"
)

// Scratch of the local search. Every pass of improve sorted a new slice
// of its new nodes (by a closure computing each node's utilisation at
// every comparison), every drain and merge copied the node's entries
// into a new slice and sorted it through reflection (sort.SliceStable),
// and every upgrade the growth index looked at was a growth on the heap
// (upgradeCached): at 50,000 pods of few-big, a third of a solve's
// allocations. The buffers below are kept by the solver and reused; the
// sorts are the same stable merge sort (slices.SortStableFunc runs the
// algorithm sort.SliceStable runs, asking the same comparisons), so
// every order, and so every plan, is the same (TestSearchScratchSamePlans).
type searchScratch struct {
	order []*bin        // improve's nodes, least utilised first
	utils []utilBin     // improve's sort
	cand  []*bin        // rebuildPass's candidates
	ents  []entry       // tryDrain's and tryMerge's copy of a node's entries
	vals  []valuedEntry // entriesByValue's sort
	grows [][]growth    // fastUpgrades' growths, in chunks doubling in size
	gc    int           // the chunk the next growth comes from
	gi    int           // its index there
	roomy *roomy        // the last drain targets (roomyBins), for their buffers
	twins scanTwins     // bestGrowth's answers by node shape (scantwins.go)
	// drainRest and drainRoom are mayShrink's scratch.
	drainRest, drainRoom vec
	// drainLeast and drainFit are fittingFree's.
	drainLeast, drainFit vec
}

// utilBin is a node and its utilisation, for improve's sort.
type utilBin struct {
	b *bin
	u float64
}

// searchScratchOff makes the local search allocate its slices afresh
// and sort through sort.SliceStable (tests compare).
var searchScratchOff bool

// growChunk is how many growths a chunk of fastUpgrades' pool holds at
// most (the first holds 4, each next one twice the last).
const growChunk = 64

// resetGrowths makes every growth of the pool free again: the growths
// fastUpgrades hands out live until the next bestGrowth, which is where
// the previous one's growth was applied (placeAt), as for s.upBest.
func (s *solver) resetGrowths() { s.search.gc, s.search.gi = 0, 0 }

// newGrowth is a growth from the pool holding g.
func (s *solver) newGrowth(g growth) *growth {
	sc := &s.search
	if sc.gc < len(sc.grows) && sc.gi == len(sc.grows[sc.gc]) {
		sc.gc, sc.gi = sc.gc+1, 0
	}
	if sc.gc == len(sc.grows) {
		last := 0
		if sc.gc > 0 {
			last = len(sc.grows[sc.gc-1])
		}
		sc.grows = append(sc.grows, make([]growth, nextChunk(last, 4, growChunk)))
	}
	p := &sc.grows[sc.gc][sc.gi]
	sc.gi++
	*p = g
	return p
}

// utilOrder is improve's order: the new nodes with pods, least utilised
// first (stable: ties in node order).
func (s *solver) utilOrder() []*bin {
	util := func(b *bin) float64 {
		if b.offer.price <= 0 {
			return 1
		}
		return s.valueOf(b.used) / b.offer.price
	}
	if searchScratchOff {
		var order []*bin
		for _, b := range s.bins {
			if b.node == nil && len(b.entries) > 0 {
				order = append(order, b)
			}
		}
		sort.SliceStable(order, func(i, j int) bool { return util(order[i]) < util(order[j]) })
		return order
	}
	sc := &s.search
	us := sc.utils[:0]
	for _, b := range s.bins {
		if b.node == nil && len(b.entries) > 0 {
			us = append(us, utilBin{b, util(b)})
		}
	}
	// cmp < 0 exactly when sort.SliceStable's less held (even for NaN),
	// so the merge sort takes the same steps.
	slices.SortStableFunc(us, func(x, y utilBin) int {
		switch {
		case x.u < y.u:
			return -1
		case y.u < x.u:
			return 1
		}
		return 0
	})
	order := sc.order[:0]
	for _, u := range us {
		order = append(order, u.b)
	}
	sc.utils, sc.order = us[:0], order
	return order
}

// entriesByValue is a copy of b's entries, the most valuable class
// first (stable), for a drain.
func (s *solver) entriesByValue(b *bin) []entry {
	if searchScratchOff {
		entries := append([]entry(nil), b.entries...)
		sort.SliceStable(entries, func(i, k int) bool { return entries[i].l.cls.value > entries[k].l.cls.value })
		return entries
	}
	// Sorted with each value beside its entry: the comparisons then read
	// no class (many-shapes at 50,000 pods: nodes of ~100 classes each,
	// drained ~20 times a solve, and reading the classes' values was
	// most of the sort).
	vs := s.search.vals[:0]
	for _, e := range b.entries {
		vs = append(vs, valuedEntry{v: e.l.cls.value, e: e})
	}
	slices.SortStableFunc(vs, func(x, y valuedEntry) int {
		switch {
		case x.v > y.v:
			return -1
		case y.v > x.v:
			return 1
		}
		return 0
	})
	entries := s.search.ents[:0]
	for _, x := range vs {
		entries = append(entries, x.e)
	}
	s.search.ents, s.search.vals = entries, vs[:0]
	return entries
}

// valuedEntry is an entry and its class's value, for entriesByValue.
type valuedEntry struct {
	v float64
	e entry
}

// entriesOf is a copy of b's entries, for a merge.
func (s *solver) entriesOf(b *bin) []entry {
	if searchScratchOff {
		return append([]entry(nil), b.entries...)
	}
	s.search.ents = append(s.search.ents[:0], b.entries...)
	return s.search.ents
}

// sortWork sorts a rebuild's work by class (stable).
func sortWork(work []removed) {
	if searchScratchOff {
		sort.SliceStable(work, func(i, k int) bool { return work[i].l.cls.idx < work[k].l.cls.idx })
		return
	}
	slices.SortStableFunc(work, func(x, y removed) int { return cmp.Compare(x.l.cls.idx, y.l.cls.idx) })
}

// sortByNode sorts fastUpgrades' candidates by node (ids are unique but
// for a node both unfilled and in the heap, whose two growths are the
// same answer).
func sortByNode(cands []*growth) {
	if searchScratchOff {
		sort.Slice(cands, func(i, j int) bool { return cands[i].b.id < cands[j].b.id })
		return
	}
	slices.SortFunc(cands, func(x, y *growth) int { return cmp.Compare(x.b.id, y.b.id) })
}

// sortDesc sorts efficiencies (never NaN: fastUpgrades keeps none)
// largest first.
func sortDesc(e []float64) {
	if searchScratchOff {
		sort.Sort(sort.Reverse(sort.Float64Slice(e)))
		return
	}
	slices.SortFunc(e, func(x, y float64) int { return cmp.Compare(y, x) })
}
