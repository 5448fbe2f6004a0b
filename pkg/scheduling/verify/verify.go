// Package verify checks a scheduling plan against its input with an
// independent reading of the Kubernetes rules: it shares no code with the
// packer in pkg/scheduling (only its Input and Plan types), so a bug in
// the packer's host-port, selector, taint, label or topology logic is not
// repeated here and the property tests catch it.
//
// Where it can, it uses Kubernetes' own code (k8s.io/component-helpers for
// requests, required node affinity and taints; apimachinery for label
// selectors); the rest is written from the Kubernetes documentation:
// host ports (the NodePorts filter) and matchLabelKeys/mismatchLabelKeys
// in pkg/pods (which the binder's check shares), DaemonSet tolerations,
// well-known label aliases and topology spread skew here.
package verify

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/klog/v2"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Plan checks a plan against its input with code that shares nothing
// with the packer: requests from k8s.io/component-helpers, node affinity
// and taints through the kube-scheduler's helpers, and topology from the
// final placement of every pod. It returns every violation found (nil when
// the plan is sound). Tests run it on every plan; a caller may run it as a
// last line of defence before launching.
//
// What it checks, for every node that receives pods (a new node under
// every instance type option, zone and capacity type it may get):
//   - each pending pod is placed, unschedulable or skipped exactly once;
//   - required node affinity and nodeSelector match the node's labels;
//   - NoSchedule and NoExecute taints are tolerated;
//   - requests (plus DaemonSet pods on new nodes, sized as their pods in
//     the input show them) fit allocatable;
//   - host ports do not clash;
//   - the PersistentVolumes of bound claims accept the node, and a
//     generic ephemeral volume's existing claim belongs to its pod;
//   - required pod anti-affinity holds both ways, required pod affinity
//     has a partner in the domain, and DoNotSchedule spreads keep their
//     skew, over the final placement of all pods;
//   - pool limits hold even if every new node gets its largest option.
func Plan(in scheduling.Input, plan scheduling.Plan) []error {
	v := &verifier{in: in, plan: plan, pools: map[string]*poolRef{}}
	v.run()
	return v.errs
}

type poolRef struct {
	labels map[string]string
	taints []corev1.Taint
	limits corev1.ResourceList
	used   map[corev1.ResourceName]int64
	nodes  int64
	added  int // new nodes the plan adds
}

// vnode is a node of the final state. A new node has several label sets
// (one per option, zone and capacity type); topology uses the labels all
// of them share.
type vnode struct {
	name     string
	variants []map[string]string
	common   map[string]string
	allocs   []corev1.ResourceList
	// volLimits[i] are the volume attachment limits under allocs[i].
	volLimits []map[string]int64
	// daemons[i] are the DaemonSet pods that would run under allocs[i].
	daemons  [][]*corev1.Pod
	taints   []corev1.Taint
	pods     []*corev1.Pod // everything on the node, placed and existing
	placed   []*corev1.Pod
	existing bool
}

type verifier struct {
	// daemonReqs are DaemonSets' requests as their pods show them, by
	// namespace/name (daemonRequests).
	daemonReqs map[string]corev1.ResourceList
	in         scheduling.Input
	plan       scheduling.Plan
	pools      map[string]*poolRef
	nodes      []*vnode
	errs       []error
}

