package scheduling

// Slabs. The memos by node shape (shapememo.go) kept every answer as
// three allocations (the entry, a copy of the node's requests, a copy of
// its types), and the growth index made a group for every new shape of
// node and dropped it when its last node changed: few-big at 2,000
// pods, a third of a solve's allocations. The entries and their copies
// now come from chunks (slabs) kept by the solver, and groups emptied go
// on a free list for the next shape (their node lists keep their room).
// What is stored is the same, so the answers, and the plans, are too
// (TestSlabsSamePlans). The nodes, the classes and their levels come from
// slabs too, and every chunk goes to the solve's scratch when it ends
// (release) for the next solve to take again (scratch.go).
type slabs struct {
	ups    slab[upMemo]
	bounds slab[boundMemo]
	ints   slab[int64]
	words  slab[uint64]
	// bins and ents are openBin's nodes and their first entries.
	bins slab[bin]
	ents slab[entry]
	// levels and cpools are the classes' levels and their pools'
	// compatibility (buildLevel, classPoolCompat).
	levels slab[level]
	cpools slab[classPool]
	// classes are buildClasses' (not a seed's: classSeed makes its own).
	classes slab[class]
}

// slab is one kind's chunks: cur is handed out from, full are the chunks
// before it, kept so that release can give them all back.
type slab[T any] struct {
	cur  []T
	full [][]T
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

// spareOf picks one kind's spare chunks of a scratch.
type spareOf[T any] func(*spareChunks) *[][]T

func spareUps(c *spareChunks) *[][]upMemo       { return &c.ups }
func spareBounds(c *spareChunks) *[][]boundMemo { return &c.bounds }
func spareInts(c *spareChunks) *[][]int64       { return &c.ints }
func spareWords(c *spareChunks) *[][]uint64     { return &c.words }
func spareBins(c *spareChunks) *[][]bin         { return &c.bins }
func spareEnts(c *spareChunks) *[][]entry       { return &c.ents }
func spareLevels(c *spareChunks) *[][]level     { return &c.levels }
func spareCPools(c *spareChunks) *[][]classPool { return &c.cpools }
func spareClasses(c *spareChunks) *[][]class    { return &c.classes }

// next makes cur a chunk with room for at least n (want or more when
// new): one an earlier solve gave back when one is big enough, else a
// new one. sc is nil after release.
func (sl *slab[T]) next(sc *solveScratch, kind spareOf[T], n, want int) {
	if cap(sl.cur) > 0 {
		sl.full = append(sl.full, sl.cur)
	}
	if sc != nil {
		if c := takeChunk(sc, kind(&sc.chunks), n); c != nil {
			sl.cur = c
			return
		}
	}
	sl.cur = make([]T, 0, max(n, want))
}

// giveBack hands sl's chunks to sc for later solves, cleared so that they
// keep nothing of this solve alive (chunks of pointer-free words need not
// be: slabCopy writes every word it hands out).
func (sl *slab[T]) giveBack(sc *solveScratch, kind spareOf[T], clearIt bool) {
	if cap(sl.cur) > 0 {
		sl.full = append(sl.full, sl.cur)
	}
	for _, c := range sl.full {
		if !roomFor(sc, c) {
			continue // the scratch has no room for it: dropped, not cleared
		}
		if clearIt {
			clear(c[:cap(c)])
		}
		putChunk(sc, kind(&sc.chunks), c[:0])
	}
	sl.cur, sl.full = nil, nil
}

// fromSlab is a zeroed T from sl (one of s's slabs), or a new one with
// the slabs off.
func fromSlab[T any](s *solver, sl *slab[T], kind spareOf[T]) *T {
	if slabsOff {
		return new(T)
	}
	return slabNew(sl, s.scratch, kind)
}

func (s *solver) newUpMemo() *upMemo { return fromSlab(s, &s.slabs.ups, spareUps) }

func (s *solver) newBoundMemo() *boundMemo { return fromSlab(s, &s.slabs.bounds, spareBounds) }

func (s *solver) newBin() *bin { return fromSlab(s, &s.slabs.bins, spareBins) }

func (s *solver) newLevel() *level { return fromSlab(s, &s.slabs.levels, spareLevels) }

func (s *solver) newClass() *class { return fromSlab(s, &s.slabs.classes, spareClasses) }

func (s *solver) newClassPool() *classPool { return fromSlab(s, &s.slabs.cpools, spareCPools) }

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
	if cap(sl.cur)-len(sl.cur) < entryRoomN {
		sl.next(s.scratch, spareEnts, entryRoomN, nextChunk(cap(sl.cur), 16*entryRoomN, slabWords))
	}
	n := len(sl.cur)
	sl.cur = sl.cur[:n+entryRoomN]
	return sl.cur[n : n : n+entryRoomN]
}

// copyVec is a copy of v (nil when empty, as clone), from the slab.
func (s *solver) copyVec(v vec) vec {
	if slabsOff || len(v) == 0 || len(v) > slabWords/4 {
		return v.clone()
	}
	return slabCopy(&s.slabs.ints, s.scratch, spareInts, v)
}

// copyBits is a copy of b (nil when empty, as clone), from the slab.
func (s *solver) copyBits(b bitset) bitset {
	if slabsOff || len(b) == 0 || len(b) > slabWords/4 {
		return b.clone()
	}
	return slabCopy(&s.slabs.words, s.scratch, spareWords, b)
}

// slabNew is a zeroed entry from sl's current chunk, a next chunk when it
// is full (a chunk is never grown: the entries handed out stay put).
// Chunks given back were cleared (giveBack), new ones are zeroed.
func slabNew[T any](sl *slab[T], sc *solveScratch, kind spareOf[T]) *T {
	if len(sl.cur) == cap(sl.cur) {
		sl.next(sc, kind, 1, nextChunk(cap(sl.cur), 8, slabEntries))
	}
	sl.cur = sl.cur[:len(sl.cur)+1]
	return &sl.cur[len(sl.cur)-1]
}

// slabCopy is a copy of v (not empty) from sl's current chunk, a next
// chunk when v does not fit; its capacity is its length, so an append to
// it cannot write over the next copy.
func slabCopy[E any](sl *slab[E], sc *solveScratch, kind spareOf[E], v []E) []E {
	if cap(sl.cur)-len(sl.cur) < len(v) {
		sl.next(sc, kind, len(v), nextChunk(cap(sl.cur), 64, slabWords))
	}
	n := len(sl.cur)
	sl.cur = append(sl.cur, v...)
	return sl.cur[n : n+len(v) : n+len(v)]
}

// releaseSlabs gives the slabs' chunks to sc for later solves (release).
func (s *solver) releaseSlabs(sc *solveScratch) {
	s.slabs.ups.giveBack(sc, spareUps, true)
	s.slabs.bounds.giveBack(sc, spareBounds, true)
	s.slabs.ints.giveBack(sc, spareInts, false)
	s.slabs.words.giveBack(sc, spareWords, false)
	s.slabs.bins.giveBack(sc, spareBins, true)
	s.slabs.ents.giveBack(sc, spareEnts, true)
	s.slabs.levels.giveBack(sc, spareLevels, true)
	s.slabs.cpools.giveBack(sc, spareCPools, true)
	s.slabs.classes.giveBack(sc, spareClasses, true)
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
