package scheduling

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/model"
)

// Labels a new node is known to carry once it is up; DaemonSets may select
// them, and Karpenter simulates them the same way.
const (
	labelRegistered  = "karpenter.sh/registered"
	labelInitialized = "karpenter.sh/initialized"
	labelNodeClass   = "karpenter.k8s.aws/ec2nodeclass"
)

// poolState is a pool prepared for packing: its requirements split by kind
// of key, the instance types it may launch (with allocatable net of
// DaemonSet overhead), its limits and what it already uses.
type poolState struct {
	idx  int
	pool *model.Pool
	// prep is the prepared list the pool's types come from (ptype.at).
	prep *PreparedTypes
	// ok is false for a pool the simulator never launches into (static, or
	// with malformed requirements); reason says why.
	ok     bool
	reason string
	taints []corev1.Taint
	// custom holds the pool's requirements and labels on keys that are
	// neither instance-type labels, zone, capacity type nor hostname, plus
	// the labels every node of the pool gets (pool name, region).
	custom   *reqs
	typeReqs *reqs // requirements on instance-type label keys
	zoneMask uint64
	ctMask   uint64
	// types are the launchable types, cheapest first (shared with other
	// solves when kept in the prepared list: read only), and values their
	// worth at this solve's dual prices (see bound.go).
	types  []*ptype
	values []float64
	// ceil[i] is the most value per dollar of minimum price among types
	// i and after, at the values' prices (upgradeCeil); made on first
	// use, emptied with every new values (setValues).
	ceil []float64
	// cols are the types as the bound's columns (lpCols).
	cols []lpColumn
	// unitPrices are the least price per unit of each resource of the
	// types (unitPrice, rebuildbound.go), made on first use.
	unitPrices []float64
	// offerIdx are the types by zone and capacity type (byOffer).
	offerIdx *typesByOffer
	// offered are offeredIn's answers, by zone and capacity type masks.
	offered   []offeredTypes
	holdIdx   *holdIdx // typesHolding's (compat.go)
	holdScans int      // typesHolding's answers scanned so far
	allTypes  bitset
	// frontier are the types no other type dominates (as much of every
	// resource, no dearer in any zone and capacity type); cheapest and
	// most efficient choices are always among them, so searches that may
	// use any type scan only these.
	frontier     []int
	frontierBits bitset
	allIdx       []int
	// byName are the types' indices in name order (ptype.nameRank is
	// each one's place in it).
	byName []int
	// dsPorts are the host ports of the pool's DaemonSets, each with the
	// types it runs on: a pod binding one of them may only be on the
	// other types.
	dsPorts []dsPortSet
	// limits, by dimension (math.MaxInt64 when unlimited), and the node
	// count limit (-1 when unlimited).
	limit      vec
	limitNodes int64
	// minCap is minCapv's answer.
	minCap    vec
	hasLimits bool
	// boundLimit and boundNodes are the limits the lower bound reads
	// (limitbound.go): the pool's, or those the limits-first solve took
	// off (solver.limitsFrom); baseUsage and baseNodes what the pool's
	// existing and in-flight nodes count against them.
	boundLimit vec
	boundNodes int64
	baseUsage  vec
	baseNodes  int64
	// kept are the pool's types as kept in the prepared list for later
	// solves (nil: prepared for this solve alone).
	kept       *keptTypes
	usage      vec
	usageNodes int64
	// hasPreferNoSchedule enables the last relaxation step.
	hasPreferNoSchedule bool
	// minValues are the pool's minValues on instance-type label keys: a
	// new node's options must keep that many distinct values.
	minValues []minValue
}

// dsPortSet is one DaemonSet's host ports and the pool's types (by
// index) it runs on.
type dsPortSet struct {
	ports []hostPort
	types bitset
}

// conflicts tells whether one of ports clashes with the DaemonSet's.
func (d dsPortSet) conflicts(ports []hostPort) (hostPort, bool) {
	for _, p := range ports {
		for _, q := range d.ports {
			if p.conflicts(q) {
				return p, true
			}
		}
	}
	return hostPort{}, false
}

