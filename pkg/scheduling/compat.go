package scheduling

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// classPool is what a class (at one relaxation level) may be on a new node
// of one pool: which of the pool's instance types, zones and capacity
// types, and how it narrows the pool's custom labels.
type classPool struct {
	ok bool
	// reason says why not (reasonOf: empty for failResources).
	reason string
	// kind classifies the failure for explanations.
	kind       failKind
	types      bitset
	zoneMask   uint64
	ctMask     uint64
	offerZones uint64 // zones where some compatible type has an offering
	offerCTs   uint64
	// domainZones/CTs: where the pool's nodes that match the pod's node
	// requirements may be, taints and sizes aside (set even when !ok).
	domainZones uint64
	domainCTs   uint64
	// labelTypes are the pool's types whose labels the pod's node
	// requirements accept, whatever their size: the instance-type label
	// values a spread's domains come from (nil when requirements failed).
	labelTypes bitset
	// labelAll: labelTypes holds the pool's whole frontier.
	labelAll bool
	// custom are the class's requirements on custom keys the pool defines
	// (nil when it has none).
	custom *reqs
}

type failKind int

const (
	failNone failKind = iota
	failPool
	failTaint
	failRequirement
	failResources
	failOfferings
	failTopologyKey
	failPorts
)

// classPoolCompat decides what a level allows in a pool. Order of checks
// (and so of explanations): the pool itself, taints, requirements,
// instance types, offerings.
func (s *solver) classPoolCompat(l *level, ps *poolState) *classPool {
	cp := s.newClassPool()
	fail := func(k failKind, msg string) *classPool {
		cp.ok, cp.kind, cp.reason = false, k, msg
		return cp
	}
	if !ps.ok {
		return fail(failPool, ps.reason)
	}
	if l.badKey != "" {
		return fail(failTopologyKey, fmt.Sprintf("topology key %q has no fixed value on the pool's new nodes", l.badKey))
	}
	cp.zoneMask, cp.ctMask = ps.zoneMask, ps.ctMask
	typeReqs := newReqs()
	for _, k := range l.nodeReqs.keys {
		set := l.nodeReqs.sets[k]
		switch {
		case k == corev1.LabelTopologyZone:
			cp.zoneMask &= s.world.zoneMaskOf(set)
			if cp.zoneMask == 0 {
				return fail(failRequirement, "incompatible with pool "+strconv.Quote(ps.pool.Name)+" zones: "+k+" "+set.String())
			}
		case k == model.LabelCapacityType:
			cp.ctMask &= s.world.ctMaskOf(set)
			if cp.ctMask == 0 {
				return fail(failRequirement, "incompatible with pool "+strconv.Quote(ps.pool.Name)+" capacity types: "+k+" "+set.String())
			}
		case k == corev1.LabelHostname:
			if !set.complement || set.hasGt || set.hasLt {
				return fail(failRequirement, "requires "+k+" "+set.String()+", which a new node cannot have")
			}
		case s.isTypeKey(k):
			typeReqs.add(k, set)
		default:
			if cur, ok := ps.custom.get(k); ok {
				x := cur.intersect(set)
				if x.empty() {
					return fail(failRequirement, fmt.Sprintf("incompatible with pool %q requirement %s %s (pod wants %s)", ps.pool.Name, k, cur.String(), set.String()))
				}
				if cp.custom == nil {
					cp.custom = newReqs()
				}
				cp.custom.add(k, set)
			} else if !set.allowAbsent {
				return fail(failRequirement, fmt.Sprintf("label %q is not defined by pool %q (add it to the pool's labels or requirements)", k, ps.pool.Name))
			}
		}
	}
	// Instance types: labels (memoized per pool and requirement), then
	// whether one pod fits, then offerings in the allowed zones.
	labelOK := s.typesMatching(ps, typeReqs)
	cp.labelTypes = labelOK
	cp.labelAll = labelOK.contains(ps.frontierBits)
	if !labelOK.any() {
		return fail(failRequirement, fmt.Sprintf("no instance type of pool %q matches %s", ps.pool.Name, describeReqs(typeReqs)))
	}
	// Where nodes of this pool that the pod's node affinity accepts could
	// be, whatever the taints and sizes: the spread domains a
	// kube-scheduler would see (taints count only with nodeTaintsPolicy
	// Honor).
	// (The union of the matching types' zones and capacity types is
	// memoized with the match.)
	zones, cts := s.labelOffered(ps, labelOK)
	cp.domainZones, cp.domainCTs = zones&cp.zoneMask, cts&cp.ctMask
	if t, bad := firstUntolerated(l.tolerations, ps.taints, l.strictTaint); bad {
		return fail(failTaint, "taint "+taintString(t)+" not tolerated")
	}
	// A DaemonSet binding one of the pod's host ports rules out the types
	// it runs on. Their dominators may be among them, so the searches
	// then scan every type, not only the frontier.
	var portBlocked bitset
	var port hostPort
	for _, d := range ps.dsPorts {
		if p, clash := d.conflicts(l.cls.ports); clash {
			if portBlocked == nil {
				portBlocked = newBitset(len(ps.types))
				cp.labelAll = false
			}
			for w := range portBlocked {
				portBlocked[w] |= d.types[w]
			}
			port = p
		}
	}
	// The types that match, hold the pod and are offered in the allowed
	// zones and capacity types, word by word (the pool's types by zone
	// and capacity type are made once, typesByOffer).
	cp.types = newBitset(len(ps.types))
	fits, blocked := false, false
	holding := s.typesHolding(ps, l.cls.req)
	x := ps.byOffer()
	offered := ps.offeredIn(cp.zoneMask, cp.ctMask)
	for w, word := range labelOK {
		word &= holding[w]
		if word == 0 {
			continue
		}
		fits = true
		word &= offered[w]
		if portBlocked != nil {
			if word&portBlocked[w] != 0 {
				blocked = true
			}
			word &^= portBlocked[w]
		}
		cp.types[w] = word
	}
	for m := cp.zoneMask; m != 0; m &= m - 1 {
		if z := bits.TrailingZeros64(m); z < len(x.zone) && cp.types.meets(x.zone[z]) {
			cp.offerZones |= maskOf(z)
		}
	}
	for m := cp.ctMask; m != 0; m &= m - 1 {
		if c := bits.TrailingZeros64(m); c < len(x.ct) && cp.types.meets(x.ct[c]) {
			cp.offerCTs |= maskOf(c)
		}
	}
	if !fits {
		// The sentence is made only if a pod is left unschedulable
		// (reasonOf): it reads every type, and most classes too big for
		// some pool (GPU pods and the other pools) fit another.
		return fail(failResources, "")
	}
	if !cp.types.any() {
		if blocked {
			return fail(failPorts, fmt.Sprintf("host port %d/%s is taken by a DaemonSet on pool %q's nodes", port.port, port.proto, ps.pool.Name))
		}
		return fail(failOfferings, fmt.Sprintf("no usable offering of pool %q's fitting instance types in the allowed zones and capacity types", ps.pool.Name))
	}
	cp.ok = true
	return cp
}

