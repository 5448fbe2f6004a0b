package scheduling

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// class is a set of pending pods that are interchangeable for scheduling:
// same namespace, labels and scheduling-relevant spec. The pods of one
// Deployment form one class, so the packer works on a few hundred classes
// with counts instead of thousands of pods.
type class struct {
	idx    int
	pods   []*corev1.Pod // sorted by namespace/name
	pod    *corev1.Pod   // representative
	ns     string
	labels map[string]string
	req    vec
	value  float64 // dual value of req, for ordering
	ports  []hostPort
	// resKey is classKey's hash of what the requests are made of.
	resKey uint64
	// volTerms are OR'ed zone requirements from the pod's volumes.
	volTerms []*reqs
	// err is a reason the whole class cannot be placed (missing claim,
	// dynamic resource claims).
	err string
	// memberOf are the counting groups whose selector matches the class.
	memberOf []*group
	// invAnti are groups owned by required anti-affinity terms (of any pod)
	// whose selector matches the class: the class must stay out of the
	// domains where those owners are.
	invAnti []*group
	// reqAnti and reqAff are the class's own required terms, counted as
	// owners wherever it lands.
	reqAnti []*group
	reqAff  []*group

	// relaxation state and the levels built so far.
	levels []*level
	cur    int
	// remaining is how many pods are still to place; failed how many could
	// not be placed.
	remaining  int
	failReason string
}

// hostPort is one host port a pod binds.
type hostPort struct {
	ip    string
	proto corev1.Protocol
	port  int32
}

func (a hostPort) conflicts(b hostPort) bool {
	if a.port != b.port || a.proto != b.proto {
		return false
	}
	return a.ip == b.ip || a.ip == "" || b.ip == "" || a.ip == "0.0.0.0" || b.ip == "0.0.0.0"
}

// podHostPorts lists the host ports of every container of a pod.
func podHostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(cs []corev1.Container) {
		for i := range cs {
			for _, port := range cs[i].Ports {
				if port.HostPort <= 0 {
					continue
				}
				proto := port.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				out = append(out, hostPort{ip: port.HostIP, proto: proto, port: port.HostPort})
			}
		}
	}
	add(p.Spec.InitContainers)
	add(p.Spec.Containers)
	return out
}

// buildClasses groups the provisionable pods. Pods are keyed by a 64-bit
// hash of everything scheduling looks at (see classKey); classes are
// then ordered independently of the input order.
func (s *solver) buildClasses() {
	s.labelsIdle = !labelsSelected(s.in)
	byKey := map[uint64]*class{}
	for _, p := range s.in.Pods {
		if reason := skipReason(p); reason != "" {
			s.plan.Skipped = append(s.plan.Skipped, Failure{Pod: p, Reason: reason})
			continue
		}
		k, res := s.classKey(p)
		c, ok := byKey[k]
		if !ok {
			c = s.newClass()
			*c = class{pod: p, ns: p.Namespace, labels: p.Labels, resKey: res}
			byKey[k] = c
			s.classes = append(s.classes, c)
		}
		c.pods = append(c.pods, p)
	}
	for _, c := range s.classes {
		if !slices.IsSortedFunc(c.pods, podCmp) {
			slices.SortFunc(c.pods, podCmp)
		}
		c.pod = c.pods[0]
		c.remaining = len(c.pods)
		c.ports = podHostPorts(c.pod)
		s.classVolumes(c)
		for i := range c.ports {
			for j := i + 1; j < len(c.ports); j++ {
				if c.ports[i].conflicts(c.ports[j]) {
					c.err = fmt.Sprintf("the pod asks for host port %d/%s twice", c.ports[i].port, c.ports[i].proto)
				}
			}
		}
		if usesResourceClaims(&c.pod.Spec) {
			c.err = "pod uses dynamic resource claims, which the simulator does not provision for"
		}
	}
}

