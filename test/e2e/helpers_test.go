package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/workload"
	"github.com/joist-dev/joist/test/testenv"
)

// seed is the user's manifests (examples/seed/seed.yaml, a copy of the
// shared seed).
func seed(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(testenv.RepoRoot() + "/examples/seed/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// deploymentPods expands the workloads in manifests into the pods their
// controllers would create (there is no controller manager here).
func deploymentPods(t testing.TB, manifests []byte) []*corev1.Pod {
	t.Helper()
	w, err := workload.Read(manifests, "manifests")
	if err != nil {
		t.Fatal(err)
	}
	return testenv.NewPods(w.Pods)
}

// createPending creates pods as a ReplicaSet would and marks each
// PodScheduled=False/Unschedulable as kube-scheduler would with no node
// that fits.
func createPending(t *testing.T, g *testenv.Ground, pods []*corev1.Pod) []*corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var out []*corev1.Pod
	for _, p := range pods {
		p = p.DeepCopy()
		p.Namespace = g.Opts.Namespace
		created, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
		created.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/0 nodes are available", LastTransitionTime: metav1.Now(),
		}}
		updated, err := g.Kube.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("mark pod %s unschedulable: %v", p.Name, err)
		}
		out = append(out, updated)
	}
	return out
}

// eventually polls f until it returns true or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := f()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
}
