package scheduling

import "sort"

// Drain targets. tryDrain looks for room for a node's pods on every other
// node; after packing almost every node is full, so most of those looks
// fail on the first resource compared. roomy keeps, for a round of
// drains, the nodes (in s.bins order, which the drains follow) with room
// for the smallest request of any class: the only ones a pod can move to.
// Drains only fill the targets (they stay on the list, perhaps without
// room) and empty the drained node, which goes back on the list when it
// has room.

// roomy is the ordered list of nodes with room, and the smallest request.
type roomy struct {
	bins []*bin
	min  vec
}

// roomyBins lists the nodes with room for the smallest class request.
func (s *solver) roomyBins() *roomy {
	r := &roomy{min: s.dims.zero()}
	for i := range r.min {
		r.min[i] = -1
	}
	for _, c := range s.classes {
		for i, v := range c.req {
			if r.min[i] < 0 || v < r.min[i] {
				r.min[i] = v
			}
		}
	}
	for _, b := range s.bins {
		if s.hasRoom(b, r.min) {
			r.bins = append(r.bins, b)
		}
	}
	return r
}

// hasRoom tells whether bin b (an existing node, or a new one at its
// type) holds req more.
func (s *solver) hasRoom(b *bin, req vec) bool {
	var capv vec
	switch {
	case b.node != nil:
		capv = b.alloc
	case len(b.entries) == 0 || b.typ < 0:
		return false
	default:
		capv = b.pool.types[b.typ].net
	}
	for i, v := range req {
		if b.used[i]+v > capv[i] {
			return false
		}
	}
	return true
}

// recheck puts b back on the list if it has room now.
func (s *solver) recheck(r *roomy, b *bin) {
	if !s.hasRoom(b, r.min) {
		return
	}
	i := sort.Search(len(r.bins), func(i int) bool { return r.bins[i].id >= b.id })
	if i < len(r.bins) && r.bins[i] == b {
		return
	}
	r.bins = append(r.bins, nil)
	copy(r.bins[i+1:], r.bins[i:])
	r.bins[i] = b
}
