package scheduling

import (
	"math"
)

// rightSize gives a new bin the cheapest type that holds its pods (plus the
// DaemonSets of that type) and has an offering where the bin may launch,
// within the pool's limits. It keeps the bin's type when none fits (which
// packing never lets happen).
func (s *solver) rightSize(b *bin) bool {
	s.changed(b)
	ps := b.pool
	cur := ps.types[b.typ]
	best := -1
	var bo offer
	for i, t := range ps.types {
		if best >= 0 && t.minPrice > bo.price {
			break
		}
		if !b.types.has(i) || !b.used.le(t.net) {
			continue
		}
		o, ok := t.price(b.zoneMask, b.ctMask)
		if !ok {
			continue
		}
		if ps.hasLimits && i != b.typ && !s.withinLimits(ps, t.capv, cur.capv, 0) {
			continue
		}
		if best < 0 || o.price < bo.price {
			best, bo = i, o
		}
	}
	if best < 0 {
		b.offer, _ = cur.price(b.zoneMask, b.ctMask)
		return false
	}
	if best != b.typ {
		ps.usage.sub(cur.capv)
		ps.usage.add(ps.types[best].capv)
	}
	b.typ, b.offer = best, bo
	return true
}

// improve is the local search after packing. Each step tries to empty a
// new node, or make it cheaper, by moving its pods into room other nodes
// already have (their types do not change, so a move costs nothing); the
// step is kept only when the plan's price drops. Passes repeat until one
// changes nothing (at most a few).
func (s *solver) improve() {
	for pass := 0; pass < 8; pass++ {
		// Least utilized first: those are the cheapest to empty.
		order := s.utilOrder()
		improved := false
		targets := s.roomyBins()
		for _, b := range order {
			if len(b.entries) > 0 && s.mayShrink(b, targets) && s.tryDrain(b, targets) {
				improved = true
				s.recheck(targets, b)
			}
		}
		// Merges: the least utilised nodes (a fixed number) into any other.
		for i, a := range order {
			if i >= mergeWorst {
				break
			}
			if len(a.entries) == 0 {
				continue
			}
			tw := &s.mergeTwins
			tw.reset()
			for _, b := range order {
				if b == a || len(b.entries) == 0 || tw.seen(b) {
					continue
				}
				merged, early := s.tryMerge(a, b)
				if merged {
					improved = true
					break
				}
				tw.note(b, early)
			}
		}
		if pass < rebuildPasses && !s.nearBound() && s.rebuildPass(order) {
			improved = true
		}
		if !improved {
			break
		}
	}
}

// Budgets of the local search's costlier steps, so that it costs about
// the same whatever the plan's size: merges are tried for this many of the
// least utilised nodes, and rebuilds in the first passes only.
const (
	mergeWorst    = 12
	rebuildPasses = 2
)

// free tells whether a level's pods carry no constraint between pods
// (topology, host ports): they can be taken off nodes and packed again
// without looking at anybody else.
func (l *level) free() bool {
	c := l.cls
	return len(l.anti) == 0 && len(l.aff) == 0 && len(l.spreads) == 0 && len(c.invAnti) == 0 && len(c.memberOf) == 0 && len(c.ports) == 0
}

// rebuildPass tries, for each new node from the least utilised, packing
// its pods again together with those of one of the next few such nodes
// (and alone), keeping any rebuild that makes the plan cheaper: the
// packer's greedy choices for a few nodes are revisited with only their
// pods pending, as the same pods would be packed if they came alone (so
// a workload does not cost more than its pieces packed apart).
func (s *solver) rebuildPass(order []*bin) (improved bool) {
	if s.samePassState() {
		return false
	}
	defer func() { s.notePass(improved) }()
	var cand []*bin
	if !searchScratchOff {
		cand = s.search.cand[:0]
		defer func() { s.search.cand = cand[:0] }()
	}
	for _, b := range order {
		if len(b.entries) > 0 && b.holdsOnlyFree() {
			cand = append(cand, b)
		}
	}
	// A fixed budget: the least utilised nodes, each with a few partners,
	// so the pass costs a bounded number of small re-packs whatever the
	// plan's size.
	const worst, partners = 12, 3
	if len(cand) > worst+partners {
		cand = cand[:worst+partners]
	}
	s.rbTried = s.rbTried[:0]
	for i, a := range cand {
		if i >= worst {
			break
		}
		if len(a.entries) == 0 {
			continue
		}
		if s.tryRebuildTwin(a, nil, false) {
			improved = true
			continue
		}
		// Split: its pods again, on nodes each cheaper than it.
		if s.tryRebuildTwin(a, nil, true) {
			improved = true
			continue
		}
		for k := i + 1; k < len(cand) && k <= i+partners; k++ {
			b := cand[k]
			if len(b.entries) == 0 || b.pool != a.pool {
				continue
			}
			if s.tryRebuildTwin(a, b, false) {
				improved = true
				break
			}
		}
	}
	return improved
}

