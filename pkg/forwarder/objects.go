package forwarder

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/joist-dev/joist/events"
	"github.com/joist-dev/joist/pkg/pods"
)

// unschedulable reports whether the scheduler gave up on pod for lack of a
// fitting node: PodScheduled=False with reason Unschedulable, no node, not
// finished and not being deleted. Pods held back by scheduling gates
// (reason SchedulingGated) are not capacity problems and are left out.
func unschedulable(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

func podRef(pod *corev1.Pod) events.PodRef {
	return events.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
}

// TerminationFinalizer holds a Joist node that is being deleted until the
// reaper drained it and ended its instance (pkg/termination.Finalizer,
// Karpenter's own).
const TerminationFinalizer = "karpenter.sh/termination"

// readyCondition returns the node's Ready condition, if it has one.
func readyCondition(node *corev1.Node) (corev1.NodeCondition, bool) {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c, true
		}
	}
	return corev1.NodeCondition{}, false
}

func nodeReady(node *corev1.Node) bool {
	c, ok := readyCondition(node)
	return ok && c.Status == corev1.ConditionTrue
}

// slimPod keeps only what the forwarder reads, so the informer's cache of
// every unbound pod in a large cluster stays small.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			UID:               pod.UID,
			ResourceVersion:   pod.ResourceVersion,
			DeletionTimestamp: pod.DeletionTimestamp,
		},
		Spec:   corev1.PodSpec{NodeName: pod.Spec.NodeName},
		Status: corev1.PodStatus{Phase: pod.Status.Phase, Conditions: pod.Status.Conditions},
	}, nil
}

// boundPod is all the forwarder keeps of a bound pod: the informer's key
// (namespace, name), the UID the outbox counts by, the node, and whether the
// pod needs that node (pods.Reschedulable: not finished, not
// terminating, not a mirror pod, not owned by a DaemonSet or Node). It is
// ~80 bytes where even an emptied corev1.Pod is 1,240, so the cache of every
// bound pod in the cluster stays small (docs/forwarder.md, memory).
type boundPod struct {
	Namespace, Name string
	UID             k8stypes.UID
	Node            string
	Needs           bool
}

// GetObjectMeta makes a boundPod an object the informer can key
// (meta.Accessor): namespace, name and UID, built on demand.
func (p *boundPod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// slimBoundPod reduces a bound pod to a boundPod, deciding once, from the
// full pod, whether it needs its node.
func slimBoundPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &boundPod{
		Namespace: pod.Namespace,
		Name:      pod.Name,
		UID:       pod.UID,
		Node:      pod.Spec.NodeName,
		Needs:     pods.Reschedulable(pod),
	}, nil
}

// slimNode keeps only what the forwarder reads: nodes carry large status
// (images, volumes) that the forwarder has no use for.
func slimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	slim := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              node.Name,
			UID:               node.UID,
			ResourceVersion:   node.ResourceVersion,
			DeletionTimestamp: node.DeletionTimestamp,
		},
		Spec: corev1.NodeSpec{ProviderID: node.Spec.ProviderID},
	}
	if slices.Contains(node.Finalizers, TerminationFinalizer) {
		slim.Finalizers = []string{TerminationFinalizer}
	}
	if c, ok := readyCondition(node); ok {
		slim.Status.Conditions = []corev1.NodeCondition{c}
	}
	return slim, nil
}

// unwrap returns the object of an informer delete notification, which may
// be a tombstone when the watch missed the deletion.
func unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}