// labelsSelected tells whether a pod's labels may matter to a plan. Only
// pod affinity, pod anti-affinity and topology spread constraints select
// pods by label (topology.go's groups, made from the pending pods' terms
// and the existing pods' required anti-affinity); where there are none,
// pods that differ in labels alone are one class (classKey leaves the
// labels out): Deployments of the same pod size, common in a cluster,
// are then packed as one class, and no pod's labels are hashed.
func labelsSelected(in *Input) bool {
	for _, p := range in.Pods {
		if a := p.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) || len(p.Spec.TopologySpreadConstraints) > 0 {
			return true
		}
	}
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
				return true
			}
		}
	}
	return false
}

// classSeed is what buildClasses made of a solve's pods: fresh copies of
// the classes as it left them and the pods it skipped. Solve's limits-free
// attempt (limitsfirst.go) hands it to the solve with the limits, which
// differs only in its pools' limits or minValues: what buildClasses reads
// (the pods, claims and volumes) is the same, so the classes, their pods'
// order and the skipped pods are too. Only what buildClasses sets is
// copied; the rest (requests, topology, levels, counts) setup and the
// packer make afresh, and the attempt's solver is not kept alive. Hashing
// every pod again was a tenth of a limited solve's CPU at 300 pods
// (spot-limits), for the same answer (TestReusedClassesAreBuiltClasses).
type classSeed struct {
	classes []*class
	skipped []Failure
}

// classSeed copies s's classes and skipped pods (see the type).
func (s *solver) classSeed() *classSeed {
	cs := &classSeed{skipped: s.plan.Skipped}
	for _, c := range s.classes {
		cs.classes = append(cs.classes, &class{pods: c.pods, pod: c.pod, ns: c.ns, labels: c.labels, resKey: c.resKey,
			ports: c.ports, volTerms: c.volTerms, err: c.err, remaining: len(c.pods)})
	}
	return cs
}

// podCmp orders pods as podLess does.
func podCmp(a, b *corev1.Pod) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(string(a.UID), string(b.UID))
}

func podLess(a, b *corev1.Pod) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.UID < b.UID
}

// skipReason tells why a pod is not for the simulator, or "".
func skipReason(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return "already bound to " + p.Spec.NodeName
	}
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && (o.Kind == "DaemonSet" || o.Kind == "Node") {
			return "owned by a " + o.Kind
		}
	}
	if p.DeletionTimestamp != nil {
		return "being deleted"
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return "finished"
	}
	return ""
}

// level is one relaxation step of a class: the constraints the packer
// enforces for it at that step.
type level struct {
	cls  *class
	idx  int
	desc string
	// nodeReqs is the node requirement in force: the selected required
	// term (with nodeSelector and volume topology) and the heaviest
	// remaining preferred node term.
	nodeReqs    *reqs
	tolerations []corev1.Toleration
	strictTaint bool // PreferNoSchedule taints not tolerated yet
	anti        []*group
	aff         []*group
	// antiSelf/affSelf: the class is selected by the term itself.
	antiSelf []bool
	affSelf  []bool
	spreads  []*spread
	// zoneKey/ctKey: the level's constraints need a new node's zone or
	// capacity type pinned (it owns or is counted by such a group).
	zoneKey, ctKey bool
	// badKey names a topology key a new node cannot provide a value for.
	badKey string
	pools  []*classPool
	// domPools and domReqs are pools and nodeReqs without the preferred
	// node term: only required node affinity narrows a spread's domains.
	domPools []*classPool
	domReqs  *reqs
	// otherKeys are the keys other than hostname, zone and capacity type
	// the level's topology reads; a new node is pinned to one value of
	// each when such a pod joins it.
	otherKeys []int
	// existing caches compatibility with existing nodes: 0 unknown, 1 yes,
	// 2 no.
	existing []uint8
	// hasRange: constraints whose limit depends on other domains' counts
	// (zone and capacity-type spreads), which need retry rounds.
	hasRange bool
	// twinsAgree: allowance answers alike for new nodes of one shape
	// (growidx.go's twin groups) for this level: every term topoAllow
	// reads (anti-affinity, affinity, spreads, other classes' anti-
	// affinity against it) is keyed by zone or capacity type, which
	// twins share with the counts of their domain, and no custom key is
	// pinned. A hostname key reads a node's own pods, which twins need
	// not share; a custom key its pinned value.
	twinsAgree bool
	st         relaxState
	// up caches upgrade searches per bin id, shared by the levels whose
	// searches read the same (growth.go: upCachesFor).
	up *upCaches
	// newTypes are newBinFor's types by pool (growth.go: newTypeMemo).
	newTypes []newType
}

