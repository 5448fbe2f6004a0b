package install_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/install"
	"github.com/joist-dev/joist/pkg/rbac"
)

func joistNode(t *testing.T, c cluster, name string) {
	t.Helper()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"karpenter.sh/nodepool": "default"}},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///ap-northeast-2a/i-0123456789abcdef0"},
	}
	if _, err := c.env.Client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func markerExists(t *testing.T, c cluster, cluster string) bool {
	_, err := c.env.Client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), rbac.TeardownName(cluster), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestTeardown_DeleteWaitsUntilNoJoistNodeIsLeft: the stack's delete sets
// the marker (under which the reaper retires every Joist node) and answers
// only once the last Joist node is gone; a node of another kind does not
// hold it. A deploy again removes the marker.
func TestTeardown_DeleteWaitsUntilNoJoistNodeIsLeft(t *testing.T) {
	c := newCluster(t)
	joistNode(t, c, "teardown-joist")
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "teardown-managed-group"}}
	if _, err := c.env.Client.CoreV1().Nodes().Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.env.Client.CoreV1().Nodes().Delete(context.Background(), other.Name, metav1.DeleteOptions{})
	})

	td := &install.Teardown{Kube: c.env.Client, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Poll: 50 * time.Millisecond}
	props := map[string]any{"ServiceToken": "arn:aws:lambda:x", "Cluster": "td"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := td.Handle(ctx, cfn.Event{RequestType: cfn.RequestDelete, ResourceType: install.TeardownResourceType, ResourceProperties: props})
		done <- err
	}()
	waitFor(t, "the teardown marker", func() bool { return markerExists(t, c, "td") })
	select {
	case err := <-done:
		t.Fatalf("teardown answered (%v) while a Joist node was left", err)
	default:
	}
	// The reaper's part: the node retired.
	if err := c.env.Client.CoreV1().Nodes().Delete(ctx, "teardown-joist", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("teardown: %v", err)
	}

	// Deployed again: the marker goes, the pools are served again.
	if _, _, err := td.Handle(ctx, cfn.Event{RequestType: cfn.RequestCreate, ResourceType: install.TeardownResourceType, ResourceProperties: props}); err != nil {
		t.Fatal(err)
	}
	if markerExists(t, c, "td") {
		t.Error("a new deploy left the teardown marker")
	}
}

// TestTeardown_AnswersBeforeTheDeadlineWithWhatIsLeft: a drain that cannot
// finish in time fails the delete in time, naming the nodes, rather than
// let the function time out without answering CloudFormation.
func TestTeardown_AnswersBeforeTheDeadlineWithWhatIsLeft(t *testing.T) {
	c := newCluster(t)
	joistNode(t, c, "teardown-stuck")
	td := &install.Teardown{Kube: c.env.Client, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Poll: 50 * time.Millisecond, Margin: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, _, err := td.Handle(ctx, cfn.Event{RequestType: cfn.RequestDelete, ResourceType: install.TeardownResourceType, ResourceProperties: map[string]any{"Cluster": "stuck"}})
	if err == nil || !strings.Contains(err.Error(), "teardown-stuck") {
		t.Fatalf("teardown with a node that stays: %v, want an error naming it", err)
	}
	if ctx.Err() != nil {
		t.Errorf("answered after the deadline")
	}
	_ = c.env.Client.CoreV1().ConfigMaps("kube-system").Delete(context.Background(), rbac.TeardownName("stuck"), metav1.DeleteOptions{})
}