// reasonOf is why level l's pods may not be on pool ps's new nodes
// (cp = l.pools[ps.idx], not ok).
func (s *solver) reasonOf(l *level, ps *poolState, cp *classPool) string {
	if cp.kind == failResources && cp.reason == "" {
		return s.tooBig(l.cls.req, ps, cp.labelTypes)
	}
	return cp.reason
}

// typesHolding returns the pool's types whose allocatable holds req,
// memoized per pool and request: every level of a class, and classes of
// one pod size, ask the same (a scan of every type of the catalog). Kept
// pool types keep the answers for later solves too (the same workloads'
// requests come back).
func (s *solver) typesHolding(ps *poolState, req vec) bitset {
	kb := strconv.AppendInt(s.holdKey[:0], int64(ps.idx), 10)
	at := len(kb)
	for _, v := range req {
		kb = append(kb, ',')
		kb = strconv.AppendInt(kb, v, 36)
	}
	s.holdKey = kb
	if b, ok := s.holdMemo[string(kb)]; ok {
		return b
	}
	b := ps.keptHolding(kb[at:], nil)
	if b == nil {
		ps.holdScans++
		if ps.holdScans > holdScanMax {
			b = ps.holdIndex().holding(req, len(ps.types))
		} else {
			b = newBitset(len(ps.types))
			for i, t := range ps.types {
				// CPU and memory first: most types that fail, fail there.
				if req[dimCPU] <= t.net[dimCPU] && req[dimMemory] <= t.net[dimMemory] && req.le(t.net) {
					b.set(i)
				}
			}
		}
		ps.keptHolding(kb[at:], b)
	}
	s.holdMemo[string(kb)] = b
	return b
}

// holdIdx is, per resource, a pool's types by how much of it they
// have: vals are the distinct amounts (net of DaemonSets) ascending, and
// sets[k] the types with at least vals[k]. The types holding a request
// are then one set per resource intersected, not a check of every type:
// many-shapes at 50,000 pods asks this for thousands of request shapes
// per pool, each a scan of the catalog.
type holdIdx struct {
	vals [][]int64
	sets [][]bitset
}

