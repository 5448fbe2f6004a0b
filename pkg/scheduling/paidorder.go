package scheduling

import "math"

// fillPaid's order while packing. fillPaid takes, for a class, the nodes
// with paid room for one of its pods, tightest first (least room left by
// dual value, paidSlack; ties in node order), until the class is placed.
// It used to read every node listed with room for the smallest pending
// request (paidroom.go) at every call, to keep the few with room for the
// class: at 50,000 pods, 16 to 22 million node reads per solve (mix,
// few-big, hostports) for a few tens of thousands taken, and on
// hostports thousands of candidates a call put in a heap to take twenty.
//
// paidOrder keeps, per set of host ports (portsets.go) and list (the
// existing nodes; each pool's new nodes: listOf), the nodes in a treap by
// (slack, id), each subtree with its largest free amount of every
// resource, so a walk visits, in fillPaid's order, only nodes with room
// for the class's request: O(log n) per node taken. Existing nodes sort
// first (slack -Inf), in node order, as fillPaid takes them before new
// nodes; for them only CPU and memory are compared (allowance judges the
// rest). A node is in a set's treap unless a port of the set is taken on
// it (and, new, until it has pods and a type, and while it has no room
// for the smallest pending request: fillPaid would skip it). Nodes that
// change are queued (growDirty) and put back at the next walk: a node's
// key and room change only with its pods or type, the prices are fixed
// while the index lives (startGrowIndex makes a new one, with every node
// queued), and every node is queued again when the smallest pending
// request falls in any resource.
//
// Comparing CPU and memory alone let gpu at 50,000 pods visit 5.1
// million nodes without a free GPU (or pod slot) to take 11,000 (mix
// 445,000 for 59,000); and every index the local search's rebuilds start
// put all of the plan's nodes in the treaps, most of them full.
type paidOrder struct {
	ports  portSets
	nodes  []pnode
	free   []int32
	trees  [][]int32 // by port set, then list: the root (-1: empty)
	at     [][]int32 // by port set, then bin id: its treap node (-1: none)
	dirty  []int32
	queued []bool
	seed   uint32
	// d is the number of resources; room and mroom hold, d per treap
	// node, its free amounts and its subtree's largest.
	d           int
	room, mroom []int64
	// min is the smallest pending request the treaps' nodes were last
	// checked against (nil: none yet).
	min vec
	// walk is the current walk's cursor per list (scratch).
	walk []pcursor
	// rowBuf is paidUpdate's free amounts of one bin (scratch).
	rowBuf []int64
}

// pnode is a node of a treap: one bin and its key (slack, id); its free
// resources are in paidOrder.room.
type pnode struct {
	slack float64
	id    int32
	prio  uint32
	l, r  int32
}

// pcursor is a walk's next node in one list (-1: none left).
type pcursor struct {
	list int
	n    int32
}

// keyLess orders keys by slack, then id.
func keyLess(s1 float64, id1 int32, s2 float64, id2 int32) bool {
	if s1 != s2 {
		return s1 < s2
	}
	return id1 < id2
}

// queue queues a changed bin.
func (o *paidOrder) queue(b *bin) {
	for len(o.queued) <= b.id {
		o.queued = append(o.queued, false)
	}
	if !o.queued[b.id] {
		o.queued[b.id] = true
		o.dirty = append(o.dirty, int32(b.id))
	}
}

func (o *paidOrder) pull(n int32) {
	nd := &o.nodes[n]
	d := o.d
	m := o.mroom[int(n)*d : int(n)*d+d]
	copy(m, o.room[int(n)*d:int(n)*d+d])
	if nd.l >= 0 {
		for i, v := range o.mroom[int(nd.l)*d : int(nd.l)*d+d] {
			m[i] = max(m[i], v)
		}
	}
	if nd.r >= 0 {
		for i, v := range o.mroom[int(nd.r)*d : int(nd.r)*d+d] {
			m[i] = max(m[i], v)
		}
	}
}

// fits tells whether every resource of row n of rows (room or mroom) is
// at least req's.
func (o *paidOrder) fits(rows []int64, n int32, req vec) bool {
	r := rows[int(n)*o.d : int(n)*o.d+o.d]
	for i, v := range req {
		if r[i] < v {
			return false
		}
	}
	return true
}

// split splits treap t into the keys before (slack, id) and the rest.
func (o *paidOrder) split(t int32, slack float64, id int32) (int32, int32) {
	if t < 0 {
		return -1, -1
	}
	nd := &o.nodes[t]
	if keyLess(nd.slack, nd.id, slack, id) {
		a, b := o.split(nd.r, slack, id)
		o.nodes[t].r = a
		o.pull(t)
		return t, b
	}
	a, b := o.split(nd.l, slack, id)
	o.nodes[t].l = b
	o.pull(t)
	return a, t
}

// merge joins two treaps, every key of a before every key of b.
func (o *paidOrder) merge(a, b int32) int32 {
	if a < 0 {
		return b
	}
	if b < 0 {
		return a
	}
	if o.nodes[a].prio > o.nodes[b].prio {
		o.nodes[a].r = o.merge(o.nodes[a].r, b)
		o.pull(a)
		return a
	}
	o.nodes[b].l = o.merge(a, o.nodes[b].l)
	o.pull(b)
	return b
}

// insert adds node n to treap t.
func (o *paidOrder) insert(t, n int32) int32 {
	nd := &o.nodes[n]
	a, b := o.split(t, nd.slack, nd.id)
	return o.merge(o.merge(a, n), b)
}

