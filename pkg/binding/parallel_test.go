package binding_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/joist-dev/joist/pkg/binding"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/test/testenv"
)

// wrapped is a client of the test API server whose requests go through
// rt first.
func wrapped(t *testing.T, rt func(r *http.Request, next http.RoundTripper) (*http.Response, error)) *kube.Client {
	t.Helper()
	cfg := rest.CopyConfig(testenv.Kube(t).Config)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return testenv.RoundTripFunc(func(r *http.Request) (*http.Response, error) { return rt(r, next) })
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube.New(cs)
}

// TestBinder_BindsANodesPodsSeveralAtOnce: the pods planned onto a node
// are bound several at a time, not each after the last (a Binding and an
// Event each): here the API server takes a pod's Binding only once another
// is on its way too, so binding one at a time fails.
func TestBinder_BindsANodesPodsSeveralAtOnce(t *testing.T) {
	c := fixture(t, "par", "node-par", "i-par")
	ctx := context.Background()
	for i := range 4 {
		plannedPod(t, c, "par", fmt.Sprintf("p%d", i), "100m", "i-par")
	}
	var sent atomic.Int32
	k := wrapped(t, func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/binding") {
			sent.Add(1)
			if err := wait.PollUntilContextTimeout(r.Context(), 5*time.Millisecond, 20*time.Second, true,
				func(context.Context) (bool, error) { return sent.Load() >= 2, nil }); err != nil {
				return nil, fmt.Errorf("no other Binding was sent while this one waited: %w", err)
			}
		}
		return next.RoundTrip(r)
	})
	res, err := (&binding.Binder{Kube: k, Log: quiet()}).BindNode(ctx, "node-par")
	if err != nil {
		t.Fatal(err)
	}
	if res.Bound != 4 {
		t.Fatalf("result %+v, want the 4 pods bound", res)
	}
	for i := range 4 {
		p, err := c.CoreV1().Pods("par").Get(ctx, fmt.Sprintf("p%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "node-par" {
			t.Errorf("pod %s on %q, want node-par", p.Name, p.Spec.NodeName)
		}
	}
}

// TestBinder_BindsAPodThatFitsOnceAnEarlierOneWentElsewhere: the binder
// decides which pods fit counting those decided before as bound; when one
// of those turns out bound elsewhere (kube-scheduler was first), a pod
// that did not fit beside it is looked at again and bound, as binding one
// after another would, rather than handed back to the provisioner.
func TestBinder_BindsAPodThatFitsOnceAnEarlierOneWentElsewhere(t *testing.T) {
	c := fixture(t, "late", "node-late", "i-late")
	ctx := context.Background()
	plannedPod(t, c, "late", "a", "1200m", "i-late")
	plannedPod(t, c, "late", "b", "1200m", "i-late") // fits only if a is not here
	k := wrapped(t, func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/namespaces/late/pods/a/binding") {
			// Someone else binds a first: this Binding meets a conflict.
			if err := c.CoreV1().Pods("late").Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: "late", Name: "a"},
				Target:     corev1.ObjectReference{Kind: "Node", Name: "node-elsewhere"},
			}, metav1.CreateOptions{}); err != nil {
				return nil, err
			}
		}
		return next.RoundTrip(r)
	})
	res, err := (&binding.Binder{Kube: k, Log: quiet()}).BindNode(ctx, "node-late")
	if err != nil {
		t.Fatal(err)
	}
	if res.Bound != 1 || res.AlreadyBound != 1 || res.Unplanned != 0 {
		t.Fatalf("result %+v, want b bound, a already bound elsewhere, nothing handed back", res)
	}
	b, err := c.CoreV1().Pods("late").Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Spec.NodeName != "node-late" {
		t.Fatalf("b on %q, want node-late", b.Spec.NodeName)
	}
}
