package e2e

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
func createPending(t testing.TB, g *testenv.Ground, pods []*corev1.Pod) []*corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var out []*corev1.Pod
	for _, p := range pods {
		updated, err := g.CreatePending(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, updated)
	}
	return out
}

// eventually polls f until it returns true or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, f func() (bool, error)) {
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

// waitTick waits for the ticker's next tick or the end of ctx: the pace of
// a simulated controller's loop (kube-controller-manager is not running).
func waitTick(ctx context.Context, tick *time.Ticker) {
	select {
	case <-ctx.Done():
	case <-tick.C:
	}
}

// workloadPod is a busybox pod asking for cpu that selects the pool
// labelled workload=<workload>.
func workloadPod(name, workload, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"workload": workload},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
		},
	}
}

func withAnnotations(p *corev1.Pod, annotations map[string]string) *corev1.Pod {
	p.Annotations = annotations
	return p
}

// settled waits until the pending, ready and interruption queues hold
// nothing, visible or in flight (every message handled and deleted), then
// checks that none of their DLQs holds anything: nothing is left undone,
// nothing was given up on. It replaces "sleep, then look": it returns as
// soon as the ground is idle and fails, naming the queue, if it never is.
func settled(t *testing.T, g *testenv.Ground, timeout time.Duration) {
	t.Helper()
	qs := []*testenv.Queue{g.Msg.Pending, g.Msg.Ready, g.Msg.Interruption}
	for _, q := range qs {
		eventually(t, timeout, "the queue "+queueName(q.URL)+" drained", func() (bool, error) {
			return queueDepth(t, g, q.URL) == 0, nil
		})
	}
	for _, q := range qs {
		if q.DLQ == nil {
			continue
		}
		if n := queueDepth(t, g, q.DLQ.URL); n != 0 {
			t.Errorf("%d messages in the DLQ %s", n, queueName(q.DLQ.URL))
		}
	}
}

func queueName(url string) string { return url[strings.LastIndex(url, "/")+1:] }

// handledCounts counts the messages each function's poller handed it
// (schedule ticks and wake-ups excluded), as an OnBatch hook.
type handledCounts struct {
	mu     sync.Mutex
	n      map[string]int
	failed map[string]int // messages failed or in a batch whose invocation failed
}

func (h *handledCounts) hook(function string, ids, failed []string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n, h.failed = map[string]int{}, map[string]int{}
	}
	h.failed[function] += len(failed)
	if err != nil && len(failed) == 0 {
		h.failed[function]++
	}
	for _, id := range ids {
		if id != "tick" && id != "wake" && id != "woken" {
			h.n[function]++
		}
	}
}

func (h *handledCounts) get(function string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[function]
}

func (h *handledCounts) failures(function string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed[function]
}

// logBuffer collects the ground's logs (and copies them to stderr when
// JOIST_TEST_VERBOSE is set) for a test to look for a line.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if os.Getenv("JOIST_TEST_VERBOSE") != "" {
		_, _ = os.Stderr.Write(p)
	}
	return l.buf.Write(p)
}

func (l *logBuffer) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), substr)
}
