package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/pkg/iampolicy"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/reaping"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

// TestE2E_LeakedInstanceCollected: a Joist node deleted without draining
// (its termination finalizer removed by hand, as an impatient operator
// does) leaves its instance running with no node. Once the instance is
// past the registration window, the reaper's garbage collection
// terminates it; nothing drained it (no eviction), and only the reaper
// was authorized to end it.
func TestE2E_LeakedInstanceCollected(t *testing.T) {
	const window = 20 * time.Second // JOIST_REGISTRATION_TIMEOUT (production: 15 min)
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "leaked", Namespace: "leaked", Specs: seed(t), ReadyDelay: 300 * time.Millisecond, ReaperEvery: 2 * time.Second,
		ExtraEnv: map[string]string{"JOIST_REGISTRATION_TIMEOUT": window.String()},
	})
	ctx := context.Background()
	node, ps := seedNodeWithFinalizer(t, g)
	id := pods.InstanceID(node.Spec.ProviderID)

	// Remove the finalizer and delete the node in one go: the delete is
	// conditional on the version without the finalizer, so a reaper pass
	// that put it back in between (EnsureFinalizer) makes us try again
	// rather than start a drain.
	eventually(t, 30*time.Second, "the node deleted without its finalizer", func() (bool, error) {
		n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var keep []string
		for _, f := range n.Finalizers {
			if f != termination.Finalizer {
				keep = append(keep, f)
			}
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": keep, "resourceVersion": n.ResourceVersion}})
		n, err = g.Kube.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return false, nil // changed under us: again
		}
		rv := n.ResourceVersion
		err = g.Kube.Client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		return err == nil || apierrors.IsNotFound(err), nil
	})
	eventually(t, 10*time.Second, "the node gone", func() (bool, error) { return nodeGone(t, g, node.Name), nil })
	if st := instanceState(g, id); st != "running" {
		t.Fatalf("instance %s is %q right after its node was deleted, want running (leaked)", id, st)
	}
	gone := time.Now()
	inst, _ := g.EC2.Instance(id)

	eventually(t, window+30*time.Second, "the leaked instance terminated", func() (bool, error) {
		return terminated(instanceState(g, id)), nil
	})
	if age := time.Since(inst.LaunchTime); age < window {
		t.Errorf("leaked instance terminated %s after its launch, inside the registration window (%s)", age, window)
	}
	t.Logf("leaked instance terminated %s after its node was deleted (%s after launch; window %s)",
		time.Since(gone).Round(100*time.Millisecond), time.Since(inst.LaunchTime).Round(100*time.Millisecond), window)

	terminatedBy := map[string]bool{}
	for _, gr := range testenv.Grants() {
		if gr.Action == "ec2:TerminateInstances" && strings.HasSuffix(gr.Resource, "/"+id) {
			terminatedBy[gr.Principal] = true
		}
	}
	if !terminatedBy[iampolicy.Reaper] || len(terminatedBy) != 1 {
		t.Errorf("terminate of %s authorized for %v, want the reaper alone", id, terminatedBy)
	}
	evs, err := g.Kube.Client.CoreV1().Events("leaked").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + termination.ReasonEvicted})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 0 {
		t.Errorf("%d Evicted events: the leaked instance was drained, not collected", len(evs.Items))
	}
	// Its pods were bound to the deleted node; a real cluster's pod
	// garbage collector deletes them, envtest has none.
	deletePods(t, g, ps)
}

// templateOf is the name of the launch template an instance was launched
// from.
func templateOf(t *testing.T, g *testenv.Ground, id string) string {
	t.Helper()
	inst, ok := g.EC2.Instance(id)
	if !ok || inst.LaunchTemplateName == "" {
		t.Fatalf("instance %s: unknown or launched without a template", id)
	}
	return inst.LaunchTemplateName
}

// instanceOf is the instance of the node a pod was bound to.
func instanceOf(t *testing.T, g *testenv.Ground, node string) string {
	t.Helper()
	n, err := g.Kube.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pods.InstanceID(n.Spec.ProviderID)
}

// cpuPod is a copy of the seed's nginx pod asking for cpu.
func cpuPod(t *testing.T, name, cpu string) *corev1.Pod {
	p := deploymentPods(t, seed(t))[0].DeepCopy()
	p.Name = name
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	return p
}

// apart is a copy of the seed's nginx pod that may not share a node with
// the seed's own (required anti-affinity on their label).
func apart(t *testing.T, name, cpu string) *corev1.Pod {
	p := cpuPod(t, name, cpu)
	p.Labels = map[string]string{"type": "apart"}
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"type": "karpenter-test"}},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
	return p
}

