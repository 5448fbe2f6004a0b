package scheduling

// Slabs. The memos by node shape (shapememo.go) kept every answer as
// three allocations (the entry, a copy of the node's requests, a copy of
// its types), and the growth index made a group for every new shape of
// node and dropped it when its last node changed: few-big at 2,000
// pods, a third of a solve's allocations. The entries and their copies
// now come from chunks (slabs) kept by the solver, and groups emptied go
// on a free list for the next shape (their node lists keep their room).
// What is stored is the same, so the answers, and the plans, are too
// (TestSlabsSamePlans).
type slabs struct {
	ups    []upMemo
	bounds []boundMemo
	ints   []int64
	words  []uint64
}

// slabsOff makes the memos and the growth index allocate one by one
// (tests compare).
var slabsOff bool

// Chunks double from a small first one up to these sizes, so that a
// small solve does not pay for room it never uses.
const (
	slabEntries = 128
	slabWords   = 2048
)

// nextChunk is the size of a slab's next chunk after one of size n.
func nextChunk(n, first, most int) int { return min(most, max(first, 2*n)) }

func (s *solver) newUpMemo() *upMemo {
	if slabsOff {
		return &upMemo{}
	}
	sl := &s.slabs
	if len(sl.ups) == cap(sl.ups) {
		sl.ups = make([]upMemo, 0, nextChunk(cap(sl.ups), 8, slabEntries))
	}
	sl.ups = sl.ups[:len(sl.ups)+1]
	return &sl.ups[len(sl.ups)-1]
}

func (s *solver) newBoundMemo() *boundMemo {
	if slabsOff {
		return &boundMemo{}
	}
	sl := &s.slabs
	if len(sl.bounds) == cap(sl.bounds) {
		sl.bounds = make([]boundMemo, 0, nextChunk(cap(sl.bounds), 8, slabEntries))
	}
	sl.bounds = sl.bounds[:len(sl.bounds)+1]
	return &sl.bounds[len(sl.bounds)-1]
}

// copyVec is a copy of v (nil when empty, as clone), from the slab.
func (s *solver) copyVec(v vec) vec {
	if slabsOff {
		return v.clone()
	}
	if len(v) == 0 {
		return nil
	}
	sl := &s.slabs
	if len(v) > slabWords/4 {
		return v.clone()
	}
	if cap(sl.ints)-len(sl.ints) < len(v) {
		sl.ints = make([]int64, 0, max(len(v), nextChunk(cap(sl.ints), 64, slabWords)))
	}
	n := len(sl.ints)
	sl.ints = append(sl.ints, v...)
	return sl.ints[n : n+len(v) : n+len(v)]
}

// copyBits is a copy of b (nil when empty, as clone), from the slab.
func (s *solver) copyBits(b bitset) bitset {
	if slabsOff {
		return b.clone()
	}
	if len(b) == 0 {
		return nil
	}
	sl := &s.slabs
	if len(b) > slabWords/4 {
		return b.clone()
	}
	if cap(sl.words)-len(sl.words) < len(b) {
		sl.words = make([]uint64, 0, max(len(b), nextChunk(cap(sl.words), 64, slabWords)))
	}
	n := len(sl.words)
	sl.words = append(sl.words, b...)
	return sl.words[n : n+len(b) : n+len(b)]
}

// shapeAt is shapeOf with the copies from the slabs.
func (s *solver) shapeAt(b *bin, unit []float64) nodeShape {
	if slabsOff {
		return shapeOf(b, unit)
	}
	return nodeShape{pool: b.pool.idx, typ: b.typ, zones: b.zoneMask, cts: b.ctMask, price: b.offer.price, labelCut: b.labelCut,
		used: s.copyVec(b.used), types: s.copyBits(b.types), unit: unit}
}

// newGroup is an empty group for key k, a freed one when there is.
func (g *growIdx) newGroup(k twinKey) *twinGroup {
	if n := len(g.free); n > 0 && !slabsOff {
		grp := g.free[n-1]
		g.free = g.free[:n-1]
		grp.key, grp.ids = k, grp.ids[:0]
		return grp
	}
	return &twinGroup{key: k}
}

// deleteGroup takes grp out of the groups, and keeps it for a later
// shape when it was there (no node refers to it any more).
func (g *growIdx) deleteGroup(grp *twinGroup) {
	if g.groups[grp.key] == grp && !slabsOff {
		g.free = append(g.free, grp)
	}
	delete(g.groups, grp.key)
}