// spread is a hard topology spread constraint of a level.
type spread struct {
	g          *group
	maxSkew    int
	minDomains int
	// eligible are the domains the pod could go to; the skew is measured
	// against the least loaded of them.
	eligible []int
	member   bool
}

// relaxState is where a class is in Karpenter's relaxation order.
type relaxState struct {
	term         int  // index of the required node term (with volumes) in use
	prefAffDrop  int  // heaviest preferred pod-affinity terms dropped
	prefAntiDrop int  // heaviest preferred anti-affinity terms dropped
	prefNodeDrop int  // heaviest preferred node-affinity terms dropped
	anywayDrop   int  // ScheduleAnyway spreads dropped
	tolPNS       bool // PreferNoSchedule taints tolerated
}

// level returns the class's current level, building it on first use.
func (s *solver) level(c *class) *level {
	if c.cur < len(c.levels) {
		return c.levels[c.cur]
	}
	var st relaxState
	desc := "as written"
	if len(c.levels) > 0 {
		var ok bool
		st, desc, ok = s.nextRelax(c, c.levels[len(c.levels)-1])
		if !ok {
			return nil
		}
	} else if s.in.Options.IgnorePreferences {
		p := prefs(c.pod)
		st = relaxState{prefAffDrop: len(p.aff), prefAntiDrop: len(p.anti), prefNodeDrop: len(p.node), anywayDrop: len(p.anyway)}
	}
	l := s.buildLevel(c, st, desc)
	c.levels = append(c.levels, l)
	return l
}

// relax moves a class one step down Karpenter's relaxation order
// (preferences.go): the first of several required node terms, the
// heaviest preferred pod affinity, the heaviest preferred anti-affinity,
// the heaviest preferred node affinity, one ScheduleAnyway spread, and last
// a toleration for PreferNoSchedule taints when some pool has one. It
// returns false when nothing is left to relax.
func (s *solver) relax(c *class) bool {
	if c.cur+1 < len(c.levels) {
		c.cur++
		return true
	}
	cur := c.levels[c.cur]
	st, desc, ok := s.nextRelax(c, cur)
	if !ok {
		return false
	}
	c.levels = append(c.levels, s.buildLevel(c, st, desc))
	c.cur++
	return true
}

func (s *solver) nextRelax(c *class, cur *level) (relaxState, string, bool) {
	st := cur.state()
	p := prefs(c.pod)
	terms := s.requiredTerms(c)
	switch {
	case st.term+1 < len(terms):
		st.term++
		return st, "dropped required node affinity term " + strconv.Itoa(st.term), true
	case st.prefAffDrop < len(p.aff):
		st.prefAffDrop++
		return st, "dropped a preferred pod affinity term", true
	case st.prefAntiDrop < len(p.anti):
		st.prefAntiDrop++
		return st, "dropped a preferred pod anti-affinity term", true
	case st.prefNodeDrop < len(p.node):
		st.prefNodeDrop++
		return st, "dropped a preferred node affinity term", true
	case st.anywayDrop < len(p.anyway):
		st.anywayDrop++
		return st, "dropped a ScheduleAnyway topology spread", true
	case !st.tolPNS && s.anyPreferNoSchedule:
		st.tolPNS = true
		return st, "tolerated PreferNoSchedule taints", true
	}
	return st, "", false
}

// preferences of a pod, heaviest first (stable for equal weights).
type podPrefs struct {
	aff    []corev1.PodAffinityTerm
	anti   []corev1.PodAffinityTerm
	node   []corev1.NodeSelectorTerm
	anyway []corev1.TopologySpreadConstraint
	hard   []corev1.TopologySpreadConstraint
}