type minValue struct {
	key string
	n   int
}

// ptype is one instance type as a pool sees it.
type ptype struct {
	idx      int
	at       int // the type's place in the pool's prepared list
	nameRank int
	it       *InstanceType
	net      vec // allocatable less DaemonSet overhead
	capv     vec // capacity, for limits
	ds       vec // DaemonSet overhead reserved
	offers   []offer
	// zones and capacity types with a usable offering
	zoneMask uint64
	ctMask   uint64
	minPrice float64
	// cheap is the cheapest offering of all (the first of that price),
	// what price answers for masks holding every offering (cheapOK: set).
	cheap   offer
	cheapOK bool
}

// setValues makes v the types' values (filled by the caller before the
// next search), dropping the ceiling made from the old ones.
func (ps *poolState) setValues(v []float64) { ps.values, ps.ceil = v, ps.ceil[:0] }

// limitsOf reads a pool's limits: per dimension (math.MaxInt64: none; a
// resource no pod asks for has no dimension and is left out) and on the
// node count (-1: none).
func (s *solver) limitsOf(limits corev1.ResourceList) (vec, int64) {
	lim, nodes := s.dims.zero(), int64(-1)
	for i := range lim {
		lim[i] = math.MaxInt64
	}
	for name, q := range limits {
		if name == "nodes" {
			nodes = q.Value()
		} else if i, ok := s.dims.index[name]; ok {
			lim[i] = quantityValue(name, q)
		}
	}
	return lim, nodes
}

// limitedDims are the dimensions limit (a pool's, limitsOf) limits.
func limitedDims(limit vec) []int {
	var out []int
	for d, v := range limit {
		if v != math.MaxInt64 {
			out = append(out, d)
		}
	}
	return out
}

// dominates tells whether a is at least as good as b for every purpose:
// as much of every resource and capacity, offered wherever b is, at no
// higher price there.
func dominates(a, b *ptype) bool {
	if a.minPrice > b.minPrice || !b.net.le(a.net) {
		return false
	}
	if a.zoneMask&b.zoneMask != b.zoneMask || a.ctMask&b.ctMask != b.ctMask {
		return false
	}
	for _, ob := range b.offers {
		oa, ok := a.price(maskOf(ob.zone), maskOf(ob.ct))
		if !ok || oa.price > ob.price {
			return false
		}
	}
	return true
}

type offer struct {
	zone, ct int
	price    float64
}

// price returns the cheapest offering within the masks. Masks holding
// every zone and capacity type the type is offered in (a node free to
// be anywhere) take the offering found once (prepareTypes).
func (t *ptype) price(zones, cts uint64) (offer, bool) {
	if t.cheapOK && (t.zoneMask&^zones|t.ctMask&^cts) == 0 {
		return t.cheap, true
	}
	return t.priceIn(zones, cts)
}

// priceIn is price by a pass over the offerings.
func (t *ptype) priceIn(zones, cts uint64) (offer, bool) {
	best, found := offer{}, false
	for _, o := range t.offers {
		if maskHas(zones, o.zone) && maskHas(cts, o.ct) && (!found || o.price < best.price) {
			best, found = o, true
		}
	}
	return best, found
}

// preparePools builds the pool states, sorted by weight (higher first)
// then name.
func (s *solver) preparePools() {
	pools := append([]*model.Pool(nil), s.in.Pools...)
	sort.SliceStable(pools, func(i, j int) bool {
		if pools[i].Weight != pools[j].Weight {
			return pools[i].Weight > pools[j].Weight
		}
		return pools[i].Name < pools[j].Name
	})
	for i, p := range pools {
		s.pools = append(s.pools, s.preparePool(i, p))
	}
}

