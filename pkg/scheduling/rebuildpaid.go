package scheduling

import "slices"

// Paid room in a rebuild. While packing, fillPaid reads the nodes with
// room for the smallest pending request from the paid-room lists
// (paidroom.go); a rebuild of the local search places its work without
// them, and fillPaid looked at every open node for each class it placed
// again: at 50,000 pods, 469 nodes for each of a hundred classes in each
// of some 250 rebuilds, nearly all of them full. So a rebuild keeps its
// own list of the open nodes with room at their type for the smallest
// pending request (hasRoom, as the paid-room lists ask), made at its
// first fillPaid: the work's minimum only
// rises while it is placed (setWorkMin), so a node without room stays
// without room until the node itself changes (a pod taken off, a bigger
// type), and every change of a node goes through changed, which notes it
// for the next look. The list is made again should the minimum fall or
// the open list be rebuilt (a node may be open again then; neither
// happens while a rebuild places its work today: its minimum only rises,
// and only pods taken off mark the open list stale). It holds every node
// fillPaid's own checks would let through (a pod of the level being
// placed asks at least that minimum), in node order, so the placements
// are those of the scan over every open node
// (TestRebuildPaidSamePlans).

// rebuildPaidOff makes rebuilds' fillPaid look at every open node
// (tests compare).
var rebuildPaidOff bool

// rebuildPaid is a rebuild's list of nodes with paid room.
type rebuildPaid struct {
	// on while a rebuild places its work; made once the list is.
	on, made bool
	// bins are the nodes with room for min at their type, by id.
	bins []*bin
	min  vec
	// liveGen is the open list's generation the list was made from.
	liveGen uint32
	// dirty are the nodes changed since the list was last read
	// (noted[id] set), to look at again.
	dirty []*bin
	noted []bool
	// in[id]: the node is on bins.
	in []bool
}

// startPaid begins a rebuild's list (made at its first fillPaid).
func (s *solver) startPaid() {
	p := &s.rbPaid
	p.on = !rebuildPaidOff
	p.made = false
}

// stopPaid ends it.
func (s *solver) stopPaid() {
	p := &s.rbPaid
	p.on, p.made = false, false
	p.clear()
}

// clear empties the list and the changed nodes, with their marks.
func (p *rebuildPaid) clear() {
	for _, b := range p.bins {
		p.in[b.id] = false
	}
	for _, b := range p.dirty {
		p.noted[b.id] = false
	}
	p.bins, p.dirty = p.bins[:0], p.dirty[:0]
}

// note records that b changed (from changed).
func (p *rebuildPaid) note(b *bin) {
	if !p.made {
		return
	}
	for len(p.noted) <= b.id {
		p.noted = append(p.noted, false)
	}
	if !p.noted[b.id] {
		p.noted[b.id] = true
		p.dirty = append(p.dirty, b)
	}
}

// rebuildPaidBins is the rebuild's list, brought up to date.
func (s *solver) rebuildPaidBins() []*bin {
	p := &s.rbPaid
	fell := false
	if p.made {
		for i, v := range p.min {
			if s.minPending[i] < v {
				fell = true
				break
			}
		}
	}
	if !p.made || fell || s.liveStale || p.liveGen != s.liveGen {
		live := s.liveBins()
		p.clear()
		for len(p.in) < len(s.bins) {
			p.in = append(p.in, false)
		}
		for _, b := range live {
			if s.hasRoom(b, s.minPending) {
				p.bins = append(p.bins, b)
				p.in[b.id] = true
			}
		}
		p.min = append(p.min[:0], s.minPending...)
		p.liveGen, p.made = s.liveGen, true
		return p.bins
	}
	for _, b := range p.dirty {
		p.noted[b.id] = false
		for len(p.in) <= b.id {
			p.in = append(p.in, false)
		}
		if p.in[b.id] || !s.hasRoom(b, p.min) {
			continue
		}
		i, _ := slices.BinarySearchFunc(p.bins, b.id, func(x *bin, id int) int { return x.id - id })
		p.bins = slices.Insert(p.bins, i, b)
		p.in[b.id] = true
	}
	p.dirty = p.dirty[:0]
	return p.bins
}
