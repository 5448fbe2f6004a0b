package provisioning

import (
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/pods"
)

func podOn(name, node string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: map[string]string{}}, Spec: corev1.PodSpec{NodeName: node}}
	p.Status.Phase = corev1.PodRunning
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestRetireNodes_PlansTheNodesReschedulablePodsAgainAndKeepsThoseALiveReplacementAwaits(t *testing.T) {
	old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: corev1.NodeSpec{ProviderID: "aws:///z/i-0000000000000old0"}}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: corev1.NodeSpec{ProviderID: "aws:///z/i-00000000000other0"}}
	planned := func(id string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Annotations[pods.AnnotationInstance] = id }
	}
	c := &cluster{
		nodes: []*corev1.Node{old, other},
		bound: map[string][]*corev1.Pod{
			"old": {
				podOn("web", "old"),
				podOn("awaited", "old", planned("i-replacement")),
				podOn("stale-plan", "old", planned("i-dead")),
				podOn("ds", "old", func(p *corev1.Pod) {
					p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "d"}}
				}),
				podOn("mirror", "old", func(p *corev1.Pod) { p.Annotations[corev1.MirrorPodAnnotationKey] = "x" }),
				podOn("done", "old", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				podOn("leaving", "old", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }),
			},
			"other": {podOn("stays", "other")},
		},
		planned: map[string][]*corev1.Pod{"i-0000000000000old0": {podOn("coming", "", planned("i-0000000000000old0"))}},
	}
	c.retireNodes([]string{"old", "missing"}, map[string]bool{"i-replacement": true, "i-0000000000000old0": true})
	var todo []string
	for _, p := range c.todo {
		todo = append(todo, p.Name)
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s to plan still names node %s (the simulator skips bound pods)", p.Name, p.Spec.NodeName)
		}
	}
	if c.bound["old"][0].Spec.NodeName != "old" {
		t.Error("the cluster's own pod was changed")
	}
	sort.Strings(todo)
	if got, want := todo, []string{"coming", "stale-plan", "web"}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("todo = %v, want %v", got, want)
	}
	if len(c.planned["i-replacement"]) != 1 || c.planned["i-replacement"][0].Name != "awaited" {
		t.Fatalf("planned on the replacement = %v, want [awaited]", c.planned["i-replacement"])
	}
	if _, ok := c.planned["i-0000000000000old0"]; ok {
		t.Fatal("pods still planned onto the retiring instance")
	}
	if !c.retiring["old"] || c.retiring["other"] {
		t.Fatalf("retiring = %v, want only old", c.retiring)
	}
}