func (s *solver) preparePool(idx int, p *model.Pool) *poolState {
	ps := s.preparePoolState(idx, p)
	for _, q := range p.Requirements {
		if packsMinValues(q, s.in) && !s.noMinValues {
			ps.minValues = append(ps.minValues, minValue{model.NormalizeLabelKey(q.Key), *q.MinValues})
		}
	}
	return ps
}

// minValuesHold tells whether the types of a new bin (also allowed by
// also, when not nil) that hold need, in the bin's zones and capacity
// types, still offer the pool's minValues distinct values.
func (s *solver) minValuesHold(b *bin, also bitset, need vec) bool {
	ps := b.pool
	for _, mv := range ps.minValues {
		seen := map[string]bool{}
		var offered uint64 // zones or capacity types, for minValues on those
		for i, t := range ps.types {
			if !b.types.has(i) || (also != nil && !also.has(i)) || t.zoneMask&b.zoneMask == 0 || t.ctMask&b.ctMask == 0 || !need.le(t.net) {
				continue
			}
			switch mv.key {
			case corev1.LabelTopologyZone:
				offered |= t.zoneMask & b.zoneMask
			case model.LabelCapacityType:
				offered |= t.ctMask & b.ctMask
			}
			if bits.OnesCount64(offered) >= mv.n {
				break
			}
			if v, ok := t.it.Labels[mv.key]; ok {
				seen[v] = true
				if len(seen) >= mv.n {
					break
				}
			}
		}
		if len(seen) < mv.n && bits.OnesCount64(offered) < mv.n {
			return false
		}
	}
	return true
}

func (s *solver) preparePoolState(idx int, p *model.Pool) *poolState {
	ps := &poolState{idx: idx, pool: p, ok: true, custom: newReqs(), typeReqs: newReqs(), limitNodes: -1}
	ps.usage = s.dims.zero()
	if p.Replicas != nil {
		ps.ok, ps.reason = false, "pool is static (replicas)"
	}
	if why, ok := s.in.NotReady[p.Name]; ok {
		ps.ok, ps.reason = false, "pool is not ready: "+why
	}
	for _, t := range p.Taints {
		ps.taints = append(ps.taints, t)
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			ps.hasPreferNoSchedule = true
		}
	}
	all := newReqs()
	if !all.addModel(p.Requirements) {
		ps.ok, ps.reason = false, "pool has a malformed requirement"
	}
	all.addLabels(p.Labels)
	s.zoneIDsAsZones(all)
	all.add(p.Label(), valueSet{values: []string{p.Name}})
	if s.in.Region != "" {
		all.add(corev1.LabelTopologyRegion, valueSet{values: []string{s.in.Region}})
	}
	all.add(labelRegistered, valueSet{values: []string{"true"}})
	all.add(labelInitialized, valueSet{values: []string{"true"}})
	if p.NodeClass != "" && p.API == model.APIV1 {
		all.add(labelNodeClass, valueSet{values: []string{p.NodeClass}})
	}
	ps.zoneMask, ps.ctMask = ^uint64(0), ^uint64(0)
	for _, k := range all.keys {
		set := all.sets[k]
		switch {
		case k == corev1.LabelTopologyZone:
			ps.zoneMask = s.world.zoneMaskOf(set)
		case k == model.LabelCapacityType:
			ps.ctMask = s.world.ctMaskOf(set)
		case k == corev1.LabelHostname:
			// Karpenter forbids it in pools; a new node's name is unknown.
		case s.isTypeKey(k):
			ps.typeReqs.add(k, set)
		default:
			ps.custom.add(k, set)
			if set.empty() {
				ps.ok, ps.reason = false, "pool requirement on "+k+" allows nothing"
			}
		}
	}
	// Limits, and those the bound reads (limitbound.go).
	ps.limit, ps.limitNodes = s.limitsOf(p.Limits)
	ps.hasLimits = ps.limitNodes >= 0 || len(limitedDims(ps.limit)) > 0
	ps.boundLimit, ps.boundNodes = ps.limit, ps.limitNodes
	if s.limitsFrom != nil {
		for _, q := range s.limitsFrom.Pools {
			if q.Name == p.Name {
				ps.boundLimit, ps.boundNodes = s.limitsOf(q.Limits)
			}
		}
	}
	// Instance types.
	list := s.in.InstanceTypes
	if o, ok := s.in.PoolInstanceTypes[p.Name]; ok {
		list = o
	}
	pl := s.preparedFor(list)
	ps.prep = pl
	lx := s.listIndices(ps, pl)
	dsList := s.daemonSetsFor(ps)
	key := s.poolTypesKey(ps, pl, lx, dsList)
	if pt, ok := pl.poolTypesOf(key); ok {
		pt.fill(ps)
		ps.kept = pt
		return ps
	}
	s.prepareTypes(ps, pl, lx, dsList)
	ps.allTypes = newBitset(len(ps.types))
	ps.byName = make([]int, len(ps.types))
	for i, t := range ps.types {
		ps.byName[t.nameRank] = i
		t.idx = i
		ps.allTypes.set(i)
		ps.allIdx = append(ps.allIdx, i)
	}
	ps.frontierBits = newBitset(len(ps.types))
	s.buildFrontier(ps)
	if key != "" {
		ps.lpCols(s.dims.n())
		ps.lpDominance()
		ps.byOffer()
		ps.kept = keptTypesOf(ps)
		pl.keepPoolTypes(key, ps.kept)
	}
	return ps
}

