// Package pods holds pure facts about pods that several functions share:
// which pods Joist provisions for, what a pod asks of a node, whether a
// pod still fits a node, and the annotation that records which instance a
// pod waits for. It reads Kubernetes objects as data and calls nothing.
package pods

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Annotations Joist writes on a pod it planned onto a new instance.
const (
	// AnnotationInstance names the EC2 instance the pod waits for. It is the
	// only record of a plan: the binder binds the pod when that instance's
	// node is Ready; the provisioner counts the pod as served while the
	// instance is still coming.
	AnnotationInstance = "joist.sh/instance-id"
	// AnnotationNominatedAt is when the plan was made (RFC 3339).
	AnnotationNominatedAt = "joist.sh/nominated-at"
	// AnnotationInstanceLabels holds, as a JSON object, the labels of the
	// planned instance's type that the pod's scheduling constraints name
	// (InstanceLabelsFor), as the catalog the pod was planned with gives
	// them. The binder puts them on the node before binding: the kubelet
	// cannot set them, and the binder has no catalog of its own beyond
	// the embedded one, which may not know the type.
	AnnotationInstanceLabels = "joist.sh/instance-labels"
)

// InstanceLabelsFor is the subset of an instance type's labels that the
// pod's scheduling constraints name: node selector, node affinity
// (required and preferred), topology spread and pod (anti-)affinity
// topology keys. Nil when it names none.
func InstanceLabelsFor(p *corev1.Pod, typeLabels map[string]string) map[string]string {
	var out map[string]string
	use := func(k string) {
		if v, ok := typeLabels[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	for k := range p.Spec.NodeSelector {
		use(k)
	}
	terms := func(ts []corev1.NodeSelectorTerm) {
		for _, t := range ts {
			for _, e := range t.MatchExpressions {
				use(e.Key)
			}
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		use(c.TopologyKey)
	}
	a := p.Spec.Affinity
	if a == nil {
		return out
	}
	if na := a.NodeAffinity; na != nil {
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			terms(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
		}
		for _, pt := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			terms([]corev1.NodeSelectorTerm{pt.Preference})
		}
	}
	podTerms := func(req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm) {
		for _, t := range req {
			use(t.TopologyKey)
		}
		for _, t := range pref {
			use(t.PodAffinityTerm.TopologyKey)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		podTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		podTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return out
}

// InstanceLabels are the labels recorded on a planned pod
// (AnnotationInstanceLabels); nil when there are none or they cannot be
// read.
func InstanceLabels(p *corev1.Pod) map[string]string {
	v := p.Annotations[AnnotationInstanceLabels]
	if v == "" {
		return nil
	}
	var out map[string]string
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil
	}
	return out
}

// Provisionable reports whether Joist should find capacity for the pod:
// kube-scheduler marked it PodScheduled=False/Unschedulable, it has no
// node, it is not being deleted, not preempting, and not owned by a
// DaemonSet or a Node (those follow their node, never lead to one).
func Provisionable(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || p.Status.NominatedNodeName != "" {
		return false
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" || o.Kind == "Node" {
			return false
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// DefaultScheduler is kube-scheduler's name in a pod's spec.schedulerName
// (empty means it too).
const DefaultScheduler = "default-scheduler"

// ForDefaultScheduler reports whether the pod is kube-scheduler's to place.
// Joist binds only those: a pod for another scheduler is that scheduler's
// to bind, with checks Joist does not know.
func ForDefaultScheduler(p *corev1.Pod) bool {
	return p.Spec.SchedulerName == "" || p.Spec.SchedulerName == DefaultScheduler
}

// AnnotationReplacement, on a pod still running on a node that is going
// away (an interruption), names the instance launched to take it. Every
// provisioning pass counts such a pod on that instance as well as on its
// node, so the room it will need is not given to other pods before it
// moves. A pod's controller makes its successor without the annotation;
// the reservation ends with the pod.
const AnnotationReplacement = "joist.sh/replacement-instance-id"

// ReplacementInstance is the instance launched to take over the running
// pod, or "".
func ReplacementInstance(p *corev1.Pod) string {
	return p.Annotations[AnnotationReplacement]
}

// PlannedInstance is the instance id the pod waits for, or "".
func PlannedInstance(p *corev1.Pod) string {
	return p.Annotations[AnnotationInstance]
}

// Requests is what the pod asks of a node: the larger of its init
// containers and the sum of its containers (sidecars included), plus pod
// overhead, plus one "pods" slot — computed as kube-scheduler does. For a
// pod resized in place (KEP-1287, on by default since Kubernetes 1.33),
// that is the larger of its spec and what its status says the kubelet
// allocated and actuated (the status alone when the resize is
// infeasible): a pod shrinking holds its room until the kubelet gives it
// back, and a pod bound into room it still holds would be refused by the
// kubelet. A pending pod has no such status: its spec.
func Requests(p *corev1.Pod) corev1.ResourceList {
	r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true})
	r[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return r
}

// Finished reports whether a pod has run to its end (Succeeded or
// Failed): it holds no room on its node and needs no new home.
func Finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Reschedulable says whether a pod on a node going away needs a place
// elsewhere: not finished, not being deleted, not a DaemonSet's or a
// static (mirror) pod, which follow their node.
func Reschedulable(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || Finished(p) {
		return false
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" || o.Kind == "Node" {
			return false
		}
	}
	return true
}

// TaintDisrupted is Karpenter v1's taint on a node being retired
// (karpenter.sh/disrupted:NoSchedule).
const TaintDisrupted = "karpenter.sh/disrupted"

// ToleratesDisrupted reports whether p tolerates
// karpenter.sh/disrupted:NoSchedule: such a pod would be scheduled right
// back onto the node, so a drain leaves it there (Karpenter does not
// drain it either).
func ToleratesDisrupted(p *corev1.Pod) bool {
	t := corev1.Taint{Key: TaintDisrupted, Effect: corev1.TaintEffectNoSchedule}
	for i := range p.Spec.Tolerations {
		if p.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &t, true) {
			return true
		}
	}
	return false
}

// Key is namespace/name, for logs and maps.
func Key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// Fits checks that pod can run on node next to the pods already there, the
// way kube-scheduler's filters would: the node is Ready, every NoSchedule
// and NoExecute taint is tolerated, nodeSelector and required node
// affinity match, no host port or required anti-affinity collides with
// the pods there (neighbourConflict), and the requests fit in what
// allocatable has left. It returns nil or the first reason it does not
// fit.
func Fits(pod *corev1.Pod, node *corev1.Node, onNode []*corev1.Pod) error {
	if !NodeReady(node) {
		return fmt.Errorf("node %s is not Ready", node.Name)
	}
	if node.Spec.Unschedulable {
		return fmt.Errorf("node %s is cordoned", node.Name)
	}
	if t, bad := schedcorev1.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false); bad {
		return fmt.Errorf("pod does not tolerate taint %s=%s:%s on node %s", t.Key, t.Value, t.Effect, node.Name)
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !ok {
		return fmt.Errorf("node %s does not match the pod's nodeSelector or required node affinity", node.Name)
	}
	if why := neighbourConflict(pod, node, onNode); why != "" {
		return fmt.Errorf("%s", why)
	}
	used := corev1.ResourceList{}
	for _, o := range onNode {
		if o.UID == pod.UID || o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed {
			continue
		}
		add(used, Requests(o))
	}
	var short []string
	for name, want := range Requests(pod) {
		if want.IsZero() {
			continue
		}
		have, ok := node.Status.Allocatable[name]
		if !ok {
			short = append(short, fmt.Sprintf("%s (node has none)", name))
			continue
		}
		free := have.DeepCopy()
		u := used[name]
		free.Sub(u)
		if want.Cmp(free) > 0 {
			short = append(short, fmt.Sprintf("%s (wants %s, %s free)", name, want.String(), free.String()))
		}
	}
	if len(short) > 0 {
		sort.Strings(short)
		return fmt.Errorf("insufficient %s on node %s", strings.Join(short, ", "), node.Name)
	}
	return nil
}

// NodeReady reports the node's Ready condition.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// InstanceID takes the EC2 instance id from a node's providerID
// (aws:///<zone>/<instance-id>), or "".
func InstanceID(providerID string) string {
	if !strings.HasPrefix(providerID, "aws://") {
		return ""
	}
	i := strings.LastIndex(providerID, "/")
	id := providerID[i+1:]
	if !strings.HasPrefix(id, "i-") {
		return ""
	}
	return id
}

func add(dst, src corev1.ResourceList) {
	for k, v := range src {
		q := dst[k]
		q.Add(v)
		dst[k] = q
	}
}
