package scheduling

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Growth: when no paid room is left, the most cost-efficient way to make
// room: upgrade a new node to a bigger type, or open a node, judged by
// the value (at the bound's dual prices) the pending pods can use.

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
		if math.Abs(ge-be) > growTie*math.Max(math.Abs(ge), math.Abs(be)) {
			return ge > be
		}
		return g.dp < best.dp
	}
	var excluded []*bin
	up := &s.upBest // the best upgrade of the scan below (scratch)
	s.resetGrowths()
	// A chain for the next step is left only by a full scan without
	// exclusions (growchain.go).
	track, tracking := newChainTrack(), s.chainable(l)
retry:
	if cands, ok := s.fastUpgrades(l, want, excluded); ok {
		// The same sequential rule as the scan below, over the nodes
		// close enough to the best to matter (growidx.go). The nodes
		// left out are bounded by the index; a candidate's twins by its
		// own efficiency.
		track.rest = s.gidx.rest
		for _, g := range cands {
			track.upgrade(g.b, g.eff)
			if s.gidx.twins(g.b) {
				track.rest = max(track.rest, g.eff)
			}
			if better(g) {
				best = g
			}
		}
	} else {
		live := s.liveBins()
		tw := s.startScanTwins(l, len(live))
		for _, b := range live {
			cp, ok := s.growsFor(l, b)
			if !ok || slices.Contains(excluded, b) {
				continue
			}
			if tw != nil {
				// A twin asked before answers for b (scantwins.go).
				if a, found := tw.lookup(b); found {
					if g := a.g; a.ok {
						g.b = b
						track.upgrade(b, g.eff)
						if better(&g) {
							*up = g
							best = up
						}
					}
					continue
				}
			}
			g, ok := s.upgradeAsked(l, b, cp, want)
			if tw != nil {
				tw.note(b, ok, g)
			}
			if ok {
				track.upgrade(b, g.eff)
			}
			// By value: a growth is allocated only for the best so far,
			// not for every node asked.
			if ok && better(&g) {
				*up = g
				best = up
			}
		}
	}
	if best != nil && best.b != nil && best.ch.k == 0 {
		best.ch = s.allowance(l, best.b, want, best.typ)
		if best.ch.k == 0 {
			excluded = append(excluded, best.b)
			best = nil
			tracking = false
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
			track.newNode(g.eff)
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
	s.chain.ok = false
	if tracking && best != nil {
		s.keepChain(l, &track, best)
	}
	return best, why
}

// growsFor tells whether bestGrowth's scan asks bin b for an upgrade for
// l at all (a new node with pods, in a pool the level may use and the
// search may grow), and with what the level allows there.
func (s *solver) growsFor(l *level, b *bin) (*classPool, bool) {
	if b.node != nil || len(b.entries) == 0 {
		return nil, false
	}
	cp := l.pools[b.pool.idx]
	return cp, cp.ok && (s.capPool == nil || b.pool == s.capPool)
}

// upgradeAsked is b's candidate upgrade for want more pods of l as the
// scan asks it: none where topology refuses even one pod (bestGrowth
// checks the node it chooses anyway; this spares it choosing one it must
// then exclude and scan again). For a level without topology or host
// ports on a pool without minValues, allowance refuses a pod only where
// the node's zones, capacity types or custom labels leave the level
// none, which upgradeFor refuses too (and the answers kept for the
// node's version are upgradeFor's): it is not asked there, a fifth of
// the scan's time on few-big (TestAllowanceSkipRefusesNothing).
func (s *solver) upgradeAsked(l *level, b *bin, cp *classPool, want int) (growth, bool) {
	asked := !l.free() || len(b.pool.minValues) > 0
	if asked && s.allowance(l, b, 1, anyType).k == 0 {
		return growth{}, false
	}
	g, ok := s.upgradeValue(l, b, cp, want)
	if !asked && allowanceSkipped != nil {
		allowanceSkipped(s.allowance(l, b, 1, anyType).k == 0, ok)
	}
	return g, ok
}

// allowanceSkipped, when set, is handed for every node upgradeAsked did
// not ask allowance about whether allowance would have refused it and
// whether its upgrade was found (tests check none is both).
var allowanceSkipped func(refused, found bool)

// upCache remembers a bin's best upgrade for a level until the bin
// changes: the bin's version, the answer (0: none remembered, 1: no
// upgrade, else the type plus 2) and its added price. Under a price cap
// (a split in the local search) the cap is part of the key.
type upCache struct {
	ver  uint32
	code int32
	dp   float64
	cap  float64
}

func (c *upCache) holds(ver uint32, cap float64) bool {
	return c.code != 0 && c.ver == ver && c.cap == cap
}

// upCaches are upgrade answers by bin id, two per bin: a bin a rebuild
// in the local search changes (journal.from) keeps the answer for its
// version before the rebuild in the first while the second takes its
// passing versions, so that the answer holds again when the rebuild is
// undone and the bin takes its version back (restoreShape). Answers
// under a price cap have two slots of their own (capped), so that a
// split does not overwrite the others.
type upCaches struct {
	e, capped [][2]upCache
	// memo are upgradeFor's answers by node shape (shapememo.go).
	memo map[uint64]*upMemo
	// lim and cappedLim are, beside e and capped, what the answers of
	// limited pools' bins read of their pool's usage (limRec).
	lim, cappedLim [][2]limRec
	// fit names what upgradeFor reads of the levels besides their CPU
	// and memory (fitidx.go's answers by bin version).
	fit uint32
	// slots tells whether e and capped are used (upgradeValue).
	slots bool
}

// slotsFor is the pair of slots of bin id in e, grown as needed (to the
// solve's bins at once: a search asks them in id order).
func (s *solver) slotsFor(e *[][2]upCache, id int) *[2]upCache {
	if n := len(*e); n <= id {
		if cap(*e) <= id {
			need := max(id+1, len(s.bins)+8)
			if n == 0 {
				*e = s.scratch.upSlots(need)
			}
			*e = slices.Grow(*e, need-n)
		}
		*e = (*e)[:id+1]
		clear((*e)[n:])
	}
	return &(*e)[id]
}

// upCachesFor is the cache of upgrade answers for l, shared with every
// level whose upgradeFor reads the same: the class's request and, per
// pool, what the class allows (types, zones, capacity types, custom
// labels). Classes of one request shape (Deployments of the same pod
// size) then do not search every open node again.
func (s *solver) upCachesFor(l *level) *upCaches {
	kb := s.upKey[:0]
	for _, v := range l.cls.req {
		kb = binary.LittleEndian.AppendUint64(kb, uint64(v))
	}
	kb = s.appendPoolsKey(kb, l)
	s.upKey = kb
	u, ok := s.upShared[string(kb)]
	if !ok {
		u = &upCaches{fit: s.fitKeyOf(l), slots: len(s.upShared) < slotCachesMax}
		s.upShared[string(kb)] = u
	}
	return u
}

// appendPoolsKey appends to kb what l allows per pool (types, zones,
// capacity types, custom labels), as upgradeFor reads it: fixed-width
// words (a pool's type set has as many as the pool's types need), the
// custom labels' signature after its length.
func (s *solver) appendPoolsKey(kb []byte, l *level) []byte {
	for _, cp := range l.pools {
		if !cp.ok {
			kb = append(kb, 0)
			continue
		}
		flags := byte(1)
		if cp.labelAll {
			flags |= 2
		}
		if cp.custom != nil {
			flags |= 4
		}
		kb = append(kb, flags)
		for _, w := range cp.types {
			kb = binary.LittleEndian.AppendUint64(kb, w)
		}
		kb = binary.LittleEndian.AppendUint64(kb, cp.zoneMask)
		kb = binary.LittleEndian.AppendUint64(kb, cp.ctMask)
		if cp.custom != nil {
			sig := cp.custom.signature()
			kb = binary.LittleEndian.AppendUint64(kb, uint64(len(sig)))
			kb = append(kb, sig...)
		}
	}
	return kb
}

// upgradeCached is upgradeValue for callers that keep the growth.
func (s *solver) upgradeCached(l *level, b *bin, cp *classPool, want int) *growth {
	g, ok := s.upgradeValue(l, b, cp, want)
	if !ok {
		return nil
	}
	if !searchScratchOff {
		return s.newGrowth(g)
	}
	p := new(growth)
	*p = g
	return p
}

// upgradeValue is upgradeFor, remembered per level and bin version: while
// one class grows one bin, the other bins' answers do not change (and a
// bin the local search changed and put back has its version back,
// restoreShape).
func (s *solver) upgradeValue(l *level, b *bin, cp *classPool, want int) (growth, bool) {
	if l.up == nil {
		l.up = s.upCachesFor(l)
	}
	// Past the first levels' caches, answers only by bin version and
	// frontier rows (fitidx.go): their slots below were most of a
	// solve's bytes where classes differ in size (many-shapes at 2,000
	// pods: 780 levels' caches, 4.6 MB a solve), and the answers by rows
	// are shared by more levels. The slots are the cheaper look-up where
	// a few caches serve many classes (gpu: 9 caches, 324 classes).
	if !l.up.slots {
		if fe := s.fitAnswer(l, b, cp); fe != nil {
			if fe.code == 0 {
				fe.code, fe.dp = s.upgradeMemo(l, b, cp)
			}
			return s.upgradeGrowth(l, b, want, fe.code, fe.dp)
		}
	}
	e := &l.up.e
	if s.priceCap > 0 {
		e = &l.up.capped
	}
	slots := s.slotsFor(e, b.id)
	cp0 := s.priceCap
	if upCacheOff {
		cp0 = -1 // no answer holds
	}
	c := &slots[0]
	switch {
	case slots[0].holds(b.ver, cp0):
	case slots[1].holds(b.ver, cp0):
		c = &slots[1]
	case s.jr != nil && b.ver > s.jr.from:
		c = &slots[1]
	}
	// A limited pool's answer also depends on the pool's usage, the
	// other nodes' sizes: it holds while the limits answer what they
	// answered (limRec).
	var lr *limRec
	if b.pool.hasLimits {
		lr = s.limSlot(l.up, s.priceCap > 0, b.id, c == &slots[1])
	}
	if !c.holds(b.ver, cp0) || (lr != nil && !lr.holds(b.pool)) {
		var code int32
		var dp float64
		if lr != nil {
			lr.set = false
			s.limOut = lr
		}
		if fe := s.fitAnswer(l, b, cp); fe != nil {
			if fe.code == 0 {
				fe.code, fe.dp = s.upgradeMemo(l, b, cp)
			}
			code, dp = fe.code, fe.dp
		} else {
			code, dp = s.upgradeMemo(l, b, cp)
		}
		s.limOut = nil
		*c = upCache{ver: b.ver, code: code, dp: dp, cap: s.priceCap}
		if lr != nil && limCacheOff {
			lr.set = false // no answer holds
		}
	} else if limCheck != nil && lr != nil {
		fresh, _ := s.upgradeScan(l, b, cp, true)
		typ := int32(1)
		if fresh.ps != nil {
			typ = int32(fresh.typ) + 2
		}
		limCheck(c.code, typ)
	}
	return s.upgradeGrowth(l, b, want, c.code, c.dp)
}

// upgradeGrowth is the growth of an upgradeFor answer (code and dp as in
// upCache) for want more pods of l.
func (s *solver) upgradeGrowth(l *level, b *bin, want int, code int32, dp float64) (growth, bool) {
	if code == 1 {
		return growth{}, false
	}
	typ := int(code - 2)
	// The type is chosen by capacity value (cached); whether growing is
	// worth it is judged by what the pending pods can use of it, which
	// changes with every placement.
	eff := math.Inf(1)
	if dp > 1e-12 {
		v, cur := s.usefulPair(l, want, b.pool.types[typ].net, b.pool.types[b.typ].net, b.used)
		eff = (v - cur) / dp
	}
	return growth{b: b, ps: b.pool, typ: typ, eff: eff, dp: dp}, true
}

// slotCachesMax is how many levels' caches keep answers in slots per bin
// (upgradeValue).
const slotCachesMax = 64

// upCacheOff makes upgradeValue ask upgradeFor every time (tests
// compare).
var upCacheOff bool

// upgradeFor is the best type change of bin b that takes one more pod of
// l: among the types that hold the bin's pods and one more, the one that
// adds the most value per added dollar (within 1%, the smaller step). The
// caller checks topology (allowance) for the chosen one.
func (s *solver) upgradeFor(l *level, b *bin, cp *classPool) (growth, bool) {
	g, ok := s.upgradeScan(l, b, cp, true)
	if upgradeCheck != nil {
		full, fullOK := s.upgradeScan(l, b, cp, false)
		cut, whole := -1, -1
		if ok {
			cut = g.typ
		}
		if fullOK {
			whole = full.typ
		}
		upgradeCheck(cut, whole)
	}
	return g, ok
}

// upgradeCheck, when set, is handed the type of each answer upgradeFor
// gives and that of a scan of every type (-1: none; tests compare).
var upgradeCheck func(cut, full int)

// upgradeScan is upgradeFor's scan of the types, stopped at the
// efficiency ceiling when stop is set.
func (s *solver) upgradeScan(l *level, b *bin, cp *classPool, stop bool) (growth, bool) {
	ps := b.pool
	out := s.limOut
	s.limOut = nil
	if out != nil {
		out.begin(0)
	}
	cur := ps.types[b.typ]
	zm, cm := b.zoneMask&cp.zoneMask, b.ctMask&cp.ctMask
	if zm == 0 || cm == 0 {
		return growth{}, false
	}
	if cp.custom != nil && !customCompatible(b.custom, cp.custom) {
		return growth{}, false
	}
	// need is scratch: upgradeFor runs for every node a search asks.
	if len(s.upNeed) != len(b.used) {
		s.upNeed = make(vec, len(b.used))
	}
	need := s.upNeed
	copy(need, b.used)
	need.add(l.cls.req)
	curValue := s.valueOf(cur.net)
	best, bestEff, bestDp := -1, 0.0, 0.0
	// Every type's price within the masks, made once per solve.
	prices := s.pricesFor(ps, zm, cm)
	// The types that may hold need (and that b and cp both allow, for a
	// search of every type), in list order: the others are skipped below
	// anyway. The ceiling only falls along the list, so where a type
	// between them would have stopped the scan, the next of them does.
	walk := s.typesWalk(ps, s.searchList(b, cp), need, b.types, cp.types)
	ceil := ps.upgradeCeil()
	for {
		i, more := walk.next()
		if !more {
			break
		}
		t := ps.types[i]
		// The list is cheapest first: once no type from here on can come
		// within the tie of the best, the best is the answer.
		if best >= 0 && stop && beyondCeil(ceil[i], t.minPrice, curValue, b.offer.price, bestEff, bestDp) {
			break
		}
		if need[dimCPU] > t.net[dimCPU] || need[dimMemory] > t.net[dimMemory] || !need.le(t.net) || !b.types.has(i) || !cp.types.has(i) || t.zoneMask&zm == 0 || t.ctMask&cm == 0 {
			continue
		}
		o, ok := prices[i].o, prices[i].ok
		if !ok || (s.priceCap > 0 && o.price >= s.priceCap) {
			continue
		}
		dp := o.price - b.offer.price
		eff := math.Inf(1)
		if dp > 1e-12 {
			eff = (ps.values[i] - curValue) / dp
		}
		if best >= 0 && !upgradeBeats(eff, dp, bestEff, bestDp) {
			continue
		}
		if ps.hasLimits && !s.withinLimits(ps, t.capv, cur.capv, 0) {
			if out != nil {
				out.refuse(ps)
			}
			continue
		}
		if out != nil {
			out.pass(t.capv, cur.capv)
		}
		best, bestEff, bestDp = i, eff, dp
	}
	if best < 0 {
		return growth{}, false
	}
	return growth{b: b, ps: ps, typ: best, eff: bestEff, dp: bestDp}, true
}

// upgradeBeats tells whether an upgrade of efficiency eff and price step
// dp replaces the best one so far (bestEff, bestDp) in upgradeFor: more
// efficient by more than 1 %, or within 1 % and a smaller step.
func upgradeBeats(eff, dp, bestEff, bestDp float64) bool {
	if math.Abs(eff-bestEff) <= 0.01*max(math.Abs(eff), math.Abs(bestEff)) {
		return dp < bestDp
	}
	return !(eff < bestEff)
}

// upgradeCeil is ps.ceil, made when empty: for each type i, the most
// value per dollar of minimum price among types i and after. A type j
// from i on is worth at most ceil[i] times its price, since its price
// in any zone is at least its minimum price.
func (ps *poolState) upgradeCeil() []float64 {
	if len(ps.ceil) == len(ps.types) {
		return ps.ceil
	}
	if cap(ps.ceil) < len(ps.types) {
		ps.ceil = make([]float64, len(ps.types))
	}
	ps.ceil = ps.ceil[:len(ps.types)]
	m := 0.0
	for i := len(ps.types) - 1; i >= 0; i-- {
		if p := ps.types[i].minPrice; p > 0 {
			m = max(m, ps.values[i]/p)
		} else {
			m = math.Inf(1)
		}
		ps.ceil[i] = m
	}
	return ps.ceil
}

// effCeil is the most efficiency, (v_j-v0)/(p_j-p0), that a type j of
// minimum price at least minPrice and value per dollar at most rho can
// have as an upgrade of a node worth v0 at price p0, as num/den (the
// callers compare it without dividing: it is asked of most types a scan
// looks at); ok is false where no bound holds (a type no dearer than the
// node). Its value is at most rho*p_j at its price p_j >= minPrice, and
// (rho*p-v0)/(p-p0) is monotonic in p: at most its value at minPrice
// when v0 < rho*p0, and at most rho (its limit) otherwise.
func effCeil(rho, minPrice, v0, p0 float64) (num, den float64, ok bool) {
	if minPrice <= p0+1e-12 || math.IsInf(rho, 1) {
		return 0, 0, false
	}
	if v0 < rho*p0 {
		return rho*minPrice - v0, minPrice - p0, true
	}
	return rho, 1, true
}

// beyondCeil tells whether no type of minimum price at least minPrice
// and value per dollar at most rho can replace the upgrade upgradeFor
// holds (efficiency bestEff, price step bestDp) of a node worth v0 at
// price p0. upgradeFor's rule replaces it with a type more than 1 % more
// efficient, or within 1 % and a smaller step. Below 0.99 times a
// positive bestEff (effCeil), such a type is outside the tie and below
// the best; once every step from here on is at least bestDp, it needs
// more than bestEff/0.99 (outside the tie, above the best). The margins
// of 1e-9 keep rounding on the safe side.
func beyondCeil(rho, minPrice, v0, p0, bestEff, bestDp float64) bool {
	if !(bestEff > 0) {
		return false
	}
	num, den, ok := effCeil(rho, minPrice, v0, p0)
	if !ok {
		return false
	}
	if num < 0.99*bestEff*(1-1e-9)*den {
		return true
	}
	return minPrice-p0 >= bestDp && num*(1+1e-9)*0.99 < bestEff*den
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
	if b.labelCut || (cp != nil && !cp.labelAll) {
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
	if !s.withinLimits(ps, s.zeros(), nil, 1) {
		return nil, fmt.Sprintf("exceeds pool %q nodes limit", ps.pool.Name)
	}
	// The template and the growth are the pool's scratch, reused by
	// every search (openBin copies the one chosen): bestGrowth asks every
	// pool at every growth step and opens one node at most.
	for len(s.newScratch) <= ps.idx {
		s.newScratch = append(s.newScratch, nil)
	}
	sc := s.newScratch[ps.idx]
	if sc == nil {
		sc = &newScratch{tmpl: bin{used: s.dims.zero()}}
		s.newScratch[ps.idx] = sc
	}
	tmp := &sc.tmpl
	clear(tmp.used)
	*tmp = bin{id: len(s.bins), pool: ps, zone: -1, ct: -1, typ: -1,
		types: append(tmp.types[:0], cp.types...), labelCut: !cp.labelAll, zoneMask: cp.zoneMask, ctMask: cp.ctMask,
		custom: ps.custom, used: tmp.used, ports: tmp.ports[:0], doms: tmp.doms[:0]}
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
	var best int
	var bestPrice float64
	var limited bool
	memo := s.newTypeMemo(l, ps, typeTopo)
	if memo != nil && memo.ok && memo.cap == s.priceCap && (!ps.hasLimits || memo.lim.holds(ps)) {
		best, bestPrice, limited = int(memo.best), memo.price, memo.limited
		if newTypeCheck != nil && ps.hasLimits {
			b, p, lim := s.newTypeWalk(l, ps, cp, tmp, zm, cm, typeTopo, nil)
			newTypeCheck(b == best && p == bestPrice && lim == limited)
		}
	} else {
		// A limited pool's answer depends on its usage: the memo holds
		// it while the limits answer as they did (limitcache.go).
		var lr *limRec
		if memo != nil && ps.hasLimits {
			lr = &memo.lim
		}
		best, bestPrice, limited = s.newTypeWalk(l, ps, cp, tmp, zm, cm, typeTopo, lr)
		if memo != nil {
			memo.ok, memo.cap, memo.best, memo.price, memo.limited = true, s.priceCap, int32(best), bestPrice, limited
			if lr != nil && limCacheOff {
				lr.set = false // no answer holds
			}
		}
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
	sc.g = growth{ps: ps, typ: best, ch: ch, eff: eff, dp: bestPrice, template: tmp}
	return &sc.g, ""
}

// newTypeWalk is newBinFor's walk up pool ps's types for the cheapest
// that takes one pod of l in zones zm and capacity types cm (-1: none),
// its price, and whether a type was refused on the pool's limits; lr,
// when set, records what the walk read of the pool's usage
// (limitcache.go).
func (s *solver) newTypeWalk(l *level, ps *poolState, cp *classPool, tmp *bin, zm, cm uint64, typeTopo bool, lr *limRec) (best int, bestPrice float64, limited bool) {
	best = -1
	if lr != nil {
		lr.begin(1)
	}
	// A limited pool whose limits have no room for even its smallest
	// type (usually: a spot pool filled to its limit) fails every type
	// on the limits: the first type passing the other filters says so.
	full := false
	if ps.hasLimits {
		full = !s.withinLimits(ps, ps.minCapv(), nil, 1)
		if lr != nil && full {
			lr.refuse(ps)
		} else if lr != nil {
			lr.pass(ps.minCapv(), nil)
		}
	}
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
		if full {
			limited = true
			break
		}
		if ps.hasLimits && !s.withinLimits(ps, t.capv, nil, 1) {
			limited = true
			if lr != nil {
				lr.refuse(ps)
			}
			continue
		}
		if lr != nil {
			lr.pass(t.capv, nil)
		}
		if typeTopo && s.allowance(l, tmp, 1, i).k <= 0 {
			continue // its type labels break the topology
		}
		best, bestPrice = i, o.price
	}
	return best, bestPrice, limited
}

// newType is newBinFor's cheapest type for a level's new node in a pool
// under a price cap (-1: none), kept on the level where nothing else
// decides it (newTypeMemo). The local search asks for a new node at
// every growth step of every rebuild, and the answer, a walk up the
// pool's types from the cheapest, was 4 % of few-big at 250 pods.
type newType struct {
	ok    bool
	best  int32
	cap   float64
	price float64
	// limited: some type was refused on the pool's limits; lim, in a
	// limited pool, what the answer read of the pool's usage.
	limited bool
	lim     limRec
}

// newTypeMemo is the level's memo of newBinFor's type for pool ps, or nil
// when the answer depends on more than the level, the pool and the price
// cap: the node's zone or capacity type is pinned by the level's
// topology (the candidates depend on the domains' counts) or a topology
// reads a type label (each type is tried against it). A limited pool's
// answer, which its usage decides too, holds while the limits answer the
// walk as they did (newType.lim, limitcache.go).
func (s *solver) newTypeMemo(l *level, ps *poolState, typeTopo bool) *newType {
	if newTypeMemoOff || l.zoneKey || l.ctKey || typeTopo {
		return nil
	}
	if len(l.newTypes) != len(s.pools) {
		l.newTypes = make([]newType, len(s.pools))
	}
	return &l.newTypes[ps.idx]
}

// newTypeMemoOff makes newBinFor walk the types every time (tests
// compare).
var newTypeMemoOff bool

// newScratch is newBinFor's template and growth for one pool.
type newScratch struct {
	tmpl bin
	g    growth
}

// openBin creates the new bin of a growth, from a copy of its template
// (newBinFor's scratch). The bin, its types and requests, and room for
// its first entries come from the slabs (slabs.go): the local search
// opens nodes by the hundred and drops most of them again.
func (s *solver) openBin(g *growth) *bin {
	t := g.template
	b := s.newBin()
	*b = *t
	b.types = s.copyBits(t.types)
	b.used = s.copyVec(t.used)
	if len(t.entries) == 0 {
		b.entries = s.entryRoom()
	} else {
		b.entries = append([]entry(nil), t.entries...)
	}
	b.ports = append([]hostPort(nil), t.ports...)
	b.doms = append([]int(nil), t.doms...)
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
	s.changed(b)
	s.growDirty(b)
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

// limitReason names the limit that stops a new node for the class.
func (s *solver) limitReason(ps *poolState, l *level) string {
	small := s.smallestHolding(ps, l)
	for i, lim := range ps.limit {
		if lim == math.MaxInt64 {
			continue
		}
		if smallest := small[i]; ps.usage[i]+smallest > lim {
			return fmt.Sprintf("exceeds pool %q %s limit", ps.pool.Name, s.dims.names[i])
		}
	}
	return "exceeds pool " + strconv.Quote(ps.pool.Name) + " limits"
}

// minCapv is the least capacity of any of the pool's types, per
// dimension (computed once).
func (ps *poolState) minCapv() vec {
	if ps.minCap == nil {
		m := make(vec, len(ps.limit))
		for d := range m {
			m[d] = math.MaxInt64
		}
		for _, t := range ps.types {
			for d, v := range t.capv {
				m[d] = min(m[d], v)
			}
		}
		for d := range m {
			if m[d] == math.MaxInt64 {
				m[d] = 0
			}
		}
		ps.minCap = m
	}
	return ps.minCap
}

// smallestHolding is, per dimension, the least capacity among ps's types
// that hold a pod of l (math.MaxInt64: none), kept per level and pool.
func (s *solver) smallestHolding(ps *poolState, l *level) vec {
	key := limitKey{l, ps.idx}
	if v, ok := s.limitSmall[key]; ok {
		return v
	}
	v := make(vec, len(ps.limit))
	for d := range v {
		v[d] = math.MaxInt64
	}
	for _, t := range ps.types {
		if l.cls.req.le(t.net) {
			for d, c := range t.capv {
				v[d] = min(v[d], c)
			}
		}
	}
	if s.limitSmall == nil {
		s.limitSmall = map[limitKey]vec{}
	}
	s.limitSmall[key] = v
	return v
}

// limitKey keys smallestHolding's answers.
type limitKey struct {
	l    *level
	pool int
}