// listIdx maps a prepared list's zones and capacity types to the world's:
// zoneOf and ctOf by the list's indices, the pool's zones and capacity
// types in the list's indices, and whether the two agree (the nodes add no
// zone, so the prepared offerings serve as they are).
type listIdx struct {
	zoneOf, ctOf         []int
	localZones, localCTs uint64
	same                 bool
}

func (s *solver) listIndices(ps *poolState, pl *PreparedTypes) listIdx {
	x := listIdx{zoneOf: make([]int, len(pl.zones)), ctOf: make([]int, len(pl.cts)), same: true}
	for i, z := range pl.zones {
		x.zoneOf[i] = s.world.zoneIdx[z]
		x.same = x.same && x.zoneOf[i] == i
		if maskHas(ps.zoneMask, x.zoneOf[i]) {
			x.localZones |= maskOf(i)
		}
	}
	for i, c := range pl.cts {
		x.ctOf[i] = s.world.ctIdx[c]
		x.same = x.same && x.ctOf[i] == i
		if maskHas(ps.ctMask, x.ctOf[i]) {
			x.localCTs |= maskOf(i)
		}
	}
	return x
}

// poolTypesKey is what decides a pool's types besides the prepared list:
// its zones and capacity types, its requirements on type labels, the
// solve's dimensions, the dimensions it has limits on (its frontier then
// keeps types a bigger one dominates) and the DaemonSets it runs (their
// requests, host ports and node requirements, and what those are
// checked against: the pool's other requirements and the solve's zones,
// capacity types and type label keys), with no offering out of
// capacity; "" otherwise. Solves of pools with the same key get the same
// types, so they are kept in the prepared list (keptTypes).
func (s *solver) poolTypesKey(ps *poolState, pl *PreparedTypes, x listIdx, dsList []*dsInfo) string {
	if !x.same || s.in.Unavailable != nil || len(pl.zones) > 64 || len(pl.cts) > 64 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%x/%x/%s/%v/%v", x.localZones, x.localCTs, ps.typeReqs.signature(), s.dims.names, limitedDims(ps.limit))
	for _, a := range s.attach {
		fmt.Fprintf(&b, "/attach %d", a.reserve)
	}
	if len(dsList) > 0 {
		fmt.Fprintf(&b, "/ds %x/%x/%q/%q/%s", ps.zoneMask, ps.ctMask, s.world.zones, s.world.cts, ps.custom.signature())
		for _, d := range dsList {
			fmt.Fprintf(&b, "|%v/%v/%d:", d.req, d.ports, len(d.terms))
			for _, t := range d.terms {
				b.WriteString(t.signature())
				for _, k := range t.keys {
					fmt.Fprintf(&b, "%t", s.isTypeKey(k))
				}
				b.WriteByte(';')
			}
		}
	}
	return b.String()
}

