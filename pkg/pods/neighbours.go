package pods

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// neighbourConflict is why pod cannot join the pods already on node
// (running, or bound this pass) by what kube-scheduler's NodePorts and
// InterPodAffinity filters would refuse, "" when nothing does:
//
//   - a host port one of them uses (HostPorts; the kubelet would refuse
//     the pod too);
//   - the pod's required anti-affinity matching one of them, or one of
//     theirs matching the pod: pods on one node share its every topology
//     domain, so the node's having the term's topology key is enough;
//   - a required pod affinity term by hostname that none of them meets:
//     the node is the term's whole domain. The pod meeting all its own
//     terms is enough (kube-scheduler's rule for the first pod of a
//     group whose pods all attract each other; it also asks that no pod
//     elsewhere match, which the binder does not read). A term on a key
//     spanning nodes (a zone) may be met by pods on other nodes, and one
//     selecting namespaces by their labels by pods in namespaces the
//     binder does not read: the plan put the pod where it is, and only a
//     node lacking the key fails it.
//
// The binder binds without kube-scheduler, and kube-scheduler may have
// put a pod on the new node since the plan (one planned elsewhere, whose
// node is not Ready yet): binding into it would break the user's rule.
// Pods in other nodes of a domain are not read here; the plan kept them
// apart. A term selecting namespaces by their labels matches only the
// namespaces it lists (the binder reads no namespace).
func neighbourConflict(pod *corev1.Pod, node *corev1.Node, onNode []*corev1.Pod) string {
	want := HostPorts(pod)
	for _, o := range onNode {
		if o.UID == pod.UID || Finished(o) {
			continue
		}
		for _, w := range want {
			for _, h := range HostPorts(o) {
				if w.ClashesWith(h) {
					return fmt.Sprintf("host port %s/%d is taken by pod %s on node %s", w.Protocol, w.Port, Key(o), node.Name)
				}
			}
		}
		for _, t := range requiredAntiAffinity(pod) {
			if _, ok := node.Labels[t.TopologyKey]; ok && termMatches(t, pod, o) {
				return fmt.Sprintf("pod %s on node %s matches the pod's required anti-affinity (%s)", Key(o), node.Name, t.TopologyKey)
			}
		}
		for _, t := range requiredAntiAffinity(o) {
			if _, ok := node.Labels[t.TopologyKey]; ok && termMatches(t, o, pod) {
				return fmt.Sprintf("the pod matches the required anti-affinity (%s) of pod %s on node %s", t.TopologyKey, Key(o), node.Name)
			}
		}
	}
	terms := requiredAffinity(pod)
	self := len(terms) > 0 && !slices.ContainsFunc(terms, func(t corev1.PodAffinityTerm) bool { return !termMatches(t, pod, pod) })
	for _, t := range terms {
		if _, ok := node.Labels[t.TopologyKey]; !ok {
			return fmt.Sprintf("node %s has no label %s for the pod's required pod affinity", node.Name, t.TopologyKey)
		}
		if t.TopologyKey != corev1.LabelHostname || self || !namespacesKnown(t) {
			continue
		}
		if !slices.ContainsFunc(onNode, func(o *corev1.Pod) bool { return o.UID != pod.UID && !Finished(o) && termMatches(t, pod, o) }) {
			return fmt.Sprintf("no pod on node %s meets the pod's required pod affinity (%s)", node.Name, t.TopologyKey)
		}
	}
	return ""
}

// namespacesKnown tells whether the binder knows which namespaces term t
// reads: a selector by namespace labels needs the namespaces, which the
// binder does not read (an affinity term it cannot judge is left to the
// plan, which could).
func namespacesKnown(t corev1.PodAffinityTerm) bool {
	ns := t.NamespaceSelector
	return ns == nil || (len(ns.MatchLabels) == 0 && len(ns.MatchExpressions) == 0)
}

func requiredAffinity(p *corev1.Pod) []corev1.PodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
		return a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

func requiredAntiAffinity(p *corev1.Pod) []corev1.PodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		return a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// termMatches says whether owner's affinity term t selects pod other: its
// namespace (the term's list, every namespace for an empty selector, else
// owner's own) and its labels (AffinitySelector).
func termMatches(t corev1.PodAffinityTerm, owner, other *corev1.Pod) bool {
	switch {
	case slices.Contains(t.Namespaces, other.Namespace):
	case t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels) == 0 && len(t.NamespaceSelector.MatchExpressions) == 0:
	case len(t.Namespaces) == 0 && t.NamespaceSelector == nil && other.Namespace == owner.Namespace:
	default:
		return false
	}
	sel := AffinitySelector(t.LabelSelector, owner.Labels, t.MatchLabelKeys, t.MismatchLabelKeys)
	return sel.Matches(labels.Set(other.Labels))
}
