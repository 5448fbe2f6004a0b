package scheduling

// Packing: classes biggest first; each level's pods go first where room
// is paid for (fillPaid), then into the best growth (growth.go), with
// allowance.go deciding how many a node can take.

// place puts k pods of level l on bin b, pinning a new bin as chosen.
func (s *solver) place(l *level, b *bin, ch choice) {
	if s.jr != nil {
		s.jr.touch(b)
	}
	s.changed(b)
	s.growDirty(b)
	c := l.cls
	k := ch.k
	if b.node == nil {
		cp := l.pools[b.pool.idx]
		b.types.and(cp.types)
		if !cp.labelAll {
			b.labelCut = true
		}
		b.zoneMask &= cp.zoneMask
		b.ctMask &= cp.ctMask
		if ch.zone >= 0 {
			b.zone, b.zoneMask = ch.zone, maskOf(ch.zone)
		}
		if ch.ct >= 0 {
			b.ct, b.ctMask = ch.ct, maskOf(ch.ct)
		}
		if cp.custom != nil {
			if !b.ownCust {
				b.custom, b.ownCust = b.custom.clone(), true
			}
			for _, key := range cp.custom.keys {
				b.custom.add(key, cp.custom.sets[key])
			}
		}
		for _, p := range ch.pins {
			s.pin(b, p.key, p.d)
		}
		if b.zone >= 0 {
			s.zoneLoad[b.zone] += k
		}
		for _, key := range l.otherKeys {
			if d := s.domain(b, key, -1, -1); d >= 0 {
				for len(s.pinPods) <= key {
					s.pinPods = append(s.pinPods, domCounts{})
				}
				inc(&s.pinPods[key], d, int32(k))
			}
		}
	}
	b.used.addScaled(c.req, int64(k))
	b.ports = append(b.ports, c.ports...)
	b.addEntry(l, k)
	s.count(l, b, int32(k))
	if s.jr != nil {
		s.jrPlaced = append(s.jrPlaced, placedRec{l, b, k})
	}
}

// placedRec is one placement made while a rebuild is journaled.
type placedRec struct {
	l *level
	b *bin
	k int
}

// count adds (or with negative k removes) k pods of l on b to the groups.
func (s *solver) count(l *level, b *bin, k int32) {
	c := l.cls
	for _, g := range c.memberOf {
		if ((b.node != nil && g.filter != nil) || g.honorTaints) && !g.countsOn(b) {
			continue // the spread's owner could not use this node
		}
		d := s.domain(b, g.key, -1, -1)
		if d >= 0 {
			inc(&g.counts, d, k)
		}
		g.total += int(k)
	}
	for _, g := range c.reqAnti {
		inc(&g.owners, s.domain(b, g.key, -1, -1), k)
	}
	for _, g := range l.aff {
		inc(&g.affOwners, s.domain(b, g.key, -1, -1), k)
	}
}

// pack places every class, biggest first, then retries the classes that
// failed (their affinity targets may have been placed since), until a pass
// places nothing.
func (s *solver) pack() {
	s.pending = s.dims.zero()
	for _, c := range s.classes {
		if c.err == "" {
			s.pending.addScaled(c.req, int64(c.remaining))
		}
	}
	s.startGrowIndex()
	defer func() { s.gidx = nil }()
	for _, c := range s.classes {
		s.placeClass(c)
	}
	for pass := 0; pass < len(s.classes); pass++ { // until a pass places nothing (affinity chains)
		progress := false
		for _, c := range s.classes {
			if c.remaining == 0 || c.err != "" {
				continue
			}
			before := c.remaining
			c.cur = 0
			c.failReason = ""
			s.placeClass(c)
			if c.remaining < before {
				progress = true
			}
		}
		if !progress {
			break
		}
	}
}

// placeClass places a class's remaining pods, relaxing preferences when
// some cannot be placed.
func (s *solver) placeClass(c *class) {
	if c.err != "" {
		c.failReason = c.err
		s.classDone(c)
		return
	}
	for c.remaining > 0 {
		l := s.level(c)
		if l == nil {
			break
		}
		n, why := s.placeAt(l, c.remaining)
		c.remaining -= n
		if c.remaining == 0 {
			s.classDone(c)
			return
		}
		if !s.relax(c) {
			c.failReason = s.explain(l, why)
			return
		}
	}
}