// prepareTypes fills the pool's types from the prepared list: those its
// requirements accept with an offering it may launch, their allocatable
// net of DaemonSet overhead, cheapest first. What depends on the list
// alone (resources, offerings by index, label values, price and name
// orders) comes prepared, so this costs a pass over the list with few
// allocations (one array of types, one of vectors, one of offers).
func (s *solver) prepareTypes(ps *poolState, pl *PreparedTypes, x listIdx, dsList []*dsInfo) {
	list := pl.list
	keep := make([]bool, len(list))
	pl.matching(ps.typeReqs, keep)
	zoneOf, ctOf, localZones, localCTs, same := x.zoneOf, x.ctOf, x.localZones, x.localCTs, x.same
	var po *priceOrder
	if len(pl.zones) <= 64 && len(pl.cts) <= 64 {
		po = pl.priceOrder(localZones, localCTs)
	} else {
		po = pl.listOrder()
	}
	nd, nr := s.dims.n(), len(pl.res)
	resOf := make([]int, nd)
	for i, n := range s.dims.names {
		resOf[i] = -1
		if r, ok := pl.resAt[n]; ok {
			resOf[i] = r
		}
	}
	shared := same && s.in.Unavailable == nil && po.zoneMask != nil
	n, nOffers := 0, 0
	for _, k := range po.order {
		if keep[k] {
			n++
			if !shared {
				nOffers += len(pl.offers[k])
			}
		}
	}
	// Without DaemonSets every type shares one zero overhead.
	nv := 3
	var noDS vec
	if len(dsList) == 0 {
		nv, noDS = 2, s.dims.zero()
	}
	typeArr := make([]ptype, n)
	vecArr := make([]int64, nv*nd*n)
	offerArr := make([]offer, 0, nOffers)
	ps.types = make([]*ptype, 0, n)
	byList := make([]*ptype, len(list))
	sorted := true
	j := 0
	for _, k := range po.order {
		if !keep[k] {
			continue
		}
		it := list[k]
		v := vecArr[nv*nd*j : nv*nd*(j+1) : nv*nd*(j+1)]
		t := &typeArr[j]
		j++
		*t = ptype{it: it, at: k, net: v[:nd:nd], capv: v[nd : 2*nd : 2*nd], ds: noDS}
		if nv == 3 {
			t.ds = v[2*nd:]
		}
		for i, r := range resOf {
			if r >= 0 {
				t.net[i] = pl.alloc[k*nr+r]
				t.capv[i] = pl.capa[k*nr+r]
			}
		}
		if pl.noCap[k] {
			copy(t.capv, t.net)
		}
		if len(s.attach) > 0 {
			s.setTypeAttach(t)
		}
		if shared {
			t.offers, t.zoneMask, t.ctMask, t.minPrice = po.offers[k], po.zoneMask[k], po.ctMask[k], po.minPrice[k]
		} else {
			offerArr = s.typeOffers(t, ps, pl, k, zoneOf, ctOf, offerArr)
		}
		if len(t.offers) == 0 {
			continue
		}
		// An offering out of capacity may make a type dearer than the
		// prepared order says: then the types are sorted here.
		if t.minPrice != po.minPrice[k] {
			sorted = false
		}
		for _, d := range dsList {
			if d.compatibleWithType(s, ps, it.Labels) {
				t.ds.add(d.req)
			}
		}
		t.net.sub(t.ds)
		if t.net[dimPods] <= 0 || t.net[dimCPU] <= 0 {
			continue
		}
		t.cheap, t.cheapOK = t.priceIn(t.zoneMask, t.ctMask)
		ps.types = append(ps.types, t)
		byList[k] = t
	}
	// Name order, for the options of a new node.
	r := 0
	for _, k := range pl.byName {
		if t := byList[k]; t != nil {
			t.nameRank = r
			r++
		}
	}
	if !sorted {
		sort.SliceStable(ps.types, func(i, j int) bool {
			if ps.types[i].minPrice != ps.types[j].minPrice {
				return ps.types[i].minPrice < ps.types[j].minPrice
			}
			if ps.types[i].it.Name != ps.types[j].it.Name {
				return ps.types[i].it.Name < ps.types[j].it.Name
			}
			return ps.types[i].nameRank < ps.types[j].nameRank
		})
	}
	// Host ports count only on the types the DaemonSet runs on.
	for _, d := range dsList {
		if len(d.ports) == 0 {
			continue
		}
		on := newBitset(len(ps.types))
		for i, t := range ps.types {
			if d.compatibleWithType(s, ps, t.it.Labels) {
				on.set(i)
			}
		}
		if on.any() {
			ps.dsPorts = append(ps.dsPorts, dsPortSet{ports: d.ports, types: on})
		}
	}
}

