package scheduling

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// finish turns the bins into the Plan: which pods go where (pods of a class
// are handed out in name order), the new nodes with every instance type
// that holds them, the failures, the price and the bound.
func (s *solver) finish() {
	// Growth may have bought a bigger type than the pods finally needed
	// (the local search uses that room first; whatever is left goes now).
	for _, b := range s.bins {
		if b.node == nil && len(b.entries) > 0 {
			s.rightSize(b)
		}
	}
	next := make([]int, len(s.classes))
	take := func(c *class, n int) []*corev1.Pod {
		out := c.pods[next[c.idx] : next[c.idx]+n]
		next[c.idx] += n
		return out
	}
	var esBuf []entry
	podsOf := func(b *bin) []*corev1.Pod {
		var out []*corev1.Pod
		// Entries in class order so output is stable (es is scratch).
		es := append(esBuf[:0], b.entries...)
		defer func() { esBuf = es[:0] }()
		sort.SliceStable(es, func(i, j int) bool {
			if es[i].l.cls.idx != es[j].l.cls.idx {
				return es[i].l.cls.idx < es[j].l.cls.idx
			}
			return es[i].l.idx < es[j].l.idx
		})
		for _, e := range es {
			got := take(e.l.cls, e.n)
			out = append(out, got...)
			if e.l.idx > 0 {
				what := relaxedWhat(e.l)
				for _, p := range got {
					s.plan.Relaxed = append(s.plan.Relaxed, Failure{Pod: p, Reason: what})
				}
			}
		}
		return out
	}
	for _, b := range s.existingBins {
		if len(b.entries) == 0 {
			continue
		}
		s.plan.Existing = append(s.plan.Existing, Placement{Node: b.node.Name, InFlight: b.node.InFlight, Pods: podsOf(b)})
	}
	// New nodes in pool order, then creation order.
	var news []*bin
	for _, b := range s.bins {
		if b.node == nil && len(b.entries) > 0 {
			news = append(news, b)
		}
	}
	sort.SliceStable(news, func(i, j int) bool { return news[i].pool.idx < news[j].pool.idx })
	headroom := s.limitHeadroom(news)
	for _, b := range news {
		nn, failure := s.newNode(b, headroom[b.pool])
		pods := podsOf(b)
		if failure != "" {
			s.nodeFailed = true
			for _, p := range pods {
				s.plan.Unschedulable = append(s.plan.Unschedulable, Failure{Pod: p, Reason: failure})
			}
			continue
		}
		nn.Pods = pods
		s.plan.NewNodes = append(s.plan.NewNodes, nn)
		s.plan.TotalPricePerHour += nn.Cheapest.PricePerHour
	}
	for _, c := range s.classes {
		if c.remaining == 0 {
			continue
		}
		reason := c.failReason
		if reason == "" {
			reason = "no node can take the pod"
		}
		for _, p := range c.pods[len(c.pods)-c.remaining:] {
			s.plan.Unschedulable = append(s.plan.Unschedulable, Failure{Pod: p, Reason: reason})
		}
	}
	sort.SliceStable(s.plan.Relaxed, func(i, j int) bool { return podLess(s.plan.Relaxed[i].Pod, s.plan.Relaxed[j].Pod) })
	sort.SliceStable(s.plan.Unschedulable, func(i, j int) bool {
		return podLess(s.plan.Unschedulable[i].Pod, s.plan.Unschedulable[j].Pod)
	})
	s.plan.LowerBoundPricePerHour = math.Min(s.boundNow(), s.plan.TotalPricePerHour)
}

// simulationOnly are labels the simulator assumes a node will have (for
// DaemonSet and pod matching) that the node gets later from others, so
// they are not part of what to launch.
var simulationOnly = map[string]bool{
	labelRegistered:            true,
	labelInitialized:           true,
	corev1.LabelTopologyRegion: true,
}

// relaxedWhat lists the relaxation steps that led to a level.
func relaxedWhat(l *level) string {
	var steps []string
	for _, x := range l.cls.levels[1 : l.idx+1] {
		steps = append(steps, x.desc)
	}
	return strings.Join(steps, "; ")
}