// placeAt places up to want pods of a level. New nodes are always sized to
// the cheapest type that holds them, so room on them is room already paid
// for. Each round first uses such room (existing and in-flight nodes
// first, then new nodes); when none is left it buys the most cost-efficient
// growth: upgrading a new node to the next type that takes one more pod,
// or opening a new node, whichever adds more value (under the bound's dual
// prices) per dollar, preferring upgrades within 1%. It returns how many
// it placed and, when short, why growth was impossible.
func (s *solver) placeAt(l *level, want int) (int, string) {
	s.setMinPending(l)
	s.chain.ok = false
	placed := 0
	// After a growth step, paid room for a class without topology is
	// where it was: the step changed one node and placed there all the
	// node can take (allowance), and the other nodes' room for the class
	// depends on them alone (noTopology), all taken by the last fillPaid.
	// Skipping that fillPaid spares a pass over every open node per step
	// (at 50,000 pods: thousands of nodes, tens of thousands of steps).
	skipPaid := false
	for placed < want {
		if !skipPaid {
			n := s.fillPaid(l, want-placed)
			s.pending.addScaled(l.cls.req, -int64(n))
			placed += n
			if placed == want {
				break
			}
		}
		if s.jr != nil && s.rebuildLost() {
			return placed, "" // the rebuild cannot be kept
		}
		var g *growth
		if skipPaid {
			// The last step grew a node for this class (growchain.go).
			g = s.chainStep(l, want-placed)
		}
		if g == nil {
			var why string
			if g, why = s.bestGrowth(l, want-placed); g == nil {
				return placed, why
			}
		}
		b := g.b
		if b == nil {
			b = s.openBin(g)
		} else {
			s.setType(b, g.typ)
		}
		s.place(l, b, g.ch)
		s.noteChain(l, b)
		s.pending.addScaled(l.cls.req, -int64(g.ch.k))
		placed += g.ch.k
		skipPaid = noTopology(l) && !paidScanAll
	}
	return placed, ""
}

// paidScanAll makes placeAt look for paid room after every growth step
// (tests compare).
var paidScanAll bool

// fillPaid places pods where room is already paid for: existing nodes in
// input order first, then new nodes, tightest first (least room left, by
// dual value), so small nodes fill up before big ones take the rest. Rounds
// repeat while they place pods and a spread's minimum may have moved.
func (s *solver) fillPaid(l *level, want int) int {
	if s.gidx != nil && !paidIndexOff {
		return s.fillPaidOrdered(l, want)
	}
	placed := 0
	// Kept between calls: the candidates are thousands at 50,000 pods,
	// and the local search calls this for every class it places again.
	cands := s.paidBuf[:0]
	defer func() { s.paidBuf = cands[:0] }()
	var unfilled []*bin
	if s.gidx != nil {
		unfilled = s.gidx.unfilled[:0]
		defer func() { s.gidx.unfilled, s.gidx.unfilledFor = unfilled, l }()
	}
	for placed < want {
		progress := false
		cands = cands[:0]
		unfilled = unfilled[:0]
		var bins []*bin
		if s.rbPaid.on && s.gidx == nil {
			bins = s.rebuildPaidBins()
		} else {
			bins = s.paidBins(l)
		}
		if s.jr != nil {
			s.paidSeen += len(bins)
		}
		for _, b := range bins {
			if placed == want {
				break
			}
			if b.node == nil {
				if len(b.entries) == 0 || !l.pools[b.pool.idx].ok {
					continue
				}
				net := b.pool.types[b.typ].net
				if b.used[dimCPU]+l.cls.req[dimCPU] > net[dimCPU] || b.used[dimMemory]+l.cls.req[dimMemory] > net[dimMemory] {
					continue
				}
				// Every resource (gpu at 50,000 pods: thousands of GPU
				// nodes with CPU left but no GPU): a node without room
				// for one pod would only be popped and refused.
				if maxCopies(b.used, l.cls.req, net) == 0 {
					continue
				}
				cands = append(cands, paidCand{b, s.paidSlack(b), len(cands)})
				continue
			}
			if b.used[dimCPU]+l.cls.req[dimCPU] > b.alloc[dimCPU] {
				continue
			}
			ch := s.allowance(l, b, want-placed, -1)
			if ch.k > 0 {
				s.place(l, b, ch)
				placed += ch.k
				progress = true
			}
		}
		// Tightest first; a heap rather than a sort: most rounds take
		// the first few of many nodes with room.
		cands.init()
		for len(cands) > 0 {
			if placed == want {
				break
			}
			b := cands.pop().b
			k, again := s.fillNew(l, b, want-placed)
			if k > 0 {
				placed += k
				progress = true
			}
			// Only growth's index reads the nodes left unfilled: without
			// it, keeping them would allocate for nothing.
			if again && s.gidx != nil {
				unfilled = append(unfilled, b)
			}
		}
		if !progress || !l.hasRange {
			break
		}
	}
	return placed
}

