package scheduling_test

import (
	"fmt"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/verify"
)

// TestPropertyBoundPodsCompact: an existing node's pods given in their
// compact form (Node.Bound, NewBoundPod) plan exactly as the same pods
// given whole (Node.Pods): their room, host ports, labels in spreads and
// affinity, and DaemonSet pods are all seen. Pods with required
// anti-affinity stay whole (NewBoundPod refuses them).
func TestPropertyBoundPodsCompact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		for i, n := range in.Nodes {
			if n.InFlight {
				continue
			}
			// Held pods with host ports, and a DaemonSet's
			// pod (the generated DaemonSet, when there is one).
			for k, p := range n.Pods {
				if rapid.IntRange(0, 2).Draw(t, "heldPort") == 0 { // ports the pending pods may ask for
					p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 80, HostPort: int32(8080 + k)})
				}
			}
			if len(in.DaemonSets) > 0 && rapid.Bool().Draw(t, "dsPod") {
				ds := in.DaemonSets[0]
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agent-%d", i), Namespace: ds.Namespace, Labels: ds.Spec.Template.Labels,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name}}}, Spec: *ds.Spec.Template.Spec.DeepCopy()}
				p.Spec.NodeName = n.Name
				n.Pods = append(n.Pods, p)
			}
		}
		whole := summarize(scheduling.Solve(in))
		compact := in
		compact.Nodes = nil
		converted := 0
		for _, n := range in.Nodes {
			c := *n
			c.Pods = nil
			for _, p := range n.Pods {
				if n.InFlight {
					c.Pods = append(c.Pods, p)
					continue
				}
				b, ok := scheduling.NewBoundPod(p, nil)
				if ok {
					c.Bound = append(c.Bound, b)
					converted++
				} else {
					c.Pods = append(c.Pods, p)
				}
			}
			compact.Nodes = append(compact.Nodes, &c)
		}
		plan := scheduling.Solve(compact)
		if got := summarize(plan); !reflect.DeepEqual(whole, got) {
			t.Fatalf("%d pods compact: the plan changed:\nwhole   %+v\ncompact %+v", converted, whole, got)
		}
		for _, err := range verify.Plan(compact, plan) {
			t.Fatal(err)
		}
	})
}

// TestBoundDaemonSetPod: a node whose DaemonSet pod is given compact
// reserves no second room for that DaemonSet, so the pending pod that fits
// beside it goes there.
func TestBoundDaemonSetPod(t *testing.T) {
	ds := daemonSet("agent", "2", "1Gi")
	dsPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-n0", Namespace: ds.Namespace, Labels: ds.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name}}}, Spec: *ds.Spec.Template.Spec.DeepCopy()}
	n := existingNode("n0", "test-1a")
	filler := pods("filler", 1, "1", "1Gi")[0]
	// Room left beside the filler and the DaemonSet pod: 2 CPUs.
	filler.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(n.Allocatable.Cpu().MilliValue()-4000, resource.DecimalSI)
	for _, p := range []*corev1.Pod{filler, dsPod} {
		b, ok := scheduling.NewBoundPod(p, nil)
		if !ok {
			t.Fatalf("pod %s has no compact form", p.Name)
		}
		n.Bound = append(n.Bound, b)
	}
	in := input(pods("web", 1, "2", "1Gi"))
	in.Nodes, in.DaemonSets = []*scheduling.Node{n}, []*appsv1.DaemonSet{ds}
	plan := solve(t, in)
	if got := placedOn(plan)["web-0"]; got != "n0" {
		t.Fatalf("web-0 placed on %q, want n0 (the DaemonSet's pod is there already)", got)
	}
}
