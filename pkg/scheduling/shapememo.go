package scheduling

import (
	"math"
	"slices"
)

// Answers kept by node shape. The local search takes pods off nodes and
// packs them again, making the same node contents over and over under
// new versions (and regroup's rebuilds, each at its group's dual prices,
// give every node a new version twice: setPrices), so the caches by
// version (upCache) miss where an answer by contents would hold: web-six
// at 2,000 pods asks upgradeFor 5,000 times for 1,600 distinct nodes,
// gpu 5,000 times for 230 and growBound 4,100 times for 260. A shape is
// everything those searches read of a node: its pool, type and
// offering's price, zones and capacity types, used resources, types,
// labelCut, and the dual prices (the types' values). Answers are found
// by a hash and compared in full: a collision is a miss, never a wrong
// answer.

// nodeShape is a node's shape as kept with an answer.
type nodeShape struct {
	pool, typ int
	zones     uint64
	cts       uint64
	price     float64
	labelCut  bool
	used      vec
	types     bitset
	// unit are the dual prices (never changed in place: setPrices
	// swaps the slice).
	unit []float64
}

// contentsHash hashes what every lookup by a node's contents reads of
// b: its pool, type, offering's price, zones, capacity types and used
// resources (shapeHash and the merges' twins add what they read beyond).
func contentsHash(b *bin) uint64 {
	h := uint64(fnvOffset)
	mix := func(v uint64) { h = fnvMix(h, v) }
	mix(uint64(b.pool.idx))
	mix(uint64(b.typ))
	mix(math.Float64bits(b.offer.price))
	mix(b.zoneMask)
	mix(b.ctMask)
	for _, v := range b.used {
		mix(uint64(v))
	}
	return h
}

// shapeHash hashes b's shape at dual prices unit.
func shapeHash(b *bin, unit []float64) uint64 {
	h := contentsHash(b)
	mix := func(v uint64) { h = fnvMix(h, v) }
	if b.labelCut {
		mix(1)
	}
	for _, w := range b.types {
		mix(w)
	}
	for _, p := range unit {
		mix(math.Float64bits(p))
	}
	return h
}

// matches tells whether b at dual prices unit has shape m.
func (m *nodeShape) matches(b *bin, unit []float64) bool {
	return m.pool == b.pool.idx && m.typ == b.typ && m.price == b.offer.price && m.zones == b.zoneMask && m.cts == b.ctMask &&
		m.labelCut == b.labelCut && slices.Equal(m.used, b.used) && slices.Equal(m.types, b.types) && slices.Equal(m.unit, unit)
}

// shapeOf is b's shape, its slices copied.
func shapeOf(b *bin, unit []float64) nodeShape {
	return nodeShape{pool: b.pool.idx, typ: b.typ, zones: b.zoneMask, cts: b.ctMask, price: b.offer.price, labelCut: b.labelCut,
		used: b.used.clone(), types: b.types.clone(), unit: unit}
}

// upMemo is one upgradeFor answer (code and dp as in upCache) for a node
// shape, under a price cap, with the node's custom labels when the
// class has custom requirements.
type upMemo struct {
	shape  nodeShape
	cap    float64
	custom *reqs
	code   int32
	dp     float64
}

// upMemoKey hashes what upgradeFor reads of bin b for a level of caches
// u (the class's request and what it allows are the caches' own): b's
// shape, the price cap and, when the class has custom requirements, b's
// custom labels. ok is false when the answer depends on more: a limited
// pool (the other nodes' sizes), or custom labels the bin owns (place
// narrows them in place).
func (s *solver) upMemoKey(b *bin, cp *classPool) (h uint64, ok bool) {
	if b.pool.hasLimits || (cp.custom != nil && b.ownCust) || upMemoOff || upCacheOff {
		return 0, false
	}
	h = (shapeHash(b, s.unitPrice) ^ math.Float64bits(s.priceCap)) * fnvPrime
	return h, true
}

// upgradeMemo is upgradeFor's answer for b as code and dp (upCache's),
// kept by node shape for the level's caches.
func (s *solver) upgradeMemo(l *level, b *bin, cp *classPool) (code int32, dp float64) {
	var h uint64
	ok := s.upStats.serves()
	if ok {
		h, ok = s.upMemoKey(b, cp)
	}
	if ok {
		if m := l.up.memo[h]; m != nil && m.cap == s.priceCap && (cp.custom == nil || m.custom == b.custom) && m.shape.matches(b, s.unitPrice) {
			s.upStats.hits++
			return m.code, m.dp
		}
		s.upStats.misses++
	}
	code = 1
	if g, found := s.upgradeFor(l, b, cp); found {
		code, dp = int32(g.typ)+2, g.dp
	}
	if ok {
		if l.up.memo == nil {
			l.up.memo = map[uint64]*upMemo{}
		}
		if _, taken := l.up.memo[h]; !taken {
			m := s.newUpMemo()
			*m = upMemo{shape: s.shapeAt(b, s.unitPrice), cap: s.priceCap, code: code, dp: dp}
			if cp.custom != nil {
				m.custom = b.custom
			}
			l.up.memo[h] = m
		}
	}
	return code, dp
}

// upMemoOff makes upgradeValue ask upgradeFor for every node version
// (tests compare).
var upMemoOff bool

// boundMemo is one growBound answer for a node shape and smallest
// pending request.
type boundMemo struct {
	shape nodeShape
	min   vec
	ub    float64
}

// memoStats says whether a memo by node shape still pays. Keeping an
// answer costs a hash, a copy of the node's shape and a map entry, more
// than upgradeFor or growBound itself on most nodes, and pays only when
// the same shapes come back (the local search's rebuilds on web-six and
// gpu). Where they do not (many-shapes at 50,000 pods: hundreds of
// large nodes whose contents rarely repeat, the memo's upkeep was two
// thirds of its extra second), the memo stops being asked once it has
// missed memoTrial times and hit fewer times than a quarter of its
// misses (counted over the whole solve: one count per class level
// would pay the trial once per class, and many-shapes has thousands). Plans are the same either way: an answer is exact or not
// used.
type memoStats struct{ hits, misses int }

const memoTrial = 256

func (m *memoStats) serves() bool {
	return m.misses < memoTrial || 4*m.hits >= m.misses
}
