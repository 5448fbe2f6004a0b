package scheduling

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"

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
	podsOf := func(b *bin) []*corev1.Pod {
		var out []*corev1.Pod
		// Entries in class order so output is stable.
		es := append([]entry(nil), b.entries...)
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
	s.plan.LowerBoundPricePerHour = math.Min(s.lowerBound(), s.plan.TotalPricePerHour)
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
	chosen := ps.types[b.typ]
	// opts is scratch, reused by every new node of the solve.
	if cap(s.optBuf) < len(ps.types) {
		s.optBuf = make([]opt, 0, len(ps.types))
	}
	opts := s.optBuf[:0]
	defer func() { s.optBuf = s.optBuf[:0] }()
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
			if !prices[i].ok {
				continue
			}
			if t := ps.types[i]; b.used.le(t.net) {
				opts = s.addOpt(opts, b, chosen, headroom, i, prices[i].o)
			}
		}
	}
	// New nodes holding alike pods often have the same options: those
	// share one list (and one list of names), built once.
	sh := s.sharedOpts(ps, b.zoneMask, b.ctMask, opts)
	nn := NewNode{Pool: ps.pool.Name, Taints: append([]corev1.Taint(nil), ps.taints...), Labels: map[string]string{}}
	nn.InstanceTypeOptions = sh.options
	if len(opts) > 0 {
		c := sh.cheapest
		nn.Cheapest = Launch{InstanceType: c.t.it.Name, Zone: s.world.zones[c.o.zone], CapacityType: s.world.cts[c.o.ct], PricePerHour: c.o.price}
		req := b.used.clone()
		req.add(c.t.ds)
		nn.Requests = s.dims.toList(req)
	}
	var offered, offeredCT uint64
	for _, o := range opts {
		offered |= o.t.zoneMask
		offeredCT |= o.t.ctMask
	}
	for i, z := range s.world.zones {
		if maskHas(b.zoneMask&offered, i) {
			nn.Zones = append(nn.Zones, z)
		}
	}
	for i, c := range s.world.cts {
		if maskHas(b.ctMask&offeredCT, i) {
			nn.CapacityTypes = append(nn.CapacityTypes, c)
		}
	}
	// Requirements: the pool's type requirements, the instance types, the
	// zones and capacity types, and custom labels as narrowed.
	r := ps.typeReqs.clone()
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
	// minValues: the options must offer enough distinct values.
	for _, q := range ps.pool.Requirements {
		if q.MinValues == nil {
			continue
		}
		distinct := map[string]bool{}
		for _, o := range opts {
			if v, ok := o.t.it.Labels[model.NormalizeLabelKey(q.Key)]; ok {
				distinct[v] = true
			}
		}
		if len(distinct) < *q.MinValues {
			return nn, fmt.Sprintf("pool %q needs %d distinct %s values but only %d instance types hold the pods", ps.pool.Name, *q.MinValues, q.Key, len(distinct))
		}
	}
	return nn, ""
}

// optList is a list of options as a new node's output gives them:
// options cheapest first (ties by name), the cheapest's offering, and the
// types' names in name order, once each. Nodes with the same options
// share one. The options are decided by the pool, the node's zones and
// capacity types (each type's offering is its cheapest there) and which
// types hold the node: that is the key (nodes with other masks but the
// same options only miss a share).
type optList struct {
	pool             int
	zoneMask, ctMask uint64
	types            bitset
	cheapest         opt
	options          []InstanceTypeOption
	names            []string
}

// sharedOpts returns the option list for a node of pool ps with the zone
// and capacity type masks, whose options are opts (scratch, in the pool's
// type order; sorted here when the list is new), made on its first use in
// the solve.
func (s *solver) sharedOpts(ps *poolState, zoneMask, ctMask uint64, opts []opt) *optList {
	if len(s.rankBuf)*64 < len(ps.types) {
		s.rankBuf = newBitset(len(ps.types))
	}
	ranks := s.rankBuf
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		h ^= v
		h *= 1099511628211
	}
	mix(uint64(ps.idx))
	mix(zoneMask)
	mix(ctMask)
	for _, o := range opts {
		mix(uint64(o.t.idx))
	}
	if s.optLists == nil {
		s.optLists = map[uint64][]*optList{}
	}
	for _, l := range s.optLists[h] {
		if l.pool == ps.idx && l.zoneMask == zoneMask && l.ctMask == ctMask && l.holds(opts) {
			return l
		}
	}
	l := &optList{pool: ps.idx, zoneMask: zoneMask, ctMask: ctMask, types: newBitset(len(ps.types))}
	for _, o := range opts {
		l.types.set(o.t.idx)
	}
	s.optLists[h] = append(s.optLists[h], l)
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

// holds tells whether the list's types are exactly opts' (in type order).
func (l *optList) holds(opts []opt) bool {
	n := 0
	for _, w := range l.types {
		n += bits.OnesCount64(w)
	}
	if n != len(opts) {
		return false
	}
	for _, o := range opts {
		if !l.types.has(o.t.idx) {
			return false
		}
	}
	return true
}

// addOpt appends type i of b's pool at offering o to opts unless the
// pool's limit headroom rules it out.
func (s *solver) addOpt(opts []opt, b *bin, chosen *ptype, headroom vec, i int, o offer) []opt {
	t := b.pool.types[i]
	if headroom != nil && i != b.typ {
		for d := range headroom {
			if headroom[d] != math.MaxInt64 && t.capv[d] > chosen.capv[d]+headroom[d] {
				return opts
			}
		}
	}
	return append(opts, opt{t, o})
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
// solve.
func (s *solver) pricesFor(ps *poolState, zones, cts uint64) []priceRow {
	k := priceKey{ps.idx, zones, cts}
	if r, ok := s.priceMemo[k]; ok {
		return r
	}
	if s.priceMemo == nil {
		s.priceMemo = map[priceKey][]priceRow{}
	}
	r := make([]priceRow, len(ps.types))
	for i, t := range ps.types {
		r[i].o, r[i].ok = t.price(zones, cts)
	}
	s.priceMemo[k] = r
	return r
}