// limitHeadroom shares each limited pool's unused limit among its new
// nodes, so that whichever option CreateFleet picks for each, the pool
// stays within its limits.
func (s *solver) limitHeadroom(news []*bin) map[*poolState]vec {
	out := map[*poolState]vec{}
	count := map[*poolState]int64{}
	for _, b := range news {
		count[b.pool]++
	}
	for ps, n := range count {
		if !ps.hasLimits {
			continue
		}
		h := s.dims.zero()
		for i, lim := range ps.limit {
			if lim == math.MaxInt64 {
				h[i] = math.MaxInt64
				continue
			}
			h[i] = max(0, lim-ps.usage[i]) / n
		}
		out[ps] = h
	}
	return out
}

// opt is an instance type a new node may be, with its cheapest offering
// there.
type opt struct {
	t *ptype
	o offer
}

// newNode describes a bin as a node to launch. It reports a failure when
// the pool's minValues cannot be met by the types that hold the pods.
func (s *solver) newNode(b *bin, headroom vec) (NewNode, string) {
	ps := b.pool
	sh := s.nodeOptsFor(b, headroom)
	nn := NewNode{Pool: ps.pool.Name, Taints: append([]corev1.Taint(nil), ps.taints...), Labels: map[string]string{}}
	nn.InstanceTypeOptions = sh.options
	if sh.any {
		c := sh.cheapest
		nn.Cheapest = Launch{InstanceType: c.t.it.Name, Zone: s.world.zones[c.o.zone], CapacityType: s.world.cts[c.o.ct], PricePerHour: c.o.price}
		req := b.used.clone()
		req.add(c.t.ds)
		nn.Requests = s.dims.toList(req)
	}
	for i, z := range s.world.zones {
		if maskHas(b.zoneMask&sh.offered, i) {
			nn.Zones = append(nn.Zones, z)
		}
	}
	for i, c := range s.world.cts {
		if maskHas(b.ctMask&sh.offeredCT, i) {
			nn.CapacityTypes = append(nn.CapacityTypes, c)
		}
	}
	// Requirements: the pool's type requirements, the instance types, the
	// zones and capacity types, and custom labels as narrowed (in
	// scratch: toModel copies what it keeps but the shared names).
	r := &s.outReqs
	if r.sets == nil {
		r.sets = map[string]valueSet{}
	}
	r.keys = append(r.keys[:0], ps.typeReqs.keys...)
	clear(r.sets)
	for k, v := range ps.typeReqs.sets {
		r.sets[k] = v
	}
	r.add(corev1.LabelInstanceTypeStable, valueSet{values: sh.names})
	r.add(corev1.LabelTopologyZone, valueSet{values: nn.Zones})
	r.add(model.LabelCapacityType, valueSet{values: nn.CapacityTypes})
	for _, k := range b.custom.keys {
		if simulationOnly[k] {
			continue
		}
		set := b.custom.sets[k]
		r.add(k, set)
		if !set.presentEmpty() {
			if v, ok := set.pick(); ok {
				nn.Labels[k] = v
			}
		}
	}
	if len(nn.Zones) == 1 {
		nn.Labels[corev1.LabelTopologyZone] = nn.Zones[0]
	}
	if len(nn.CapacityTypes) == 1 {
		nn.Labels[model.LabelCapacityType] = nn.CapacityTypes[0]
	}
	nn.Requirements = r.toModel(sh.names)
	return nn, s.minValues(ps, sh, &nn)
}

