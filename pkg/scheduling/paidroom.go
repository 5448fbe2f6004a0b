package scheduling

import "slices"

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

// paidRoom is, per pool (and one for the existing nodes), the ordered
// list of nodes with paid room and the queue of nodes changed since the
// last query. Per pool because a class looks only at the pools it may use:
// gpu at 50,000 pods has 5,000 GPU nodes with room for small pods that
// may not go there.
//
// And per set of host ports (portsets.go): a class binding ports reads
// lists without the nodes where one of them is taken (hostports at 50,000
// pods: most nodes with room have every port of the workload taken).
type paidRoom struct {
	ports portSets
	sets  [][]paidList // by port set: 0: existing nodes; 1+i: new nodes of pool i
	min   vec          // minPending at the last query (nil: rebuild)
	slack []slackMemo  // by bin id
	// add, spare and merged are scratch.
	add, spare, merged []*bin
}

// paidList is one pool's nodes with paid room.
type paidList struct {
	bins   []*bin
	min    vec    // minPending at the last refresh (nil: none)
	in     []bool // by bin id: on bins
	dirty  []int32
	queued []bool
}

// paidIndexOff makes fillPaid scan every open node (tests compare).
var paidIndexOff bool

// listOf is the index of b's list.
func listOf(b *bin) int {
	if b.node != nil {
		return 0
	}
	return 1 + b.pool.idx
}

// paidDirty queues a changed node.
func (p *paidRoom) paidDirty(b *bin) {
	for i := range p.sets {
		for len(p.sets[i]) <= listOf(b) {
			p.sets[i] = append(p.sets[i], paidList{})
		}
		p.sets[i][listOf(b)].queue(b)
	}
}

// queue queues a changed node.
func (q *paidList) queue(b *bin) {
	for len(q.queued) <= b.id {
		q.queued = append(q.queued, false)
	}
	if !q.queued[b.id] {
		q.queued[b.id] = true
		q.dirty = append(q.dirty, int32(b.id))
	}
}

// hasPaidRoom tells whether b is open and holds minPending more at its
// current type (an existing node: its allocatable), with the ports of set
// ps free.
func (s *solver) hasPaidRoom(b *bin, ps int) bool {
	if b.node == nil && (len(b.entries) == 0 || b.typ < 0) {
		return false
	}
	return s.hasRoom(b, s.minPending) && s.isOpen(b) && (ps == 0 || !s.gidx.paid.ports.blocked(ps, b))
}

// paidBins are the bins, in order, that may have paid room for a pod of
// level l: every open bin outside packing.
func (s *solver) paidBins(l *level) []*bin {
	g := s.gidx
	if g == nil || paidIndexOff {
		return s.liveBins()
	}
	p := &g.paid
	if p.sets == nil {
		p.ports = newPortSets(s.classes)
		p.sets = make([][]paidList, len(p.ports.sets))
	}
	for i := range p.sets {
		for len(p.sets[i]) < 1+len(s.pools) {
			p.sets[i] = append(p.sets[i], paidList{})
		}
	}
	fell := p.min == nil
	for i, v := range p.min {
		if s.minPending[i] < v {
			fell = true
		}
	}
	if fell {
		p.min = append(p.min[:0], s.minPending...)
		for k := range p.sets {
			for i := range p.sets[k] {
				q := &p.sets[k][i]
				q.bins = q.bins[:0]
				for _, id := range q.dirty {
					q.queued[id] = false
				}
				q.dirty = q.dirty[:0]
			}
		}
		// A set's lists are rebuilt when first read: every node queued.
		for _, b := range s.bins {
			for k := range p.sets {
				q := &p.sets[k][listOf(b)]
				for len(q.in) <= b.id {
					q.in = append(q.in, false)
				}
				q.in[b.id] = false
				q.queue(b)
			}
		}
	}
	copy(p.min, s.minPending)
	ps := p.ports.of[l.cls.idx]
	lists := p.sets[ps]
	var out []*bin
	n := 0
	for i := range lists {
		if i > 0 && !l.pools[i-1].ok {
			continue
		}
		if bs := s.refreshPaid(&lists[i], ps); len(bs) > 0 {
			n++
			if n == 1 {
				out = bs
				continue
			}
			if n == 2 {
				p.merged = append(p.merged[:0], out...)
			}
			p.merged = append(p.merged, bs...)
		}
	}
	if n > 1 {
		slices.SortFunc(p.merged, byID)
		out = p.merged
	}
	return out
}

// refreshPaid brings one list up to date: the queued nodes not listed
// that now have room join it, the listed ones without room leave. Whether
// a node has paid room follows from its version (pods, type, ports: a
// change queues it) and minPending alone, so the listed nodes not queued
// are looked at again only when minPending moved since the list's last
// refresh (hostports at 50,000 pods: thousands listed, a few queued).
func (s *solver) refreshPaid(q *paidList, ps int) []*bin {
	p := &s.gidx.paid
	for len(q.in) < len(s.bins) {
		q.in = append(q.in, false)
	}
	all := q.min == nil || !slices.Equal(q.min, s.minPending)
	p.add = p.add[:0]
	dropped := false
	for _, id := range q.dirty {
		q.queued[id] = false
		b := s.bins[id]
		switch {
		case !q.in[id]:
			if s.hasPaidRoom(b, ps) {
				p.add = append(p.add, b)
			}
		case !all && !s.hasPaidRoom(b, ps):
			q.in[id] = false
			dropped = true
		}
	}
	q.dirty = q.dirty[:0]
	q.min = append(q.min[:0], s.minPending...)
	if !all && !dropped && len(p.add) == 0 {
		return q.bins
	}
	slices.SortFunc(p.add, byID)
	// Merge them into the listed nodes still with room.
	out := p.spare[:0]
	i := 0
	for _, b := range q.bins {
		for i < len(p.add) && p.add[i].id < b.id {
			out = append(out, p.add[i])
			q.in[p.add[i].id] = true
			i++
		}
		if all {
			q.in[b.id] = s.hasPaidRoom(b, ps)
		}
		if q.in[b.id] {
			out = append(out, b)
		}
	}
	for ; i < len(p.add); i++ {
		out = append(out, p.add[i])
		q.in[p.add[i].id] = true
	}
	q.bins, p.spare = out, q.bins
	return q.bins
}

// byID orders bins by id (node order).
func byID(a, b *bin) int { return a.id - b.id }

// slackMemo is a new node's room's dual value (fillPaid's order) as of
// one version and type of the node.
type slackMemo struct {
	ver   uint32
	typ   int
	ok    bool
	slack float64
}

// paidSlack is b's room's dual value at its type: fillPaid orders its
// candidates by it. A node's value changes only with its pods or type
// (both bump ver; the prices are fixed while packing), so it is kept per
// node: hostports at 50,000 pods reads thousands of unchanged candidates
// per class.
func (s *solver) paidSlack(b *bin) float64 {
	g := s.gidx
	if g == nil {
		return b.pool.values[b.typ] - s.valueOf(b.used)
	}
	p := &g.paid
	for len(p.slack) <= b.id {
		p.slack = append(p.slack, slackMemo{})
	}
	m := &p.slack[b.id]
	if !m.ok || m.ver != b.ver || m.typ != b.typ {
		*m = slackMemo{ver: b.ver, typ: b.typ, ok: true, slack: b.pool.values[b.typ] - s.valueOf(b.used)}
	}
	return m.slack
}
