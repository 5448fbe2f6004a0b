package scheduling

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/joist-dev/joist/pkg/model"
)

// Topology is tracked with counting groups. A group is one (topology key,
// namespaces, label selector) triple; it counts the pods it selects in each
// domain of its key (a node for hostname, a zone, a capacity type, or a
// label value). Pod affinity, anti-affinity and spread constraints are
// checks on those counts, so placing k pods of a class is a few array
// updates.

type keyKind int

const (
	keyHostname keyKind = iota
	keyZone
	keyCapacityType
	keyOther
)

// keyInfo is a topology key and its domains. Zone and capacity-type domains
// are the world's zone and capacity-type indexes; hostname domains are bin
// ids; other keys intern their label values.
type keyInfo struct {
	name   string
	kind   keyKind
	intern map[string]int
	values []string
	// fixedOnNewNodes: every usable pool gives new nodes one value for the
	// key, so new nodes have a domain for it.
	fixedOnNewNodes bool
}

func (s *solver) keyID(name string) int {
	name = s.topologyKeyOf(model.NormalizeLabelKey(name))
	if id, ok := s.keyIdx[name]; ok {
		return id
	}
	k := &keyInfo{name: name, intern: map[string]int{}}
	switch name {
	case corev1.LabelHostname:
		k.kind = keyHostname
	case corev1.LabelTopologyZone:
		k.kind = keyZone
	case model.LabelCapacityType:
		k.kind = keyCapacityType
	default:
		k.kind = keyOther
		// A type label is pinned with the node's types; a custom label
		// a pool gives a finite set of values is pinned to one of them.
		k.fixedOnNewNodes = true
		for _, ps := range s.pools {
			if !ps.ok || s.isTypeKey(name) {
				continue
			}
			set, ok := ps.custom.get(name)
			if !ok || set.complement || len(set.values) == 0 {
				k.fixedOnNewNodes = false
			}
		}
	}
	id := len(s.keys)
	s.keys = append(s.keys, k)
	s.keyIdx[name] = id
	return id
}

// valueDomain interns a label value of a key.
func (s *solver) valueDomain(key int, v string) int {
	k := s.keys[key]
	switch k.kind {
	case keyZone:
		if i, ok := s.world.zoneIdx[v]; ok {
			return i
		}
		return -1
	case keyCapacityType:
		if i, ok := s.world.ctIdx[v]; ok {
			return i
		}
		return -1
	}
	if i, ok := k.intern[v]; ok {
		return i
	}
	i := len(k.values)
	k.intern[v] = i
	k.values = append(k.values, v)
	return i
}

type groupKind int

const (
	kindAnti groupKind = iota
	kindAff
	kindSpread
)

// group counts selected pods per domain of a key.
type group struct {
	id       int
	key      int
	sig      string
	selector labels.Selector
	// namespaces: all, or a set.
	nsAll bool
	nsSet map[string]bool
	nsSel labels.Selector
	// counts of selected pods per domain, and their total.
	counts domCounts
	total  int
	// owners counts pods whose *required* anti-affinity term this group
	// is, per domain (inverse anti-affinity); affOwners pods whose enforced
	// affinity term it is (so moves never strand them).
	owners    domCounts
	affOwners domCounts
	hasOwners bool
	// spreadSkew is the smallest maxSkew of hard spreads counting with the
	// group (0: none), and spreadEligible their domains, used to keep
	// moves from breaking a spread.
	spreadSkew     int
	spreadEligible []int
	// eqPairs are "key=value" pairs every selected pod must carry, to find
	// candidate pods quickly.
	eqPairs []string
	// filter (OR'ed node requirements) and filterTols limit which existing
	// nodes' pods a spread counts.
	filter      []*reqs
	filterTols  []corev1.Toleration
	honorTaints bool
}

// matches tells whether the group selects a pod with these namespace and
// labels.
func (g *group) matches(s *solver, ns string, l map[string]string) bool {
	if !g.nsAll && !g.nsSet[ns] {
		if g.nsSel == nil || !g.nsSel.Matches(labels.Set(s.nsLabels(ns))) {
			return false
		}
	}
	return g.selector.Matches(labels.Set(l))
}