func (v *verifier) fail(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

func (v *verifier) run() {
	v.checkAccounting()
	types := map[string]*scheduling.InstanceType{}
	for _, it := range v.in.InstanceTypes {
		types[it.Name] = it
	}
	for _, p := range v.in.Pools {
		l := map[string]string{p.Label(): p.Name}
		for k, val := range p.Labels {
			l[k] = val
		}
		v.pools[p.Name] = &poolRef{labels: l, taints: p.Taints, limits: p.Limits, used: map[corev1.ResourceName]int64{}}
	}
	placedOn := map[string][]*corev1.Pod{}
	for _, pl := range v.plan.Existing {
		placedOn[pl.Node] = append(placedOn[pl.Node], pl.Pods...)
	}
	for _, n := range v.in.Nodes {
		vn := &vnode{name: n.Name, common: n.Labels, variants: []map[string]string{n.Labels}, allocs: []corev1.ResourceList{n.Allocatable}, existing: true}
		lim := n.VolumeLimits
		if lim == nil {
			if it := types[n.Labels[corev1.LabelInstanceTypeStable]]; it != nil {
				lim = it.VolumeLimits
			}
			if list, ok := v.in.PoolInstanceTypes[n.Pool]; ok {
				for _, it := range list {
					if it.Name == n.Labels[corev1.LabelInstanceTypeStable] {
						lim = it.VolumeLimits
					}
				}
			}
		}
		vn.volLimits = []map[string]int64{lim}
		for _, t := range n.Taints {
			if n.InFlight && (goneAfterRegistration[t.Key] || v.startupTaint(n.Pool, t)) {
				continue
			}
			vn.taints = append(vn.taints, t)
		}
		if n.Unschedulable && len(placedOn[n.Name]) > 0 {
			v.fail("node %s is cordoned but receives pods", n.Name)
		}
		vn.pods = append(vn.pods, n.Pods...)
		for i := range n.Bound {
			vn.pods = append(vn.pods, n.Bound[i].Pod())
		}
		vn.placed = placedOn[n.Name]
		vn.pods = append(vn.pods, vn.placed...)
		vn.daemons = [][]*corev1.Pod{nil}
		if n.InFlight {
			vn.daemons[0] = v.daemonPods(vn.taints, []map[string]string{n.Labels}, n)
		}
		v.nodes = append(v.nodes, vn)
		if pr := v.pools[n.Pool]; pr != nil {
			pr.nodes++
			for r, q := range nodeCapacity(n) {
				pr.used[r] += verifyValue(r, q)
			}
		}
	}
	for i, nn := range v.plan.NewNodes {
		pr := v.pools[nn.Pool]
		if pr == nil {
			v.fail("new node %d: unknown pool %q", i, nn.Pool)
			continue
		}
		vn := &vnode{name: "new-" + strconv.Itoa(i), taints: pr.taints, placed: nn.Pods}
		vn.pods = append(vn.pods, nn.Pods...)
		largest := map[corev1.ResourceName]int64{}
		if len(nn.InstanceTypeOptions) == 0 {
			v.fail("new node %d has no instance type", i)
			continue
		}
		if nn.InstanceTypeOptions[0].Name != nn.Cheapest.InstanceType || nn.InstanceTypeOptions[0].PricePerHour != nn.Cheapest.PricePerHour {
			v.fail("new node %d: cheapest offering is not the first option", i)
		}
		if list, ok := v.in.PoolInstanceTypes[nn.Pool]; ok {
			types = map[string]*scheduling.InstanceType{}
			for _, it := range list {
				types[it.Name] = it
			}
		}
		for _, o := range nn.InstanceTypeOptions {
			it := types[o.Name]
			if it == nil {
				v.fail("new node %d: unknown instance type %s", i, o.Name)
				continue
			}
			first := len(vn.variants)
			for _, z := range nn.Zones {
				for _, ct := range nn.CapacityTypes {
					l := map[string]string{}
					for k, val := range pr.labels {
						l[k] = val
					}
					for k, val := range nn.Labels {
						l[k] = val
					}
					for k, val := range it.Labels {
						l[k] = val
					}
					l[corev1.LabelTopologyZone] = z
					if id, ok := v.in.ZoneIDs[z]; ok {
						// The zone's ID, as the cloud controller manager
						// labels every node.
						l["topology.k8s.aws/zone-id"] = id
					}
					l["karpenter.sh/capacity-type"] = ct
					l[corev1.LabelHostname] = vn.name
					l[labelKarpenterRegistered] = "true"
					l[labelKarpenterInitialized] = "true"
					if v.in.Region != "" {
						l[corev1.LabelTopologyRegion] = v.in.Region
					}
					vn.variants = append(vn.variants, l)
				}
			}
			vn.allocs = append(vn.allocs, it.Allocatable)
			vn.volLimits = append(vn.volLimits, it.VolumeLimits)
			vn.daemons = append(vn.daemons, v.daemonPods(vn.taints, vn.variants[first:], nil))
			for r, q := range it.Capacity {
				largest[r] = max(largest[r], verifyValue(r, q))
			}
		}
		vn.common = commonLabels(vn.variants)
		pr.nodes++
		pr.added++
		for r, q := range largest {
			pr.used[r] += q
		}
		v.nodes = append(v.nodes, vn)
	}
	for _, vn := range v.nodes {
		v.checkNode(vn)
	}
	v.checkTopology()
	names := make([]string, 0, len(v.pools))
	for n := range v.pools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pr := v.pools[n]
		if pr.added == 0 {
			continue // a pool already over its limit is not the plan's doing
		}
		for r, q := range pr.limits {
			lim := verifyValue(r, q)
			if r == "nodes" {
				if pr.nodes > lim {
					v.fail("pool %q has %d nodes, limit %d", n, pr.nodes, lim)
				}
				continue
			}
			if pr.used[r] > lim {
				v.fail("pool %q uses %d %s, limit %d", n, pr.used[r], r, lim)
			}
		}
	}
}

