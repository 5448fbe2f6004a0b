package scheduling

// Allowance: how many pods of a class a node can take, given its room,
// its zone and capacity type, host ports and the topology constraints
// (affinity, anti-affinity, spreads) of the pods already placed.

// choice is where and how many pods of a class a bin can take.
type choice struct {
	k    int
	zone int // zone to pin a new bin to (-1: leave as is)
	ct   int // capacity type to pin (-1: leave as is)
	// pins are values of other topology keys to pin a new bin to.
	pins []keyPin
}

// keyPin is one key's value (a domain; -1 for none) for a new bin.
type keyPin struct{ key, d int }

// anyType asks allowance about a new bin regardless of its type and
// resources: could the pod go there at all?
const anyType = -2

// allowance is how many pods of level l bin b can take (at most want),
// with b filled up to capacity (for a new bin, type typ; for an existing
// node, its allocatable). It checks compatibility, host ports, resources
// and topology, and for a new bin whose zone or capacity type is still open
// picks the one that admits the most pods.
func (s *solver) allowance(l *level, b *bin, want int, typ int) choice {
	none := choice{zone: -1, ct: -1}
	c := l.cls
	var capv vec
	zm, cm := uint64(0), uint64(0)
	if b.node != nil {
		if !s.existingOK(l, b) {
			return none
		}
		capv = b.alloc
	} else {
		cp := l.pools[b.pool.idx]
		if !cp.ok {
			return none
		}
		zm = b.zoneMask & cp.zoneMask
		cm = b.ctMask & cp.ctMask
		if typ != anyType {
			if typ < 0 || !cp.types.has(typ) || !b.types.has(typ) {
				return none
			}
			t := b.pool.types[typ]
			capv = t.net
			zm &= t.zoneMask
			cm &= t.ctMask
		}
		if zm == 0 || cm == 0 {
			return none
		}
		if cp.custom != nil && !customCompatible(b.custom, cp.custom) {
			return none
		}
	}
	k := want
	if len(c.ports) > 0 {
		for _, p := range c.ports {
			for _, q := range b.ports {
				if p.conflicts(q) {
					return none
				}
			}
		}
		k = 1
	}
	if capv != nil {
		if r := maxCopies(b.used, c.req, capv); r < k {
			k = r
		}
	}
	if b.node == nil && len(b.pool.minValues) > 0 && k > 0 {
		k = s.minValuesCap(l, b, k)
	}
	if k <= 0 {
		return none
	}
	if len(l.anti) == 0 && len(l.aff) == 0 && len(l.spreads) == 0 && len(c.invAnti) == 0 && len(c.memberOf) == 0 {
		return choice{k: k, zone: -1, ct: -1}
	}
	// Topology: try each zone / capacity type a new bin could be pinned to.
	zones, cts := []int{-1}, []int{-1}
	if b.node == nil {
		if b.zone < 0 && l.zoneKey {
			zones = s.maskList(zm, len(s.world.zones))
		}
		if b.ct < 0 && l.ctKey {
			cts = s.maskList(cm, len(s.world.cts))
		}
	}
	// Other keys (custom labels, type labels) an open new bin could still
	// take several values of: try each combination.
	var pinKeys []int
	var pinVals [][]int
	if b.node == nil {
		for _, key := range l.otherKeys {
			if vals := s.pinCandidates(l, b, key, typ); len(vals) > 0 {
				pinKeys = append(pinKeys, key)
				pinVals = append(pinVals, vals)
			}
		}
	}
	s.ensureTrial()
	best := none
	bestLoad := 0
	pos := make([]int, len(pinKeys))
	for {
		for i, key := range pinKeys {
			s.trial[key] = pinVals[i][pos[i]]
		}
		load := 0
		for i, key := range pinKeys {
			load += s.pinLoad(key, pinVals[i][pos[i]])
		}
		for _, z := range zones {
			for _, ct := range cts {
				n := s.topoAllow(l, b, z, ct, k)
				if n <= 0 {
					continue
				}
				if best.k == 0 || n > best.k || (n == best.k && (load < bestLoad || (load == bestLoad && z >= 0 && best.zone >= 0 && s.zoneLoad[z] < s.zoneLoad[best.zone]))) {
					best = choice{k: n, zone: z, ct: ct}
					bestLoad = load
					if len(pinKeys) > 0 {
						best.pins = make([]keyPin, len(pinKeys))
						for i, key := range pinKeys {
							best.pins[i] = keyPin{key, pinVals[i][pos[i]]}
						}
					}
				}
			}
		}
		// Next combination.
		i := 0
		for ; i < len(pos); i++ {
			pos[i]++
			if pos[i] < len(pinVals[i]) {
				break
			}
			pos[i] = 0
		}
		if i == len(pos) {
			break
		}
	}
	for _, key := range pinKeys {
		s.trial[key] = trialUnset
	}
	return best
}