func (s *solver) nsLabels(ns string) map[string]string {
	if l, ok := s.namespaces[ns]; ok {
		return l
	}
	return map[string]string{corev1.LabelMetadataName: ns}
}

// groupFor returns the group of a pod (anti)affinity term as seen from its
// owner pod, creating it on first use.
func (s *solver) groupFor(owner *corev1.Pod, t corev1.PodAffinityTerm, kind groupKind) *group {
	sel := selectorWithKeys(t.LabelSelector, owner.Labels, t.MatchLabelKeys, t.MismatchLabelKeys)
	g := &group{key: s.keyID(t.TopologyKey), selector: sel}
	var nsSig string
	switch {
	case t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels) == 0 && len(t.NamespaceSelector.MatchExpressions) == 0:
		g.nsAll = true
		nsSig = "*"
	default:
		g.nsSet = map[string]bool{}
		for _, n := range t.Namespaces {
			g.nsSet[n] = true
		}
		if t.NamespaceSelector != nil {
			ns, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
			if err != nil {
				ns = labels.Nothing()
			}
			g.nsSel = ns
			nsSig = "sel:" + ns.String()
		} else if len(t.Namespaces) == 0 {
			g.nsSet[owner.Namespace] = true
		}
		names := make([]string, 0, len(g.nsSet))
		for n := range g.nsSet {
			names = append(names, n)
		}
		sort.Strings(names)
		nsSig += "|" + strings.Join(names, ",")
	}
	g.sig = s.keys[g.key].name + "|" + nsSig + "|" + sel.String()
	return s.internGroup(g)
}

// spreadGroup returns the group counting for a spread constraint: the
// owner's namespace and the constraint's selector, and (with the default
// nodeAffinityPolicy Honor, or nodeTaintsPolicy Honor) only on nodes the
// owner could use, as the kube-scheduler counts.
func (s *solver) spreadGroup(owner *corev1.Pod, t corev1.TopologySpreadConstraint) *group {
	sel := selectorWithKeys(t.LabelSelector, owner.Labels, t.MatchLabelKeys, nil)
	g := &group{key: s.keyID(t.TopologyKey), selector: sel, nsSet: map[string]bool{owner.Namespace: true}}
	g.sig = s.keys[g.key].name + "|" + owner.Namespace + "|" + sel.String()
	if t.NodeAffinityPolicy == nil || *t.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor {
		if terms := s.nodeTerms(&owner.Spec); len(terms) > 0 {
			g.filter = terms
			for _, r := range terms {
				g.sig += "|node:" + r.signature()
			}
		}
	}
	if t.NodeTaintsPolicy != nil && *t.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
		g.filterTols, g.honorTaints = owner.Spec.Tolerations, true
		g.sig += "|taints:" + strconv.FormatUint(jsonHash(owner.Spec.Tolerations), 16)
	}
	return s.internGroup(g)
}

// countsOn tells whether pods on a node count for the group. For a new
// node only the taints are checked (its pool's): its node affinity is
// already in the spread's domains, but a domain two pools share holds
// nodes with different taints, and with nodeTaintsPolicy Honor the
// kube-scheduler counts only the nodes whose taints the owner tolerates.
func (g *group) countsOn(b *bin) bool {
	if g.honorTaints {
		taints := b.taints
		if b.node == nil && b.pool != nil {
			taints = b.pool.taints
		}
		if _, bad := firstUntolerated(g.filterTols, taints, false); bad {
			return false
		}
	}
	if b.node == nil || len(g.filter) == 0 {
		return true
	}
	for _, r := range g.filter {
		if r.matchesLabels(b.node.Labels) {
			return true
		}
	}
	return false
}

func (s *solver) internGroup(g *group) *group {
	if old, ok := s.groupIdx[g.sig]; ok {
		return old
	}
	g.id = len(s.groups)
	g.eqPairs = equalityPairs(g.selector)
	s.groups = append(s.groups, g)
	s.groupIdx[g.sig] = g
	return g
}

