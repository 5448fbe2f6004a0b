package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

// reaperRuns counts the reaper's scheduled ticks and wake-ups.
type reaperRuns struct {
	mu          sync.Mutex
	ticks, wake int
}

func (r *reaperRuns) hook(function string, ids, _ []string, _ error) {
	if function != "reaper" || len(ids) != 1 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ids[0] {
	case "tick":
		r.ticks++
	case "wake":
		r.wake++
	}
}

func (r *reaperRuns) counts() (ticks, wake int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ticks, r.wake
}

// TestE2E_KubectlDeleteNodeWakesTheReaper: the forwarder reports a Joist
// node that starts deleting, the bus's wake rule invokes the reaper, and
// the drain begins within seconds. The reaper's schedule is far longer
// than the test, so no scheduled run can explain the drain.
func TestE2E_KubectlDeleteNodeWakesTheReaper(t *testing.T) {
	runs := &reaperRuns{}
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "wake", Namespace: "wake", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
		ReaperEvery: time.Hour, OnBatch: runs.hook,
	})
	ctx := context.Background()
	node, ps := seedNodeWithFinalizer(t, g)
	id := pods.InstanceID(node.Spec.ProviderID)

	if err := g.Kube.Client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var drained time.Duration
	eventually(t, 20*time.Second, "the first eviction", func() (bool, error) {
		evs, err := g.Kube.Client.CoreV1().Events("wake").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + termination.ReasonEvicted})
		drained = time.Since(start)
		return err == nil && len(evs.Items) > 0, err
	})
	eventually(t, 60*time.Second, "the instance terminated", func() (bool, error) { return terminated(instanceState(g, id)), nil })
	done := time.Since(start)
	eventually(t, 15*time.Second, "the node deleted", func() (bool, error) { return nodeGone(t, g, node.Name), nil })
	ticks, wake := runs.counts()
	if ticks != 0 || wake == 0 {
		t.Fatalf("reaper ran %d times on schedule and %d woken; want only wake-ups", ticks, wake)
	}
	t.Logf("kubectl delete node → first eviction %s, instance terminated %s (reaper woken %d times, no scheduled run; %d pods)",
		drained.Round(100*time.Millisecond), done.Round(100*time.Millisecond), wake, len(ps))
}