// typeOffers fills a type's offerings the pool may launch (in the
// world's indices) and their zones, capacity types and cheapest price,
// appending them to arr.
func (s *solver) typeOffers(t *ptype, ps *poolState, pl *PreparedTypes, k int, zoneOf, ctOf []int, arr []offer) []offer {
	start := len(arr)
	for _, o := range pl.offers[k] {
		z, c := zoneOf[o.zone], ctOf[o.ct]
		if !maskHas(ps.zoneMask, z) || !maskHas(ps.ctMask, c) {
			continue
		}
		if s.in.Unavailable != nil && s.in.Unavailable(t.it.Name, pl.zones[o.zone], pl.cts[o.ct]) {
			continue
		}
		arr = append(arr, offer{zone: z, ct: c, price: o.price})
		t.offers = arr[start:len(arr):len(arr)]
		t.zoneMask |= maskOf(z)
		t.ctMask |= maskOf(c)
		if len(t.offers) == 1 || o.price < t.minPrice {
			t.minPrice = o.price
		}
	}
	return arr
}

// keptTypes are a pool's types as prepareTypes and buildFrontier made
// them, kept in the prepared list for later solves of pools of the same
// key (poolTypesKey), which share them (read only).
type keptTypes struct {
	types    []*ptype
	cols     []lpColumn
	dsPorts  []dsPortSet
	allTypes bitset
	frontier []int
	fBits    bitset
	allIdx   []int
	byName   []int
	// opts are new nodes' option lists made by solves with these types
	// (keptOpts), by a hash of their key.
	optMu    sync.Mutex
	opts     map[uint64][]*optList
	optBytes int
	// prices are the types priced within zone and capacity type masks
	// (pricesFor), by the masks.
	prices     map[[2]uint64][]priceRow
	priceBytes int
	// holding are typesHolding's answers, by the request.
	holding map[string]bitset
	// offerIdx are the types by zone and capacity type (byOffer).
	offerIdx *typesByOffer
	// joint are the bound's columns of these types followed by other
	// kept pools' (a solve with several pools: columns), under optMu.
	joint []jointCols
}

// jointCols are the bound's columns of a solve's pools, each with kept
// types (with, in the solve's order) laid end to end (read only).
type jointCols struct {
	with []*keptTypes
	cols []lpColumn
}

// maxJoint bounds the joint column lists kept with a pool's types.
const maxJoint = 8

func keptTypesOf(ps *poolState) *keptTypes {
	return &keptTypes{types: ps.types, cols: ps.cols, offerIdx: ps.offerIdx, dsPorts: ps.dsPorts, allTypes: ps.allTypes, frontier: ps.frontier,
		fBits: ps.frontierBits, allIdx: ps.allIdx, byName: ps.byName}
}

// fill gives the pool the kept types.
func (k *keptTypes) fill(ps *poolState) {
	ps.types, ps.cols, ps.offerIdx, ps.dsPorts = k.types, k.cols, k.offerIdx, k.dsPorts
	ps.allTypes, ps.frontier, ps.frontierBits, ps.allIdx, ps.byName = k.allTypes, k.frontier, k.fBits, k.allIdx, k.byName
}