// selectorWithKeys converts a label selector and folds in matchLabelKeys
// (key In the owner's value) and mismatchLabelKeys (NotIn). A nil selector
// selects nothing, as in the API.
func selectorWithKeys(ls *metav1.LabelSelector, ownerLabels map[string]string, match, mismatch []string) labels.Selector {
	if ls == nil {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	for _, k := range match {
		if v, ok := ownerLabels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.In, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	for _, k := range mismatch {
		if v, ok := ownerLabels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.NotIn, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	return sel
}

// equalityPairs lists k=v pairs a selector insists on.
func equalityPairs(sel labels.Selector) []string {
	reqs, ok := sel.Requirements()
	if !ok {
		return nil
	}
	var out []string
	for _, r := range reqs {
		if (r.Operator() == selection.Equals || r.Operator() == selection.DoubleEquals || r.Operator() == selection.In) && r.Values().Len() == 1 {
			out = append(out, r.Key()+"="+r.Values().UnsortedList()[0])
		}
	}
	return out
}

// buildTopology creates the groups of every class's required terms and
// spreads, and of existing pods' required anti-affinity, then counts
// existing pods and decides class membership.
func (s *solver) buildTopology() {
	for _, c := range s.classes {
		if a := c.pod.Spec.Affinity; a != nil {
			if a.PodAntiAffinity != nil {
				for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
					c.reqAnti = append(c.reqAnti, s.groupFor(c.pod, t, kindAnti))
				}
			}
			if a.PodAffinity != nil {
				for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
					c.reqAff = append(c.reqAff, s.groupFor(c.pod, t, kindAff))
				}
			}
		}
		// Create the groups of preferences and spreads up front too, so
		// membership is complete before anything is placed.
		p := prefs(c.pod)
		for _, t := range p.aff {
			s.groupFor(c.pod, t, kindAff)
		}
		for _, t := range p.anti {
			s.groupFor(c.pod, t, kindAnti)
		}
		for _, t := range append(p.hard, p.anyway...) {
			s.spreadGroup(c.pod, t)
		}
	}
	// Existing pods: their required anti-affinity makes groups too.
	type ownerAt struct {
		g *group
		b *bin
	}
	var existingOwners []ownerAt
	for _, b := range s.existingBins {
		for _, p := range b.node.Pods {
			if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
				for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
					existingOwners = append(existingOwners, ownerAt{s.groupFor(p, t, kindAnti), b})
				}
			}
		}
	}
	s.indexGroups()
	// Count existing pods.
	for _, b := range s.existingBins {
		count := func(ns string, labels map[string]string) {
			for _, g := range s.candidateGroups(labels) {
				if g.matches(s, ns, labels) && g.countsOn(b) {
					d := s.domain(b, g.key, -1, -1)
					inc(&g.counts, d, 1)
					g.total++
				}
			}
		}
		for _, p := range b.node.Pods {
			count(p.Namespace, p.Labels)
		}
		for i := range b.node.Bound {
			count(b.node.Bound[i].Namespace, b.node.Bound[i].Labels)
		}
	}
	for _, o := range existingOwners {
		inc(&o.g.owners, s.domain(o.b, o.g.key, -1, -1), 1)
		o.g.hasOwners = true
	}
	for _, c := range s.classes {
		for _, g := range c.reqAnti {
			g.hasOwners = true
		}
	}
	// Membership.
	for _, c := range s.classes {
		for _, g := range s.candidateGroups(c.labels) {
			if g.matches(s, c.ns, c.labels) {
				c.memberOf = append(c.memberOf, g)
				if g.hasOwners {
					c.invAnti = append(c.invAnti, g)
				}
			}
		}
		sort.Slice(c.memberOf, func(i, j int) bool { return c.memberOf[i].id < c.memberOf[j].id })
		sort.Slice(c.invAnti, func(i, j int) bool { return c.invAnti[i].id < c.invAnti[j].id })
	}
}

// indexGroups indexes groups by one equality pair each (or as "any").
func (s *solver) indexGroups() {
	s.groupByPair = map[string][]*group{}
	s.groupsAny = nil
	for _, g := range s.groups {
		if len(g.eqPairs) == 0 {
			s.groupsAny = append(s.groupsAny, g)
			continue
		}
		s.groupByPair[g.eqPairs[0]] = append(s.groupByPair[g.eqPairs[0]], g)
	}
}

