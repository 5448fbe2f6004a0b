package scheduling

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// Types holding a request, by CPU and memory. upgradeFor and isOpen scan
// a pool's frontier for the types that hold a node's pods and one more
// (or the smallest pending request), and most of the frontier fails on
// CPU or memory: at many-shapes with 2,000 pods that first test was two
// fifths of upgradeFor's time, asked tens of thousands of times per
// solve. fitIndex keeps, for each CPU amount and each memory amount some
// frontier type has, the set of frontier positions with at least that
// much, so a search visits only the types with both, in frontier order:
// the types it skips are the ones its first test refused, so its answer
// is the same (TestFitIndexSamePlans).

// fitIndex is one pool's frontier by CPU and memory.
type fitIndex struct {
	list []int // the frontier it was made for
	// cpuVals are the distinct CPU amounts of the frontier's types,
	// ascending; row k of cpuGE (words per row) is the positions in list
	// of the types with at least cpuVals[k]. memVals and memGE likewise.
	cpuVals, memVals []int64
	cpuGE, memGE     []uint64
	words            int
	// byIdx: list is every type in index order (fitForAll), so that a
	// position is a type's index and a set of types masks the rows.
	byIdx bool
}

// fitIndexOff makes the searches scan the whole frontier (tests compare).
var fitIndexOff bool

// fitFor is the index of pool ps's frontier, made on first use in a
// solve; nil when list is not that frontier (a limited pool's or a
// label-cut search's list of every type).
func (s *solver) fitFor(ps *poolState, list []int) *fitIndex {
	if fitIndexOff || len(list) == 0 || len(ps.frontier) == 0 || &list[0] != &ps.frontier[0] || len(list) != len(ps.frontier) {
		return nil
	}
	for len(s.fits) <= ps.idx {
		s.fits = append(s.fits, nil)
	}
	if fi := s.fits[ps.idx]; fi != nil && len(fi.list) == len(list) && &fi.list[0] == &list[0] {
		return fi
	}
	fi := newFitIndex(ps, list)
	s.fits[ps.idx] = fi
	return fi
}

// newFitIndex indexes list, types of ps.
func newFitIndex(ps *poolState, list []int) *fitIndex {
	fi := &fitIndex{list: list, words: (len(list) + 63) / 64}
	fi.cpuVals, fi.cpuGE = fi.rowsBy(ps, dimCPU)
	fi.memVals, fi.memGE = fi.rowsBy(ps, dimMemory)
	return fi
}

// fitForAll is the index of every type of pool ps (allIdx: a position is
// a type's index), for the searches of nodes and classes cut by labels
// (indexFor), made on first use in a solve; nil when the index is off.
func (s *solver) fitForAll(ps *poolState) *fitIndex {
	if fitIndexOff || ownTypesOff || len(ps.allIdx) == 0 {
		return nil
	}
	for len(s.fitsAll) <= ps.idx {
		s.fitsAll = append(s.fitsAll, nil)
	}
	if fi := s.fitsAll[ps.idx]; fi != nil && len(fi.list) == len(ps.allIdx) && &fi.list[0] == &ps.allIdx[0] {
		return fi
	}
	fi := newFitIndex(ps, ps.allIdx)
	fi.byIdx = true
	s.fitsAll[ps.idx] = fi
	return fi
}

// rowsBy makes the distinct amounts of dimension d and their rows.
func (fi *fitIndex) rowsBy(ps *poolState, d int) ([]int64, []uint64) {
	vals := make([]int64, 0, len(fi.list))
	for _, i := range fi.list {
		vals = append(vals, ps.types[i].net[d])
	}
	slices.Sort(vals)
	vals = slices.Compact(vals)
	rows := make([]uint64, len(vals)*fi.words)
	for p, i := range fi.list {
		v := ps.types[i].net[d]
		// Every amount up to v: the type has at least each of them.
		for k := 0; k < len(vals) && vals[k] <= v; k++ {
			rows[k*fi.words+p>>6] |= 1 << uint(p&63)
		}
	}
	return vals, rows
}

// row is the row of the smallest amount in vals at least v (nil when
// every amount is below v: no type has that much).
func (fi *fitIndex) row(vals []int64, rows []uint64, v int64) []uint64 {
	k, _ := slices.BinarySearch(vals, v)
	if k == len(vals) {
		return nil
	}
	return rows[k*fi.words : (k+1)*fi.words]
}

// typeWalk walks a search's types in frontier order (cheapest first):
// a list, or the types a fit index's rows say hold a request. A search
// that may stop early (upgradeFor's ceiling) reads only the types before
// its stop.
type typeWalk struct {
	list   []int
	fi     *fitIndex
	cr, mr []uint64
	// ta and tb, when set, are sets of types the walk keeps to (fi's
	// positions being type indices: fitForAll).
	ta, tb []uint64
	w      int
	x      uint64
}