// buildFrontier finds the pool's types that no other type dominates
// (dominates(o, t), and not the other way round unless o comes first).
// Types are sorted by minimum price, and only a type no dearer can
// dominate, so one pass in that order compares each type with the
// frontier found so far and with the later types of the same price:
// dominance is transitive, so a type dominated by an earlier dominated
// type is dominated by a frontier type before it. That makes it
// O(types × frontier) instead of O(types²), the same set.
func (s *solver) buildFrontier(ps *poolState) {
	// A limited pool: a type counting more against a limit (a bigger
	// one) does not dominate, since it may not fit where the smaller
	// does; a type of the same size does (c6a.xlarge over c5.xlarge).
	lim := limitedDims(ps.limit)
	dom := func(a, b *ptype) bool {
		if !dominates(a, b) {
			return false
		}
		for _, d := range lim {
			if a.capv[d] > b.capv[d] {
				return false
			}
		}
		return true
	}
	for i, t := range ps.types {
		dominated := false
		for _, f := range ps.frontier {
			if dom(ps.types[f], t) {
				dominated = true
				break
			}
		}
		for j := i + 1; !dominated && j < len(ps.types) && ps.types[j].minPrice == t.minPrice; j++ {
			if o := ps.types[j]; dom(o, t) && !dom(t, o) {
				dominated = true
			}
		}
		if !dominated {
			ps.frontier = append(ps.frontier, i)
			ps.frontierBits.set(i)
		}
	}
}

// dsInfo is a DaemonSet's pod template digested for one pool.
type dsInfo struct {
	ds    *appsv1.DaemonSet
	req   vec
	ports []hostPort
	terms []*reqs // OR'ed node requirements (nil: any node)
}

// daemonSetsFor returns the DaemonSets whose pods tolerate the pool's taints
// (startup taints are temporary and ignored); which instance types they
// land on is decided per type.
func (s *solver) daemonSetsFor(ps *poolState) []*dsInfo {
	var out []*dsInfo
	for _, ds := range s.in.DaemonSets {
		spec := &ds.Spec.Template.Spec
		tols := append(append([]corev1.Toleration(nil), spec.Tolerations...), daemonSetTolerations...)
		if _, bad := firstUntolerated(tols, ps.taints, false); bad {
			continue
		}
		pod := &corev1.Pod{Spec: *spec}
		d := &dsInfo{ds: ds, req: s.dims.fromList(s.daemonRequests(ds)), ports: podHostPorts(pod)}
		d.terms = s.nodeTerms(spec)
		out = append(out, d)
	}
	return out
}

// templateGenerationLabel is the DaemonSet generation the DaemonSet
// controller stamps on each pod it makes.
const templateGenerationLabel = "pod-template-generation"

