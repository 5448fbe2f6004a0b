package scheduling

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
func (s *solver) rebuildLost() bool {
	if rebuildBoundOff || s.rbBefore <= 0 {
		return false
	}
	if s.topo.live && s.rebuildTopoOver() {
		return true
	}
	floor := 0.0
	for _, b := range s.bins {
		if b.node != nil || len(b.entries) == 0 {
			continue
		}
		floor += min(b.offer.price, s.floorPrice(b))
		if floor >= s.rbBefore-1e-9 {
			return true
		}
	}
	return false
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
