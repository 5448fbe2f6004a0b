package pods

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// neighbourConflict is why pod cannot join the pods already on node
// (running, or bound this pass) by what kube-scheduler's NodePorts and
// InterPodAffinity filters would refuse, "" when nothing does:
//
//   - a host port one of them uses (the kubelet would refuse the pod too);
//   - the pod's required anti-affinity matching one of them, or one of
//     theirs matching the pod: pods on one node share its every topology
//     domain, so the node's having the term's topology key is enough.
//
// The binder binds without kube-scheduler, and kube-scheduler may have
// put a pod on the new node since the plan (one planned elsewhere, whose
// node is not Ready yet): binding into it would break the user's rule.
// Pods in other nodes of a domain are not read here; the plan kept them
// apart. A term selecting namespaces by their labels matches only the
// namespaces it lists (the binder reads no namespace).
func neighbourConflict(pod *corev1.Pod, node *corev1.Node, onNode []*corev1.Pod) string {
	want := hostPorts(pod)
	for _, o := range onNode {
		if o.UID == pod.UID || Finished(o) {
			continue
		}
		for _, w := range want {
			for _, h := range hostPorts(o) {
				if portsCollide(w, h) {
					return fmt.Sprintf("host port %s/%d is taken by pod %s on node %s", protocol(w), w.HostPort, Key(o), node.Name)
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
	return ""
}

// hostPorts are the host ports a pod's containers and sidecars (init
// containers that keep running) bind.
func hostPorts(p *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	add := func(cs []corev1.Container, sidecarsOnly bool) {
		for i := range cs {
			if sidecarsOnly && (cs[i].RestartPolicy == nil || *cs[i].RestartPolicy != corev1.ContainerRestartPolicyAlways) {
				continue
			}
			for _, port := range cs[i].Ports {
				if port.HostPort > 0 {
					out = append(out, port)
				}
			}
		}
	}
	add(p.Spec.Containers, false)
	add(p.Spec.InitContainers, true)
	return out
}

// portsCollide says whether two host ports collide: the same port and
// protocol (TCP when unset) on the same address, or on any address when
// either listens on all (0.0.0.0, or unset).
func portsCollide(a, b corev1.ContainerPort) bool {
	all := func(ip string) bool { return ip == "" || ip == "0.0.0.0" }
	return a.HostPort == b.HostPort && protocol(a) == protocol(b) &&
		(all(a.HostIP) || all(b.HostIP) || a.HostIP == b.HostIP)
}

// protocol is a port's protocol, TCP when unset (the API's default).
func protocol(p corev1.ContainerPort) corev1.Protocol {
	if p.Protocol == "" {
		return corev1.ProtocolTCP
	}
	return p.Protocol
}

func requiredAntiAffinity(p *corev1.Pod) []corev1.PodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		return a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// termMatches says whether owner's affinity term t selects pod other: its
// namespace (the term's list, every namespace for an empty selector, else
// owner's own) and its labels (the selector, with matchLabelKeys and
// mismatchLabelKeys read from owner's labels).
func termMatches(t corev1.PodAffinityTerm, owner, other *corev1.Pod) bool {
	switch {
	case slices.Contains(t.Namespaces, other.Namespace):
	case t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels) == 0 && len(t.NamespaceSelector.MatchExpressions) == 0:
	case len(t.Namespaces) == 0 && t.NamespaceSelector == nil && other.Namespace == owner.Namespace:
	default:
		return false
	}
	if t.LabelSelector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	if err != nil {
		return false
	}
	for _, k := range t.MatchLabelKeys {
		if v, ok := owner.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.In, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	for _, k := range t.MismatchLabelKeys {
		if v, ok := owner.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.NotIn, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	return sel.Matches(labels.Set(other.Labels))
}