// observeDaemonPods fills s.dsReq: for each DaemonSet with pods of its
// current template in the input (pending, or on existing and in-flight
// nodes, whole or compact), their requests, the largest per resource.
// Admission may have changed them from the template (injected sidecars,
// VPA, LimitRange defaults), and the next pod is made the same way: so
// Karpenter reads its newest pod. A pod stamped with an older generation
// than the DaemonSet's says nothing of the next one; an unstamped pod
// counts.
func (s *solver) observeDaemonPods() {
	if len(s.in.DaemonSets) == 0 {
		return
	}
	byName := make(map[string]*appsv1.DaemonSet, len(s.in.DaemonSets))
	for _, ds := range s.in.DaemonSets {
		byName[ds.Namespace+"/"+ds.Name] = ds
	}
	// r is read, not kept: a compact pod's list may be shared.
	observe := func(ns, owner string, labels map[string]string, r corev1.ResourceList) {
		ds := byName[ns+"/"+owner]
		if ds == nil {
			return
		}
		if g, ok := labels[templateGenerationLabel]; ok && ds.Generation > 0 && g != strconv.FormatInt(ds.Generation, 10) {
			return
		}
		if s.dsReq == nil {
			s.dsReq = map[*appsv1.DaemonSet]corev1.ResourceList{}
		}
		cur, ok := s.dsReq[ds]
		if !ok {
			cur = corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
			s.dsReq[ds] = cur
		}
		for n, q := range r {
			if n == corev1.ResourcePods {
				continue
			}
			if have, ok := cur[n]; !ok || q.Cmp(have) > 0 {
				cur[n] = q.DeepCopy()
			}
		}
	}
	whole := func(p *corev1.Pod) {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return
		}
		for _, o := range p.OwnerReferences {
			if o.Kind == "DaemonSet" && byName[p.Namespace+"/"+o.Name] != nil {
				observe(p.Namespace, o.Name, p.Labels, podRequests(p))
			}
		}
	}
	for _, p := range s.in.Pods {
		whole(p)
	}
	for _, n := range s.in.Nodes {
		for _, p := range n.Pods {
			whole(p)
		}
		for i := range n.Bound {
			if b := &n.Bound[i]; b.DaemonSet != "" {
				observe(b.Namespace, b.DaemonSet, b.Labels, b.Requests)
			}
		}
	}
}

// daemonRequests are the requests a DaemonSet's pod is reserved on a
// node: its observed pods' (observeDaemonPods), else its template's.
func (s *solver) daemonRequests(ds *appsv1.DaemonSet) corev1.ResourceList {
	if r, ok := s.dsReq[ds]; ok {
		return r
	}
	return podRequests(&corev1.Pod{Spec: ds.Spec.Template.Spec})
}

// compatibleWithType tells whether the DaemonSet would run on a node of the
// pool with this type's labels.
func (d *dsInfo) compatibleWithType(s *solver, ps *poolState, typeLabels map[string]string) bool {
	if len(d.terms) == 0 {
		return true
	}
	for _, t := range d.terms {
		if s.reqsFitPoolType(t, ps, typeLabels) {
			return true
		}
	}
	return false
}

// reqsFitPoolType checks requirements against what a new node of the pool
// with the given type labels could carry.
func (s *solver) reqsFitPoolType(r *reqs, ps *poolState, typeLabels map[string]string) bool {
	for _, k := range r.keys {
		set := r.sets[k]
		switch {
		case k == corev1.LabelTopologyZone:
			if set.allowAbsent && !set.complement && len(set.values) == 0 {
				return false
			}
			if s.world.zoneMaskOf(set)&ps.zoneMask == 0 {
				return false
			}
		case k == model.LabelCapacityType:
			if s.world.ctMaskOf(set)&ps.ctMask == 0 {
				return false
			}
		case k == corev1.LabelHostname:
			if !set.complement || set.hasGt || set.hasLt {
				return false
			}
		case s.isTypeKey(k):
			v, ok := typeLabels[k]
			if !set.matches(v, ok) {
				return false
			}
		default:
			if ps.custom == nil {
				return set.allowAbsent
			}
			if cur, ok := ps.custom.get(k); ok {
				if x := cur.intersect(set); x.empty() {
					return false
				}
			} else if !set.allowAbsent {
				return false
			}
		}
	}
	return true
}

// nodeTerms turns a pod spec's nodeSelector and required node affinity into
// OR'ed requirement sets (nil when unconstrained).
func nodeTerms(spec *corev1.PodSpec) []*reqs {
	var terms []*reqs
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			r := newReqs()
			if !r.addNodeSelectorRequirements(t.MatchExpressions) || len(t.MatchFields) > 0 {
				r.add("metadata.name", valueSet{}) // never matches a new node
			}
			r.addLabels(spec.NodeSelector)
			terms = append(terms, r)
		}
	}
	if len(terms) == 0 && len(spec.NodeSelector) > 0 {
		r := newReqs()
		r.addLabels(spec.NodeSelector)
		terms = append(terms, r)
	}
	return terms
}
