package scheduling

import (
	"math"
	"slices"
	"sort"
)

// Drain targets. tryDrain looks for room for a node's pods on every other
// node; after packing almost every node is full, so most of those looks
// fail on the first resource compared. roomy keeps, for a round of
// drains, the nodes (in s.bins order, which the drains follow) with room
// for the smallest request of any class: the only ones a pod can move to.
// Drains only fill the targets (they stay on the list, perhaps without
// room) and empty the drained node, which goes back on the list when it
// has room.

// A drain used to read every listed node's CPU (and pool, and host
// ports) for each of the drained node's classes (hostports at 50,000
// pods: 8,800 drained nodes, thousands listed, most with every port
// taken; mix: a third of the listed nodes in pools the class may not
// use). Per set of host ports (portsets.go) and list (the existing nodes,
// each pool's new nodes: listOf) a max tree over node ids holds the
// listed nodes' free CPU (at their current type; an existing node's
// allocatable), or noRoom where a port of the set is taken, so a drain
// visits, in the same order, only the listed nodes of the pools the class
// may use that the CPU and port checks let through. A value may be above
// what the node now has (targets are not updated while their drain runs;
// that only costs a look), never below: every node a drain touched is
// updated after it (refresh).
//
// Beside CPU, each extended resource some class requests (GPUs, Neuron
// cores...) has trees of its own, and a class requesting one walks those:
// gpu at 50,000 pods has 5,000 GPU nodes with CPU room but every GPU
// taken, which a walk by CPU visited for every GPU pod drained, each
// refused by allowance. Either walk visits, in node order, every node
// that can take a pod (a tree's value is never below the node's room);
// the checks after it refuse the rest, so the moves are the same.
//
// roomy is the ordered list of nodes with room, the smallest request, and
// the trees.
type roomy struct {
	bins   []*bin
	min    vec
	listed []bool // by bin id: on bins
	ports  portSets
	// dims are the dimensions with trees (dimCPU first); trees are by
	// dimension (as dims), port set, then list; nil: no index.
	dims  []int
	trees [][][]freeTree
	w     targetWalk // the current drain's walk
	// freeSum is the listed nodes' free room summed (freeOK: computed;
	// drainbound.go).
	freeSum vec
	freeOK  bool
	// fitSum is the free room of the listed nodes where fitLeast fits
	// (fitOK: computed; drainbound.go fittingFree).
	fitLeast, fitSum vec
	fitOK            bool
}

// freeTree is a max tree over node ids: leaves at size+id.
type freeTree struct {
	v    []int64
	size int
}

// drainIndexOff makes drains walk every listed node (tests compare).
var drainIndexOff bool

// drainExtOff makes drains walk by CPU only, never by an extended
// resource (tests compare).
var drainExtOff bool

// noRoom is the trees' value of a node off the list (or whose port is
// taken).
const noRoom = math.MinInt64

// free is what tree i of dimension d holds for a listed node: its room
// in d at its type, or noRoom for a new node without pods (drains skip
// those) and a node where a port of set i is taken.
func (r *roomy) free(d, i int, b *bin) int64 {
	if i > 0 && r.ports.blocked(i, b) {
		return noRoom
	}
	switch {
	case b.node != nil:
		return b.alloc[d] - b.used[d]
	case len(b.entries) == 0 || b.typ < 0:
		return noRoom
	default:
		return b.pool.types[b.typ].net[d] - b.used[d]
	}
}

// set puts a node's value in the tree.
func (t *freeTree) set(id int, v int64) {
	i := t.size + id
	t.v[i] = v
	for i > 1 {
		i /= 2
		m := max(t.v[2*i], t.v[2*i+1])
		if t.v[i] == m {
			return
		}
		t.v[i] = m
	}
}

// next is the first node with id >= from whose value is at least need,
// or -1.
func (t *freeTree) next(from int, need int64) int {
	if from >= t.size || t.v[1] < need {
		return -1 // (the root: no node of the tree has room)
	}
	i := t.size + from
	if t.v[i] >= need {
		return from
	}
	// Up to the first right sibling with room, then down to its first
	// leaf with room.
	for {
		if i&1 == 0 && t.v[i+1] >= need {
			i++
			break
		}
		i /= 2
		if i <= 1 {
			return -1
		}
	}
	for i < t.size {
		if t.v[2*i] >= need {
			i = 2 * i
		} else {
			i = 2*i + 1
		}
	}
	return i - t.size
}

// refresh updates a listed node's values after a drain touched it.
func (r *roomy) refresh(b *bin) {
	if r.trees != nil && r.listed[b.id] {
		for di, d := range r.dims {
			for i := range r.trees[di] {
				r.trees[di][i][listOf(b)].set(b.id, r.free(d, i, b))
			}
		}
	}
}

