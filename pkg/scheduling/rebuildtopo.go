package scheduling

import "slices"

// Rebuilds of nodes holding constrained pods.
//
// The local search's rebuilds (rebuildPass, regroup, tailSplit, refill)
// take every pod off a group of new nodes and pack them again. They used
// to take only nodes whose every pod is free (no spread, pod affinity or
// anti-affinity, no term of another pod counting it, no host port), so a
// workload with a zone spread on every Deployment (the most common shape
// of a production cluster) got drains and merges but none of them: its
// nodes kept the packer's first sizes.
//
// tailSplit (the least utilised nodes packed again on nodes no bigger
// than their pods fill) now takes nodes of constrained pods too, host
// ports aside, and a rebuild is kept only if, besides being cheaper,
// every count of every group its pods are counted in or own the terms of,
// on every key but the hostname, is what it was before (rebuildTopoSame):
// each domain (zone, capacity type, label value) holds as many of each
// group's pods as before, so every spread, affinity and anti-affinity over
// those keys holds as it held. While it packs, counts only grow, so one
// past its old count stops the rebuild (rebuildLost). The re-packing
// checks every pod against its constraints as the packer does (placeAt),
// which keeps the hostname-keyed ones: a node is its own domain, a
// rebuild moves whole nodes' pods, so a pod's hostname affinity target
// moves with it, and taking pods off a node breaks no hostname spread
// (its global minimum is 0: a new node can always be made) or
// anti-affinity. A rebuild that would need pods in another zone is undone
// as one that ends dearer.
//
// Only tailSplit: the other rebuilds of constrained nodes found little
// more (rebuildPass some hostname-anti plans 0.5-1% cheaper) for twice
// the local search's time, and refill's exchanges balance a node's
// resources against nodes in other zones, which the counts then refuse
// (half of zone-spread's solve at 2,000 pods, for nothing). Measured over
// four seeds at 60, 250, 700 and 2,000 pods (docs/scheduling.md): no plan
// dearer; zone-spread at 60 pods 18% cheaper, hostname-anti 0.5-2%.
// Host ports stay out: a rebuild undone left a port-holding node, at the
// version it took back, other than the caches knew it
// (TestVersionRestoreSamePlans on hostports); with port-holding nodes
// taking no version back the tests pass, but the rebuilds found nothing
// cheaper on hostports or mix over the same sweep, for up to 3x the time.

// rebuildTopoOff keeps the rebuilds to nodes of free pods (tests compare).
var rebuildTopoOff bool

// holdsPorts tells whether a pod on b binds a host port.
func (b *bin) holdsPorts() bool {
	for _, e := range b.entries {
		if len(e.l.cls.ports) > 0 {
			return true
		}
	}
	return false
}

// topoSnap is the counts of the groups a rebuild's constrained pods are
// counted in or own, before it.
type topoSnap struct {
	// live is set while the rebuild packs (rebuildLost reads it).
	live   bool
	groups []*group
	// saved are each group's counts, owners and affOwners, in turn.
	saved []domCounts
}

// rebuildTopoSnap records the counts of the non-hostname groups the
// rebuild's constrained pods are counted in or own; it tells whether there
// are any (free pods have none).
func (s *solver) rebuildTopoSnap(work []removed) bool {
	t := &s.topo
	t.groups = t.groups[:0]
	add := func(g *group) {
		if s.keys[g.key].kind != keyHostname && !slices.Contains(t.groups, g) {
			t.groups = append(t.groups, g)
		}
	}
	for _, w := range work {
		l := w.l
		if l.free() {
			continue
		}
		for _, g := range l.cls.memberOf {
			add(g)
		}
		for _, g := range l.cls.invAnti {
			add(g)
		}
		for _, g := range l.anti {
			add(g)
		}
		for _, g := range l.aff {
			add(g)
		}
		for _, sp := range l.spreads {
			add(sp.g)
		}
	}
	// The copies reuse the last rebuild's buffers (the local search
	// tries hundreds of rebuilds).
	for len(t.saved) < 3*len(t.groups) {
		t.saved = append(t.saved, domCounts{})
	}
	for i, g := range t.groups {
		copyCounts(&t.saved[3*i], g.counts)
		copyCounts(&t.saved[3*i+1], g.owners)
		copyCounts(&t.saved[3*i+2], g.affOwners)
	}
	return len(t.groups) > 0
}

// rebuildTopoSame tells whether every group rebuildTopoSnap recorded
// counts as it did.
func (s *solver) rebuildTopoSame() bool {
	t := &s.topo
	for i, g := range t.groups {
		if !sameCounts(g.counts, t.saved[3*i]) || !sameCounts(g.owners, t.saved[3*i+1]) || !sameCounts(g.affOwners, t.saved[3*i+2]) {
			return false
		}
	}
	return true
}

// rebuildTopoOver tells whether some group recorded counts more in some
// domain than before the rebuild: while it packs, counts only grow, so it
// cannot end as it was, and rebuildLost stops it there.
func (s *solver) rebuildTopoOver() bool {
	t := &s.topo
	for i, g := range t.groups {
		if countsOver(g.counts, t.saved[3*i]) || countsOver(g.owners, t.saved[3*i+1]) || countsOver(g.affOwners, t.saved[3*i+2]) {
			return true
		}
	}
	return false
}

// countsOver tells whether a counts more than was in some domain.
func countsOver(a, was domCounts) bool {
	for d, n := range a.dense {
		if n > at(was, d) {
			return true
		}
	}
	if a.far != nil {
		for i, d := range a.far.d {
			if a.far.n[i] > at(was, int(d)) {
				return true
			}
		}
	}
	return false
}

// copyCounts makes dst a copy of a sharing nothing with it, in dst's
// buffers.
func copyCounts(dst *domCounts, a domCounts) {
	dst.dense = append(dst.dense[:0], a.dense...)
	if a.far == nil {
		if dst.far != nil {
			dst.far.d, dst.far.n = dst.far.d[:0], dst.far.n[:0]
		}
		return
	}
	if dst.far == nil {
		dst.far = &farCounts{}
	}
	dst.far.d = append(dst.far.d[:0], a.far.d...)
	dst.far.n = append(dst.far.n[:0], a.far.n...)
}

// sameCounts tells whether a and b count the same in every domain.
func sameCounts(a, b domCounts) bool {
	for d := range max(len(a.dense), len(b.dense)) {
		if at(a, d) != at(b, d) {
			return false
		}
	}
	for _, f := range []*farCounts{a.far, b.far} {
		if f == nil {
			continue
		}
		for _, d := range f.d {
			if at(a, int(d)) != at(b, int(d)) {
				return false
			}
		}
	}
	return true
}