// fillPaidOrdered is fillPaid while packing: the same nodes in the same
// order, read from paidOrder (paidorder.go), which visits only the nodes
// with CPU and memory for the class's request.
func (s *solver) fillPaidOrdered(l *level, want int) int {
	g := s.gidx
	if g.ord == nil {
		g.ord = s.newPaidOrder()
		for _, b := range s.bins {
			g.ord.queue(b)
		}
	}
	o := g.ord
	unfilled := g.unfilled[:0]
	defer func() { g.unfilled, g.unfilledFor = unfilled, l }()
	placed := 0
	for placed < want {
		progress := false
		unfilled = unfilled[:0]
		s.paidWalk(o, l)
		for placed < want {
			b := s.paidNext(o, l)
			if b == nil {
				break
			}
			if b.node != nil {
				// Existing nodes come first, in node order.
				if ch := s.allowance(l, b, want-placed, -1); ch.k > 0 {
					s.place(l, b, ch)
					placed += ch.k
					progress = true
				}
				continue
			}
			// The nodes fillPaid's scan would have kept: room at the
			// type in every resource, and listed with paid room for the
			// smallest pending request (paidroom.go: an open node).
			if maxCopies(b.used, l.cls.req, b.pool.types[b.typ].net) == 0 || !s.hasRoom(b, s.minPending) || !s.isOpen(b) {
				continue
			}
			k, again := s.fillNew(l, b, want-placed)
			if k > 0 {
				placed += k
				progress = true
			}
			if again {
				unfilled = append(unfilled, b)
			}
		}
		if !progress || !l.hasRange {
			break
		}
	}
	return placed
}

// fillNew places up to want of level l's pods on new node b, at its type
// and price: pinning a zone or capacity type that would raise the price is
// refused. It returns how many it placed and whether b is worth another
// look this round (allowance or the price refused it, or topology took
// fewer than its room holds).
func (s *solver) fillNew(l *level, b *bin, want int) (placed int, again bool) {
	ch := s.allowance(l, b, want, b.typ)
	if ch.k <= 0 {
		return 0, true
	}
	if ch.zone >= 0 || ch.ct >= 0 {
		zm, cm := b.zoneMask, b.ctMask
		if ch.zone >= 0 {
			zm = maskOf(ch.zone)
		}
		if ch.ct >= 0 {
			cm = maskOf(ch.ct)
		}
		if o, ok := b.pool.types[b.typ].price(zm, cm); !ok || o.price > b.offer.price+1e-12 {
			return 0, true
		}
	}
	s.place(l, b, ch)
	return ch.k, maxCopies(b.used, l.cls.req, b.pool.types[b.typ].net) > 0
}

// addEntry counts k more pods of level l on the bin.
func (b *bin) addEntry(l *level, k int) {
	for i := range b.entries {
		if b.entries[i].l == l {
			b.entries[i].n += k
			return
		}
	}
	b.entries = append(b.entries, entry{l: l, n: k})
}

// paidCand is a new node with room for a class: its room's dual value
// (slack) and its place in node order, which breaks ties.
type paidCand struct {
	b     *bin
	slack float64
	pos   int
}

// paidCands are fillPaid's candidates, a heap by (slack, pos).
type paidCands = heapOf[paidCand]

//lint:ignore U1000 called through heapOf's type constraint, which staticcheck does not follow
func (a paidCand) before(b paidCand) bool {
	if a.slack != b.slack {
		return a.slack < b.slack
	}
	return a.pos < b.pos
}