func verifyValue(r corev1.ResourceName, q resource.Quantity) int64 {
	if r == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func nodeCapacity(n *scheduling.Node) corev1.ResourceList {
	if len(n.Capacity) > 0 {
		return n.Capacity
	}
	return n.Allocatable
}

func commonLabels(vs []map[string]string) map[string]string {
	out := map[string]string{}
	if len(vs) == 0 {
		return out
	}
	for k, val := range vs[0] {
		same := true
		for _, o := range vs[1:] {
			if o[k] != val {
				same = false
				break
			}
		}
		if same {
			out[k] = val
		}
	}
	return out
}

// checkAccounting: every pending pod appears exactly once.
func (v *verifier) checkAccounting() {
	seen := map[*corev1.Pod]int{}
	for _, pl := range v.plan.Existing {
		for _, p := range pl.Pods {
			seen[p]++
		}
	}
	for _, nn := range v.plan.NewNodes {
		for _, p := range nn.Pods {
			seen[p]++
		}
	}
	for _, f := range v.plan.Unschedulable {
		seen[f.Pod]++
	}
	for _, f := range v.plan.Skipped {
		seen[f.Pod]++
	}
	for _, p := range v.in.Pods {
		if seen[p] != 1 {
			v.fail("pod %s/%s appears %d times in the plan", p.Namespace, p.Name, seen[p])
		}
	}
	if len(seen) != len(v.in.Pods) {
		v.fail("plan mentions %d pods, input has %d", len(seen), len(v.in.Pods))
	}
}

// daemonPods are the DaemonSet pods that would run on a node with any of
// these label sets (only for nodes whose DaemonSet pods are not running).
func (v *verifier) daemonPods(taints []corev1.Taint, variants []map[string]string, n *scheduling.Node) []*corev1.Pod {
	var out []*corev1.Pod
	for _, ds := range v.in.DaemonSets {
		if n != nil && runsDaemonPod(n, ds.Namespace, ds.Name) {
			continue
		}
		if claimsDevices(&ds.Spec.Template.Spec) {
			// Karpenter's default (IGNORE_DRA_REQUESTS): a DaemonSet
			// with dynamic resource claims reserves nothing.
			continue
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: ds.Name + "-ds"}, Spec: ds.Spec.Template.Spec}
		if r, ok := v.daemonRequests()[ds.Namespace+"/"+ds.Name]; ok {
			// Its pods' requests stand for the template's; the host
			// ports stay.
			c := corev1.Container{Name: "observed", Resources: corev1.ResourceRequirements{Requests: r}}
			for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
				for _, tc := range cs {
					c.Ports = append(c.Ports, tc.Ports...)
				}
			}
			pod.Spec.Containers, pod.Spec.InitContainers = []corev1.Container{c}, nil
			pod.Spec.Overhead, pod.Spec.Resources = nil, nil
		}
		pod.Spec.Tolerations = append(append([]corev1.Toleration(nil), pod.Spec.Tolerations...), daemonSetTolerations(pod)...)
		if !toleratesAll(pod, taints) {
			continue
		}
		for _, l := range variants {
			if matchNode(pod, l) {
				out = append(out, pod)
				break
			}
		}
	}
	return out
}

