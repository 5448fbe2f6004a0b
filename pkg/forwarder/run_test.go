package forwarder

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

// eventually polls cond (in real time) until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// watching reports whether the fake client has a watch open on resource:
// objects created before that would be missed by the fake, which, unlike
// an API server, does not replay from a resource version. The fake stays
// here because these tests step the forwarder's clock (debounce, flush on
// shutdown); the API server's part (field selectors of the pending and
// bound pod watches, watch replay) is integration_test.go's, on a real
// kube-apiserver.
func watching(client *fake.Clientset, resource string) bool {
	for _, a := range client.Actions() {
		if a.GetVerb() == "watch" && a.GetResource().Resource == resource {
			return true
		}
	}
	return false
}

func TestRunWiresInformersToTheBusAndFlushesOnShutdown(t *testing.T) {
	old := node("old", corev1.ConditionTrue, t0.Add(-time.Hour))
	fresh := node("fresh", corev1.ConditionTrue, t0.Add(-time.Minute))
	client := fake.NewClientset(old, fresh, unschedulablePod("early"))
	h := newHarness(t, func(o *Options) { o.Client = client })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.f.Run(ctx) }()
	eventually(t, "caches to sync and watches to open", func() bool {
		return h.f.Synced() && watching(client, "pods") && watching(client, "nodes")
	})

	// Changes after startup arrive through the watches.
	if _, err := client.CoreV1().Pods("default").Create(ctx, unschedulablePod("late"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	joining := node("joining", corev1.ConditionFalse, t0)
	if _, err := client.CoreV1().Nodes().Create(ctx, joining, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	joining = node("joining", corev1.ConditionTrue, t0)
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, joining, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	var pods, nodes []string
	eventually(t, "events for both pods and the two new Ready nodes", func() bool {
		h.clock.Step(250 * time.Millisecond)
		got := decode(t, h.calls())
		pods = append(pods, podNames(got.pods)...)
		nodes = append(nodes, nodeNames(got.nodes)...)
		return len(pods) >= 2 && len(nodes) >= 2
	})
	if !equal(sorted(pods), []string{"default/early", "default/late"}) {
		t.Errorf("pods sent = %v", pods)
	}
	if !equal(sorted(nodes), []string{"fresh", "joining"}) {
		t.Errorf("node-ready events = %v (a node Ready for an hour before startup is not news)", nodes)
	}

	// A pod seen but not yet sent when the forwarder stops still goes out.
	if _, err := client.CoreV1().Pods("default").Create(ctx, unschedulablePod("last"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the last pod to be seen", func() bool {
		h.f.mu.Lock()
		defer h.f.mu.Unlock()
		_, ok := h.f.box.dirtyPods["uid-last"]
		return ok
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if got := podNames(decode(t, h.calls()).pods); !equal(got, []string{"default/last"}) {
		t.Errorf("shutdown flush sent %v", got)
	}
}

func sorted(xs []string) []string { return slices.Sorted(slices.Values(xs)) }
