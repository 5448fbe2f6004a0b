package scheduling

// Closed bins. A node that cannot take the smallest pending pod (the
// per-resource minimum of the requests of the classes still to place),
// even grown to its biggest allowed type, can take no pending pod: the
// packer's searches for paid room and for growth skip it. Packing only
// adds pods and narrows a bin's types, so a closed bin stays closed while
// that minimum does not fall; the local search, which takes pods off and
// widens bins, and a fall of the minimum mark the list for a rebuild.
// This keeps a growth step's cost with the open nodes (the few still
// growing) instead of all nodes: few big pods at 50,000 pods open
// thousands of nodes that are all full.

// openState caches whether a bin was open at a bin version and a minimum.
type openState struct {
	ver  uint32
	gen  uint32
	ok   bool // computed
	open bool
	// wit is the type that made the bin open (a type index), checked
	// first when the bin did not change since.
	wit int32
}

// noteShrink marks the open list stale: some bin may have room again.
func (s *solver) noteShrink() { s.liveStale = true }

// setMinPending sets the minimum pending request from the classes with
// pods left (pendmin.go), the level being placed (whose class may be
// one the local search put back) and, while a rebuild places its work
// without the growth index, the work still to place (workMin).
func (s *solver) setMinPending(l *level) {
	root := s.pendingMin().root()
	at := func(i int, v int64) int64 {
		m := min(v, root[i])
		if s.workMin != nil {
			m = min(m, s.workMin[i])
		}
		return m
	}
	if s.minPending == nil {
		s.minPending, s.liveStale = s.dims.zero(), true
		for i, v := range l.cls.req {
			s.minPending[i] = at(i, v)
		}
		return
	}
	same := true
	for i, v := range l.cls.req {
		m := at(i, v)
		if m < s.minPending[i] {
			s.liveStale = true
		}
		if m != s.minPending[i] {
			same = false
		}
	}
	if !same {
		for i, v := range l.cls.req {
			s.minPending[i] = at(i, v)
		}
		s.minGen++
		if s.liveStale {
			s.minFellGen = s.minGen
		}
	}
}

// isOpen tells whether b might take a pod of at least minPending.
func (s *solver) isOpen(b *bin) bool {
	if b.open.ok && b.open.ver == b.ver && (b.open.gen == s.minGen || (!b.open.open && b.open.gen >= s.minFellGen && !openCacheOff)) {
		// A closed bin stays closed while the minimum only rose.
		return b.open.open
	}
	open, wit := false, int32(-1)
	// need is scratch (isOpen is asked for every bin of every search).
	if len(s.needBuf) != len(b.used) {
		s.needBuf = make(vec, len(b.used))
	}
	need := s.needBuf
	copy(need, b.used)
	need.add(s.minPending)
	switch {
	case b.node != nil:
		open = need.le(b.alloc)
	case b.typ < 0 || len(b.entries) == 0:
		open = true // dropped or empty: the searches decide
	default:
		ps := b.pool
		if b.open.ok && b.open.open && b.open.ver == b.ver && !openCacheOff {
			// The same bin: the type that made it open may still.
			if w := int(b.open.wit); w >= 0 && need.le(ps.types[w].net) {
				b.open = openState{ver: b.ver, gen: s.minGen, ok: true, open: true, wit: int32(w)}
				return true
			}
		}
		// Through the list's index (for every type's, only the bin's
		// own types: a bin narrowed to a few types by a preferred or
		// required label is asked about those, not the pool's hundreds).
		list := s.searchList(b, nil)
		if fi := s.indexFor(ps, list); fi != nil {
			open, wit = fi.firstHolding(ps, b.types, need)
			break
		}
		for _, i := range list {
			net := ps.types[i].net
			// CPU and memory first: most types fail there.
			if need[dimCPU] <= net[dimCPU] && need[dimMemory] <= net[dimMemory] && b.types.has(i) && need.le(net) {
				open, wit = true, int32(i)
				break
			}
		}
	}
	b.open = openState{ver: b.ver, gen: s.minGen, ok: true, open: open, wit: wit}
	return open
}

// ownTypesOff makes the searches of a bin cut by labels walk every type
// of the pool, without every type's index (fitForAll; tests compare).
var ownTypesOff bool

// holdsAny tells whether b may be live: an existing node, or a new one
// with pods.
func (s *solver) holdsAny(b *bin) bool {
	return b.node != nil || len(b.entries) > 0 || liveEmptyKept
}

// liveEmptyKept keeps new bins without pods in the live list (tests
// compare).
var liveEmptyKept bool

// openCacheOff makes isOpen recompute whenever the minimum changed
// (tests compare).
var openCacheOff bool

// liveBins are the bins, in order, that may take a pod of l's class.
// placeAt calls setMinPending first (remaining counts change only
// between its calls). New bins without pods (dropped by the local
// search, which keeps them in s.bins) are left out: the searches skip
// them, and by the end of a local search they outnumber the nodes on
// some plans (many-shapes at 2,000 pods: 55 of 80 bins), each asked
// again at every move of the smallest pending request.
func (s *solver) liveBins() []*bin {
	if s.liveStale {
		s.live = s.live[:0]
		for _, b := range s.bins {
			if s.holdsAny(b) && s.isOpen(b) {
				s.live = append(s.live, b)
			}
		}
		s.liveStale = false
		s.liveLen = len(s.bins)
		s.liveGen++
		return s.live
	}
	// Bins opened since the last call.
	s.live = append(s.live, s.bins[s.liveLen:]...)
	s.liveLen = len(s.bins)
	j := 0
	for _, b := range s.live {
		if s.holdsAny(b) && s.isOpen(b) {
			s.live[j] = b
			j++
		}
	}
	s.live = s.live[:j]
	return s.live
}