// minValuesCap is the most pods of l, up to k, a new bin can take while
// the types holding it keep the pool's minValues (minValues are honoured
// while packing, not only checked after: the node stays small enough for
// enough types).
func (s *solver) minValuesCap(l *level, b *bin, k int) int {
	cp := l.pools[b.pool.idx]
	hold := func(n int) bool {
		need := b.used.clone()
		need.addScaled(l.cls.req, int64(n))
		return s.minValuesHold(b, cp.types, need)
	}
	if hold(k) {
		return k
	}
	lo, hi := 0, k // hold(lo) assumed, !hold(hi)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if hold(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// ensureTrial sizes the trial values to the keys.
func (s *solver) ensureTrial() {
	for len(s.trial) < len(s.keys) {
		s.trial = append(s.trial, trialUnset)
	}
}

// pinLoad is how many pods new bins pinned to a key's value hold, to
// spread ties over the values.
func (s *solver) pinLoad(key, d int) int {
	if d < 0 {
		return 0
	}
	for len(s.pinPods) <= key {
		s.pinPods = append(s.pinPods, domCounts{})
	}
	return int(at(s.pinPods[key], d))
}

func (s *solver) maskList(m uint64, n int) []int {
	var out []int
	for i := 0; i < n && i < 64; i++ {
		if maskHas(m, i) {
			out = append(out, i)
		}
	}
	return out
}

// customCompatible tells whether a bin's custom labels can also satisfy a
// class's.
func customCompatible(bin, cls *reqs) bool {
	for _, k := range cls.keys {
		cur, ok := bin.get(k)
		if !ok {
			return false
		}
		if x := cur.intersect(cls.sets[k]); x.empty() {
			return false
		}
	}
	return true
}

// topoAllow applies pod affinity, anti-affinity (both ways) and hard
// spreads to placing up to k pods of l on b (pinned to zone z / capacity
// type ct if b is new and open).
func (s *solver) topoAllow(l *level, b *bin, z, ct, k int) int {
	c := l.cls
	for i, g := range l.anti {
		d := s.domain(b, g.key, z, ct)
		if d < 0 {
			continue
		}
		if at(g.counts, d) > 0 {
			return 0
		}
		if l.antiSelf[i] {
			k = min(k, 1)
		}
	}
	for _, g := range c.invAnti {
		if d := s.domain(b, g.key, z, ct); d >= 0 && at(g.owners, d) > 0 {
			return 0
		}
	}
	for i, g := range l.aff {
		d := s.domain(b, g.key, z, ct)
		if d < 0 {
			return 0
		}
		if at(g.counts, d) > 0 {
			continue
		}
		if g.total == 0 && l.affSelf[i] {
			continue
		}
		return 0
	}
	for _, sp := range l.spreads {
		d := s.domain(b, sp.g.key, z, ct)
		if d < 0 {
			return 0
		}
		cnt := int(at(sp.g.counts, d))
		if s.keys[sp.g.key].kind == keyHostname {
			// Karpenter's rule: a new node can always be made, so the
			// global minimum over nodes is taken as 0.
			if sp.member {
				k = min(k, sp.maxSkew-cnt)
			} else if cnt > sp.maxSkew {
				return 0
			}
		} else {
			m := int(sp.minCount())
			if sp.member {
				k = min(k, m+sp.maxSkew-cnt)
			} else if cnt-m > sp.maxSkew {
				return 0
			}
		}
		if k <= 0 {
			return 0
		}
	}
	return k
}

func (s *solver) zoneCandidates(l *level, b *bin) []int {
	if !l.zoneKey || b.zone >= 0 {
		return []int{b.zone}
	}
	return s.maskList(b.zoneMask, len(s.world.zones))
}

func (s *solver) ctCandidates(l *level, b *bin) []int {
	if !l.ctKey || b.ct >= 0 {
		return []int{b.ct}
	}
	return s.maskList(b.ctMask, len(s.world.cts))
}