// holdIndex is the pool's holdIdx, made on first use.
func (ps *poolState) holdIndex() *holdIdx {
	if ps.holdIdx != nil {
		return ps.holdIdx
	}
	h := &holdIdx{}
	if len(ps.types) > 0 {
		d := len(ps.types[0].net)
		h.vals, h.sets = make([][]int64, d), make([][]bitset, d)
		for r := range d {
			vals := make([]int64, 0, len(ps.types))
			for _, t := range ps.types {
				vals = append(vals, t.net[r])
			}
			slices.Sort(vals)
			vals = slices.Compact(vals)
			sets := make([]bitset, len(vals))
			for k := range sets {
				sets[k] = newBitset(len(ps.types))
			}
			for i, t := range ps.types {
				k, _ := slices.BinarySearch(vals, t.net[r])
				sets[k].set(i)
			}
			for k := len(sets) - 2; k >= 0; k-- {
				for w, x := range sets[k+1] {
					sets[k][w] |= x
				}
			}
			h.vals[r], h.sets[r] = vals, sets
		}
	}
	ps.holdIdx = h
	return h
}

// holdScanMax is how many requests typesHolding answers for a pool by
// checking every type before it makes the pool's holdIdx (a few sorts of
// the catalog: more than a small solve's few scans).
const holdScanMax = 32

// holding is the set of the n types whose every resource is at least
// req's.
func (h *holdIdx) holding(req vec, n int) bitset {
	b := newBitset(n)
	if n == 0 {
		return b
	}
	for r, v := range req {
		vals := h.vals[r]
		k, _ := slices.BinarySearch(vals, v) // the first amount >= v
		if k == len(vals) {
			clear(b)
			return b
		}
		if r == 0 {
			copy(b, h.sets[r][k])
		} else {
			b.and(h.sets[r][k])
		}
	}
	return b
}

// maxKeptHolding bounds the typesHolding answers kept with a pool's
// types (each a bit per type: about 170 bytes for a catalog); when full
// they are dropped and kept anew.
const maxKeptHolding = 4096

// keptHolding looks up which of the kept types hold the request keyed
// by key, or when add is not nil keeps add (read only from then on).
func (ps *poolState) keptHolding(key []byte, add bitset) bitset {
	k := ps.kept
	if k == nil || keptOptsOff {
		return nil
	}
	k.optMu.Lock()
	defer k.optMu.Unlock()
	if add == nil {
		return k.holding[string(key)]
	}
	if k.holding == nil || len(k.holding) >= maxKeptHolding {
		k.holding = map[string]bitset{}
	}
	k.holding[string(key)] = add
	return add
}

// typesByOffer are a pool's types with a usable offering in each zone
// and in each capacity type (by the world's indices).
type typesByOffer struct {
	zone, ct []bitset
}

// offeredIn is the pool's types offered in some zone of zm and some
// capacity type of cm, made once per pair of masks (classes mostly share
// a few: a class's compatibility read every zone's and capacity type's
// types, word by word, a few percent of a small solve).
func (ps *poolState) offeredIn(zm, cm uint64) bitset {
	for _, o := range ps.offered {
		if o.zm == zm && o.cm == cm {
			return o.types
		}
	}
	x := ps.byOffer()
	set := newBitset(len(ps.types))
	for w := range set {
		var zw, cw uint64
		for m := zm; m != 0; m &= m - 1 {
			if z := bits.TrailingZeros64(m); z < len(x.zone) {
				zw |= x.zone[z][w]
			}
		}
		for m := cm; m != 0; m &= m - 1 {
			if c := bits.TrailingZeros64(m); c < len(x.ct) {
				cw |= x.ct[c][w]
			}
		}
		set[w] = zw & cw
	}
	ps.offered = append(ps.offered, offeredTypes{zm, cm, set})
	return set
}

// offeredTypes is one offeredIn answer.
type offeredTypes struct {
	zm, cm uint64
	types  bitset
}

// byOffer returns the pool's types by zone and capacity type, made on
// first use (kept pool types keep them: read only).
func (ps *poolState) byOffer() *typesByOffer {
	if ps.offerIdx != nil {
		return ps.offerIdx
	}
	x := &typesByOffer{}
	add := func(sets *[]bitset, mask uint64, i int) {
		for ; mask != 0; mask &= mask - 1 {
			j := bits.TrailingZeros64(mask)
			for len(*sets) <= j {
				*sets = append(*sets, newBitset(len(ps.types)))
			}
			(*sets)[j].set(i)
		}
	}
	for i, t := range ps.types {
		add(&x.zone, t.zoneMask, i)
		add(&x.ct, t.ctMask, i)
	}
	ps.offerIdx = x
	return x
}

