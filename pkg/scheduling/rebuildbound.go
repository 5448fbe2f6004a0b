package scheduling

import "math"

// A rebuild in the local search (tryRebuildBy) is kept only when the new
// nodes end up cheaper than before it. While it packs, that price has a
// floor that only rises: every new node ends at its current offer or at
// a type that holds what it holds by then (rightSize at the end of a
// regroup's rebuild, or a later upgrade), which costs at least the
// cheapest type holding its pods now (pods are only added, the node's
// types and offerings only narrowed). So once the floor reaches the
// price before the rebuild, it cannot be kept: packing stops there and
// the rebuild is undone as when it ends dearer (TestRebuildBoundSamePlans
// compares with packing to the end). Few-big at 250 pods crossed that
// line after about nine in ten of its growth steps in rebuilds that were
// undone.

// rebuildBoundOff makes rebuilds pack to the end (tests compare).
var rebuildBoundOff bool

// floorCache is a bin's cheapestHolding price by bin id, for the version
// it was computed at.
type floorCache struct {
	ver   []uint32
	price []float64
}

// rebuildLost tells whether the rebuild under way cannot be kept: the
// new nodes' price floor is already at the price before it (s.rbBefore).
// The floor is the sum at the rebuild's start (beginFloors) with each
// node the rebuild touched (the journal) at its floor now instead of
// then: a node changes only once touched, and the others' floors stay,
// so each growth step reads the few nodes the rebuild changed, not every
// node (few-big at 2,000 pods: 132 nodes, a rebuild touches a handful).
func (s *solver) rebuildLost() bool {
	if rebuildBoundOff || s.rbBefore <= 0 {
		return false
	}
	if s.topo.live && s.rebuildTopoOver() {
		return true
	}
	j := s.jr
	if j == nil || !j.floors {
		return false
	}
	floor := s.floorNow(j)
	if floorCheck != nil {
		full := 0.0
		for _, b := range s.bins {
			full += s.floorOf(b)
		}
		floorCheck(floor, full)
	}
	return floor >= s.rbBefore-1e-9
}

// floorNow is the new nodes' price floor under journal j: the sum at the
// rebuild's start with each node it touched at its floor now.
func (s *solver) floorNow(j *journal) float64 {
	floor := j.floorBase
	for i := range j.shapes {
		t := &j.shapes[i]
		floor += s.floorOf(t.b) - t.floor0
	}
	return floor
}

// A rebuild's pods, taken off their nodes, must go somewhere, and the
// floor says nothing of them until they are placed: a rebuild of GPU
// nodes, each pod alone on the cheapest GPU node, packs every pod to
// find the same price again (mix at 299 pods: groups of up to 64 such
// nodes in the regrouping). So before packing, pendingLost adds what
// the pods must add to the floor, resource by resource. For a resource r
// and a pool, p_r is the least price per unit of r of the pool's types
// (minPrice / net_r). A node's floor is at least p_r times the r its pods
// use (the type it is priced at holds them), and that stays so as pods
// are added, while the floor itself only rises: a node of floor f using
// u of r takes up to f/p_r − u more of r for nothing, and each unit past
// that adds p_r or more. Existing nodes take what room they have left;
// a new node adds at least the least p_r of any pool per unit. So the
// floor at the end is at least the floor now plus that least p_r times
// whatever of the pods' r neither finds; when that reaches the price
// before the rebuild, it cannot be kept. Nodes of a pool without r take
// none of it (p_r is then infinite).

// pendingFloorOff turns the check off (tests compare).
var pendingFloorOff bool

// pendingCut, when set, is called for each rebuild the check cuts.
var pendingCut func()

