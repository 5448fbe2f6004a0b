package install_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/install"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/rbac"
)

func joistNode(t *testing.T, c cluster, name, id string) {
	t.Helper()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"karpenter.sh/nodepool": "default"}},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///ap-northeast-2a/" + id},
	}
	if _, err := c.env.Client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// ec2 is the cluster's tagged instances as the teardown lists them; a
// test ends one with end.
type ec2 struct {
	mu      sync.Mutex
	state   map[string]string // id -> state, all tagged for cluster
	cluster string
	calls   int
}

func (e *ec2) Tagged(context.Context) ([]launch.Instance, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	var out []launch.Instance
	for id, st := range e.state {
		out = append(out, launch.Instance{ID: id, State: st, Tags: map[string]string{launch.TagCluster: e.cluster}})
	}
	return out, nil
}

func (e *ec2) looks() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

func (e *ec2) end(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.state[id] = "terminated"
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
// only once the last Joist node is gone and no instance of the cluster
// runs; a node of another kind, or Karpenter's with the same labels (its
// instance not tagged for the cluster), does not hold it. A deploy again
// removes the marker.
func TestTeardown_DeleteWaitsUntilNoJoistNodeIsLeft(t *testing.T) {
	c := newCluster(t)
	joistNode(t, c, "teardown-joist", "i-joist")
	joistNode(t, c, "teardown-karpenter", "i-karpenter")
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "teardown-managed-group"}}
	if _, err := c.env.Client.CoreV1().Nodes().Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.env.Client.CoreV1().Nodes().Delete(context.Background(), other.Name, metav1.DeleteOptions{})
	})
	cloud := &ec2{cluster: "td", state: map[string]string{"i-joist": "running", "i-unregistered": "pending"}}

	td := &install.Teardown{Kube: c.env.Client, Instances: cloud, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Poll: 50 * time.Millisecond}
	props := map[string]any{"ServiceToken": "arn:aws:lambda:x", "Cluster": "td"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := td.Handle(ctx, cfn.Event{RequestType: cfn.RequestDelete, ResourceType: install.TeardownResourceType, ResourceProperties: props})
		done <- err
	}()
	waitFor(t, "the teardown marker", func() bool { return markerExists(t, c, "td") })
	answered := func() bool {
		select {
		case err := <-done:
			done <- err
			return true
		default:
			return false
		}
	}
	if answered() {
		t.Fatal("teardown answered while a Joist node was left")
	}
	// The reaper's part: the node retired, its instance ended.
	cloud.end("i-joist")
	if err := c.env.Client.CoreV1().Nodes().Delete(ctx, "teardown-joist", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// An instance whose node never registered still runs: the teardown
	// waits for it too. Once it has looked twice more (the second look
	// begins after the first one's answer), it must not have answered.
	seen := cloud.looks()
	waitFor(t, "two more looks at the instances", func() bool { return cloud.looks() >= seen+2 || answered() })
	if answered() {
		t.Fatal("teardown answered while an instance of the cluster still ran")
	}
	cloud.end("i-unregistered")
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
	joistNode(t, c, "teardown-stuck", "i-stuck")
	td := &install.Teardown{Kube: c.env.Client, Instances: &ec2{cluster: "stuck", state: map[string]string{"i-stuck": "running"}}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Poll: 50 * time.Millisecond, Margin: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
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

// broken is EC2 refusing every listing.
type broken struct{}

func (broken) Tagged(context.Context) ([]launch.Instance, error) {
	return nil, errors.New("UnauthorizedOperation")
}

// TestTeardown_UnknownIsNotDone: when the instances cannot be listed until
// the deadline, the delete fails saying why, rather than report a clean
// teardown it could not see.
func TestTeardown_UnknownIsNotDone(t *testing.T) {
	c := newCluster(t)
	td := &install.Teardown{Kube: c.env.Client, Instances: broken{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Poll: 50 * time.Millisecond, Margin: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, _, err := td.Handle(ctx, cfn.Event{RequestType: cfn.RequestDelete, ResourceType: install.TeardownResourceType, ResourceProperties: map[string]any{"Cluster": "blind"}})
	if err == nil || !strings.Contains(err.Error(), "UnauthorizedOperation") {
		t.Fatalf("teardown that could not list the instances: %v, want an error saying so", err)
	}
	_ = c.env.Client.CoreV1().ConfigMaps("kube-system").Delete(context.Background(), rbac.TeardownName("blind"), metav1.DeleteOptions{})
}