// minValues checks the pool's minValues against new node nn's options
// (sh): they must offer enough distinct values of each key; the zone and
// capacity type count the node's zones and capacity types. Each of nn's
// requirements carries its minValues; with BestEffort a key whose
// options offer fewer carries what they offer instead (and nn is marked
// relaxed). It returns the failure ("": none).
func (s *solver) minValues(ps *poolState, sh *optList, nn *NewNode) string {
	for _, q := range ps.pool.Requirements {
		if q.MinValues == nil {
			continue
		}
		distinct := map[string]bool{}
		key := model.NormalizeLabelKey(q.Key)
		switch key {
		case corev1.LabelTopologyZone, model.LabelCapacityType:
			// The offerings decide these: the node's zones or capacity
			// types.
			vals := nn.Zones
			if key == model.LabelCapacityType {
				vals = nn.CapacityTypes
			}
			for _, v := range vals {
				distinct[v] = true
			}
		default:
			for w, word := range sh.types {
				for word != 0 {
					i := w*64 + bits.TrailingZeros64(word)
					word &= word - 1
					if v, ok := ps.types[i].it.Labels[key]; ok {
						distinct[v] = true
					}
				}
			}
		}
		mv := *q.MinValues
		if len(distinct) < mv && s.in.Options.MinValuesBestEffort {
			mv = len(distinct)
			nn.MinValuesRelaxed = true
		}
		for i := range nn.Requirements {
			if r := &nn.Requirements[i]; r.Key == key {
				if r.MinValues == nil || *r.MinValues < mv {
					r.MinValues = &mv
				}
				break
			}
		}
		if len(distinct) < mv {
			return fmt.Sprintf("pool %q needs %d distinct %s values but only %d instance types hold the pods", ps.pool.Name, *q.MinValues, q.Key, len(distinct))
		}
	}
	return ""
}

// nodeOpts is what decides a new node's options (the pool, the node's
// zones, capacity types and types, what its pods request) and the option
// list it gets.
type nodeOpts struct {
	pool             int
	zoneMask, ctMask uint64
	types            bitset
	used             vec
	sh               *optList
}

// nodeOptsOff makes newNode work out every node's options (tests
// compare).
var nodeOptsOff bool

// nodeOptsFor returns new bin b's option list. Alike nodes (hostname
// anti-affinity and host ports force dozens of nodes holding the same
// pods) ask once: the answer is kept by what decides it, so such a node
// costs a comparison, not a pass over every type of its pool. Not in a
// limited pool, where the node's share of the limit decides them too.
func (s *solver) nodeOptsFor(b *bin, headroom vec) *optList {
	ps := b.pool
	keep := headroom == nil && !nodeOptsOff
	var h uint64
	if keep {
		h = fnvMix(fnvMix(fnvMix(fnvOffset, uint64(ps.idx)), b.zoneMask), b.ctMask)
		for _, w := range b.types {
			h = fnvMix(h, w)
		}
		for _, v := range b.used {
			h = fnvMix(h, uint64(v))
		}
		for _, no := range s.nodeOpts[h] {
			if no.pool == ps.idx && no.zoneMask == b.zoneMask && no.ctMask == b.ctMask && slices.Equal(no.types, b.types) && slices.Equal(no.used, b.used) {
				return no.sh
			}
		}
	}
	chosen := ps.types[b.typ]
	// sel is scratch: the types that hold the node, marked.
	words := (len(ps.types) + 63) / 64
	if cap(s.selBuf) < words {
		s.selBuf = make(bitset, words)
	}
	sel := s.selBuf[:words]
	clear(sel)
	// The node's types in the pool's order, each priced once per zones
	// and capacity types in the solve (thousands of new nodes at 50,000
	// pods share a few).
	prices := s.pricesFor(ps, b.zoneMask, b.ctMask)
	for w, word := range b.types {
		for ; word != 0; word &= word - 1 {
			i := w*64 + bits.TrailingZeros64(word)
			if i >= len(ps.types) {
				break
			}
			if t := ps.types[i]; prices[i].ok && b.used.le(t.net) && !s.overHeadroom(b, chosen, headroom, i) {
				sel.set(i)
			}
		}
	}
	sh := s.sharedOpts(ps, b.zoneMask, b.ctMask, sel)
	if keep {
		if s.nodeOpts == nil {
			s.nodeOpts = map[uint64][]*nodeOpts{}
		}
		s.nodeOpts[h] = append(s.nodeOpts[h], &nodeOpts{pool: ps.idx, zoneMask: b.zoneMask, ctMask: b.ctMask, types: b.types.clone(), used: b.used.clone(), sh: sh})
	}
	return sh
}

// keptOptsOff makes every solve make its own option lists (tests
// compare).
var keptOptsOff bool

// maxKeptOptBytes bounds the option lists kept with a pool's types (a
// list is up to about 100 KB: every type of a catalog holds a small
// node); when full they are dropped and kept anew.
const maxKeptOptBytes = 1 << 20

