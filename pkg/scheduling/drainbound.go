package scheduling

import "slices"

// Drains that cannot pay. tryDrain moves a node's pods into room already
// paid for on the listed nodes (roomy.go), at their types, then
// right-sizes the node; it keeps the result only when the node's new
// type costs less. Every pod moved lands in some listed node's free
// room, so in each resource the node sheds at most what its pods request
// and at most the free room of the other listed nodes together. If no
// type of the pool priced below the node's offering holds what is then
// left at the least, and the free room cannot take all its pods, the
// drain can only be undone: it is not tried. After packing, most nodes
// are full and so is most of the room: at 50,000 pods this skips about
// two drains in three (many-shapes 6,400 of 9,684; few-big 52,903 of
// 81,915), each a walk over the node's classes and their targets, and
// no drain that would have been kept (TestDrainBoundSamePlans).
//
// A pod also lands whole: a listed node where not even the node's
// smallest request fits (per resource, the least any of its classes
// asks) takes none of its pods, so the drains the whole free room lets
// through are asked again with only the room of the nodes it fits in.
// The room left after packing is mostly slivers (CPU over on a node full
// in memory, or the reverse): this spares most of the drains the first
// test let through (at 50,000 pods few-big 18,206 -> 1,006 and
// many-shapes 4,078 -> 985, the same 38 and 71 kept; gpu at 2,000 pods
// 343 -> 21), with the same plans (TestDrainFitSamePlans).

// drainBoundOff makes every drain be tried (tests compare).
var drainBoundOff bool

// mayShrink tells whether draining b into the listed nodes of r might
// leave it cheaper (or empty): with all their room, then (when that
// might) with the room of those b's smallest request fits in.
func (s *solver) mayShrink(b *bin, r *roomy) bool {
	if drainBoundOff || b.node != nil || b.typ < 0 {
		return true
	}
	free := s.roomFree(r)
	var own vec
	if s.isListed(r, b) {
		own = s.roomOf(b)
	}
	if !s.shrinkWith(b, free, own) {
		return false
	}
	if drainFitOff {
		return true
	}
	return s.shrinkWith(b, s.fittingFree(b, r), nil)
}

// drainFitOff makes mayShrink count every listed node's room (tests
// compare).
var drainFitOff bool

// fittingFree is the free room of r's listed nodes other than b where at
// least b's smallest request fits (per resource, the least any class on b
// asks): a pod of b lands only where it fits whole, so the room of the
// others takes none of them. The sum over every listed node is kept for
// the last smallest request asked (nodes of the same classes ask the
// same) until the list's nodes change, and b's own room taken out.
func (s *solver) fittingFree(b *bin, r *roomy) vec {
	least := s.drainScratch(&s.search.drainLeast)
	for k, e := range b.entries {
		for i, v := range e.l.cls.req {
			if k == 0 || v < least[i] {
				least[i] = v
			}
		}
	}
	if !r.fitOK || !slices.Equal(r.fitLeast, least) {
		r.fitLeast = append(r.fitLeast[:0], least...)
		r.fitSum = s.roomWhereFits(r.fitSum, r, least, nil)
		r.fitOK = true
	}
	sum := s.drainScratch(&s.search.drainFit)
	copy(sum, r.fitSum)
	if s.isListed(r, b) && s.hasRoom(b, least) {
		for i, v := range s.roomOf(b) {
			sum[i] -= max(v, 0)
		}
	}
	if fitCheck != nil {
		fitCheck(slices.Equal(sum, s.roomWhereFits(nil, r, least, b)))
	}
	return sum
}

// roomWhereFits is the free room, summed per resource into buf (reused),
// of r's listed nodes other than skip where least fits (hasRoom: a new
// node without pods takes no drained pod).
func (s *solver) roomWhereFits(buf vec, r *roomy, least vec, skip *bin) vec {
	buf = append(buf[:0], make(vec, len(least))...)
	for _, t := range r.bins {
		if t == skip || !s.hasRoom(t, least) {
			continue
		}
		for i, v := range s.roomOf(t) {
			buf[i] += max(v, 0)
		}
	}
	return buf
}

// fitCheck, when set, is told for every fittingFree answer whether it
// equals the sum made afresh (tests check the kept sums).
var fitCheck func(same bool)

// shrinkWith is mayShrink's test with the free room free of the listed
// nodes (less own, b's room, when not nil).
func (s *solver) shrinkWith(b *bin, free, own vec) bool {
	// A new node's used is its pods' requests (bin.used).
	pods := b.used
	rest := s.drainScratch(&s.search.drainRest)
	all := true
	for i := range rest {
		f := free[i]
		if own != nil {
			f -= own[i]
		}
		m := min(pods[i], max(f, 0))
		if m < pods[i] {
			all = false
		}
		rest[i] = b.used[i] - m
	}
	if all {
		return true
	}
	// A type off the frontier has one on it with as much of everything
	// at no higher price (dominates); the frontier's cheapest type holding
	// rest is found by its fit index (cheaperHolds), not a walk.
	if len(b.pool.frontier) == 0 {
		return false
	}
	return s.cheaperHolds(b.pool, rest, b.offer.price-1e-9)
}

// roomFree is the free room of r's listed nodes, summed per resource
// (kept until the list's nodes change: recheck, after a kept drain).
func (s *solver) roomFree(r *roomy) vec {
	if !r.freeOK {
		// Every listed node has pods and a type (roomyBins, recheck),
		// so a request of nothing fits in each.
		r.freeSum = s.roomWhereFits(r.freeSum, r, s.zeros(), nil)
		r.freeOK = true
	}
	return r.freeSum
}

// roomOf is b's free room at its type (existing nodes: allocatable), in
// scratch valid until the next call.
func (s *solver) roomOf(b *bin) vec {
	c := b.alloc
	if b.node == nil {
		c = b.pool.types[b.typ].net
	}
	room := s.drainScratch(&s.search.drainRoom)
	for i := range room {
		room[i] = c[i] - b.used[i]
	}
	return room
}

// isListed tells whether b is on r's list.
func (s *solver) isListed(r *roomy, b *bin) bool {
	if r.listed != nil && r.trees != nil {
		return b.id < len(r.listed) && r.listed[b.id]
	}
	for _, t := range r.bins {
		if t == b {
			return true
		}
	}
	return false
}

// drainScratch is a zeroed vector kept in *buf.
func (s *solver) drainScratch(buf *vec) vec {
	if len(*buf) != s.dims.n() {
		*buf = s.dims.zero()
	}
	clear(*buf)
	return *buf
}
