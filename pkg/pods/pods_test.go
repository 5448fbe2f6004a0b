package pods

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func unschedulable(p *corev1.Pod) *corev1.Pod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
	})
	return p
}

func pod(name, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
			}},
		}}},
	}
}

func TestProvisionable(t *testing.T) {
	ds := unschedulable(pod("ds", "1", "1Gi"))
	ds.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "x"}}
	bound := unschedulable(pod("bound", "1", "1Gi"))
	bound.Spec.NodeName = "n1"
	gone := unschedulable(pod("gone", "1", "1Gi"))
	now := metav1.Now()
	gone.DeletionTimestamp = &now
	preempting := unschedulable(pod("pre", "1", "1Gi"))
	preempting.Status.NominatedNodeName = "n1"
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"unschedulable pod", unschedulable(pod("a", "1", "1Gi")), true},
		{"pod kube-scheduler has not looked at", pod("b", "1", "1Gi"), false},
		{"daemonset pod", ds, false},
		{"bound pod", bound, false},
		{"terminating pod", gone, false},
		{"preempting pod", preempting, false},
	} {
		if got := Provisionable(tc.pod); got != tc.want {
			t.Errorf("%s: Provisionable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRequests_CountsInitContainersAndOverheadAndOnePodSlot(t *testing.T) {
	p := pod("a", "500m", "1Gi")
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"),
	}}}}
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}
	r := Requests(p)
	if got := r.Cpu().MilliValue(); got != 2000 {
		t.Errorf("cpu = %dm, want 2000m (the init container dominates)", got)
	}
	if got := r.Memory().Value(); got != (1024+100)*1024*1024 {
		t.Errorf("memory = %d, want 1Gi+100Mi", got)
	}
	if got := r.Pods().Value(); got != 1 {
		t.Errorf("pods = %d, want 1", got)
	}
}

func readyNode(cpu, mem string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"nodeType": "service-2023"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "service", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("29")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

func TestFits(t *testing.T) {
	tolerating := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "service", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		p.Spec.NodeSelector = map[string]string{"nodeType": "service-2023"}
		return p
	}
	notReady := readyNode("2", "8Gi")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	startup := readyNode("2", "8Gi")
	startup.Spec.Taints = append(startup.Spec.Taints, corev1.Taint{Key: "node.cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoSchedule})
	wrongSelector := tolerating(pod("a", "1", "1Gi"))
	wrongSelector.Spec.NodeSelector = map[string]string{"nodeType": "management-2023"}
	// A neighbour resized in place (KEP-1287) down to 500m whose kubelet
	// still holds the 1500m it had: kube-scheduler counts the larger of
	// the spec and what the status says is allocated or actuated.
	shrinking := pod("b", "500m", "1Gi")
	shrinking.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: shrinking.Spec.Containers[0].Name,
		AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
		Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}}}
	// One whose resize up to 1500m is infeasible: it holds what it has.
	stuck := pod("b", "1500m", "1Gi")
	stuck.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: stuck.Spec.Containers[0].Name,
		AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}
	stuck.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		node    *corev1.Node
		onNode  []*corev1.Pod
		wantErr string
	}{
		{"fits", tolerating(pod("a", "1", "1Gi")), readyNode("2", "8Gi"), nil, ""},
		{"fits next to a neighbour", tolerating(pod("a", "1", "1Gi")), readyNode("2", "8Gi"), []*corev1.Pod{pod("b", "1", "1Gi")}, ""},
		{"no room left", tolerating(pod("a", "1", "1Gi")), readyNode("2", "8Gi"), []*corev1.Pod{pod("b", "1500m", "1Gi")}, "insufficient cpu"},
		{"a neighbour resized down still holds its room", tolerating(pod("a", "1", "1Gi")), readyNode("2", "8Gi"), []*corev1.Pod{shrinking}, "insufficient cpu"},
		{"an infeasible resize takes no room", tolerating(pod("a", "1", "1Gi")), readyNode("2", "8Gi"), []*corev1.Pod{stuck}, ""},
		{"taint not tolerated", pod("a", "1", "1Gi"), readyNode("2", "8Gi"), nil, "does not tolerate taint service=true:NoSchedule"},
		{"startup taint still there", tolerating(pod("a", "1", "1Gi")), startup, nil, "node.cilium.io/agent-not-ready"},
		{"selector mismatch", wrongSelector, readyNode("2", "8Gi"), nil, "nodeSelector"},
		{"node not ready", tolerating(pod("a", "1", "1Gi")), notReady, nil, "not Ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantFit(t, Fits(tc.pod, tc.node, tc.onNode), tc.wantErr)
		})
	}
}

func TestInstanceID(t *testing.T) {
	for in, want := range map[string]string{
		"aws:///ap-northeast-2a/i-0123456789abcdef0": "i-0123456789abcdef0",
		"aws:///us-east-1b/i-1":                      "i-1",
		"kind://docker/n1":                           "",
		"aws:///zone/not-an-instance":                "",
		"":                                           "",
	} {
		if got := InstanceID(in); got != want {
			t.Errorf("InstanceID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReschedulable(t *testing.T) {
	pod := func(f func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: map[string]string{}}}
		p.Status.Phase = corev1.PodRunning
		if f != nil {
			f(p)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"a running pod", pod(nil), true},
		{"a pending pod bound to the node", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), true},
		{"a ReplicaSet's", pod(func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet"}} }), true},
		{"finished", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
		{"failed", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
		{"being deleted", pod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), false},
		{"a mirror pod", pod(func(p *corev1.Pod) { p.Annotations[corev1.MirrorPodAnnotationKey] = "x" }), false},
		{"a DaemonSet's", pod(func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet"}} }), false},
		{"a Node's (static)", pod(func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "Node"}} }), false},
	} {
		if got := Reschedulable(tc.pod); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// wantFit checks Fits' answer: nil when wantErr is empty, else an error
// containing it.
func wantFit(t *testing.T, err error, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("Fits = %v, want nil", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("Fits = %v, want an error containing %q", err, wantErr)
	}
}
