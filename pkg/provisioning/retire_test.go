package provisioning

import (
	"reflect"
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

func TestReserveReplacements_OnlyALiveReplacementOfAnotherInstanceHoldsRoom(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{ProviderID: "aws:///z/i-000000000000000n0"}}
	mark := func(id string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Annotations[pods.AnnotationReplacement] = id }
	}
	c := &cluster{nodes: []*corev1.Node{n}, planned: map[string][]*corev1.Pod{}, bound: map[string][]*corev1.Pod{"n": {
		podOn("moving", "n", mark("i-new")),
		podOn("own", "n", mark("i-000000000000000n0")),
		podOn("gone", "n", mark("i-dead")),
		podOn("plain", "n"),
		podOn("nominated-only", "n", func(p *corev1.Pod) { p.Annotations[pods.AnnotationInstance] = "i-new" }),
	}}}
	c.reserveReplacements(map[string]bool{"i-new": true, "i-000000000000000n0": true})
	if got := c.planned["i-new"]; len(got) != 1 || got[0].Name != "moving" {
		t.Fatalf("planned on i-new = %v, want [moving] (a pod kube-scheduler bound elsewhere after a nomination reserves nothing)", got)
	}
	if len(c.planned) != 1 {
		t.Fatalf("planned = %v", c.planned)
	}
}

func TestRetireNodes_PlansTheNodesReschedulablePodsAgainAndKeepsThoseALiveReplacementAwaits(t *testing.T) {
	old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: corev1.NodeSpec{ProviderID: "aws:///z/i-0000000000000old0"}}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: corev1.NodeSpec{ProviderID: "aws:///z/i-00000000000other0"}}
	planned := func(id string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Annotations[pods.AnnotationInstance] = id }
	}
	replaced := func(id string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Annotations[pods.AnnotationReplacement] = id }
	}
	c := &cluster{
		nodes: []*corev1.Node{old, other},
		bound: map[string][]*corev1.Pod{
			"old": {
				podOn("web", "old"),
				podOn("awaited", "old", replaced("i-replacement")),
				podOn("stale-plan", "old", replaced("i-dead")),
				podOn("old-nomination", "old", planned("i-0000000000000old0")),
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
	live := map[string]bool{"i-replacement": true, "i-0000000000000old0": true}
	c.reserveReplacements(live)
	c.retireNodes([]string{"old", "missing"}, live)
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
	if got, want := todo, []string{"coming", "old-nomination", "stale-plan", "web"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("todo = %v, want %v", got, want)
	}
	if len(c.planned["i-replacement"]) != 1 || c.planned["i-replacement"][0].Name != "awaited" || c.planned["i-replacement"][0].Spec.NodeName != "" {
		t.Fatalf("planned on the replacement = %v, want [awaited] without its node", c.planned["i-replacement"])
	}
	if _, ok := c.planned["i-0000000000000old0"]; ok {
		t.Fatal("pods still planned onto the retiring instance")
	}
	if !c.retiring["old"] || c.retiring["other"] {
		t.Fatalf("retiring = %v, want only old", c.retiring)
	}
}
