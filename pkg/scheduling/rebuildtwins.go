package scheduling

import "slices"

// Rebuild twins. A rebuild pass (rebuildPass) tries the least utilised
// new nodes alone, split, and with each of the next few. After packing,
// those are often alike: spot-limits at 299 pods ends with a dozen
// one-pod nodes of the same small type, and the pass tried each of them,
// and each pair, the same way: 57 rebuilds, none kept, a third of the
// solve. A rebuild reads of its nodes only what they hold and allow (pool,
// type and offering, zones, capacity types, allowed types, custom labels,
// pods by level) and, of the plan, every other node. While no rebuild of
// the pass has been kept, every node is as it was (a rebuild not kept puts
// everything back), so a group whose nodes are twins of a group tried
// since finds the same plan around it, the same nodes in another order,
// and would be tried for the same end: it is not tried again. The order
// can matter only where the packer breaks a tie between equal nodes by
// their place in the list; the plans are the same on every generated
// shape (TestRebuildTwinsSamePlans).

// rebuildTwinsOff makes a rebuild pass try every group (tests compare).
var rebuildTwinsOff bool

// rebuildTried is a group a rebuild pass tried and did not keep: a alone
// (b nil) or with b, capped when split (every node cheaper than a).
type rebuildTried struct {
	a, b   *bin
	capped bool
}

// tryRebuildTwin is tryRebuild of a (with b when set), split below a's
// price when capped, unless a group of twins was tried since the pass's
// last kept rebuild; it tells whether the rebuild was kept.
func (s *solver) tryRebuildTwin(a, b *bin, capped bool) bool {
	if !rebuildTwinsOff {
		for _, t := range s.rbTried {
			if t.capped != capped || (t.b == nil) != (b == nil) {
				continue
			}
			if b == nil && rebuildTwin(t.a, a) {
				return false
			}
			if b != nil && ((rebuildTwin(t.a, a) && rebuildTwin(t.b, b)) || (rebuildTwin(t.a, b) && rebuildTwin(t.b, a))) {
				return false
			}
		}
	}
	group := []*bin{a}
	if b != nil {
		group = append(group, b)
	}
	if capped {
		s.priceCap, s.capPool = a.offer.price-1e-9, a.pool
	}
	kept := s.tryRebuild(group)
	if capped {
		s.priceCap, s.capPool = 0, nil
	}
	if kept {
		s.rbTried = s.rbTried[:0]
	} else {
		s.rbTried = append(s.rbTried, rebuildTried{a, b, capped})
	}
	return kept
}

// rebuildTwin tells whether new nodes x and y are alike in all a rebuild
// reads of them.
func rebuildTwin(x, y *bin) bool {
	if x == y {
		return true
	}
	if x.pool != y.pool || x.typ != y.typ || x.offer != y.offer || x.zoneMask != y.zoneMask || x.ctMask != y.ctMask ||
		x.zone != y.zone || x.ct != y.ct || x.labelCut != y.labelCut || !slices.Equal(x.used, y.used) ||
		!slices.Equal(x.types, y.types) || !slices.Equal(x.entries, y.entries) || !slices.Equal(x.ports, y.ports) {
		return false
	}
	return x.custom == y.custom || (x.custom != nil && y.custom != nil && x.custom.signature() == y.custom.signature())
}
