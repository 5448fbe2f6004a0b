package scheduling

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// bin is a node in the simulation: an existing or in-flight node (node set)
// or a new node being planned. A bin's id is also its hostname domain.
type bin struct {
	id   int
	node *Node // existing or in-flight; nil for a new node
	eidx int   // index among existing bins
	pool *poolState

	// Existing nodes: allocatable, taints in force and labels.
	alloc  vec
	taints []corev1.Taint

	// New nodes: what the pods on it still allow.
	types    bitset // pool type indexes
	zoneMask uint64
	ctMask   uint64
	zone, ct int   // pinned domain, or -1
	custom   *reqs // custom-label requirements (shared until narrowed)
	ownCust  bool  // custom is this bin's own copy
	typ      int   // the type: the cheapest that holds the pods (-1: dropped)
	offer    offer // its cheapest offering within the bin's zones

	used vec // pods' requests (+ DaemonSet reserve on existing nodes)
	// ver changes whenever the bin's contents or shape do (for caches).
	ver     uint32
	ports   []hostPort
	entries []entry
	// doms caches domains of keys other than hostname/zone/ct (-2: not
	// computed).
	doms []int
	// labelCut is set when the bin's types may lack a frontier type for
	// a reason other than size, zones or price (a pod's instance-type
	// label requirements, a pinned type label): searches then scan every
	// type instead of the frontier (searchList).
	labelCut bool
	// open caches whether the bin may take a pending pod (live.go).
	open openState
	// jmark is the epoch of the local search's journal that last
	// recorded the bin's shape (journal.touch).
	jmark uint32
	// twin is the bin's shape number at a version (scantwins.go).
	twin twinMemo
	// pmark is the solver's pendEpoch while the bin is in the group
	// pendingLost asks about.
	pmark uint32
}

// entry is n pods of a class placed at one relaxation level.
type entry struct {
	l *level
	n int
}