// daemonRequests are, per DaemonSet (namespace/name), the largest
// requests (per resource) of its pods in the input — pending or on a node,
// whole or compact — made from its current template: the DaemonSet
// controller stamps each pod with the generation it was made from, and an
// unstamped pod counts. A new node's DaemonSet pod is made like them
// (webhooks, VPA), so they, not the template, say what it will request.
func (v *verifier) daemonRequests() map[string]corev1.ResourceList {
	if v.daemonReqs != nil {
		return v.daemonReqs
	}
	v.daemonReqs = map[string]corev1.ResourceList{}
	gen := map[string]int64{}
	for _, ds := range v.in.DaemonSets {
		gen[ds.Namespace+"/"+ds.Name] = ds.Generation
	}
	see := func(p *corev1.Pod) {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return
		}
		for _, ref := range p.OwnerReferences {
			if ref.Kind != "DaemonSet" {
				continue
			}
			key := p.Namespace + "/" + ref.Name
			g, known := gen[key]
			if !known {
				continue
			}
			if stamp, ok := p.Labels["pod-template-generation"]; ok && g != 0 && stamp != strconv.FormatInt(g, 10) {
				continue
			}
			have := v.daemonReqs[key]
			if have == nil {
				have = corev1.ResourceList{}
				v.daemonReqs[key] = have
			}
			for r, q := range resourcehelper.PodRequests(withDefaultRequests(p), resourcehelper.PodResourcesOptions{}) {
				if cur, ok := have[r]; !ok || q.Cmp(cur) > 0 {
					have[r] = q
				}
			}
		}
	}
	for _, p := range v.in.Pods {
		see(p)
	}
	for _, n := range v.in.Nodes {
		for _, p := range n.Pods {
			see(p)
		}
		for i := range n.Bound {
			see(n.Bound[i].Pod())
		}
	}
	return v.daemonReqs
}

// startupTaint says whether t is one of the startup taints of the named
// pool: on an in-flight node the agent that owns it removes it once the
// node is ready, so a pod placed there need not tolerate it.
func (v *verifier) startupTaint(pool string, t corev1.Taint) bool {
	for _, p := range v.in.Pools {
		if p.Name != pool {
			continue
		}
		for _, st := range p.StartupTaints {
			if st.Key == t.Key && st.Effect == t.Effect {
				return true
			}
		}
	}
	return false
}

func matchNode(p *corev1.Pod, l map[string]string) bool {
	ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: withAliases(l), Name: l[corev1.LabelHostname]}})
	return err == nil && ok
}

func toleratesAll(p *corev1.Pod, taints []corev1.Taint) bool {
	_, untolerated := schedcorev1.FindMatchingUntoleratedTaint(klog.Background(), taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, true)
	return !untolerated
}

// checkNode: affinity, taints, resources and ports of the placed pods.
func (v *verifier) checkNode(vn *vnode) {
	if len(vn.placed) == 0 {
		return
	}
	affinityOK := map[string]bool{}
	for _, p := range vn.placed {
		if !toleratesAll(p, vn.taints) {
			v.fail("pod %s/%s does not tolerate the taints of node %s", p.Namespace, p.Name, vn.name)
		}
		v.checkVolumes(p, vn)
		if len(p.Spec.NodeSelector) == 0 && (p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil) {
			continue
		}
		key := fmt.Sprintf("%v|%s", p.Spec.NodeSelector, jsonOf(p.Spec.Affinity))
		if _, done := affinityOK[key]; done {
			continue
		}
		for _, l := range vn.variants {
			if !matchNode(p, l) {
				v.fail("pod %s/%s does not match node %s (labels %v)", p.Namespace, p.Name, vn.name, l)
				break
			}
		}
		affinityOK[key] = true
	}
	for i, alloc := range vn.allocs {
		v.checkFit(vn, i, alloc)
		v.checkAttachments(vn, vn.volLimits[i])
	}
}