// labelOffered is the union of the zones and of the capacity types
// offered by the pool's types in labelOK (a typesMatching answer),
// memoized per answer.
func (s *solver) labelOffered(ps *poolState, labelOK bitset) (zones, cts uint64) {
	if len(labelOK) == 0 {
		return 0, 0
	}
	if s.offeredMemo == nil {
		s.offeredMemo = map[*uint64][2]uint64{}
	}
	if m, ok := s.offeredMemo[&labelOK[0]]; ok {
		return m[0], m[1]
	}
	for i, t := range ps.types {
		if labelOK.has(i) {
			zones |= t.zoneMask
			cts |= t.ctMask
		}
	}
	s.offeredMemo[&labelOK[0]] = [2]uint64{zones, cts}
	return zones, cts
}

// typesMatching returns the pool's types whose labels satisfy r.
func (s *solver) typesMatching(ps *poolState, r *reqs) bitset {
	key := strconv.Itoa(ps.idx) + "#" + r.signature()
	if b, ok := s.typeMemo[key]; ok {
		return b
	}
	b := s.matchTypes(ps, r, true)
	s.typeMemo[key] = b
	return b
}

// matchTypes is typesMatching computed: by the prepared list's label
// columns (each key decided once per distinct value, PreparedTypes.
// matching), or by each type's labels (TestPreparedPoolTypes compares
// them). Classes that select types by
// label ask it once per requirement set and pool, over hundreds of
// types.
func (s *solver) matchTypes(ps *poolState, r *reqs, byColumns bool) bitset {
	b := newBitset(len(ps.types))
	if byColumns && ps.prep != nil && len(r.keys) > 0 {
		n := len(ps.prep.list)
		if cap(s.matchKeep) < n {
			s.matchKeep = make([]bool, n)
		}
		keep := s.matchKeep[:n]
		ps.prep.matching(r, keep)
		for i, t := range ps.types {
			if keep[t.at] {
				b.set(i)
			}
		}
		return b
	}
	for i, t := range ps.types {
		if len(r.keys) == 0 || r.matchesLabels(t.it.Labels) {
			b.set(i)
		}
	}
	return b
}

func describeReqs(r *reqs) string {
	if len(r.keys) == 0 {
		return "(no requirement)"
	}
	out := ""
	for i, k := range r.keys {
		if i > 0 {
			out += ", "
		}
		out += k + " " + r.sets[k].String()
	}
	return out
}

// tooBig explains which resources no type has room for.
func (s *solver) tooBig(req vec, ps *poolState, allowed bitset) string {
	best := s.dims.zero()
	for i, t := range ps.types {
		if !allowed.has(i) {
			continue
		}
		for d := range best {
			best[d] = max(best[d], t.net[d])
		}
	}
	out := ""
	for d, n := range s.dims.names {
		if req[d] > best[d] {
			if out != "" {
				out += ", "
			}
			out += formatAmount(n, req[d])
		}
	}
	return fmt.Sprintf("no instance type of pool %q has %s free after DaemonSets", ps.pool.Name, out)
}

func formatAmount(n corev1.ResourceName, v int64) string {
	return amountString(n, v) + " " + string(n)
}

// amountString renders an amount in the dimension's natural unit.
func amountString(n corev1.ResourceName, v int64) string {
	switch n {
	case corev1.ResourceCPU:
		if v%1000 == 0 {
			return strconv.FormatInt(v/1000, 10)
		}
		return strconv.FormatInt(v, 10) + "m"
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		const gi, mi = 1 << 30, 1 << 20
		if v%gi == 0 {
			return strconv.FormatInt(v/gi, 10) + "Gi"
		}
		if v%mi == 0 {
			return strconv.FormatInt(v/mi, 10) + "Mi"
		}
	}
	return strconv.FormatInt(v, 10)
}

// existingOK tells whether a level may use an existing node at all (taints,
// cordon, node requirements); resources and topology are checked per
// placement.
func (s *solver) existingOK(l *level, b *bin) bool {
	switch l.existing[b.eidx] {
	case 1:
		return true
	case 2:
		return false
	}
	ok := true
	if _, bad := firstUntolerated(l.tolerations, b.taints, l.strictTaint); bad {
		ok = false
	} else if !l.nodeReqs.matchesLabels(b.node.Labels) {
		ok = false
	}
	if ok {
		l.existing[b.eidx] = 1
	} else {
		l.existing[b.eidx] = 2
	}
	return ok
}