// remove takes node n (in t) out of treap t.
func (o *paidOrder) remove(t, n int32) int32 {
	nd := o.nodes[n]
	if t == n {
		return o.merge(nd.l, nd.r)
	}
	c := &o.nodes[t]
	if keyLess(nd.slack, nd.id, c.slack, c.id) {
		c.l = o.remove(c.l, n)
	} else {
		c.r = o.remove(c.r, n)
	}
	o.pull(t)
	return t
}

// first is the first node of treap t after (slack, id) with at least
// req free, or -1.
func (o *paidOrder) first(t int32, slack float64, id int32, req vec) int32 {
	for t >= 0 {
		nd := &o.nodes[t]
		if !o.fits(o.mroom, t, req) {
			return -1
		}
		if !keyLess(slack, id, nd.slack, nd.id) {
			t = nd.r // t and its left subtree are not after the key
			continue
		}
		if r := o.first(nd.l, slack, id, req); r >= 0 {
			return r
		}
		if o.fits(o.room, t, req) {
			return t
		}
		t = nd.r
	}
	return -1
}

// newPaidOrder makes the order for a new index: every bin is queued by
// startGrowIndex.
func (s *solver) newPaidOrder() *paidOrder {
	o := &paidOrder{ports: s.portSets(), seed: 2463534242, d: len(s.dims.names)}
	o.rowBuf = make([]int64, o.d)
	o.trees = make([][]int32, len(o.ports.sets))
	o.at = make([][]int32, len(o.ports.sets))
	for k := range o.trees {
		o.trees[k] = make([]int32, 1+len(s.pools))
		for i := range o.trees[k] {
			o.trees[k][i] = -1
		}
	}
	return o
}

// paidUpdate puts the queued bins back in the treaps at their current
// key and room.
func (s *solver) paidUpdate(o *paidOrder) {
	// The nodes left out for want of room for the smallest pending
	// request stay without it while it only rises and they do not
	// change; when it falls, every node is looked at again.
	fell := o.min == nil
	for i, v := range o.min {
		if s.minPending[i] < v {
			fell = true
		}
	}
	if fell {
		for _, b := range s.bins {
			o.queue(b)
		}
	}
	o.min = append(o.min[:0], s.minPending...)
	row := o.rowBuf
	for _, id := range o.dirty {
		o.queued[id] = false
		b := s.bins[id]
		list := listOf(b)
		in := b.node != nil || (len(b.entries) > 0 && b.typ >= 0)
		var slack float64
		if in {
			if b.node != nil {
				slack = math.Inf(-1)
				for i := range row {
					row[i] = math.MaxInt64
				}
				row[dimCPU], row[dimMemory] = b.alloc[dimCPU]-b.used[dimCPU], b.alloc[dimMemory]-b.used[dimMemory]
			} else {
				net := b.pool.types[b.typ].net
				for i := range row {
					row[i] = net[i] - b.used[i]
					if row[i] < s.minPending[i] {
						in = false // fillPaid skips it (hasRoom)
					}
				}
				if in {
					slack = s.paidSlack(b)
				}
			}
		}
		for k := range o.trees {
			at := o.at[k]
			for len(at) <= int(id) {
				at = append(at, -1)
			}
			o.at[k] = at
			if n := at[id]; n >= 0 {
				o.trees[k][list] = o.remove(o.trees[k][list], n)
				o.free = append(o.free, n)
				at[id] = -1
			}
			if !in || (k > 0 && o.ports.blocked(k, b)) {
				continue
			}
			// xorshift: the treap's priorities.
			o.seed ^= o.seed << 13
			o.seed ^= o.seed >> 17
			o.seed ^= o.seed << 5
			nd := pnode{slack: slack, id: id, prio: o.seed, l: -1, r: -1}
			var n int32
			if f := len(o.free); f > 0 {
				n = o.free[f-1]
				o.free = o.free[:f-1]
				o.nodes[n] = nd
			} else {
				n = int32(len(o.nodes))
				o.nodes = append(o.nodes, nd)
				o.room = append(o.room, row...)
				o.mroom = append(o.mroom, row...)
			}
			copy(o.room[int(n)*o.d:], row)
			copy(o.mroom[int(n)*o.d:], row)
			o.trees[k][list] = o.insert(o.trees[k][list], n)
			at[id] = n
		}
	}
	o.dirty = o.dirty[:0]
}

// paidWalk starts a walk of level l's lists (the existing nodes and the
// pools l may use) in fillPaid's order.
func (s *solver) paidWalk(o *paidOrder, l *level) {
	s.paidUpdate(o)
	k := o.ports.of[l.cls.idx]
	o.walk = o.walk[:0]
	for i, t := range o.trees[k] {
		if i > 0 && !l.pools[i-1].ok {
			continue
		}
		if n := o.first(t, math.Inf(-1), -1, l.cls.req); n >= 0 {
			o.walk = append(o.walk, pcursor{list: i, n: n})
		}
	}
}

// paidNext is the walk's next bin (nil: none left).
func (s *solver) paidNext(o *paidOrder, l *level) *bin {
	best := -1
	for j, c := range o.walk {
		if c.n < 0 {
			continue
		}
		if best < 0 {
			best = j
			continue
		}
		a, b := &o.nodes[c.n], &o.nodes[o.walk[best].n]
		if keyLess(a.slack, a.id, b.slack, b.id) {
			best = j
		}
	}
	if best < 0 {
		return nil
	}
	c := &o.walk[best]
	nd := o.nodes[c.n]
	k := o.ports.of[l.cls.idx]
	c.n = o.first(o.trees[k][c.list], nd.slack, nd.id, l.cls.req)
	return s.bins[nd.id]
}