// listWalk walks list.
func listWalk(list []int) typeWalk { return typeWalk{list: list} }

// indexFor is the fit index of a search list: the frontier's, or every
// type's when list is every type in index order (searchList's for a bin
// or class cut by labels); nil when the indexes are off.
func (s *solver) indexFor(ps *poolState, list []int) *fitIndex {
	if fi := s.fitFor(ps, list); fi != nil {
		return fi
	}
	if len(list) > 0 && &list[0] == &ps.allIdx[0] {
		return s.fitForAll(ps)
	}
	return nil
}

// typesWalk walks the types of list (a search list) that may hold need,
// in list order: through its index, cut to the types in both a and b (a
// node's and a class's own) for every type's, or the list itself when
// the indexes are off.
func (s *solver) typesWalk(ps *poolState, list []int, need vec, a, b bitset) typeWalk {
	fi := s.indexFor(ps, list)
	switch {
	case fi == nil:
		return listWalk(list)
	case fi.byIdx:
		return fi.ownWalk(need, a, b)
	}
	return fi.walk(need)
}

// ownWalk walks the types of every type's index fi (fitForAll) that hold
// need and are in both a and b, by index: the pool's types in price
// order cut to a bin's and a class's own, which label requirements may
// leave few of.
func (fi *fitIndex) ownWalk(need vec, a, b bitset) typeWalk {
	tw := fi.walk(need)
	if tw.cr == nil {
		return tw
	}
	n := min(len(tw.cr), len(a), len(b))
	tw.cr, tw.mr, tw.ta, tw.tb = tw.cr[:n], tw.mr[:n], a[:n], b[:n]
	return tw
}

// walk walks the types with CPU and memory at least need's.
func (fi *fitIndex) walk(need vec) typeWalk {
	tw := typeWalk{fi: fi, w: -1}
	tw.cr = fi.row(fi.cpuVals, fi.cpuGE, need[dimCPU])
	tw.mr = fi.row(fi.memVals, fi.memGE, need[dimMemory])
	if tw.cr == nil || tw.mr == nil {
		tw.cr, tw.mr = nil, nil
	}
	return tw
}

// next is the next type, false at the end.
func (tw *typeWalk) next() (int, bool) {
	if tw.fi == nil {
		if len(tw.list) == 0 {
			return 0, false
		}
		i := tw.list[0]
		tw.list = tw.list[1:]
		return i, true
	}
	for tw.x == 0 {
		tw.w++
		if tw.w >= len(tw.cr) {
			return 0, false
		}
		tw.x = tw.cr[tw.w] & tw.mr[tw.w]
		if tw.ta != nil {
			tw.x &= tw.ta[tw.w] & tw.tb[tw.w]
		}
	}
	p := tw.w<<6 + bits.TrailingZeros64(tw.x)
	tw.x &= tw.x - 1
	return tw.fi.list[p], true
}

// firstHolding is the first type in frontier order (cheapest first)
// among types (nil: any) that holds need: isOpen's search for a node, and
// tryMerge's for a type cheaper than two nodes (cheaperHolds).
func (fi *fitIndex) firstHolding(ps *poolState, types bitset, need vec) (bool, int32) {
	cr := fi.row(fi.cpuVals, fi.cpuGE, need[dimCPU])
	mr := fi.row(fi.memVals, fi.memGE, need[dimMemory])
	if cr == nil || mr == nil {
		return false, -1
	}
	for w := range cr {
		x := cr[w] & mr[w]
		if fi.byIdx && types != nil {
			if w >= len(types) {
				break
			}
			x &= types[w]
		}
		for ; x != 0; x &= x - 1 {
			if i := fi.list[w<<6+bits.TrailingZeros64(x)]; (types == nil || types.has(i)) && need.le(ps.types[i].net) {
				return true, int32(i)
			}
		}
	}
	return false, -1
}

// Answers by bin version and the frontier rows a request falls in.
// upgradeFor's answer for bin b and a pod of level l depends on l only
// through the types it may take (what it allows per pool) and which
// types hold b's pods and the pod: the frontier types with the CPU and
// memory that b's pods and the pod need, the smallest amounts of the
// frontier at least those (the rows of fitIndex), and the request's other
// resources. Levels alike in those get the same answer for one version
// of b. The caches by level (upCache) are one per request: many-shapes
// at 2,000 pods asks upgradeFor about 49,000 times, two thirds of them
// for a bin version another level with the same rows had asked about
// (mostly a node a rebuild left alone, asked again by every class each
// rebuild places). So answers are also kept per bin, for two versions
// as upCache keeps them (the one before a rebuild and the one passing),
// keyed by the level's fit key, the rows and the price cap
// (TestFitAnswersSamePlans).

