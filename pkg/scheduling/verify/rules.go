package verify

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// The Kubernetes rules this package reads for itself, rather than take
// from the packer it checks (host ports and affinity selectors are
// pkg/pods', shared with the binder's check, not with the packer).

// Labels Karpenter puts on every node it launches.
const (
	labelKarpenterRegistered  = "karpenter.sh/registered"
	labelKarpenterInitialized = "karpenter.sh/initialized"
)

// goneAfterRegistration are taints an in-flight node carries only until
// it is up: the node lifecycle controller's not-ready and unreachable,
// the cloud provider's uninitialized, and the registration taints of
// Karpenter and Joist. A pod placed on an in-flight node need not
// tolerate them.
var goneAfterRegistration = map[string]bool{
	"node.kubernetes.io/not-ready":                   true,
	"node.kubernetes.io/unreachable":                 true,
	"node.cloudprovider.kubernetes.io/uninitialized": true,
	"karpenter.sh/unregistered":                      true,
	"joist.sh/unregistered":                          true,
}

// daemonSetTolerations are the tolerations the DaemonSet controller adds
// to its pods (pkg/controller/daemon/util.AddOrUpdateDaemonPodTolerations):
// not-ready and unreachable (NoExecute); disk, memory and PID pressure
// and unschedulable (NoSchedule); network-unavailable (NoSchedule) for
// host-network pods only.
func daemonSetTolerations(p *corev1.Pod) []corev1.Toleration {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	out := []corev1.Toleration{
		exists("node.kubernetes.io/not-ready", corev1.TaintEffectNoExecute),
		exists("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute),
		exists("node.kubernetes.io/disk-pressure", corev1.TaintEffectNoSchedule),
		exists("node.kubernetes.io/memory-pressure", corev1.TaintEffectNoSchedule),
		exists("node.kubernetes.io/pid-pressure", corev1.TaintEffectNoSchedule),
		exists("node.kubernetes.io/unschedulable", corev1.TaintEffectNoSchedule),
	}
	if p.Spec.HostNetwork {
		out = append(out, exists("node.kubernetes.io/network-unavailable", corev1.TaintEffectNoSchedule))
	}
	return out
}

// runsDaemonPod reports whether a node already runs a pod of the named
// DaemonSet (one it owns).
func runsDaemonPod(n *scheduling.Node, namespace, name string) bool {
	for i := range n.Bound {
		if n.Bound[i].DaemonSet == name && n.Bound[i].Namespace == namespace {
			return true
		}
	}
	for _, p := range n.Pods {
		if p.Namespace != namespace {
			continue
		}
		for _, ref := range p.OwnerReferences {
			if ref.Kind == "DaemonSet" && ref.Name == name {
				return true
			}
		}
	}
	return false
}

// sameAs groups the well-known node label keys that name one thing: the
// stable key and its deprecated (beta) forms, and the EBS CSI driver's
// zone key, which Karpenter reads as the zone.
var sameAs = [][]string{
	{"topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone", "topology.ebs.csi.aws.com/zone"},
	{"topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"},
	{"kubernetes.io/arch", "beta.kubernetes.io/arch"},
	{"kubernetes.io/os", "beta.kubernetes.io/os"},
	{"node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type"},
}

// labelValue is a node's value for key, found under the key or any key
// naming the same thing.
func labelValue(l map[string]string, key string) (string, bool) {
	if v, ok := l[key]; ok {
		return v, true
	}
	for _, group := range sameAs {
		in := false
		for _, k := range group {
			in = in || k == key
		}
		if !in {
			continue
		}
		for _, k := range group {
			if v, ok := l[k]; ok {
				return v, true
			}
		}
	}
	return "", false
}

// withAliases is l with every key of a sameAs group it lacks set to the
// group's value: a node carries the deprecated forms too (the kubelet and
// the cloud node controller set them; the CSI driver its zone key), so a
// pod selecting beta.kubernetes.io/instance-type matches it.
func withAliases(l map[string]string) map[string]string {
	var out map[string]string
	for _, group := range sameAs {
		v, ok := labelValue(l, group[0])
		if !ok {
			continue
		}
		for _, k := range group {
			if _, has := l[k]; has {
				continue
			}
			if out == nil {
				out = make(map[string]string, len(l)+8)
				for lk, lv := range l {
					out[lk] = lv
				}
			}
			out[k] = v
		}
	}
	if out == nil {
		return l
	}
	return out
}

// jsonOf is v as JSON, a cache key.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