// candidateGroups lists groups that may select a pod with these labels.
func (s *solver) candidateGroups(l map[string]string) []*group {
	if len(s.groups) == 0 {
		return nil // no pod selects pods (most workloads): no label to look up
	}
	out := append([]*group(nil), s.groupsAny...)
	if len(s.groupByPair) > 0 {
		for k, v := range l {
			out = append(out, s.groupByPair[k+"="+v]...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// spreadFor builds a hard spread of a level: its group and the domains the
// pod could land in (from the pools it is compatible with and the existing
// nodes that match it), as Karpenter does.
func (s *solver) spreadFor(l *level, t corev1.TopologySpreadConstraint) *spread {
	g := s.spreadGroup(l.cls.pod, t)
	sp := &spread{g: g, maxSkew: int(t.MaxSkew), member: g.matches(s, l.cls.ns, l.cls.labels)}
	if sp.maxSkew < 1 {
		sp.maxSkew = 1
	}
	if t.MinDomains != nil {
		sp.minDomains = int(*t.MinDomains)
	}
	k := s.keys[g.key]
	if k.kind != keyHostname {
		seen := map[int]bool{}
		honorAffinity := t.NodeAffinityPolicy == nil || *t.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
		honorTaints := t.NodeTaintsPolicy != nil && *t.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
		// Domains are every zone (capacity type) where a node the
		// kube-scheduler would count could exist: new nodes of any pool
		// whose requirements the pod accepts (tainted pools too, unless
		// taints are honoured), and existing nodes. More domains only make
		// the global minimum smaller, so the plan stays valid whichever of
		// them end up with nodes.
		for i, ps := range s.pools {
			cp := l.domPools[i]
			if !ps.ok || (honorTaints && !cp.ok) || (!cp.ok && cp.kind != failTaint && cp.kind != failResources && cp.kind != failOfferings && cp.kind != failPorts) {
				continue
			}
			zm, cm := cp.domainZones, cp.domainCTs
			if !honorAffinity {
				zm, cm = ps.zoneMask, ps.ctMask
			}
			switch k.kind {
			case keyZone:
				for z := range s.world.zones {
					if maskHas(zm, z) {
						seen[z] = true
					}
				}
			case keyCapacityType:
				for c := range s.world.cts {
					if maskHas(cm, c) {
						seen[c] = true
					}
				}
			default:
				// Every value a node of the pool the pod accepts could
				// be pinned to.
				if s.isTypeKey(k.name) {
					for ti, t := range ps.types {
						if cp.labelTypes == nil || !cp.labelTypes.has(ti) {
							continue
						}
						if v, ok := t.it.Labels[k.name]; ok {
							seen[s.valueDomain(g.key, v)] = true
						}
					}
				} else if set, ok := ps.custom.get(k.name); ok && !set.complement {
					if honorAffinity && cp.custom != nil {
						if cs, ok := cp.custom.get(k.name); ok {
							set = set.intersect(cs)
						}
					}
					for _, v := range set.values {
						if set.inBounds(v) {
							seen[s.valueDomain(g.key, v)] = true
						}
					}
				}
			}
		}
		for _, b := range s.existingBins {
			if honorAffinity && !l.domReqs.matchesLabels(b.node.Labels) {
				continue
			}
			if honorTaints {
				if _, bad := firstUntolerated(l.tolerations, b.node.Taints, false); bad {
					continue
				}
			}
			if d := s.domain(b, g.key, -1, -1); d >= 0 {
				seen[d] = true
			}
		}
		for d := range seen {
			sp.eligible = append(sp.eligible, d)
		}
		sort.Ints(sp.eligible)
		if g.spreadSkew == 0 || sp.maxSkew < g.spreadSkew {
			g.spreadSkew = sp.maxSkew
			g.spreadEligible = sp.eligible
		}
	}
	return sp
}

// minCount is the global minimum of a spread: the least count among its
// eligible domains, or 0 when there are fewer than minDomains of them.
func (sp *spread) minCount() int32 {
	if len(sp.eligible) == 0 || len(sp.eligible) < sp.minDomains {
		return 0
	}
	m := int32(-1)
	for _, d := range sp.eligible {
		if c := at(sp.g.counts, d); m < 0 || c < m {
			m = c
		}
	}
	return m
}