// keptOpts looks up the option list of the key (h, the masks, the types
// marked in sel) among those kept with the pool's types, or when add is
// not nil keeps add. Solves against one prepared catalog (the
// provisioner's passes, consolidation's candidates) give many new nodes
// the same options: a list is made once, not per solve. What a list is
// depends on the kept types, the masks and the types alone (the world's
// zones and capacity types are the list's when types are kept; a pool's
// minValues are checked per node, minValues).
func (ps *poolState) keptOpts(h, zoneMask, ctMask uint64, sel bitset, add *optList) *optList {
	k := ps.kept
	if k == nil || keptOptsOff {
		return nil
	}
	k.optMu.Lock()
	defer k.optMu.Unlock()
	if add != nil {
		size := len(add.options)*int(unsafe.Sizeof(InstanceTypeOption{})) + len(add.names)*int(unsafe.Sizeof("")) + len(add.types)*8
		if k.opts == nil || k.optBytes+size > maxKeptOptBytes {
			k.opts, k.optBytes = map[uint64][]*optList{}, 0
		}
		k.opts[h] = append(k.opts[h], add)
		k.optBytes += size
		return add
	}
	for _, l := range k.opts[h] {
		if l.zoneMask == zoneMask && l.ctMask == ctMask && slices.Equal(l.types, sel) {
			return l
		}
	}
	return nil
}

// fnvMix is FNV-1a over 64-bit words (from fnvOffset).
func fnvMix(h, v uint64) uint64 { return (h ^ v) * fnvPrime }

// optList is a list of options as a new node's output gives them:
// options cheapest first (ties by name), the cheapest's offering, and the
// types' names in name order, once each; the zones and capacity types
// they are offered in. Nodes with the same options share one. The options are decided
// by the pool, the node's zones and capacity types (each type's offering
// is its cheapest there) and which types hold the node: that is the key
// (nodes with other masks but the same options only miss a share).
type optList struct {
	pool               int
	zoneMask, ctMask   uint64
	types              bitset
	cheapest           opt
	any                bool
	options            []InstanceTypeOption
	names              []string
	offered, offeredCT uint64
}

// sharedOpts returns the option list for a node of pool ps with the zone
// and capacity type masks, whose options are the types marked in sel,
// made on its first use in the solve.
func (s *solver) sharedOpts(ps *poolState, zoneMask, ctMask uint64, sel bitset) *optList {
	h := fnvMix(fnvMix(fnvMix(fnvOffset, uint64(ps.idx)), zoneMask), ctMask)
	for _, w := range sel {
		h = fnvMix(h, w)
	}
	if s.optLists == nil {
		s.optLists = map[uint64][]*optList{}
	}
	for _, l := range s.optLists[h] {
		if l.pool == ps.idx && l.zoneMask == zoneMask && l.ctMask == ctMask && slices.Equal(l.types, sel) {
			return l
		}
	}
	if l := ps.keptOpts(h, zoneMask, ctMask, sel, nil); l != nil {
		mine := *l // the solve's pool index; the lists are shared
		mine.pool = ps.idx
		s.optLists[h] = append(s.optLists[h], &mine)
		return &mine
	}
	l := &optList{pool: ps.idx, zoneMask: zoneMask, ctMask: ctMask, types: sel.clone()}
	s.optLists[h] = append(s.optLists[h], l)
	defer ps.keptOpts(h, zoneMask, ctMask, sel, l)
	// opts is scratch: the options in the pool's type order.
	if cap(s.optBuf) < len(ps.types) {
		s.optBuf = make([]opt, 0, len(ps.types))
	}
	opts := s.optBuf[:0]
	defer func() { s.optBuf = s.optBuf[:0] }()
	prices := s.pricesFor(ps, zoneMask, ctMask)
	for w, word := range sel {
		for word != 0 {
			i := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			t := ps.types[i]
			opts = append(opts, opt{t, prices[i].o})
			l.offered |= t.zoneMask
			l.offeredCT |= t.ctMask
		}
	}
	l.any = len(opts) > 0
	if len(s.rankBuf)*64 < len(ps.types) {
		s.rankBuf = newBitset(len(ps.types))
	}
	ranks := s.rankBuf
	// Cheapest first, ties by name: the pool's types come in that order
	// over its zones and capacity types, so often already sorted.
	byPrice := func(a, b opt) int {
		if a.o.price != b.o.price {
			return cmp.Compare(a.o.price, b.o.price)
		}
		return strings.Compare(a.t.it.Name, b.t.it.Name)
	}
	if !slices.IsSortedFunc(opts, byPrice) {
		slices.SortStableFunc(opts, byPrice)
	}
	if len(opts) > 0 {
		l.cheapest = opts[0]
	}
	l.options = make([]InstanceTypeOption, len(opts))
	for i, o := range opts {
		l.options[i] = InstanceTypeOption{Name: o.t.it.Name, Zone: s.world.zones[o.o.zone], CapacityType: s.world.cts[o.o.ct], PricePerHour: o.o.price}
	}
	// The names in name order: the types' places in the pool's name
	// order, marked and read back in order (cleared on the way).
	for _, o := range opts {
		ranks.set(o.t.nameRank)
	}
	l.names = make([]string, 0, len(opts))
	for w, word := range ranks {
		for word != 0 {
			rk := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if n := ps.types[ps.byName[rk]].it.Name; len(l.names) == 0 || l.names[len(l.names)-1] != n {
				l.names = append(l.names, n)
			}
		}
		ranks[w] = 0
	}
	l.names = l.names[:len(l.names):len(l.names)]
	return l
}