// TestE2E_UnusedLaunchTemplatesDeleted: the node class changes (a new tag),
// so new launches get new launch templates. The reaper deletes every
// template of the cluster that no pending or running instance was launched
// from, and keeps those live instances use; once the old node is retired,
// its template goes too. A deleted template is made again when a launch
// needs it (same content, same name).
func TestE2E_UnusedLaunchTemplatesDeleted(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "lt-gc", Namespace: "lt-gc", Specs: seed(t), ReadyDelay: 300 * time.Millisecond, ReaperEvery: 3 * time.Second,
		ExtraEnv: map[string]string{"JOIST_TEMPLATE_MIN_AGE": "5s"},
	})
	ctx := context.Background()
	has := func(name string) bool { return slices.Contains(g.EC2.LaunchTemplateNames(), name) }

	// The old node class: node A.
	nodeA, _ := seedNodeWithFinalizer(t, g)
	idA := pods.InstanceID(nodeA.Spec.ProviderID)
	oldT := templateOf(t, g, idA)
	oldTemplates := g.EC2.LaunchTemplateNames()

	// The node class gains a tag: its templates' content changes. A pod
	// that may not join the seed's gets node B from the new templates (one
	// per max-pods group: t3.large's and t3.xlarge's).
	changed := bytes.Replace(seed(t), []byte("    karpenter.sh/discovery: hoon-cluster\n---\napiVersion: apps/v1"),
		[]byte("    karpenter.sh/discovery: hoon-cluster\n    team: web\n---\napiVersion: apps/v1"), 1)
	if bytes.Equal(changed, seed(t)) {
		t.Fatal("the seed's service-lt was not changed")
	}
	if err := g.PushSpecs(ctx, changed); err != nil {
		t.Fatal(err)
	}
	b := createPending(t, g, []*corev1.Pod{apart(t, "b", "100m")})
	idB := instanceOf(t, g, waitBound(t, g, b, 90*time.Second)["b"])
	newT := templateOf(t, g, idB)
	var unused []string
	for _, name := range g.EC2.LaunchTemplateNames() {
		if name != oldT && name != newT {
			unused = append(unused, name)
		}
	}
	if slices.Contains(oldTemplates, newT) || len(unused) != 2 {
		t.Fatalf("node B launched from %s; old templates %v; unused %v: want a new template, and one unused per class", newT, oldTemplates, unused)
	}
	// Templates are collected once per reaper invocation, and a scheduled
	// invocation may be looping through a drain or a TTL for up to its
	// 50 s (reaping.DefaultLoop) before the next one starts: wait for that
	// bound plus the minimum age, with room for a loaded machine.
	collected := reaping.DefaultLoop + 40*time.Second
	eventually(t, collected, "the unused templates deleted", func() (bool, error) {
		for _, name := range unused {
			if has(name) {
				return false, nil
			}
		}
		return true, nil
	})
	if !has(oldT) || !has(newT) {
		t.Fatalf("templates in use deleted: old node's %s kept %v, new node's %s kept %v", oldT, has(oldT), newT, has(newT))
	}

	// Node A retired (kubectl delete node): its template goes, node B's stays.
	if err := g.Kube.Client.CoreV1().Nodes().Delete(ctx, nodeA.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "node A's instance terminated", func() (bool, error) { return terminated(instanceState(g, idA)), nil })
	eventually(t, collected, "node A's template deleted", func() (bool, error) { return !has(oldT), nil })
	if !has(newT) {
		t.Fatalf("node B's template %s deleted while node B runs", newT)
	}
	deleters := map[string]bool{}
	for _, gr := range testenv.Grants() {
		if gr.Action == "ec2:DeleteLaunchTemplate" {
			deleters[gr.Principal] = true
		}
	}
	if !deleters[iampolicy.Reaper] || len(deleters) != 1 {
		t.Errorf("DeleteLaunchTemplate authorized for %v, want the reaper alone", deleters)
	}

	// A pod only the other max-pods group of the new class can take: its
	// template was deleted (the launchers that made it still have it
	// cached); it is made again and the launch goes on.
	var again string
	for _, name := range unused {
		if !slices.Contains(oldTemplates, name) {
			again = name
		}
	}
	c := createPending(t, g, []*corev1.Pod{cpuPod(t, "c", "3")})
	idC := instanceOf(t, g, waitBound(t, g, c, 90*time.Second)["c"])
	if got := templateOf(t, g, idC); got != again || !has(got) {
		t.Errorf("node C launched from %s (exists %v), want %s made again", got, has(got), again)
	}
	deletePods(t, g, append(b, c...))
}