func prefs(p *corev1.Pod) podPrefs {
	var out podPrefs
	if a := p.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			w := append([]corev1.WeightedPodAffinityTerm(nil), a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
			sort.SliceStable(w, func(i, j int) bool { return w[i].Weight > w[j].Weight })
			for _, t := range w {
				out.aff = append(out.aff, t.PodAffinityTerm)
			}
		}
		if a.PodAntiAffinity != nil {
			w := append([]corev1.WeightedPodAffinityTerm(nil), a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
			sort.SliceStable(w, func(i, j int) bool { return w[i].Weight > w[j].Weight })
			for _, t := range w {
				out.anti = append(out.anti, t.PodAffinityTerm)
			}
		}
		if a.NodeAffinity != nil {
			w := append([]corev1.PreferredSchedulingTerm(nil), a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
			sort.SliceStable(w, func(i, j int) bool { return w[i].Weight > w[j].Weight })
			for _, t := range w {
				out.node = append(out.node, t.Preference)
			}
		}
	}
	for _, t := range p.Spec.TopologySpreadConstraints {
		if t.WhenUnsatisfiable == corev1.ScheduleAnyway {
			out.anyway = append(out.anyway, t)
		} else {
			out.hard = append(out.hard, t)
		}
	}
	return out
}

// requiredTerms are the class's OR'ed node requirements: each required
// node-affinity term (or the nodeSelector alone) combined with each volume
// topology alternative.
func (s *solver) requiredTerms(c *class) []*reqs {
	base := s.nodeTerms(&c.pod.Spec)
	if len(base) == 0 {
		base = []*reqs{newReqs()}
	}
	if len(c.volTerms) == 0 {
		return base
	}
	var out []*reqs
	for _, b := range base {
		for _, v := range c.volTerms {
			r := b.clone()
			for _, k := range v.keys {
				r.add(k, v.sets[k])
			}
			out = append(out, r)
		}
	}
	return out
}

// spreadTerm is the required node term a level's spread domains are read
// from: the pod's own node affinity term (terms[term] less its volume
// topology). The kube-scheduler's nodeAffinityPolicy reads the pod's
// nodeSelector and required affinity only, so a volume pinned to one zone
// places the pod there without making the other zones stop counting.
func (s *solver) spreadTerm(c *class, terms []*reqs, term int) *reqs {
	if len(c.volTerms) == 0 {
		return terms[term]
	}
	base := s.nodeTerms(&c.pod.Spec)
	if len(base) == 0 {
		return newReqs()
	}
	return base[term/len(c.volTerms)]
}

func (l *level) state() relaxState { return l.st }

// buildLevel assembles the constraints of a relaxation state.
func (s *solver) buildLevel(c *class, st relaxState, desc string) *level {
	l := s.newLevel()
	*l = level{cls: c, idx: len(c.levels), desc: desc, st: st, strictTaint: !st.tolPNS}
	p := prefs(c.pod)
	terms := s.requiredTerms(c)
	// terms are made for this level: the term is its own unless the
	// preferred term narrows it (spreadTerm may hand the term out as
	// it was).
	l.nodeReqs = terms[st.term]
	if st.prefNodeDrop < len(p.node) {
		l.nodeReqs = l.nodeReqs.clone()
		pr := newReqs()
		if !pr.addNodeSelectorRequirements(p.node[st.prefNodeDrop].MatchExpressions) {
			pr = newReqs()
		}
		s.zoneIDsAsZones(pr)
		for _, k := range pr.keys {
			l.nodeReqs.add(k, pr.sets[k])
		}
	}
	l.tolerations = c.pod.Spec.Tolerations
	// Pod (anti)affinity: required terms plus the preferred ones not yet
	// dropped, all enforced.
	l.anti = append(l.anti, c.reqAnti...)
	for _, t := range p.anti[min(st.prefAntiDrop, len(p.anti)):] {
		l.anti = append(l.anti, s.groupFor(c.pod, t, kindAnti))
	}
	l.aff = append(l.aff, c.reqAff...)
	for _, t := range p.aff[min(st.prefAffDrop, len(p.aff)):] {
		l.aff = append(l.aff, s.groupFor(c.pod, t, kindAff))
	}
	for _, g := range l.anti {
		l.antiSelf = append(l.antiSelf, g.matches(s, c.ns, c.labels))
	}
	for _, g := range l.aff {
		l.affSelf = append(l.affSelf, g.matches(s, c.ns, c.labels))
	}
	hard := append([]corev1.TopologySpreadConstraint(nil), p.hard...)
	hard = append(hard, p.anyway[min(st.anywayDrop, len(p.anyway)):]...)
	l.pools = make([]*classPool, len(s.pools))
	for i, ps := range s.pools {
		l.pools[i] = s.classPoolCompat(l, ps)
	}
	l.domPools, l.domReqs = l.pools, l.nodeReqs
	if (st.prefNodeDrop < len(p.node) || len(c.volTerms) > 0) && len(hard) > 0 {
		withPref := l.nodeReqs
		l.nodeReqs = s.spreadTerm(c, terms, st.term)
		l.domPools = make([]*classPool, len(s.pools))
		for i, ps := range s.pools {
			l.domPools[i] = s.classPoolCompat(l, ps)
		}
		l.domReqs = l.nodeReqs
		l.nodeReqs = withPref
	}
	l.existing = make([]uint8, len(s.existingBins))
	for _, t := range hard {
		l.spreads = append(l.spreads, s.spreadFor(l, t))
	}
	for _, g := range l.anti {
		l.noteKey(s, g)
	}
	for _, g := range l.aff {
		l.noteKey(s, g)
	}
	for _, sp := range l.spreads {
		l.noteKey(s, sp.g)
		if s.keys[sp.g.key].kind != keyHostname {
			l.hasRange = true
		}
	}
	for _, g := range c.memberOf {
		l.noteKey(s, g)
	}
	for _, g := range c.invAnti {
		l.noteKey(s, g)
	}
	l.twinsAgree = len(l.otherKeys) == 0 && !slices.ContainsFunc(l.anti, s.notShared) &&
		!slices.ContainsFunc(l.aff, s.notShared) && !slices.ContainsFunc(c.invAnti, s.notShared) &&
		!slices.ContainsFunc(l.spreads, func(sp *spread) bool { return s.notShared(sp.g) })
	return l
}

// notShared tells whether a group's key is other than a zone or capacity
// type (what twin nodes share: level.twinsAgree).
func (s *solver) notShared(g *group) bool {
	k := s.keys[g.key].kind
	return k != keyZone && k != keyCapacityType
}

// noteKey records what a topology key asks of new nodes.
func (l *level) noteKey(s *solver, g *group) {
	switch s.keys[g.key].kind {
	case keyZone:
		l.zoneKey = true
	case keyCapacityType:
		l.ctKey = true
	case keyOther:
		if l.badKey == "" && !s.keys[g.key].fixedOnNewNodes {
			l.badKey = s.keys[g.key].name
		}
		if !slices.Contains(l.otherKeys, g.key) {
			l.otherKeys = append(l.otherKeys, g.key)
		}
	}
}

// usesResourceClaims tells whether a pod asks for dynamic resource
// allocation: claims of its own, or of any container or init container
// (Karpenter v1.15's HasDRARequirements).
func usesResourceClaims(spec *corev1.PodSpec) bool {
	if len(spec.ResourceClaims) > 0 {
		return true
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			if len(c.Resources.Claims) > 0 {
				return true
			}
		}
	}
	return false
}

// withoutResourceClaims are the DaemonSets whose pods ask for no dynamic
// resource claims. As Karpenter v1.15 by default (IGNORE_DRA_REQUESTS),
// one that does is left out of every node's overhead: its pods need
// devices the simulator does not model, and counting their requests
// would size nodes for pods that may never run there.
func withoutResourceClaims(dss []*appsv1.DaemonSet) []*appsv1.DaemonSet {
	for i, ds := range dss {
		if !usesResourceClaims(&ds.Spec.Template.Spec) {
			continue
		}
		out := append([]*appsv1.DaemonSet(nil), dss[:i]...)
		for _, d := range dss[i+1:] {
			if !usesResourceClaims(&d.Spec.Template.Spec) {
				out = append(out, d)
			}
		}
		return out
	}
	return dss
}