// targetWalk visits, in node order, the listed nodes a level's drain may
// use: the next node of each tree it reads (at), the smallest first.
type targetWalk struct {
	trees []*freeTree
	at    []int // by tree: its next node (-1: none left)
	need  int64
}

// walk starts a level's visit: the existing nodes and the new nodes of
// the pools the level may use, with room for its request in the first
// extended resource it requests (CPU when none).
func (r *roomy) walk(l *level) *targetWalk {
	di := 0
	for k, d := range r.dims[1:] {
		if l.cls.req[d] > 0 {
			di = k + 1
			break
		}
	}
	ts := r.trees[di][r.ports.of[l.cls.idx]]
	// One walk at a time: its slices are kept.
	w := &r.w
	w.trees, w.at, w.need = w.trees[:0], w.at[:0], l.cls.req[r.dims[di]]
	for i := range ts {
		if i > 0 && !l.pools[i-1].ok {
			continue
		}
		w.trees = append(w.trees, &ts[i])
		w.at = append(w.at, ts[i].next(0, w.need))
	}
	return w
}

// next is the first node with id >= from on the walk, or -1. The trees do
// not change during a drain, so a tree's next node stays right until the
// walk passes it.
func (w *targetWalk) next(from int) int {
	best := -1
	for k, at := range w.at {
		if at >= 0 && at < from {
			at = w.trees[k].next(from, w.need)
			w.at[k] = at
		}
		if at >= 0 && (best < 0 || at < best) {
			best = at
		}
	}
	return best
}

// roomyBins lists the nodes with room for the smallest class request.
func (s *solver) roomyBins() *roomy {
	// The last pass's list, its buffers reused (searchbuf.go): a pass's
	// drains are done with it when the next pass asks.
	old := s.search.roomy
	if searchScratchOff || old == nil {
		old = &roomy{}
	}
	r := &roomy{min: old.min, bins: old.bins[:0], listed: old.listed, w: old.w, freeSum: old.freeSum, fitLeast: old.fitLeast, fitSum: old.fitSum}
	if !searchScratchOff {
		s.search.roomy = r
	}
	if len(r.min) != s.dims.n() {
		r.min = s.dims.zero()
	}
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
	if drainIndexOff {
		return r
	}
	if searchScratchOff {
		r.ports = newPortSets(s.classes)
	} else {
		r.ports = s.portSets()
	}
	if cap(r.listed) >= len(s.bins) {
		r.listed = r.listed[:len(s.bins)]
		clear(r.listed)
	} else {
		r.listed = make([]bool, len(s.bins))
	}
	for _, b := range r.bins {
		r.listed[b.id] = true
	}
	size := 1
	for size < len(s.bins) {
		size *= 2
	}
	r.dims = []int{dimCPU}
	for d := numFixedDims; d < s.dims.n(); d++ {
		if !drainExtOff && slices.ContainsFunc(s.classes, func(c *class) bool { return c.req[d] > 0 }) {
			r.dims = append(r.dims, d)
		}
	}
	// The last list's trees, when of the same shape, are filled again.
	reuse := len(old.trees) == len(r.dims) && slices.Equal(old.dims, r.dims)
	if reuse {
		r.trees = old.trees
	} else {
		r.trees = make([][][]freeTree, len(r.dims))
	}
	for di, d := range r.dims {
		if !reuse || len(r.trees[di]) != len(r.ports.sets) {
			r.trees[di] = make([][]freeTree, len(r.ports.sets))
		}
		for k := range r.trees[di] {
			if len(r.trees[di][k]) != 1+len(s.pools) {
				r.trees[di][k] = make([]freeTree, 1+len(s.pools))
			}
			for i := range r.trees[di][k] {
				t := &r.trees[di][k][i]
				t.size = size
				if cap(t.v) >= 2*size {
					t.v = t.v[:2*size]
				} else {
					t.v = make([]int64, 2*size)
				}
				for j := range t.v {
					t.v[j] = noRoom
				}
			}
			for _, b := range r.bins {
				r.trees[di][k][listOf(b)].v[size+b.id] = r.free(d, k, b)
			}
			for i := range r.trees[di][k] {
				t := &r.trees[di][k][i]
				for j := size - 1; j >= 1; j-- {
					t.v[j] = max(t.v[2*j], t.v[2*j+1])
				}
			}
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
	r.freeOK, r.fitOK = false, false // a kept drain moved pods into listed nodes
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
	if r.trees != nil {
		r.listed[b.id] = true
		r.refresh(b)
	}
}
