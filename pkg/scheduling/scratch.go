package scheduling

import (
	"math/bits"
	"sync"
	"unsafe"
)

// The upgrade answers' caches (growth.go's slots per bin, fitidx.go's
// tables per bin) are a solve's largest allocations: about a quarter of
// the 1.5 MB a 250-pod few-big solve allocates, dropped when it ends. A
// solve takes them from a solveScratch kept between solves and gives them
// back when it has made its plan (release), so a warm function's solves
// allocate them once and the collector has less to do (few-big, gpu,
// many-shapes, mix and zonal-volumes at 250 pods: 4-10 % less time per
// solve on average, docs/scheduling.md). What comes back is cleared where
// it is handed out: a table's entries all of generation 0 (free: a table
// in use is of generation 1 or more), a bin's slots zeroed as they are
// reached (slotsFor). The slabs' chunks (slabs.go: memo entries, nodes,
// classes, levels) come back the same way, cleared when given back, so
// that a chunk keeps nothing of the solve that used it alive.

// solveScratch holds the tables and slots solves gave back.
type solveScratch struct {
	// fit are fitTable entry arrays by size (index: log2(len) - 3).
	fit [10][][]fitEntry
	// up are slot arrays (length 0), kept as the slab chunks are.
	up [][][2]upCache
	// chunks are slab chunks (slabs.go), empty.
	chunks spareChunks
	// bytes is what fit, up and chunks hold.
	bytes int
}

// spareChunks are slab chunks given back, by kind.
type spareChunks struct {
	ups     [][]upMemo
	bounds  [][]boundMemo
	ints    [][]int64
	words   [][]uint64
	bins    [][]bin
	ents    [][]entry
	levels  [][]level
	cpools  [][]classPool
	classes [][]class
}

// takeChunk is a chunk of l with room for n (length 0), or nil.
func takeChunk[T any](sc *solveScratch, l *[][]T, n int) []T {
	for i := len(*l) - 1; i >= 0; i-- {
		if c := (*l)[i]; cap(c) >= n {
			(*l)[i] = (*l)[len(*l)-1]
			*l = (*l)[:len(*l)-1]
			sc.bytes -= chunkBytes(c)
			return c
		}
	}
	return nil
}

// chunkBytes is the size of c's array.
func chunkBytes[T any](c []T) int {
	var zero T
	return cap(c) * int(unsafe.Sizeof(zero))
}

// roomFor tells whether sc may keep chunk c.
func roomFor[T any](sc *solveScratch, c []T) bool {
	size := chunkBytes(c)
	return size > 0 && sc.bytes+size <= scratchMaxBytes
}

// putChunk keeps c (length 0) in l for a later solve; the caller has
// asked roomFor.
func putChunk[T any](sc *solveScratch, l *[][]T, c []T) {
	*l = append(*l, c)
	sc.bytes += chunkBytes(c)
}

// scratchMaxBytes bounds what one solveScratch keeps (more is dropped):
// solves of thousands of nodes would otherwise keep tens of MB between
// solves.
const scratchMaxBytes = 8 << 20

var scratchPool = sync.Pool{New: func() any { return new(solveScratch) }}

// scratchOff makes every solve take a new solveScratch (tests compare).
var scratchOff bool

// takeScratch is a solveScratch for a new solver.
func takeScratch() *solveScratch {
	if scratchOff {
		return new(solveScratch)
	}
	return scratchPool.Get().(*solveScratch)
}

// fitClass is the index in fit of arrays of n entries (a power of two
// from 8 to fitTableMax), or -1.
func fitClass(n int) int {
	c := bits.Len(uint(n)) - 4
	if n < 8 || n&(n-1) != 0 || c >= len(solveScratch{}.fit) {
		return -1
	}
	return c
}

// fitEntries is an array of n free entries (sc may be nil: a solver
// after release).
func (sc *solveScratch) fitEntries(n int) []fitEntry {
	if c := fitClass(n); c >= 0 && sc != nil {
		if l := sc.fit[c]; len(l) > 0 {
			e := l[len(l)-1]
			sc.fit[c] = l[:len(l)-1]
			sc.bytes -= n * int(unsafe.Sizeof(fitEntry{}))
			clear(e)
			return e
		}
	}
	return make([]fitEntry, n)
}

// putFit keeps e for a later table.
func (sc *solveScratch) putFit(e []fitEntry) {
	c := fitClass(len(e))
	size := len(e) * int(unsafe.Sizeof(fitEntry{}))
	if c < 0 || sc == nil || sc.bytes+size > scratchMaxBytes {
		return
	}
	sc.fit[c] = append(sc.fit[c], e)
	sc.bytes += size
}

// upSlots is an empty slot array with room for n bins, or nil.
func (sc *solveScratch) upSlots(n int) [][2]upCache {
	if sc == nil {
		return nil
	}
	return takeChunk(sc, &sc.up, n)
}

// putUp keeps e's array for a later slot list.
func (sc *solveScratch) putUp(e [][2]upCache) {
	if roomFor(sc, e) {
		putChunk(sc, &sc.up, e[:0])
	}
}

// release gives the solve's tables, slots and slab chunks back for later
// solves; the solver must not be used after it (its nodes, classes and
// levels are cleared: take the plan, and a class seed, first).
func (s *solver) release() {
	sc := s.scratch
	if sc == nil {
		return
	}
	s.scratch = nil
	for i := range s.fitTables {
		for j := range s.fitTables[i] {
			t := &s.fitTables[i][j]
			sc.putFit(t.ents)
			t.ents = nil
		}
	}
	for _, u := range s.upShared {
		sc.putUp(u.e)
		sc.putUp(u.capped)
		u.e, u.capped = nil, nil
	}
	if !slabsOff {
		s.releaseSlabs(sc)
	}
	if !scratchOff {
		scratchPool.Put(sc)
	}
}