// overHeadroom tells whether type i of b's pool is larger than the
// node's chosen type by more than the pool's limit headroom (nil: no
// limit), so CreateFleet must not be offered it.
func (s *solver) overHeadroom(b *bin, chosen *ptype, headroom vec, i int) bool {
	if headroom == nil || i == b.typ {
		return false
	}
	t := b.pool.types[i]
	for d := range headroom {
		if headroom[d] != math.MaxInt64 && t.capv[d] > chosen.capv[d]+headroom[d] {
			return true
		}
	}
	return false
}

// priceKey is a pool with zone and capacity type masks.
type priceKey struct {
	pool      int
	zone, cts uint64
}

// priceRow is a type's cheapest offering under a priceKey's masks (ok:
// it has one).
type priceRow struct {
	o  offer
	ok bool
}

// pricesFor is every type of ps priced within the masks, made once per
// solve, or once for every solve of kept pool types (keptPrices).
func (s *solver) pricesFor(ps *poolState, zones, cts uint64) []priceRow {
	k := priceKey{ps.idx, zones, cts}
	if r, ok := s.priceMemo[k]; ok {
		return r
	}
	if s.priceMemo == nil {
		s.priceMemo = map[priceKey][]priceRow{}
	}
	r := ps.keptPrices(zones, cts, nil)
	if r == nil {
		r = make([]priceRow, len(ps.types))
		for i, t := range ps.types {
			r[i].o, r[i].ok = t.price(zones, cts)
		}
		ps.keptPrices(zones, cts, r)
	}
	s.priceMemo[k] = r
	return r
}

// maxKeptPriceBytes bounds the price lists kept with a pool's types (a
// list is about 40 KB for a catalog; a pool's nodes have few zone and
// capacity type masks); when full they are dropped and kept anew.
const maxKeptPriceBytes = 1 << 20

// keptPrices looks up the pool's types priced within the masks among
// those kept with the pool's types, or when add is not nil keeps add
// (read only from then on). The prices depend on the kept types and the
// masks alone (the types' offerings are in the world's indices when
// types are kept).
func (ps *poolState) keptPrices(zones, cts uint64, add []priceRow) []priceRow {
	k := ps.kept
	if k == nil || keptOptsOff {
		return nil
	}
	key := [2]uint64{zones, cts}
	k.optMu.Lock()
	defer k.optMu.Unlock()
	if add == nil {
		return k.prices[key]
	}
	size := len(add) * int(unsafe.Sizeof(priceRow{}))
	if k.prices == nil || k.priceBytes+size > maxKeptPriceBytes {
		k.prices, k.priceBytes = map[[2]uint64][]priceRow{}, 0
	}
	k.prices[key] = add
	k.priceBytes += size
	return add
}
