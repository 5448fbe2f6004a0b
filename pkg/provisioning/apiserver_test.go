package provisioning

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/test/testenv"
)

// apiServer is a client of the package's real API server (testenv.Kube)
// that remembers the requests it sent, so a test can ask what a pass
// listed while the API server, not a fake, applies the field selectors.
// What a test creates through it is deleted when the test ends, so the
// cluster-wide lists of the next test see only their own objects.
type apiServer struct {
	t    *testing.T
	cs   kubernetes.Interface
	Kube *kube.Client

	mu   sync.Mutex
	sent []*http.Request
	// hold, when set, is called with every request before it is sent;
	// an error answers it instead (as the API server's 500 would).
	hold func(*http.Request) error
}

func newAPIServer(t *testing.T) *apiServer {
	t.Helper()
	cfg := rest.CopyConfig(testenv.Kube(t).Config)
	a := &apiServer{t: t}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return testenv.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
			a.mu.Lock()
			a.sent = append(a.sent, r)
			hold := a.hold
			a.mu.Unlock()
			if hold != nil {
				if err := hold(r); err != nil {
					return nil, err
				}
			}
			return rt.RoundTrip(r)
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.cs, a.Kube = cs, kube.New(cs)
	return a
}

// listed reports whether a list of resource was sent whose field selector
// contains selector ("" for any list of it).
func (a *apiServer) listed(resource, selector string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.sent {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+resource) &&
			strings.Contains(r.URL.Query().Get("fieldSelector"), selector) {
			return true
		}
	}
	return false
}

// node creates a node, deleted when the test ends.
func (a *apiServer) node(n *corev1.Node) *corev1.Node {
	a.t.Helper()
	ctx := context.Background()
	got, err := a.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { _ = a.cs.CoreV1().Nodes().Delete(context.Background(), got.Name, metav1.DeleteOptions{}) })
	return got
}

// pod creates a pod (with a container when it has none, as the API server
// requires) and writes its status, as a kubelet or scheduler would; it is
// deleted (grace 0, as a kubelet would) when the test ends.
func (a *apiServer) pod(p *corev1.Pod) *corev1.Pod {
	a.t.Helper()
	ctx := context.Background()
	p = p.DeepCopy()
	if len(p.Spec.Containers) == 0 {
		p.Spec.Containers = []corev1.Container{{Name: "c", Image: "pause"}}
	}
	status := p.Status
	got, err := a.cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() {
		zero := int64(0)
		_ = a.cs.CoreV1().Pods(got.Namespace).Delete(context.Background(), got.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	got.Status = status
	if got, err = a.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		a.t.Fatal(err)
	}
	return got
}

// awaitOr waits until cond holds, polling, and returns nil; or, after 20 s,
// an error saying failure; or ctx's error once ctx ends. Tests use it to
// hold a request (or a read) until another one is on its way, so that
// code sending them one after the other fails.
func awaitOr(ctx context.Context, cond func() bool, failure string) error {
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s: %w", failure, err)
	}
	return err
}
