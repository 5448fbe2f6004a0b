package disruption

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// protectedFor gives p karpenter.sh/do-not-disrupt=value and, when
// started is not zero, that start time.
func protectedFor(p *corev1.Pod, value string, started time.Time) *corev1.Pod {
	p.Annotations[AnnotationDoNotDisrupt] = value
	if !started.IsZero() {
		p.Status.StartTime = &metav1.Time{Time: started}
	}
	return p
}

// TestConsolidation_DoNotDisruptForADuration ports Karpenter v1.15's
// cases of a pod's do-not-disrupt given as a duration
// (disruption/consolidation_test.go, "Delete"): it protects the pod's
// node for that long after the pod started, and a value that is neither
// "true" nor a positive duration protects nothing.
func TestConsolidation_DoNotDisruptForADuration(t *testing.T) {
	types := testTypes(t)
	cases := []struct {
		name        string
		pod         *corev1.Pod
		want        []string
		wantBlocked []string
	}{
		{name: "does not consolidate nodes with pods that have a duration-based do-not-disrupt annotation that is still active",
			pod: protectedFor(app("p1", "1"), "1h", now.Add(-10*time.Minute)), wantBlocked: []string{"a"}},
		{name: "can consolidate nodes after duration-based do-not-disrupt annotation expires",
			pod: protectedFor(app("p1", "1"), "1h", now.Add(-2*time.Hour)), want: []string{"a:delete"}},
		{name: "a duration protects a pod whose start is not known yet",
			pod: protectedFor(app("p1", "1"), "5m", time.Time{}), wantBlocked: []string{"a"}},
		{name: "can delete nodes, considers invalid do-not-disrupt annotation format as not blocking",
			pod: protectedFor(app("p1", "1"), "invalid", now.Add(-time.Minute)), want: []string{"a:delete"}},
		{name: "a negative duration protects nothing",
			pod: protectedFor(app("p1", "1"), "-1h", now.Add(-time.Minute)), want: []string{"a:delete"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []Node{typed(types, "a", "m5.xlarge", "on-demand", tc.pod),
				typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1", AnnotationDoNotDisrupt))}
			first, second := twoPasses(types, []*model.Pool{consolidating(model.CapacityTypeOnDemand)}, nodes)
			if got := describe(second.Retire); !slices.Equal(got, tc.want) {
				t.Fatalf("retired %v, want %v (first pass stamped %v)", got, tc.want, first.StampConsolidation)
			}
			var blocked []string
			for _, b := range append(first.Blocked, second.Blocked...) {
				if b.Node == "a" && !slices.Contains(blocked, b.Node) {
					blocked = append(blocked, b.Node)
				}
			}
			if !slices.Equal(blocked, tc.wantBlocked) {
				t.Errorf("node a blocked: %v (%+v), want %v", blocked, append(first.Blocked, second.Blocked...), tc.wantBlocked)
			}
		})
	}
}

// TestGracefulBlock_DurationEndsOnTime: a duration-based do-not-disrupt
// blocks its node until the pod's start plus the duration and not after,
// whether the pod is kept whole (as read, or compacted by Node.AddWhole)
// or compact (Node.Add), and the reason says
// until when; the least key among the pods protected at the time wins.
func TestGracefulBlock_DurationEndsOnTime(t *testing.T) {
	started := now.Add(-30 * time.Minute)
	build := map[string]func(ps ...*corev1.Pod) Node{
		"whole": func(ps ...*corev1.Pod) Node { return Node{Node: node("a", "default"), Pods: ps} },
		"whole, compacted (AddWhole)": func(ps ...*corev1.Pod) Node {
			n := Node{Node: node("a", "default")}
			for _, p := range ps {
				n.AddWhole(p, nil)
			}
			return n
		},
		"compact": func(ps ...*corev1.Pod) Node {
			n := Node{Node: node("a", "default")}
			for _, p := range ps {
				n.Add(p, nil)
			}
			if len(n.Pods) != 0 {
				t.Fatalf("Add kept %d pods whole, want them compact", len(n.Pods))
			}
			return n
		},
	}
	for name, mk := range build {
		t.Run(name, func(t *testing.T) {
			n := mk(protectedFor(cpuPod("a-short", "100m"), "1h", started), protectedFor(cpuPod("b-long", "100m"), "2h", started),
				protectedFor(cpuPod("c-bad", "100m"), "soon", started))
			for _, tc := range []struct {
				at   time.Time
				want string
			}{
				{now, "pod ns/a-short has do-not-disrupt until " + started.Add(time.Hour).Format(time.RFC3339)},
				{started.Add(time.Hour - time.Second), "pod ns/a-short has do-not-disrupt until " + started.Add(time.Hour).Format(time.RFC3339)},
				{started.Add(time.Hour), "pod ns/b-long has do-not-disrupt until " + started.Add(2*time.Hour).Format(time.RFC3339)},
				{started.Add(2 * time.Hour), ""},
			} {
				if got := gracefulBlock(n, tc.at, pdbIndex{}); got != tc.want {
					t.Errorf("at %s: %q, want %q", tc.at.Format(time.RFC3339), got, tc.want)
				}
			}
		})
	}
}

// TestGracefulBlock_DoNotDisruptOfEveryRunningPod ports Karpenter v1.15's
// candidate cases (disruption/suite_test.go): a do-not-disrupt on any pod
// still running on the node blocks it — a DaemonSet's or a mirror pod,
// which follow their node, too — and one on a pod terminating or finished
// does not; whether the pod is kept whole or compact.
func TestGracefulBlock_DoNotDisruptOfEveryRunningPod(t *testing.T) {
	mk := func(f func(*corev1.Pod)) *corev1.Pod {
		p := cpuPod("p", "100m", AnnotationDoNotDisrupt)
		f(p)
		return p
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		blocked bool
	}{
		{"should not consider candidates that have do-not-disrupt daemonset pods scheduled",
			mk(func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent"}} }), true},
		{"should not consider candidates that have do-not-disrupt mirror pods scheduled",
			mk(func(p *corev1.Pod) {
				p.Annotations[corev1.MirrorPodAnnotationKey] = "x"
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "Node", Name: "a"}}
			}), true},
		{"should consider candidates that have do-not-disrupt terminating pods",
			mk(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} }), false},
		{"should consider candidates that have do-not-disrupt terminal pods",
			mk(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
	}
	for _, tc := range cases {
		for _, form := range []string{"whole", "compact"} {
			t.Run(tc.name+"/"+form, func(t *testing.T) {
				n := Node{Node: node("a", "default")}
				if form == "whole" {
					n.Pods = []*corev1.Pod{tc.pod}
				} else {
					n.Add(tc.pod.DeepCopy(), nil)
				}
				if got := gracefulBlock(n, now, pdbIndex{}); (got != "") != tc.blocked {
					t.Errorf("block %q, want blocked %v", got, tc.blocked)
				}
			})
		}
	}
}
