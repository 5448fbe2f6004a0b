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
	// bins and ents are openBin's nodes and their first entries.
	bins []bin
	ents []entry
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
	return slabNew(&s.slabs.ups)
}

func (s *solver) newBoundMemo() *boundMemo {
	if slabsOff {
		return &boundMemo{}
	}
	return slabNew(&s.slabs.bounds)
}

func (s *solver) newBin() *bin {
	if slabsOff {
		return &bin{}
	}
	return slabNew(&s.slabs.bins)
}

// entryRoomN is how many entries a new node has room for before its list
// is grown (most nodes hold a few classes).
const entryRoomN = 4

// entryRoom is an empty entry list with room for entryRoomN entries,
// from the slab (nil with the slabs off, as a node's list starts).
func (s *solver) entryRoom() []entry {
	if slabsOff {
		return nil
	}
	sl := &s.slabs.ents
	if cap(*sl)-len(*sl) < entryRoomN {
		*sl = make([]entry, 0, nextChunk(cap(*sl), 16*entryRoomN, slabWords))
	}
	n := len(*sl)
	*sl = (*sl)[:n+entryRoomN]
	return (*sl)[n : n : n+entryRoomN]
}

// copyVec is a copy of v (nil when empty, as clone), from the slab.
func (s *solver) copyVec(v vec) vec {
	if slabsOff || len(v) == 0 || len(v) > slabWords/4 {
		return v.clone()
	}
	return slabCopy(&s.slabs.ints, v)
}

// copyBits is a copy of b (nil when empty, as clone), from the slab.
func (s *solver) copyBits(b bitset) bitset {
	if slabsOff || len(b) == 0 || len(b) > slabWords/4 {
		return b.clone()
	}
	return slabCopy(&s.slabs.words, b)
}

// slabNew is a zeroed entry from sl's current chunk, a new chunk when it
// is full (a chunk is never grown: the entries handed out stay put).
func slabNew[T any](sl *[]T) *T {
	if len(*sl) == cap(*sl) {
		*sl = make([]T, 0, nextChunk(cap(*sl), 8, slabEntries))
	}
	*sl = (*sl)[:len(*sl)+1]
	return &(*sl)[len(*sl)-1]
}

// slabCopy is a copy of v (not empty) from sl's current chunk, a new
// chunk when v does not fit; its capacity is its length, so an append to
// it cannot write over the next copy.
func slabCopy[E any](sl *[]E, v []E) []E {
	if cap(*sl)-len(*sl) < len(v) {
		*sl = make([]E, 0, max(len(v), nextChunk(cap(*sl), 64, slabWords)))
	}
	n := len(*sl)
	*sl = append(*sl, v...)
	return (*sl)[n : n+len(v) : n+len(v)]
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
