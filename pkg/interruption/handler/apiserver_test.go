package handler

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/test/testenv"
)

// TestMain stops the API server the precondition test starts.
func TestMain(m *testing.M) { testenv.Main(m) }

// TestHandleSQS_TerminatedLeavesANodeRegisteredAgainUnderTheSameName runs
// on the real API server, which enforces the delete's UID precondition
// (client-go's fake, which the other tests here use, ignores it): a node
// deleted and registered again under the same name between the handler's
// read and its delete (a new instance reusing the private DNS name) is
// left alone, and the message is done, not retried.
func TestHandleSQS_TerminatedLeavesANodeRegisteredAgainUnderTheSameName(t *testing.T) {
	env := testenv.Kube(t)
	ctx := context.Background()
	const name = "ip-10-0-0-9.interruption.internal"
	node := func() *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{model.LabelNodePool: "spot"}},
			Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-2a/" + id}}
	}
	old, err := env.Client.CoreV1().Nodes().Create(ctx, node(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })

	// Just before the handler's delete reaches the API server, the node
	// is replaced by a new one of the same name.
	var once sync.Once
	var again *corev1.Node
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return testenv.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/nodes/"+name) {
				once.Do(func() {
					if err := env.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
						t.Error(err)
					}
					var err error
					if again, err = env.Client.CoreV1().Nodes().Create(ctx, node(), metav1.CreateOptions{}); err != nil {
						t.Error(err)
					}
				})
			}
			return rt.RoundTrip(r)
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, ours, nil)
	r.h.Kube = kube.New(cs)
	r.h.Instances.(*fakeEC2).insts[0].State = "shutting-down"
	if failed := r.run(t, body(t, "ec2-instance-state-change-notification-terminated.json")); len(failed) != 0 {
		t.Fatalf("failed %v, want the message done", failed)
	}
	if again == nil {
		t.Fatal("the handler never deleted the node")
	}
	got, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the node registered again is gone: %v", err)
	}
	if got.UID != again.UID || got.UID == old.UID {
		t.Fatalf("node UID %s, want the new node's %s (the old was %s)", got.UID, again.UID, old.UID)
	}
}