// checkVolumes is the VolumeBinding filter for bound volumes: the
// PersistentVolume of each claim the pod uses (a generic ephemeral
// volume's claim is <pod>-<volume>) that names one must accept the node
// under every label set it may get.
func (v *verifier) checkVolumes(p *corev1.Pod, vn *vnode) {
	for _, vol := range p.Spec.Volumes {
		var name string
		switch {
		case vol.PersistentVolumeClaim != nil:
			name = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil:
			name = p.Name + "-" + vol.Name
		default:
			continue
		}
		var pv *corev1.PersistentVolume
		for _, c := range v.in.PersistentVolumeClaims {
			if vol.Ephemeral != nil && c.Namespace == p.Namespace && c.Name == name {
				if err := ephemeral.VolumeIsForPod(p, c); err != nil {
					v.fail("pod %s/%s on node %s: %v", p.Namespace, p.Name, vn.name, err)
				}
			}
			if c.Namespace == p.Namespace && c.Name == name && c.Spec.VolumeName != "" {
				for _, x := range v.in.PersistentVolumes {
					if x.Name == c.Spec.VolumeName {
						pv = x
					}
				}
			}
		}
		if pv == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			continue
		}
		sel, err := nodeaffinity.NewNodeSelector(pv.Spec.NodeAffinity.Required)
		for _, l := range vn.variants {
			if err != nil || !sel.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: l[corev1.LabelHostname], Labels: withAliases(l)}}) {
				v.fail("pod %s/%s on node %s: its volume %s is not reachable there (labels %v)", p.Namespace, p.Name, vn.name, pv.Name, l)
				break
			}
		}
	}
}

// checkFit sums a node's pods (and the DaemonSet pods of option i) against
// that option's allocatable, and checks host ports.
func (v *verifier) checkFit(vn *vnode, i int, alloc corev1.ResourceList) {
	total := map[corev1.ResourceName]int64{}
	var ports []pods.HostPort
	add := func(p *corev1.Pod) {
		for r, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			total[r] += verifyValue(r, q)
		}
		total[corev1.ResourcePods]++
		for _, hp := range pods.HostPorts(p) {
			for _, o := range ports {
				if hp.ClashesWith(o) {
					v.fail("host port %d/%s clashes on node %s (pod %s/%s)", hp.Port, hp.Protocol, vn.name, p.Namespace, p.Name)
				}
			}
			ports = append(ports, hp)
		}
	}
	for _, p := range vn.pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		add(withDefaultRequests(p))
	}
	for _, p := range vn.daemons[i] {
		add(withDefaultRequests(p))
	}
	for r, need := range total {
		q, ok := alloc[r]
		have := int64(0)
		if ok {
			have = verifyValue(r, q)
		}
		if need > have {
			v.fail("node %s (option %d) is over allocatable %s: %d > %d", vn.name, i, r, need, have)
		}
	}
}

// withDefaultRequests applies the API's defaulting of requests from limits.
func withDefaultRequests(p *corev1.Pod) *corev1.Pod {
	needs := false
	for _, c := range append(append([]corev1.Container(nil), p.Spec.Containers...), p.Spec.InitContainers...) {
		for r := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[r]; !ok {
				needs = true
			}
		}
	}
	if !needs {
		return p
	}
	cp := p.DeepCopy()
	fix := func(cs []corev1.Container) {
		for i := range cs {
			if cs[i].Resources.Requests == nil {
				cs[i].Resources.Requests = corev1.ResourceList{}
			}
			for r, q := range cs[i].Resources.Limits {
				if _, ok := cs[i].Resources.Requests[r]; !ok {
					cs[i].Resources.Requests[r] = q
				}
			}
		}
	}
	fix(cp.Spec.Containers)
	fix(cp.Spec.InitContainers)
	return cp
}

// podAt is a pod of the final state with its node.
type podAt struct {
	p      *corev1.Pod
	n      *vnode
	placed bool
}

