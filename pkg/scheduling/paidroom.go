package scheduling

// Paid room while packing. fillPaid looks for nodes whose room at their
// current type (paid for) takes a pod of the class being placed. Most open
// nodes have none: each new node is sized to the cheapest type holding
// its pods. Few big pods at 50,000 pods make 5,000 classes and thousands
// of open nodes, and a pass over every open node per class was a fifth of
// the solve. paidRoom keeps the open nodes with paid room for the
// smallest pending request (minPending): no other node can take a pod of
// any pending class, since every class's request is at least that.
//
// Packing changes a node only by placing pods on it (less room) and by
// giving it a bigger type (more room); both queue it (growDirty). A query
// re-checks the listed nodes and the queued ones, so its cost follows
// them, not the open nodes. The list is rebuilt from every node when the
// minimum falls. Outside packing (the local search takes pods off nodes)
// fillPaid scans the open nodes as before.

// paidRoom is the ordered list of nodes with paid room and the queue of
// nodes changed since the last query.
type paidRoom struct {
	bins   []*bin
	in     []bool // by bin id: on bins
	dirty  []int32
	queued []bool
	min    vec // minPending at the last query (nil: rebuild)
	// add and spare are scratch: queued nodes to list, the next list.
	add, spare []*bin
}

// paidIndexOff makes fillPaid scan every open node (tests compare).
var paidIndexOff bool

// paidDirty queues a changed node.
func (p *paidRoom) paidDirty(b *bin) {
	for len(p.queued) <= b.id {
		p.queued = append(p.queued, false)
	}
	if !p.queued[b.id] {
		p.queued[b.id] = true
		p.dirty = append(p.dirty, int32(b.id))
	}
}

// hasPaidRoom tells whether b is open and holds minPending more at its
// current type (an existing node: its allocatable).
func (s *solver) hasPaidRoom(b *bin) bool {
	if b.node == nil && (len(b.entries) == 0 || b.typ < 0) {
		return false
	}
	return s.hasRoom(b, s.minPending) && s.isOpen(b)
}

// paidBins are the bins, in order, that may have paid room for a pod of
// the level being placed: every open bin outside packing.
func (s *solver) paidBins() []*bin {
	g := s.gidx
	if g == nil || paidIndexOff {
		return s.liveBins()
	}
	p := &g.paid
	for len(p.in) < len(s.bins) {
		p.in = append(p.in, false)
	}
	fell := p.min == nil
	for i, v := range p.min {
		if s.minPending[i] < v {
			fell = true
		}
	}
	if fell {
		p.min = append(p.min[:0], s.minPending...)
		p.bins = p.bins[:0]
		for _, b := range s.bins {
			p.in[b.id] = s.hasPaidRoom(b)
			if p.in[b.id] {
				p.bins = append(p.bins, b)
			}
		}
		for _, id := range p.dirty {
			p.queued[id] = false
		}
		p.dirty = p.dirty[:0]
		return p.bins
	}
	copy(p.min, s.minPending)
	// Queued nodes not listed that now have room, in node order.
	p.add = p.add[:0]
	for _, id := range p.dirty {
		p.queued[id] = false
		if b := s.bins[id]; !p.in[id] && s.hasPaidRoom(b) {
			p.add = append(p.add, b)
		}
	}
	p.dirty = p.dirty[:0]
	sortBinsByID(p.add)
	// Merge them into the listed nodes still with room.
	out := p.spare[:0]
	i := 0
	for _, b := range p.bins {
		for i < len(p.add) && p.add[i].id < b.id {
			out = append(out, p.add[i])
			p.in[p.add[i].id] = true
			i++
		}
		if s.hasPaidRoom(b) {
			out = append(out, b)
		} else {
			p.in[b.id] = false
		}
	}
	for ; i < len(p.add); i++ {
		out = append(out, p.add[i])
		p.in[p.add[i].id] = true
	}
	p.bins, p.spare = out, p.bins
	return p.bins
}

// sortBinsByID sorts a few bins by id (insertion sort: the queue between
// two queries is a handful of nodes).
func sortBinsByID(bs []*bin) {
	for i := 1; i < len(bs); i++ {
		for j := i; j > 0 && bs[j].id < bs[j-1].id; j-- {
			bs[j], bs[j-1] = bs[j-1], bs[j]
		}
	}
}