// buildExisting turns Input.Nodes into bins, reserving DaemonSet overhead
// for DaemonSets that should run on a node but have no pod there yet.
func (s *solver) buildExisting() {
	for i, n := range s.in.Nodes {
		b := &bin{id: len(s.bins), node: n, eidx: i, zone: -1, ct: -1, typ: -1}
		b.alloc = s.dims.fromList(n.Allocatable)
		b.used = s.dims.zero()
		for _, p := range n.Pods {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			b.used.add(s.dims.fromList(podRequests(p)))
			b.ports = append(b.ports, podHostPorts(p)...)
		}
		for i := range n.Bound {
			b.used.add(s.dims.fromList(n.Bound[i].Requests))
			b.ports = append(b.ports, n.Bound[i].ports...)
		}
		s.setNodeAttach(b)
		for _, t := range n.Taints {
			if n.InFlight && (ephemeralTaints[t.Key] || isStartupTaint(s.in.Pools, n.Pool, t)) {
				continue
			}
			b.taints = append(b.taints, t)
		}
		if n.Unschedulable {
			b.taints = append(b.taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
		}
		for _, ds := range s.in.DaemonSets {
			if hasDaemonPod(n, ds.Namespace, ds.Name) {
				continue
			}
			spec := &ds.Spec.Template.Spec
			tols := append(append([]corev1.Toleration(nil), spec.Tolerations...), daemonSetTolerations...)
			if _, bad := firstUntolerated(tols, b.taints, false); bad {
				continue
			}
			terms := s.nodeTerms(spec)
			ok := len(terms) == 0
			for _, t := range terms {
				if t.matchesLabels(n.Labels) {
					ok = true
					break
				}
			}
			if ok {
				pod := &corev1.Pod{Spec: *spec}
				b.used.add(s.dims.fromList(s.daemonRequests(ds)))
				b.ports = append(b.ports, podHostPorts(pod)...)
			}
		}
		if z := nodeLabel(n.Labels, corev1.LabelTopologyZone); z != "" {
			b.zone = s.world.zoneIdx[z]
		}
		if c, ok := n.Labels[model.LabelCapacityType]; ok {
			b.ct = s.world.ctIdx[c]
		}
		s.bins = append(s.bins, b)
		s.existingBins = append(s.existingBins, b)
	}
}

func hasDaemonPod(n *Node, ns, name string) bool {
	for i := range n.Bound {
		if n.Bound[i].DaemonSet == name && n.Bound[i].Namespace == ns {
			return true
		}
	}
	for _, p := range n.Pods {
		if p.Namespace != ns {
			continue
		}
		for _, o := range p.OwnerReferences {
			if o.Kind == "DaemonSet" && o.Name == name {
				return true
			}
		}
	}
	return false
}

// domain is the bin's domain for a topology key; for a new bin not yet
// pinned, z and c are the zone and capacity type it would be pinned to
// (-1: none). -1 means the node has no value for the key.
func (s *solver) domain(b *bin, key int, z, c int) int {
	k := s.keys[key]
	switch k.kind {
	case keyHostname:
		return b.id
	case keyZone:
		if b.zone >= 0 || b.node != nil {
			return b.zone
		}
		return z
	case keyCapacityType:
		if b.ct >= 0 || b.node != nil {
			return b.ct
		}
		return c
	}
	for len(b.doms) <= key {
		b.doms = append(b.doms, -2)
	}
	if b.node != nil && b.doms[key] != -2 {
		return b.doms[key]
	}
	if b.node == nil {
		// A new node's value, once decided, is pinned (see pin).
		if b.doms[key] >= 0 {
			return b.doms[key]
		}
		if key < len(s.trial) && s.trial[key] != trialUnset {
			return s.trial[key]
		}
	}
	d := -1
	if b.node != nil {
		if v, ok := b.node.Labels[k.name]; ok {
			d = s.valueDomain(key, v)
		}
		b.doms[key] = d
		return d
	}
	if b.custom != nil {
		if set, ok := b.custom.get(k.name); ok && !set.complement && len(set.values) == 1 {
			d = s.valueDomain(key, set.values[0])
		}
	}
	if d < 0 && s.isTypeKey(k.name) {
		d = s.uniqueTypeValue(b, key)
	}
	if d >= 0 {
		b.doms[key] = d
	}
	return d
}

// trialUnset marks a key with no trial value in solver.trial.
const trialUnset = -2

// uniqueTypeValue is the domain of a type label every type of a new bin
// shares (-1 when they differ or some type lacks it).
func (s *solver) uniqueTypeValue(b *bin, key int) int {
	name := s.keys[key].name
	val, seen := "", false
	for i, t := range b.pool.types {
		if !b.types.has(i) {
			continue
		}
		v, ok := t.it.Labels[name]
		if !ok || (seen && v != val) {
			return -1
		}
		val, seen = v, true
	}
	if !seen {
		return -1
	}
	return s.valueDomain(key, val)
}

// pinCandidates lists the values a new bin could be pinned to for a key
// the level reads (nil when its value is already decided): the values of
// its custom label, or for a type label those of its types (of type typ
// alone when given), with -1 for "no value" when some type lacks it.
func (s *solver) pinCandidates(l *level, b *bin, key int, typ int) []int {
	if d := s.domain(b, key, -1, -1); d >= 0 {
		return nil
	}
	name := s.keys[key].name
	if s.isTypeKey(name) {
		if typ >= 0 {
			if v, ok := b.pool.types[typ].it.Labels[name]; ok {
				return []int{s.valueDomain(key, v)}
			}
			return []int{-1}
		}
		cp := l.pools[b.pool.idx]
		var out []int
		absent := false
		for i, t := range b.pool.types {
			if !b.types.has(i) || !cp.types.has(i) {
				continue
			}
			if v, ok := t.it.Labels[name]; ok {
				if d := s.valueDomain(key, v); !slices.Contains(out, d) {
					out = append(out, d)
				}
			} else {
				absent = true
			}
		}
		sort.Ints(out)
		if absent {
			out = append(out, -1)
		}
		return out
	}
	set, ok := b.custom.get(name)
	if !ok {
		return nil
	}
	if cp := l.pools[b.pool.idx]; cp.custom != nil {
		if cs, ok := cp.custom.get(name); ok {
			set = set.intersect(cs)
		}
	}
	if set.complement {
		return nil
	}
	var out []int
	for _, v := range set.values {
		if set.inBounds(v) {
			out = append(out, s.valueDomain(key, v))
		}
	}
	return out
}

// pin fixes a new bin's value for a key: its custom label, or its types
// to those with that label value (-1: those without the label).
func (s *solver) pin(b *bin, key, d int) {
	for len(b.doms) <= key {
		b.doms = append(b.doms, -2)
	}
	k := s.keys[key]
	if s.isTypeKey(k.name) {
		b.labelCut = true
		for i, t := range b.pool.types {
			if !b.types.has(i) {
				continue
			}
			v, ok := t.it.Labels[k.name]
			if (d < 0 && ok) || (d >= 0 && (!ok || v != k.values[d])) {
				b.types.clear(i)
			}
		}
	} else if d >= 0 {
		if !b.ownCust {
			b.custom, b.ownCust = b.custom.clone(), true
		}
		b.custom.add(k.name, valueSet{values: []string{k.values[d]}})
	}
	if d >= 0 {
		b.doms[key] = d
	}
}
