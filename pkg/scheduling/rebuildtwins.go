package scheduling

import "slices"

// Rebuild twins. A rebuild pass (rebuildPass) tries the least utilised
// new nodes alone, split, and with each of the next few, and the tail
// split (tailSplit) each of the least utilised alone. After packing,
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
// shape (TestRebuildTwinsSamePlans) and on rapid's random clusters
// (TestPropertyExactCutsSamePlans). The tail split's nodes may hold
// constrained pods: a twin holds the same pods in the same domains, so
// the topology's counts are the same too.

// rebuildTwinsOff makes a rebuild pass try every group (tests compare).
var rebuildTwinsOff bool

// rebuildTried is a group the local search tried and did not keep: a
// alone (b nil) or with b, by one kind of rebuild.
type rebuildTried struct {
	a, b *bin
	kind rebuildKind
}

// rebuildKind is how a group was rebuilt: packed again, split below the
// first node's price (rebuildPass), or the tail split's fillings and
// caps of one node (tailSplit).
type rebuildKind uint8

const (
	rebuildAgain rebuildKind = iota
	rebuildSplit
	rebuildTail
)

// twinTried tells whether a group of twins of a alone (b nil) or with b
// was tried by kind since the record was last emptied.
func (s *solver) twinTried(kind rebuildKind, a, b *bin) bool {
	if rebuildTwinsOff {
		return false
	}
	for _, t := range s.rbTried {
		if t.kind != kind || (t.b == nil) != (b == nil) {
			continue
		}
		if b == nil && rebuildTwin(t.a, a) {
			return true
		}
		if b != nil && ((rebuildTwin(t.a, a) && rebuildTwin(t.b, b)) || (rebuildTwin(t.a, b) && rebuildTwin(t.b, a))) {
			return true
		}
	}
	return false
}

// noteTried records how a try of a group ended: kept, the plan changed
// and the record is emptied; else the group joins it.
func (s *solver) noteTried(kind rebuildKind, a, b *bin, kept bool) {
	if kept {
		s.rbTried = s.rbTried[:0]
	} else {
		s.rbTried = append(s.rbTried, rebuildTried{a, b, kind})
	}
}

// tryRebuildTwin is tryRebuild of a (with b when set), split below a's
// price when split, unless a group of twins was tried the same way since
// the pass's last kept rebuild; it tells whether the rebuild was kept.
func (s *solver) tryRebuildTwin(a, b *bin, split bool) bool {
	kind := rebuildAgain
	if split {
		kind = rebuildSplit
	}
	if s.twinTried(kind, a, b) {
		return false
	}
	group := []*bin{a}
	if b != nil {
		group = append(group, b)
	}
	if split {
		s.priceCap, s.capPool = a.offer.price-1e-9, a.pool
	}
	kept := s.tryRebuild(group)
	if split {
		s.priceCap, s.capPool = 0, nil
	}
	s.noteTried(kind, a, b, kept)
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
