package scheduling

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BoundPod is a running pod bound to an existing node in the least the
// simulator reads of it: a reader that holds every bound pod of a large
// cluster (pkg/provisioning) keeps one of these, ~100 bytes, instead of a
// corev1.Pod (the struct alone is 1,240 bytes), for each pod no decision
// of the pass moves. Solve treats Node.Bound exactly as it treats the same
// pods in Node.Pods: their requests and host ports take room, their
// namespace and labels count in topology spreads and pod (anti)affinity,
// and a DaemonSet's pod means the node needs no room reserved for it. A
// pod with required pod anti-affinity cannot be one (its terms constrain
// where pending pods go): NewBoundPod refuses it.
type BoundPod struct {
	Namespace string
	// Labels are the pod's labels; readers may share one map between
	// pods with equal labels.
	Labels map[string]string
	// Requests are the pod's effective requests (init containers, native
	// sidecars, pod-level resources and overhead folded in), as Solve
	// computes them for a pod; readers may share one list between pods.
	Requests corev1.ResourceList
	// DaemonSet is the name of the DaemonSet owning the pod, if one does.
	DaemonSet string
	ports     []hostPort
	claims    []string // namespace/name of its volumes' claims
}

// NewBoundPod is the compact form of a pod bound to a node. It reports
// false for a pod that has none: one whose required pod anti-affinity
// Solve must see, or one that finished (it takes no room). shared, when
// not nil, returns one map for equal request lists.
func NewBoundPod(pod *corev1.Pod, shared func(corev1.ResourceList) corev1.ResourceList) (BoundPod, bool) {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return BoundPod{}, false
	}
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		return BoundPod{}, false
	}
	reqs := podRequests(pod)
	delete(reqs, corev1.ResourcePods)
	if shared != nil {
		reqs = shared(reqs)
	}
	b := BoundPod{Namespace: pod.Namespace, Labels: pod.Labels, Requests: reqs, ports: podHostPorts(pod), claims: podClaimKeys(pod)}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" {
			b.DaemonSet = o.Name
		}
	}
	return b, true
}

// Pod is the bound pod as a corev1.Pod of the same namespace, labels,
// DaemonSet owner, requests (as overhead), host ports and claims, for code that
// reads pods (pkg/scheduling/verify).
func (b *BoundPod) Pod() *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Labels: b.Labels}}
	p.Status.Phase = corev1.PodRunning
	p.Spec.Overhead = b.Requests
	if b.DaemonSet != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: b.DaemonSet}}
	}
	for i, key := range b.claims {
		name := key[strings.IndexByte(key, '/')+1:]
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "claim-" + strconv.Itoa(i),
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	}
	if len(b.ports) > 0 {
		c := corev1.Container{Name: "host-ports"}
		for _, hp := range b.ports {
			c.Ports = append(c.Ports, corev1.ContainerPort{HostIP: hp.ip, Protocol: hp.proto, HostPort: hp.port, ContainerPort: hp.port})
		}
		p.Spec.Containers = []corev1.Container{c}
	}
	return p
}

// Requests is a pod's effective requests as Solve computes them (init
// containers, native sidecars, pod-level resources and overhead folded
// in, limits standing in for missing requests), without the "pods" slot:
// what BoundPod.Requests holds. Readers that size pods outside Solve
// (pkg/disruption's consolidation prefilter) use it so that a whole pod,
// a compacted one (Compact) and a BoundPod size alike.
func Requests(pod *corev1.Pod) corev1.ResourceList {
	reqs := podRequests(pod)
	delete(reqs, corev1.ResourcePods)
	return reqs
}