// A rebuild pass that kept nothing leaves every node as it was: a
// rebuild not kept puts each node back with its version (restoreShape),
// and versions are unique over the solve, so a node at the version it
// had then is the node it was. The next pass (the local search runs
// passes until one changes nothing, and again after settle and the tail
// split) finds the same nodes when what changed between the two (drains,
// merges) was undone or touched nothing, and would try the same rebuilds
// with the same outcome: none kept. gpu at 2,000 pods repeats one whole
// pass, 55 of its 237 rebuilds. So a pass that kept nothing records
// every node's version (and the dual prices in force), and the next
// pass is skipped when they are all the same (TestRepeatPassSamePlans).

// samePassState tells whether every node is at the version the last
// pass that kept nothing left it at, under the same dual prices.
func (s *solver) samePassState() bool {
	if repeatPassOff || s.lastPass == nil || len(s.lastPass) != len(s.bins) || len(s.unitPrice) == 0 || &s.unitPrice[0] != s.lastPrices {
		return false
	}
	for i, b := range s.bins {
		if b.ver != s.lastPass[i] {
			return false
		}
	}
	return true
}

// notePass records the nodes' versions after a pass that kept nothing,
// and forgets them after one that kept a rebuild.
func (s *solver) notePass(improved bool) {
	if improved || len(s.unitPrice) == 0 {
		s.lastPass = nil
		return
	}
	s.lastPass = s.passBuf[:0]
	for _, b := range s.bins {
		s.lastPass = append(s.lastPass, b.ver)
	}
	s.passBuf = s.lastPass
	s.lastPrices = &s.unitPrice[0]
}

// repeatPassOff makes every rebuild pass run (tests compare).
var repeatPassOff bool

// newPrice is the price of the new nodes.
func (s *solver) newPrice() float64 {
	p := 0.0
	for _, b := range s.bins {
		if b.node == nil && len(b.entries) > 0 {
			p += b.offer.price
		}
	}
	return p
}

// tryRebuild takes every pod off the group's new nodes and packs them
// again (into room other nodes have, upgrades or new nodes, as packing
// does); it keeps the result only if the plan got cheaper, else puts
// everything back as it was.
func (s *solver) tryRebuild(group []*bin) bool {
	return s.tryRebuildBy(group, s.placeWork)
}

// removed is a rebuild's pods taken off one node.
type removed struct {
	l *level
	b *bin
	n int
}

// placeWork packs a rebuild's pods again, in class order; it tells
// whether every pod found a place.
func (s *solver) placeWork(work []removed) bool {
	if s.setWorkMin(work) {
		defer s.endWorkMin()
	}
	for i, w := range work {
		s.nextWork(i)
		if n, _ := s.placeAt(w.l, w.n); n < w.n {
			s.pending.addScaled(w.l.cls.req, -int64(w.n-n))
			return false
		}
	}
	return true
}