// pendingLost tells whether a rebuild of group, with the new nodes at
// price before, cannot be kept (see above). It is asked before anything
// is taken off: the group's pods are what would be pending, the floor
// the other new nodes' (the group's own leave it with their pods), and
// the room the other nodes' (mix at 250-299 pods: the rebuilds it cuts,
// of up to 64 GPU nodes, no longer take their pods off and put them
// back; the local search's first round and the regrouping 5-15 % less).
func (s *solver) pendingLost(group []*bin, before float64) bool {
	if pendingFloorOff || rebuildBoundOff || before <= 0 {
		return false
	}
	s.pendEpoch++
	for _, b := range group {
		b.pmark = s.pendEpoch
	}
	in := func(b *bin) bool { return b.pmark == s.pendEpoch }
	pending := s.pendBuf[:0]
	pending = append(pending, make(vec, s.dims.n())...)
	for _, b := range group {
		for _, e := range b.entries {
			pending.addScaled(e.l.cls.req, int64(e.n))
		}
	}
	s.pendBuf = pending
	var floor float64
	floorSet := false
	for r, need := range pending {
		if need <= 0 {
			continue
		}
		pNew := math.Inf(1)
		for _, ps := range s.pools {
			if ps.ok {
				pNew = min(pNew, ps.unitPrice(r))
			}
		}
		if math.IsInf(pNew, 1) {
			continue
		}
		left := float64(need)
		for _, b := range s.bins {
			if b.node != nil {
				if !b.node.Unschedulable && !in(b) {
					left -= float64(max(0, b.alloc[r]-b.used[r]))
				}
				continue
			}
			if len(b.entries) == 0 || in(b) {
				continue
			}
			if p := b.pool.unitPrice(r); !math.IsInf(p, 1) {
				left -= max(0, s.floorOf(b)/p-float64(b.used[r]))
			}
			if left <= 0 {
				break
			}
		}
		if left <= 0 {
			continue
		}
		if !floorSet {
			for _, b := range s.bins {
				if !in(b) {
					floor += s.floorOf(b)
				}
			}
			floorSet = true
		}
		if floor+pNew*left >= before-1e-9 {
			if pendingCut != nil {
				pendingCut()
			}
			return true
		}
	}
	return false
}

// unitPrice is the least price per unit of resource r of the pool's types
// (+Inf when none has any), computed once per pool.
func (ps *poolState) unitPrice(r int) float64 {
	if ps.unitPrices == nil {
		if len(ps.types) == 0 {
			return math.Inf(1)
		}
		ps.unitPrices = make([]float64, len(ps.types[0].net))
		for i := range ps.unitPrices {
			ps.unitPrices[i] = math.Inf(1)
		}
		for _, t := range ps.types {
			for i, v := range t.net {
				if v > 0 {
					ps.unitPrices[i] = min(ps.unitPrices[i], t.minPrice/float64(v))
				}
			}
		}
	}
	return ps.unitPrices[r]
}

// floorCheck, when set, is handed each floor rebuildLost sums and the
// sum over every node (tests compare).
var floorCheck func(incremental, full float64)

// beginFloors starts a rebuild's floor under journal j: the sum of every
// new node's floor, and each node's own as the rebuild touches it.
func (s *solver) beginFloors(j *journal) {
	if rebuildBoundOff {
		return
	}
	sum := 0.0
	for _, b := range s.bins {
		sum += s.floorOf(b)
	}
	j.floors, j.s, j.floorBase = true, s, sum
}

// endFloors ends what beginFloors started.
func (s *solver) endFloors(j *journal) { j.floors, j.s = false, nil }

// floorOf is what a node adds to the new nodes' price floor: nothing for
// an existing or empty node, else the least of its offer's price and
// floorPrice.
func (s *solver) floorOf(b *bin) float64 {
	if b.node != nil || len(b.entries) == 0 {
		return 0
	}
	return min(b.offer.price, s.floorPrice(b))
}

// floorPrice is the price of the cheapest type of b's pool that holds b's
// pods with an offering in b's zones and capacity types (b's offer price
// when none does), remembered for b's version.
func (s *solver) floorPrice(b *bin) float64 {
	fc := &s.floors
	for len(fc.ver) <= b.id {
		fc.ver = append(fc.ver, 0)
		fc.price = append(fc.price, 0)
	}
	if fc.ver[b.id] == b.ver && b.ver != 0 {
		return fc.price[b.id]
	}
	// The frontier is enough unless a label requirement cut the bin's
	// types: a type holding the pods has a dominator on it that holds
	// them too, offered wherever, no dearer (searchList).
	p, found := 0.0, false
	for _, i := range s.searchList(b, nil) {
		t := b.pool.types[i]
		if found && t.minPrice > p {
			break
		}
		if !b.types.has(i) || !b.used.le(t.net) {
			continue
		}
		if o, ok := t.price(b.zoneMask, b.ctMask); ok && (!found || o.price < p) {
			p, found = o.price, true
		}
	}
	if !found {
		p = b.offer.price
	}
	fc.ver[b.id], fc.price[b.id] = b.ver, p
	return p
}