func (v *verifier) nsLabels(ns string) labels.Set {
	for _, n := range v.in.Namespaces {
		if n.Name == ns {
			l := labels.Set{corev1.LabelMetadataName: ns}
			for k, val := range n.Labels {
				l[k] = val
			}
			return l
		}
	}
	return labels.Set{corev1.LabelMetadataName: ns}
}

// termMatches tells whether an affinity term of owner selects pod q.
func (v *verifier) termMatches(owner *corev1.Pod, t corev1.PodAffinityTerm, q *corev1.Pod) bool {
	sel := pods.AffinitySelector(t.LabelSelector, owner.Labels, t.MatchLabelKeys, t.MismatchLabelKeys)
	if !sel.Matches(labels.Set(q.Labels)) {
		return false
	}
	if t.NamespaceSelector != nil {
		ns, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
		if err == nil && ns.Matches(v.nsLabels(q.Namespace)) {
			return true
		}
		for _, n := range t.Namespaces {
			if n == q.Namespace {
				return true
			}
		}
		return false
	}
	if len(t.Namespaces) == 0 {
		return q.Namespace == owner.Namespace
	}
	for _, n := range t.Namespaces {
		if n == q.Namespace {
			return true
		}
	}
	return false
}

// domainOf is a node's value for a topology key, and whether it has one
// that does not depend on which option CreateFleet picks.
func domainOf(n *vnode, key string) (string, bool) {
	return labelValue(n.common, key)
}

// tally counts, per domain of a key, the pods a selector picks: placed
// ones and existing ones apart.
type tally struct {
	placed, existing map[string]int
	domains          map[string]bool // domains of nodes that passed the filter
}

func (v *verifier) tallyFor(sig string, key string, match func(q *corev1.Pod) bool, filter func(n *vnode) bool, cache map[string]*tally) *tally {
	if t, ok := cache[sig]; ok {
		return t
	}
	t := &tally{placed: map[string]int{}, existing: map[string]int{}, domains: map[string]bool{}}
	for _, n := range v.nodes {
		d, ok := domainOf(n, key)
		if !ok {
			continue
		}
		if filter != nil && !filter(n) {
			continue
		}
		t.domains[d] = true
		placed := map[*corev1.Pod]bool{}
		for _, p := range n.placed {
			placed[p] = true
		}
		for _, q := range n.pods {
			if match(q) {
				if placed[q] {
					t.placed[d]++
				} else {
					t.existing[d]++
				}
			}
		}
	}
	cache[sig] = t
	return t
}