// setWorkMin makes the smallest pending request, while a rebuild places
// work without the growth index, the smallest request of the work still
// to place (suffix minima by work item; nextWork moves to item i), and
// tells whether it did (then endWorkMin ends it). Else every class a rebuild places (its classes
// are done for the pending minimum, pendmin.go) would make the minimum
// its own request, which moves at every class: every node's open state
// (isOpen) was asked again for each, a tenth of many-shapes at 2,000
// pods. The minimum of what is left only rises, so closed nodes stay
// closed without asking; a smaller minimum only keeps more nodes in the
// live list, which the searches check one by one anyway, so the plans
// are the same (TestWorkMinSamePlans).
func (s *solver) setWorkMin(work []removed) bool {
	if workMinOff || s.gidx != nil || len(work) == 0 {
		return false
	}
	d := s.dims.n()
	buf := s.workMinBuf[:0]
	for range (len(work) + 1) * d {
		buf = append(buf, math.MaxInt64)
	}
	for i := len(work) - 1; i >= 0; i-- {
		req, row, next := work[i].l.cls.req, buf[i*d:i*d+d], buf[(i+1)*d:(i+2)*d]
		for k := range row {
			row[k] = min(req[k], next[k])
		}
	}
	s.workMinBuf = buf
	s.workMin = buf[:d:d]
	return true
}

// endWorkMin ends what setWorkMin set: the pending minimum is the
// classes' again.
func (s *solver) endWorkMin() { s.workMin = nil }

// nextWork points workMin at the suffix minimum from work item i.
func (s *solver) nextWork(i int) {
	if s.workMin != nil {
		d := len(s.workMin)
		s.workMin = s.workMinBuf[i*d : i*d+d : i*d+d]
	}
}

// workMinOff makes rebuilds leave the pending minimum to the class being
// placed (tests compare).
var workMinOff bool

// tryRebuildBy is tryRebuild with the re-packing done by place.
func (s *solver) tryRebuildBy(group []*bin, place func([]removed) bool) bool {
	if s.nearBound() {
		return false
	}
	s.rebuildTries++
	// Limited pools: the packing checks every node it grows or opens
	// against its pool's limits (withinLimits, with the usage the
	// journal puts back), so a rebuild keeps them too.
	if limitRebuildsOff {
		for _, ps := range s.pools {
			if ps.hasLimits {
				return false
			}
		}
	}
	before := s.newPrice()
	// Pods that must take the floor to the price before: nothing is
	// taken off (rebuildbound.go).
	if s.pendingLost(group, before) {
		return false
	}
	j := s.begin()
	s.beginFloors(j)
	defer s.endFloors(j)
	nBins := len(s.bins)
	// work and the placements' record are scratch, reused by every
	// rebuild (the local search tries dozens per solve).
	work := s.workBuf[:0]
	defer func() { s.workBuf = work[:0] }()
	for _, b := range group {
		j.touch(b)
		for _, e := range b.entries {
			work = append(work, removed{e.l, b, e.n})
		}
	}
	// Constrained pods: their groups' counts, which must end as they
	// were (rebuildtopo.go).
	topo := s.rebuildTopoSnap(work)
	s.clearPending()
	for _, w := range work {
		s.unplace(w.l, w.b, w.n)
		s.pending.addScaled(w.l.cls.req, int64(w.n))
	}
	for _, b := range group {
		s.dropBin(b)
	}
	sortWork(work)
	s.jr = j
	s.jrPlaced = s.jrBuf[:0]
	s.rbBefore = before
	s.topo.live = topo
	s.startPaid()
	ok := place(work)
	s.stopPaid()
	s.topo.live = false
	s.rbBefore = 0
	s.jr = nil
	placed := s.jrPlaced
	s.jrPlaced = nil
	defer func() { s.jrBuf = placed[:0] }()
	if ok && s.newPrice() < before-1e-9 && (!topo || s.rebuildTopoSame()) {
		return true
	}
	// Undo: the new placements, then the removed pods, shapes, usage.
	for i := len(placed) - 1; i >= 0; i-- {
		if p := placed[i]; p.b != nil {
			s.unplace(p.l, p.b, p.k)
		}
	}
	for _, w := range work {
		s.addBack(w.l, w.b, w.n)
	}
	s.restoreJournal(j)
	copy(s.zoneLoad, j.load)
	s.bins = s.bins[:nBins]
	s.noteShrink()
	for _, u := range s.upShared {
		if len(u.e) > nBins {
			u.e = u.e[:nBins]
		}
		if len(u.capped) > nBins {
			u.capped = u.capped[:nBins]
		}
	}
	return false
}