// fitEntry is one kept answer (code and dp as in upCache; code 0 while
// being computed), valid while gen is its table's.
type fitEntry struct {
	key  uint64
	cap  float64
	code int32
	gen  uint32
	dp   float64
}

// fitTable is a bin's answers at one version: an open-addressing table
// (a power of two long, at most three quarters full) whose entries of
// another generation are free, so that taking a new version is a count
// up, not a clear.
type fitTable struct {
	ver  uint32
	gen  uint32
	n    int
	ents []fitEntry
}

// fitTableMax bounds a table (an answer not kept is computed again).
const fitTableMax = 1 << 12

// reset makes t the table of version ver, empty.
func (t *fitTable) reset(ver uint32) {
	t.ver, t.n = ver, 0
	t.gen++
}

// entry finds key and cap's entry, or takes a free one for them (code
// 0); nil when the table is full. Its entries come from sc.
func (t *fitTable) entry(sc *solveScratch, key uint64, cap float64) *fitEntry {
	if len(t.ents) == 0 {
		t.ents = sc.fitEntries(8)
	}
	h := (key ^ math.Float64bits(cap)) * 0x9e3779b97f4a7c15
	mask := len(t.ents) - 1
	for i := int(h>>40) & mask; ; i = (i + 1) & mask {
		e := &t.ents[i]
		if e.gen != t.gen {
			if 4*(t.n+1) > 3*len(t.ents) {
				if len(t.ents) >= fitTableMax {
					return nil
				}
				t.grow(sc)
				return t.entry(sc, key, cap)
			}
			t.n++
			*e = fitEntry{key: key, cap: cap, gen: t.gen}
			return e
		}
		if e.key == key && e.cap == cap {
			return e
		}
	}
}

// grow doubles t, keeping its entries.
func (t *fitTable) grow(sc *solveScratch) {
	old := t.ents
	t.ents, t.n = sc.fitEntries(2*len(old)), 0
	for i := range old {
		if e := &old[i]; e.gen == t.gen {
			n := t.entry(sc, e.key, e.cap)
			n.code, n.dp = e.code, e.dp
		}
	}
	sc.putFit(old)
}

// fitAnswersOff turns the answers by rows off (tests compare).
var fitAnswersOff bool

// fitKeyOf numbers what upgradeFor reads of l besides its CPU and
// memory: its request's other resources and what it allows per pool.
func (s *solver) fitKeyOf(l *level) uint32 {
	kb := s.fitKeyBuf[:0]
	for _, v := range l.cls.req[dimMemory+1:] {
		kb = binary.LittleEndian.AppendUint64(kb, uint64(v))
	}
	kb = s.appendPoolsKey(kb, l)
	s.fitKeyBuf = kb
	if s.fitKeys == nil {
		s.fitKeys = map[string]uint32{}
	}
	k, ok := s.fitKeys[string(kb)]
	if !ok {
		k = uint32(len(s.fitKeys))
		s.fitKeys[string(kb)] = k
	}
	return k
}

// fitAnswer is the entry for upgradeFor's answer for b and a pod of l:
// kept (code not 0) or to fill (code 0); nil when none is kept for this
// search (a list other than the frontier, or a full table).
func (s *solver) fitAnswer(l *level, b *bin, cp *classPool) *fitEntry {
	// A limited pool's answers depend on its usage too.
	if fitAnswersOff || upCacheOff || b.pool.hasLimits {
		return nil
	}
	fi := s.fitFor(b.pool, s.searchList(b, cp))
	if fi == nil {
		return nil
	}
	k1, _ := slices.BinarySearch(fi.cpuVals, b.used[dimCPU]+l.cls.req[dimCPU])
	k2, _ := slices.BinarySearch(fi.memVals, b.used[dimMemory]+l.cls.req[dimMemory])
	key := uint64(l.up.fit)<<32 | uint64(k1)<<16 | uint64(k2)
	for len(s.fitTables) <= b.id {
		s.fitTables = append(s.fitTables, [2]fitTable{})
	}
	tw := &s.fitTables[b.id]
	var t *fitTable
	switch {
	case tw[0].ver == b.ver && b.ver != 0:
		t = &tw[0]
	case tw[1].ver == b.ver && b.ver != 0:
		t = &tw[1]
	case s.jr != nil && b.ver > s.jr.from:
		t = &tw[1]
		t.reset(b.ver)
	default:
		t = &tw[0]
		t.reset(b.ver)
	}
	return t.entry(s.scratch, key, s.priceCap)
}
