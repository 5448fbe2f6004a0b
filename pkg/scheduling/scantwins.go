package scheduling

import "slices"

// Scan twins. When the growth index cannot answer (the local search's
// rebuilds and splits, the last pods of a class, pools with minValues),
// bestGrowth asks every open new node for its upgrade. After packing,
// most of those nodes are twins: few-big at 50,000 pods has 3,700 nodes,
// most full of the same pods at the same type, and the ~1,600 scans of a
// solve asked 5.8 million nodes, 97 % of them twins of a node asked
// before in the same scan. For a class without topology, what allowance
// and upgradeValue read of a node is its shape (pool, type, offering's
// price, zones, capacity types, label cut, custom labels, resources,
// types, host ports): twins get the same answer. Each shape met gets a
// small number (interned once per node version, compared in full), and a
// scan keeps the first twin's answer by that number, giving a later
// twin that answer with the node swapped in; bestGrowth's rule then
// compares it with the best so far exactly as if it had been asked
// (TestScanTwinsSamePlans).

// scanTwinsOff makes bestGrowth ask every node (tests compare).
var scanTwinsOff bool

// twinScanMin is the fewest nodes a scan asks for the table to number
// them: a twin spares one node's upgrade search, and numbering a node
// copies its shape, so on a scan of a few nodes the table costs more
// than it spares (many-shapes at 250 pods, 4 to 9 nodes: 96 shapes
// numbered a solve for no twin, 77 KB of its 747; plans the same,
// TestScanTwinsSamePlans).
const twinScanMin = 8

// twinNumbered, when set, is called for every node shape the table
// numbers (tests count them).
var twinNumbered func()

// scanTwins numbers node shapes and holds one scan's answers by number.
type scanTwins struct {
	byHash map[uint64][]int32
	reps   []shapeRep
	// seen is, per shape, the scan that answered it (gen: the current).
	seen []uint32
	ans  []twinAnswer
	gen  uint32
	// stats count the answers given by twins (hits) and asked (misses):
	// where nodes rarely repeat (many-shapes: 3,665 twins in 1.5 million
	// nodes asked at 50,000 pods), numbering each new version of a node
	// costs more than it saves, and the scans stop using the table.
	stats memoStats
}

// shapeRep is a shape's copy, to compare a node with in full: the
// memos' node shape (no prices: a scan's prices are one set) and what
// allowance reads besides, the custom labels and host ports.
type shapeRep struct {
	shape  nodeShape
	custom *reqs
	ports  []hostPort
}

// twinAnswer is the answer of the first node of a shape asked in a scan:
// whether allowance and upgradeValue accepted it, and the growth.
type twinAnswer struct {
	ok bool
	g  growth
}

// startScanTwins readies the table for a scan of n nodes for level l;
// nil when twins may answer differently (topology reads the node's
// domains and counts), or when the scan is too short to pay for
// numbering its nodes (twinScanMin).
func (s *solver) startScanTwins(l *level, n int) *scanTwins {
	t := &s.search.twins
	if scanTwinsOff || n < twinScanMin || !noTopology(l) || !t.stats.servesHalf() {
		return nil
	}
	t.gen++
	return t
}

// shapeID is b's shape number, kept by b's version (versions are unique
// over a solve); -1 for nodes of pools with minValues, whose answers
// also read how their types spread.
func (t *scanTwins) shapeID(b *bin) int32 {
	if b.twin.ok && b.twin.ver == b.ver {
		return b.twin.id
	}
	id := int32(-1)
	if len(b.pool.minValues) == 0 {
		id = t.intern(b)
	}
	b.twin = twinMemo{ver: b.ver, ok: true, id: id}
	return id
}

func (t *scanTwins) intern(b *bin) int32 {
	if twinNumbered != nil {
		twinNumbered()
	}
	h := shapeHash(b, nil)
	for _, p := range b.ports {
		h = fnvMix(h, uint64(p.port))
	}
	if t.byHash == nil {
		t.byHash = map[uint64][]int32{}
	}
	for _, id := range t.byHash[h] {
		if t.reps[id].matches(b) {
			return id
		}
	}
	id := int32(len(t.reps))
	t.reps = append(t.reps, shapeRep{shape: shapeOf(b, nil), custom: b.custom, ports: slices.Clone(b.ports)})
	t.seen = append(t.seen, 0)
	t.ans = append(t.ans, twinAnswer{})
	t.byHash[h] = append(t.byHash[h], id)
	return id
}

func (r *shapeRep) matches(b *bin) bool {
	return r.custom == b.custom && r.shape.matches(b, nil) && slices.Equal(r.ports, b.ports)
}

// lookup is the answer this scan gave b's shape, if it gave one.
func (t *scanTwins) lookup(b *bin) (*twinAnswer, bool) {
	id := t.shapeID(b)
	if id < 0 || t.seen[id] != t.gen {
		return nil, false
	}
	t.stats.hits++
	return &t.ans[id], true
}

// note records b's answer for its shape.
func (t *scanTwins) note(b *bin, ok bool, g growth) {
	if id := t.shapeID(b); id >= 0 {
		t.stats.misses++
		t.seen[id] = t.gen
		t.ans[id] = twinAnswer{ok: ok, g: g}
	}
}

// servesHalf tells whether the table answered at least half as many
// nodes as it asked, once past a trial.
func (m *memoStats) servesHalf() bool {
	return m.misses < memoTrial || 2*m.hits >= m.misses
}

// twinMemo is a bin's shape number at a version.
type twinMemo struct {
	ver uint32
	ok  bool
	id  int32
}