// journal records what a tentative step changed, to undo it.
type journal struct {
	// from is the last bin version given out when the journal began:
	// bins of a later version changed since.
	from  uint32
	moves []moveRec
	// shapes are the touched bins' shapes before the step, in touch
	// order; a bin is touched when its mark is the journal's epoch (one
	// per step). Entries past the end keep their buffers for reuse.
	shapes []touched
	epoch  uint32
	// floors, while a rebuild is journaled (beginFloors), makes touch
	// note each bin's price floor before the step (rebuildbound.go), and
	// s is the solver to ask it; floorBase is the floors' sum then.
	floors    bool
	s         *solver
	floorBase float64
	// usage is the pools' usage before the step, by pool.
	usage []usageRec
	load  []int
}

type touched struct {
	b  *bin
	sh shape
	// floor0 is the bin's price floor before the step (journal.floors).
	floor0 float64
}

type moveRec struct {
	l        *level
	from, to *bin
	ch       choice
}

type shape struct {
	ver              uint32
	types            bitset
	zoneMask, ctMask uint64
	zone, ct         int
	custom           *reqs
	ownCust          bool
	labelCut         bool
	typ              int
	offer            offer
	ports            []hostPort
	doms             []int
}

type usageRec struct {
	usage vec
	nodes int64
}

func (s *solver) begin() *journal {
	// One journal, reused (its shapes' and usage's buffers too): steps
	// do not nest, and one is begun for every node the local search
	// tries to drain.
	j := &s.jbuf
	j.epoch++
	j.shapes = j.shapes[:0]
	j.from, j.moves = s.verSeq, j.moves[:0]
	j.load = append(j.load[:0], s.zoneLoad...)
	for len(j.usage) < len(s.pools) {
		j.usage = append(j.usage, usageRec{})
	}
	for i, ps := range s.pools {
		u := &j.usage[i]
		u.usage = append(u.usage[:0], ps.usage...)
		u.nodes = ps.usageNodes
	}
	return j
}

func (j *journal) touch(b *bin) {
	if b.jmark == j.epoch {
		return
	}
	b.jmark = j.epoch
	n := len(j.shapes)
	if n < cap(j.shapes) {
		j.shapes = j.shapes[:n+1]
	} else {
		j.shapes = append(j.shapes, touched{})
	}
	t := &j.shapes[n]
	t.b = b
	snapshotTo(&t.sh, b)
	if j.floors {
		t.floor0 = j.s.floorOf(b)
	}
}

// restoreJournal puts back the shapes and pool usage the journal holds.
func (s *solver) restoreJournal(j *journal) {
	for i := range j.shapes {
		s.restoreShape(j.shapes[i].b, &j.shapes[i].sh)
	}
	for i, ps := range s.pools {
		copy(ps.usage, j.usage[i].usage)
		ps.usageNodes = j.usage[i].nodes
	}
}

// snapshotTo records b's shape in sh, reusing sh's buffers.
func snapshotTo(sh *shape, b *bin) {
	types, ports, doms := sh.types, sh.ports, sh.doms
	*sh = shape{ver: b.ver, zoneMask: b.zoneMask, ctMask: b.ctMask, zone: b.zone, ct: b.ct, custom: b.custom,
		ownCust: b.ownCust, labelCut: b.labelCut, typ: b.typ, offer: b.offer,
		ports: append(ports[:0], b.ports...), doms: append(doms[:0], b.doms...)}
	if b.types != nil {
		if len(types) == len(b.types) {
			copy(types, b.types)
			sh.types = types
		} else {
			sh.types = b.types.clone()
		}
	}
}

// rollback undoes the moves in reverse and restores shapes and usage.
func (s *solver) rollback(j *journal) {
	for i := len(j.moves) - 1; i >= 0; i-- {
		m := j.moves[i]
		s.unplace(m.l, m.to, m.ch.k)
		s.addBack(m.l, m.from, m.ch.k)
	}
	s.restoreJournal(j)
	copy(s.zoneLoad, j.load)
}