func (v *verifier) checkTopology() {
	var all []podAt
	for _, n := range v.nodes {
		placed := map[*corev1.Pod]bool{}
		for _, p := range n.placed {
			placed[p] = true
		}
		for _, p := range n.pods {
			all = append(all, podAt{p, n, placed[p]})
		}
	}
	cache := map[string]*tally{}
	termTally := func(owner *corev1.Pod, t corev1.PodAffinityTerm) *tally {
		sel := pods.AffinitySelector(t.LabelSelector, owner.Labels, t.MatchLabelKeys, t.MismatchLabelKeys)
		nsSel := ""
		if t.NamespaceSelector != nil {
			nsSel = metav1.FormatLabelSelector(t.NamespaceSelector)
		}
		sig := fmt.Sprintf("term|%s|%s|%v|%s|%s", t.TopologyKey, owner.Namespace, t.Namespaces, nsSel, sel.String())
		return v.tallyFor(sig, t.TopologyKey, func(q *corev1.Pod) bool { return v.termMatches(owner, t, q) }, nil, cache)
	}
	for _, a := range all {
		aff := a.p.Spec.Affinity
		if aff == nil {
			continue
		}
		if aff.PodAntiAffinity != nil {
			for _, t := range aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				d, ok := domainOf(a.n, t.TopologyKey)
				if !ok {
					if a.placed {
						v.fail("pod %s/%s has anti-affinity on %s but its node's value is not fixed", a.p.Namespace, a.p.Name, t.TopologyKey)
					}
					continue
				}
				tl := termTally(a.p, t)
				self := 0
				if v.termMatches(a.p, t, a.p) {
					self = 1
				}
				n := tl.placed[d]
				if a.placed {
					n += tl.existing[d]
				}
				if n-self > 0 && (a.placed || tl.placed[d] > 0) {
					v.fail("pod %s/%s anti-affinity on %s=%s is violated (%d matching pods there)", a.p.Namespace, a.p.Name, t.TopologyKey, d, n-self)
				}
			}
		}
		if a.placed && aff.PodAffinity != nil {
			for _, t := range aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				d, ok := domainOf(a.n, t.TopologyKey)
				if !ok {
					v.fail("pod %s/%s has affinity on %s but its node's value is not fixed", a.p.Namespace, a.p.Name, t.TopologyKey)
					continue
				}
				tl := termTally(a.p, t)
				self := 0
				if v.termMatches(a.p, t, a.p) {
					self = 1
				}
				here := tl.placed[d] + tl.existing[d] - self
				total := -self
				for _, c := range tl.placed {
					total += c
				}
				for _, c := range tl.existing {
					total += c
				}
				if here <= 0 && (total > 0 || self == 0) {
					v.fail("pod %s/%s affinity on %s=%s has no partner", a.p.Namespace, a.p.Name, t.TopologyKey, d)
				}
			}
		}
	}
	// Spreads, as the kube-scheduler measures them.
	for _, a := range all {
		if !a.placed {
			continue
		}
		for _, t := range a.p.Spec.TopologySpreadConstraints {
			if t.WhenUnsatisfiable != corev1.DoNotSchedule {
				continue
			}
			d, ok := domainOf(a.n, t.TopologyKey)
			if !ok {
				v.fail("pod %s/%s spreads on %s but its node's value is not fixed", a.p.Namespace, a.p.Name, t.TopologyKey)
				continue
			}
			sel := pods.AffinitySelector(t.LabelSelector, a.p.Labels, t.MatchLabelKeys, nil)
			// nodeAffinityPolicy defaults to Honor, nodeTaintsPolicy to
			// Ignore: a node the policy excludes is no domain and its pods
			// do not count.
			honor := t.NodeAffinityPolicy == nil || *t.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
			honorTaints := t.NodeTaintsPolicy != nil && *t.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
			var filter func(n *vnode) bool
			fsig := ""
			if honor || honorTaints {
				p := a.p
				filter = func(n *vnode) bool {
					return (!honor || matchNode(p, n.common)) && (!honorTaints || toleratesAll(p, n.taints))
				}
				if honor {
					fsig = fmt.Sprintf("%v|%s", p.Spec.NodeSelector, jsonOf(p.Spec.Affinity))
				}
				if honorTaints {
					fsig += "|tol:" + jsonOf(p.Spec.Tolerations)
				}
			}
			sig := fmt.Sprintf("spread|%s|%s|%s|%s", t.TopologyKey, a.p.Namespace, sel.String(), fsig)
			ns := a.p.Namespace
			tl := v.tallyFor(sig, t.TopologyKey, func(q *corev1.Pod) bool {
				return q.Namespace == ns && sel.Matches(labels.Set(q.Labels))
			}, filter, cache)
			minC := math.MaxInt
			for dom := range tl.domains {
				minC = min(minC, tl.placed[dom]+tl.existing[dom])
			}
			if t.MinDomains != nil && len(tl.domains) < int(*t.MinDomains) {
				minC = 0
			}
			if c := tl.placed[d] + tl.existing[d]; c-minC > int(t.MaxSkew) {
				v.fail("pod %s/%s spread on %s: %s has %d, minimum %d, maxSkew %d", a.p.Namespace, a.p.Name, t.TopologyKey, d, c, minC, t.MaxSkew)
			}
		}
	}
}

// claimsDevices tells whether a pod spec has dynamic resource claims, its
// own or a container's.
func claimsDevices(spec *corev1.PodSpec) bool {
	n := len(spec.ResourceClaims)
	for _, c := range append(append([]corev1.Container(nil), spec.Containers...), spec.InitContainers...) {
		n += len(c.Resources.Claims)
	}
	return n > 0
}
