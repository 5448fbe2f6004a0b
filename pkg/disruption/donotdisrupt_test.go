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