func (s *solver) restoreShape(b *bin, sh *shape) {
	s.noteShrink()
	s.changed(b)
	if sh.types != nil {
		copy(b.types, sh.types)
	}
	b.zoneMask, b.ctMask, b.zone, b.ct = sh.zoneMask, sh.ctMask, sh.zone, sh.ct
	b.custom, b.ownCust, b.typ, b.offer = sh.custom, sh.ownCust, sh.typ, sh.offer
	b.labelCut = sh.labelCut
	b.ports = append(b.ports[:0], sh.ports...)
	b.doms = append(b.doms[:0], sh.doms...)
	// The callers restore the bin's pods first, so it is again what it
	// was at the snapshot's version for everything the caches keyed by
	// version read (all but the order of its entries): it takes that
	// version back, and the answers cached for it hold again (a rebuild
	// the local search does not keep then costs no upgrade searches
	// after it). Not when the bin owned its custom labels: placing may
	// have narrowed those in place.
	if !sh.ownCust && !versionRestoreOff {
		b.ver = sh.ver
	}
}

// versionRestoreOff keeps restoreShape from giving a bin its version back
// (tests compare).
var versionRestoreOff bool

// changed gives a bin that changed a new version (for caches).
func (s *solver) changed(b *bin) {
	s.verSeq++
	b.ver = s.verSeq
	if s.rbPaid.on {
		s.rbPaid.note(b)
	}
}

// unplace takes k pods of level l off b (counts, requests, entries).
func (s *solver) unplace(l *level, b *bin, k int) {
	s.noteShrink()
	s.changed(b)
	s.count(l, b, -int32(k))
	b.used.addScaled(l.cls.req, -int64(k))
	for i := range b.entries {
		if b.entries[i].l == l {
			b.entries[i].n -= k
			if b.entries[i].n == 0 {
				b.entries = append(b.entries[:i], b.entries[i+1:]...)
			}
			break
		}
	}
	if b.node == nil && b.zone >= 0 {
		s.zoneLoad[b.zone] -= k
	}
	if len(l.cls.ports) > 0 {
		b.ports = removePorts(b.ports, l.cls.ports)
	}
}

// addBack returns k pods to a bin they came from, without re-narrowing
// (the bin's shape is restored separately).
func (s *solver) addBack(l *level, b *bin, k int) {
	s.changed(b)
	b.used.addScaled(l.cls.req, int64(k))
	b.addEntry(l, k)
	if b.node == nil && b.zone >= 0 {
		s.zoneLoad[b.zone] += k
	}
	s.count(l, b, int32(k))
}

func removePorts(have, drop []hostPort) []hostPort {
	out := append([]hostPort(nil), have...)
	for _, d := range drop {
		for i := len(out) - 1; i >= 0; i-- {
			if out[i] == d {
				out = append(out[:i], out[i+1:]...)
				break
			}
		}
	}
	return out
}

// tryDrain moves as many of b's pods as fit elsewhere at no cost, then
// right-sizes b (or drops it when empty). It keeps the result only if the
// plan got cheaper. The pods may go to the targets (roomy.go).
func (s *solver) tryDrain(b *bin, targets *roomy) bool {
	s.drainTries++
	before := b.offer.price
	j := s.begin()
	j.touch(b)
	entries := s.entriesByValue(b)
	// Every node this drain changes gets its value in the drain index
	// again, whether the drain is kept or rolled back.
	defer func() {
		for _, t := range j.shapes {
			targets.refresh(t.b)
		}
	}()
	for _, e := range entries {
		left := e.n
		var walk *targetWalk
		if targets.trees != nil {
			walk = targets.walk(e.l)
		}
		for ti, id := 0, 0; ; ti++ {
			if left == 0 {
				break
			}
			var t *bin
			if walk != nil {
				// Only the listed nodes of the pools the class may use
				// with CPU room for it and its host ports free.
				if id = walk.next(id); id < 0 {
					break
				}
				t = s.bins[id]
				id++
			} else {
				if ti == len(targets.bins) {
					break
				}
				t = targets.bins[ti]
			}
			if t == b || (t.node == nil && len(t.entries) == 0) {
				continue
			}
			capType := t.typ
			if t.node != nil {
				capType = -1
			}
			// Quick reject on cpu before the full check.
			if t.node == nil {
				if t.used[dimCPU]+e.l.cls.req[dimCPU] > t.pool.types[capType].net[dimCPU] {
					continue
				}
			} else if t.used[dimCPU]+e.l.cls.req[dimCPU] > t.alloc[dimCPU] {
				continue
			}
			ch := s.allowance(e.l, t, left, capType)
			if ch.k <= 0 || !s.removalSafe(e.l, b, t, ch) {
				continue
			}
			j.touch(t)
			pre := &s.preShape
			snapshotTo(pre, t)
			s.unplace(e.l, b, ch.k)
			s.place(e.l, t, ch)
			if t.node == nil {
				// The target keeps its type; pinning must not make it
				// pricier.
				if o, ok := t.pool.types[t.typ].price(t.zoneMask, t.ctMask); !ok || o.price > t.offer.price+1e-12 {
					s.unplace(e.l, t, ch.k)
					s.addBack(e.l, b, ch.k)
					s.restoreShape(t, pre)
					continue
				} else {
					t.offer = o
				}
			}
			j.moves = append(j.moves, moveRec{l: e.l, from: b, to: t, ch: ch})
			left -= ch.k
		}
	}
	if len(j.moves) == 0 {
		return false
	}
	after := 0.0
	if len(b.entries) > 0 {
		s.reshape(b)
		s.rightSize(b)
		after = b.offer.price
	}
	if before-after <= 1e-9 {
		s.rollback(j)
		return false
	}
	if len(b.entries) == 0 {
		s.dropBin(b)
	}
	return true
}

