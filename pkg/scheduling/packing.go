package scheduling

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
)

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
		s.pinPods = append(s.pinPods, nil)
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

// place puts k pods of level l on bin b, pinning a new bin as chosen.
func (s *solver) place(l *level, b *bin, ch choice) {
	if s.jr != nil {
		s.jr.touch(b)
	}
	b.ver++
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
					s.pinPods = append(s.pinPods, nil)
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
		if b.node != nil && (g.filter != nil || g.honorTaints) && !g.countsOn(b) {
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
	placed := 0
	for placed < want {
		n := s.fillPaid(l, want-placed)
		s.pending.addScaled(l.cls.req, -int64(n))
		placed += n
		if placed == want {
			break
		}
		g, why := s.bestGrowth(l, want-placed)
		if g == nil {
			return placed, why
		}
		b := g.b
		if b == nil {
			b = s.openBin(g)
		} else {
			s.setType(b, g.typ)
		}
		s.place(l, b, g.ch)
		s.pending.addScaled(l.cls.req, -int64(g.ch.k))
		placed += g.ch.k
	}
	return placed, ""
}

// fillPaid places pods where room is already paid for: existing nodes in
// input order first, then new nodes, tightest first (least room left, by
// dual value), so small nodes fill up before big ones take the rest. Rounds
// repeat while they place pods and a spread's minimum may have moved.
func (s *solver) fillPaid(l *level, want int) int {
	placed := 0
	type cand struct {
		b     *bin
		slack float64
	}
	var cands []cand
	for placed < want {
		progress := false
		cands = cands[:0]
		for _, b := range s.liveBins() {
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
				cands = append(cands, cand{b, s.valueOf(net) - s.valueOf(b.used)})
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
		sort.SliceStable(cands, func(i, j int) bool { return cands[i].slack < cands[j].slack })
		for _, c := range cands {
			if placed == want {
				break
			}
			b := c.b
			ch := s.allowance(l, b, want-placed, b.typ)
			if ch.k <= 0 {
				continue
			}
			if ch.zone >= 0 || ch.ct >= 0 {
				// Pinning may change the price; only take it when it
				// does not.
				zm, cm := b.zoneMask, b.ctMask
				if ch.zone >= 0 {
					zm = maskOf(ch.zone)
				}
				if ch.ct >= 0 {
					cm = maskOf(ch.ct)
				}
				if o, ok := b.pool.types[b.typ].price(zm, cm); !ok || o.price > b.offer.price+1e-12 {
					continue
				}
			}
			s.place(l, b, ch)
			placed += ch.k
			progress = true
		}
		if !progress || !l.hasRange {
			break
		}
	}
	return placed
}

// growth is a way to make room: upgrade bin b to type typ, or (b nil) open
// a node of pool ps with type typ.
type growth struct {
	b        *bin
	ps       *poolState
	typ      int
	ch       choice
	eff      float64
	dp       float64
	template *bin
}

// bestGrowth finds the most cost-efficient way to make room for the level.
func (s *solver) bestGrowth(l *level, want int) (*growth, string) {
	var best *growth
	better := func(g *growth) bool {
		if best == nil {
			return true
		}
		// Upgrades beat new nodes unless clearly less efficient.
		ge, be := g.eff, best.eff
		if (g.b != nil) != (best.b != nil) {
			if g.b != nil {
				return ge >= be*0.99
			}
			return ge > be/0.99
		}
		if math.Abs(ge-be) > 1e-3*math.Max(math.Abs(ge), math.Abs(be)) {
			return ge > be
		}
		return g.dp < best.dp
	}
	var excluded []*bin
retry:
	for _, b := range s.liveBins() {
		if b.node != nil || len(b.entries) == 0 || slices.Contains(excluded, b) {
			continue
		}
		cp := l.pools[b.pool.idx]
		if !cp.ok || (s.capPool != nil && b.pool != s.capPool) || s.allowance(l, b, 1, anyType).k == 0 {
			continue
		}
		if g := s.upgradeCached(l, b, cp, want); g != nil && better(g) {
			best = g
		}
	}
	if best != nil && best.b != nil && best.ch.k == 0 {
		best.ch = s.allowance(l, best.b, want, best.typ)
		if best.ch.k == 0 {
			excluded = append(excluded, best.b)
			best = nil
			goto retry
		}
	}
	var why string
	// New nodes from the highest-weight tier that can take the pod.
	for lo := 0; lo < len(s.pools); {
		hi := lo
		for hi < len(s.pools) && s.pools[hi].pool.Weight == s.pools[lo].pool.Weight {
			hi++
		}
		found := false
		for _, ps := range s.pools[lo:hi] {
			g, reason := s.newBinFor(l, ps, want)
			if g == nil {
				if reason != "" && why == "" {
					why = reason
				}
				continue
			}
			found = true
			if better(g) {
				best = g
			}
		}
		if found {
			break
		}
		lo = hi
	}
	if best == nil && why == "" {
		why = s.topologyReason(l)
	}
	return best, why
}

// upCache remembers a bin's best upgrade for a level until the bin
// changes.
type upCache struct {
	ver  uint32
	set  bool
	none bool
	typ  int
	dp   float64
}

// upgradeCached is upgradeFor, remembered per level and bin version: while
// one class grows one bin, the other bins' answers do not change.
func (s *solver) upgradeCached(l *level, b *bin, cp *classPool, want int) *growth {
	for len(l.up) <= b.id {
		l.up = append(l.up, upCache{})
	}
	c := &l.up[b.id]
	// A limited pool's answer also depends on the other nodes' sizes: no
	// caching there.
	if s.priceCap > 0 {
		// A split in the local search: answers under a price cap are
		// not remembered.
		g := s.upgradeFor(l, b, cp)
		if g == nil {
			return nil
		}
		c = &upCache{ver: b.ver, set: true, typ: g.typ, dp: g.dp}
	} else if !c.set || c.ver != b.ver || b.pool.hasLimits {
		g := s.upgradeFor(l, b, cp)
		*c = upCache{ver: b.ver, set: true, none: g == nil}
		if g != nil {
			c.typ, c.dp = g.typ, g.dp
		}
	}
	if c.none {
		return nil
	}
	// The type is chosen by capacity value (cached); whether growing is
	// worth it is judged by what the pending pods can use of it, which
	// changes with every placement.
	eff := math.Inf(1)
	if c.dp > 1e-12 {
		v, _ := s.usefulValue(l, want, b.pool.types[c.typ].net, b.used)
		cur, _ := s.usefulValue(l, want, b.pool.types[b.typ].net, b.used)
		eff = (v - cur) / c.dp
	}
	return &growth{b: b, ps: b.pool, typ: c.typ, eff: eff, dp: c.dp}
}

// upgradeFor is the best type change of bin b that takes one more pod of
// l: among the types that hold the bin's pods and one more, the one that
// adds the most value per added dollar (within 1%, the smaller step). The
// caller checks topology (allowance) for the chosen one.
func (s *solver) upgradeFor(l *level, b *bin, cp *classPool) *growth {
	ps := b.pool
	cur := ps.types[b.typ]
	need := b.used.clone()
	need.add(l.cls.req)
	zm, cm := b.zoneMask&cp.zoneMask, b.ctMask&cp.ctMask
	if zm == 0 || cm == 0 {
		return nil
	}
	if cp.custom != nil && !customCompatible(b.custom, cp.custom) {
		return nil
	}
	curValue := s.valueOf(cur.net)
	best, bestEff, bestDp := -1, 0.0, 0.0
	for _, i := range s.searchList(b, cp) {
		t := ps.types[i]
		if need[dimCPU] > t.net[dimCPU] || need[dimMemory] > t.net[dimMemory] || !need.le(t.net) || !b.types.has(i) || !cp.types.has(i) || t.zoneMask&zm == 0 || t.ctMask&cm == 0 {
			continue
		}
		o, ok := t.price(zm, cm)
		if !ok || (s.priceCap > 0 && o.price >= s.priceCap) {
			continue
		}
		dp := o.price - b.offer.price
		eff := math.Inf(1)
		if dp > 1e-12 {
			eff = (t.value - curValue) / dp
		}
		if best >= 0 {
			if math.Abs(eff-bestEff) <= 0.01*math.Max(math.Abs(eff), math.Abs(bestEff)) {
				if dp >= bestDp {
					continue
				}
			} else if eff < bestEff {
				continue
			}
		}
		if ps.hasLimits && !s.withinLimits(ps, t.capv, cur.capv, 0) {
			continue
		}
		best, bestEff, bestDp = i, eff, dp
	}
	if best < 0 {
		return nil
	}
	return &growth{b: b, ps: ps, typ: best, eff: bestEff, dp: bestDp}
}

// searchList is the types a search for the best type for bin b (and,
// when cp is not nil, a pod of cp) must look at. Scanning only the pool's
// frontier is enough when every type filtered out for a reason other than
// size, zones or price is off the frontier: whatever such a search
// prefers (more of every resource, offered wherever, no dearer), a type's
// dominator on the frontier has, so it passes the same filters and is at
// least as good. Label requirements are the filters that can cut a
// frontier type: then the search scans every type.
func (s *solver) searchList(b *bin, cp *classPool) []int {
	ps := b.pool
	if ps.hasLimits || b.labelCut || (cp != nil && !cp.labelAll) {
		return ps.allIdx
	}
	return ps.frontier
}

// newBinFor is a new node of pool ps for the level: the cheapest type that
// takes one pod, in a zone and capacity type the topology allows.
func (s *solver) newBinFor(l *level, ps *poolState, want int) (*growth, string) {
	cp := l.pools[ps.idx]
	if !cp.ok || (s.capPool != nil && ps != s.capPool) {
		return nil, ""
	}
	if !s.withinLimits(ps, s.dims.zero(), nil, 1) {
		return nil, fmt.Sprintf("exceeds pool %q nodes limit", ps.pool.Name)
	}
	for _, p := range l.cls.ports {
		for _, q := range ps.dsPorts {
			if p.conflicts(q) {
				return nil, fmt.Sprintf("host port %d/%s is taken by a DaemonSet on pool %q's nodes", p.port, p.proto, ps.pool.Name)
			}
		}
	}
	tmp := &bin{id: len(s.bins), pool: ps, zone: -1, ct: -1, typ: -1,
		types: cp.types.clone(), labelCut: !cp.labelAll, zoneMask: cp.zoneMask, ctMask: cp.ctMask,
		custom: ps.custom, used: s.dims.zero(), ports: append([]hostPort(nil), ps.dsPorts...)}
	zm, cm := tmp.zoneMask, tmp.ctMask
	if l.zoneKey || l.ctKey {
		zm, cm = 0, 0
		for _, z := range s.zoneCandidates(l, tmp) {
			for _, ct := range s.ctCandidates(l, tmp) {
				if s.topoAllow(l, tmp, z, ct, 1) > 0 {
					if z < 0 {
						zm |= tmp.zoneMask
					} else {
						zm |= maskOf(z)
					}
					if ct < 0 {
						cm |= tmp.ctMask
					} else {
						cm |= maskOf(ct)
					}
				}
			}
		}
		if zm == 0 || cm == 0 {
			return nil, s.topologyReason(l)
		}
	}
	typeTopo := false
	for _, key := range l.otherKeys {
		if s.isTypeKey(s.keys[key].name) {
			typeTopo = true
		}
	}
	if typeTopo {
		tmp.zoneMask &= zm
		tmp.ctMask &= cm
	}
	best, bestPrice := -1, 0.0
	limited := false
	for i, t := range ps.types {
		if best >= 0 && t.minPrice > bestPrice {
			break
		}
		if !cp.types.has(i) || t.zoneMask&zm == 0 || t.ctMask&cm == 0 || !l.cls.req.le(t.net) {
			continue
		}
		o, ok := t.price(zm, cm)
		if !ok || (best >= 0 && o.price >= bestPrice) || (s.priceCap > 0 && o.price >= s.priceCap) {
			continue
		}
		if ps.hasLimits && !s.withinLimits(ps, t.capv, nil, 1) {
			limited = true
			continue
		}
		if typeTopo && s.allowance(l, tmp, 1, i).k <= 0 {
			continue // its type labels break the topology
		}
		best, bestPrice = i, o.price
	}
	if best < 0 {
		if limited {
			return nil, s.limitReason(ps, l)
		}
		return nil, fmt.Sprintf("no offering of pool %q fits the topology's zones", ps.pool.Name)
	}
	tmp.zoneMask &= zm
	tmp.ctMask &= cm
	ch := s.allowance(l, tmp, want, best)
	if ch.k <= 0 {
		for _, mv := range ps.minValues {
			if !s.minValuesHold(tmp, nil, l.cls.req) {
				return nil, fmt.Sprintf("pool %q needs %d distinct %s values but fewer instance types hold the pod", ps.pool.Name, mv.n, mv.key)
			}
		}
		return nil, s.topologyReason(l)
	}
	eff := math.Inf(1)
	if bestPrice > 0 {
		v, _ := s.usefulValue(l, want, ps.types[best].net, nil)
		eff = v / bestPrice
	}
	return &growth{ps: ps, typ: best, ch: ch, eff: eff, dp: bestPrice, template: tmp}, ""
}

// openBin creates the new bin of a growth.
func (s *solver) openBin(g *growth) *bin {
	b := g.template
	b.id = len(s.bins)
	b.typ = g.typ
	b.offer, _ = g.ps.types[g.typ].price(b.zoneMask, b.ctMask)
	g.ps.usage.add(g.ps.types[g.typ].capv)
	g.ps.usageNodes++
	s.bins = append(s.bins, b)
	return b
}

// setType changes a new bin's type, keeping pool usage in step.
func (s *solver) setType(b *bin, typ int) {
	if s.jr != nil {
		s.jr.touch(b)
	}
	b.ver++
	ps := b.pool
	if typ != b.typ {
		ps.usage.sub(ps.types[b.typ].capv)
		ps.usage.add(ps.types[typ].capv)
		b.typ = typ
	}
	b.offer, _ = ps.types[typ].price(b.zoneMask, b.ctMask)
}

// withinLimits tells whether the pool stays within its limits when a node
// of capacity add replaces one of capacity drop (nil: none), with extra
// nodes added.
func (s *solver) withinLimits(ps *poolState, add, drop vec, extraNodes int64) bool {
	if ps.limitNodes >= 0 && ps.usageNodes+extraNodes > ps.limitNodes {
		return false
	}
	for i, lim := range ps.limit {
		if lim == math.MaxInt64 {
			continue
		}
		u := ps.usage[i] + add[i]
		if drop != nil {
			u -= drop[i]
		}
		if u > lim {
			return false
		}
	}
	return true
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

// limitReason names the limit that stops a new node for the class.
func (s *solver) limitReason(ps *poolState, l *level) string {
	for i, lim := range ps.limit {
		if lim == math.MaxInt64 {
			continue
		}
		smallest := int64(math.MaxInt64)
		for _, t := range ps.types {
			if l.cls.req.le(t.net) && t.capv[i] < smallest {
				smallest = t.capv[i]
			}
		}
		if ps.usage[i]+smallest > lim {
			return fmt.Sprintf("exceeds pool %q %s limit", ps.pool.Name, s.dims.names[i])
		}
	}
	return "exceeds pool " + strconv.Quote(ps.pool.Name) + " limits"
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