// tryMerge moves every pod of new bin a onto new bin b grown to the
// cheapest type that holds both, when that costs less than the two: the
// other half of the local search, joining nodes where tryDrain empties
// them into room already paid for. It keeps the result only if every pod
// moves (with its constraints checked as for any placement). early
// tells, when it refuses, whether that was before anything changed, from
// what b's twins share (twins.go).
func (s *solver) tryMerge(a, b *bin) (merged, early bool) {
	ps := b.pool
	if a.pool != ps || ps.hasLimits {
		return false, true
	}
	before := a.offer.price + b.offer.price
	zm, cm := a.zoneMask&b.zoneMask, a.ctMask&b.ctMask
	if zm == 0 || cm == 0 {
		return false, true
	}
	if len(s.mergeBuf) != len(a.used) {
		s.mergeBuf = make(vec, len(a.used))
	}
	need := s.mergeBuf
	copy(need, a.used)
	need.add(b.used)
	if !s.cheaperHolds(ps, need, before-1e-9) {
		return false, true
	}
	best := -1
	// Every type, cheapest first; for nodes cut by labels, only those of
	// both nodes' types with the CPU and memory (the others are skipped
	// below anyway, and the price only rises along the list).
	walk := listWalk(ps.allIdx)
	if a.labelCut || b.labelCut {
		walk = s.typesWalk(ps, ps.allIdx, need, a.types, b.types)
	}
	for {
		i, more := walk.next()
		if !more {
			break
		}
		t := ps.types[i]
		if t.minPrice >= before-1e-9 {
			break
		}
		if !a.types.has(i) || !b.types.has(i) || need[dimCPU] > t.net[dimCPU] || !need.le(t.net) {
			continue
		}
		if o, ok := t.price(zm, cm); ok && o.price < before-1e-9 {
			best = i
			break
		}
	}
	if best < 0 {
		return false, true
	}
	j := s.begin()
	j.touch(a)
	j.touch(b)
	s.setType(b, best)
	entries := s.entriesOf(a)
	for _, e := range entries {
		ch := s.allowance(e.l, b, e.n, best)
		if ch.k < e.n || !s.removalSafe(e.l, a, b, ch) {
			s.rollback(j)
			return false, false
		}
		s.unplace(e.l, a, ch.k)
		s.place(e.l, b, ch)
		j.moves = append(j.moves, moveRec{l: e.l, from: a, to: b, ch: ch})
	}
	o, ok := ps.types[best].price(b.zoneMask, b.ctMask)
	if !ok || o.price >= before-1e-9 {
		s.rollback(j)
		return false, false
	}
	b.offer = o
	s.dropBin(a)
	return true, false
}

// frontierHolds tells whether some type of the pool cheaper than price
// (by minimum price) holds need. Only the frontier is looked at: a type
// that holds need has a frontier type dominating it (no dearer, as much
// of everything), which holds it too. tryMerge asks it first: most pairs
// of nodes fit no type cheaper than the two (at 50,000 pods it tries
// tens of thousands of pairs, each a walk over every type cheaper than
// the two).
func frontierHolds(ps *poolState, need vec, price float64) bool {
	idx := ps.frontier
	if len(idx) == 0 {
		idx = ps.allIdx
	}
	for _, i := range idx {
		t := ps.types[i]
		if t.minPrice >= price {
			return false
		}
		if need[dimCPU] <= t.net[dimCPU] && need.le(t.net) {
			return true
		}
	}
	return false
}

// cheaperHolds is frontierHolds through the pool's fit index (fitidx.go):
// the cheapest frontier type holding need, found among the types with
// its CPU and memory only, costs less than price (few-big at 2,000 pods:
// the merges walked most of the frontier per pair, 2.5 % of a solve).
func (s *solver) cheaperHolds(ps *poolState, need vec, price float64) bool {
	fi := s.fitFor(ps, ps.frontier)
	if fi == nil {
		return frontierHolds(ps, need, price)
	}
	ok, i := fi.firstHolding(ps, nil, need)
	return ok && ps.types[i].minPrice < price
}

// removalSafe tells whether moving ch.k pods of l from one bin to another
// keeps every other pod's constraints: no spread's global minimum drops
// (which could push a pod elsewhere over its skew) and no pod loses the
// affinity target it was placed next to.
func (s *solver) removalSafe(l *level, from, to *bin, ch choice) bool {
	for _, g := range l.cls.memberOf {
		dFrom := s.domain(from, g.key, -1, -1)
		dTo := s.domain(to, g.key, ch.zone, ch.ct)
		if dFrom == dTo || dFrom < 0 {
			continue
		}
		if g.spreadSkew > 0 && s.keys[g.key].kind != keyHostname {
			m := int32(-1)
			for _, d := range g.spreadEligible {
				if c := at(g.counts, d); m < 0 || c < m {
					m = c
				}
			}
			if m >= 0 && at(g.counts, dFrom)-int32(ch.k) < m {
				return false
			}
		}
		if owners := at(g.affOwners, dFrom); owners > 0 {
			moving := int32(0)
			for _, a := range l.aff {
				if a == g {
					moving = int32(ch.k)
				}
			}
			if at(g.counts, dFrom)-int32(ch.k) <= 0 && owners-moving > 0 {
				return false
			}
		}
	}
	return true
}

// reshape recomputes what a new bin's remaining pods allow (types, zones,
// capacity types, custom labels), widening it after pods left. A pinned
// zone or capacity type stays pinned.
func (s *solver) reshape(b *bin) {
	s.noteShrink()
	s.changed(b)
	ps := b.pool
	copy(b.types, ps.allTypes)
	b.labelCut = false
	zm, cm := ps.zoneMask, ps.ctMask
	cust := ps.custom
	own := false
	for _, e := range b.entries {
		cp := e.l.pools[ps.idx]
		b.types.and(cp.types)
		if !cp.labelAll {
			b.labelCut = true
		}
		zm &= cp.zoneMask
		cm &= cp.ctMask
		if cp.custom != nil {
			if !own {
				cust, own = cust.clone(), true
			}
			for _, k := range cp.custom.keys {
				cust.add(k, cp.custom.sets[k])
			}
		}
	}
	if b.zone >= 0 {
		zm = maskOf(b.zone)
	}
	if b.ct >= 0 {
		cm = maskOf(b.ct)
	}
	b.zoneMask, b.ctMask, b.custom, b.ownCust = zm, cm, cust, own
	// Pinned values of other keys stay pinned: pods counted there.
	for key, d := range b.doms {
		if d >= 0 {
			s.pin(b, key, d)
		}
	}
}

// dropBin removes an emptied new bin from its pool's usage. It stays in
// s.bins (ids are hostname domains) with no entries.
func (s *solver) dropBin(b *bin) {
	ps := b.pool
	ps.usage.sub(ps.types[b.typ].capv)
	ps.usageNodes--
	b.typ = -1
}

// holdsOnlyFree says whether every pod on the node is of a level with no
// constraint between pods (free): such a node's pods can be packed again
// anywhere without recounting topology.
func (b *bin) holdsOnlyFree() bool {
	for _, e := range b.entries {
		if !e.l.free() {
			return false
		}
	}
	return true
}

// limitRebuildsOff turns rebuilds off when a pool has limits (tests
// compare).
var limitRebuildsOff bool
