package provisioning

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/test/testenv"
)

// TestReconcile_PodsBoundOntoAReadyNodeAreCounted: a pod the simulator
// places on a node already Ready is bound by the pass itself (no
// node-ready event will come), and counted in joist_pods_bound as the
// binder counts its own.
func TestReconcile_PodsBoundOntoAReadyNodeAreCounted(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cat, err := catalog.Offline("us-east-1", []string{"us-east-1a"})
	if err != nil {
		t.Fatal(err)
	}
	it, ok := cat.Lookup("m5.large")
	if !ok {
		t.Fatal("no m5.large")
	}
	pool := &model.Pool{Name: "default", API: model.APIV1}
	labels := it.Labels()
	labels[model.LabelNodePool] = pool.Name
	labels[model.LabelZone] = "us-east-1a"
	labels[model.LabelCapacityType] = "on-demand"
	labels[corev1.LabelHostname] = "ready-counted"
	// A real API server: the pass binds through pods/binding, which the
	// API server checks (the node must exist, the pod must be unbound).
	c := kube.New(testenv.Kube(t).Client)
	ctx := context.Background()
	node, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ready-counted", Labels: labels},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-ready"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	node.Status = corev1.NodeStatus{Capacity: it.Capacity(nil), Allocatable: it.Allocatable(nil),
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}
	if node, err = c.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's admission puts the not-ready taint on a new node;
	// the node lifecycle controller would take it off.
	node.Spec.Taints = nil
	if _, err := c.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pending, err := c.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ready-counted-web", Namespace: "default"},
		Spec: corev1.PodSpec{SchedulerName: corev1.DefaultSchedulerName, Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = c.CoreV1().Pods("default").Delete(context.Background(), pending.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	if _, err := c.CoreV1().Pods("default").UpdateStatus(ctx, pending, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := metrics.New("test", clocktesting.NewFakePassiveClock(now))
	p := &Provisioner{
		Cluster: "test", Kube: c, Catalog: cat, Clock: clocktesting.NewFakePassiveClock(now),
		Launcher: instancesOnly([]launch.Instance{{ID: "i-ready", InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand", LaunchTime: now.Add(-time.Hour)}}),
		Specs:    func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{pool}}, nil },
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics:  rec,
	}
	res, err := p.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.CoreV1().Pods("default").Get(ctx, pending.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != node.Name {
		t.Fatalf("the pod is on %q, want it bound onto the Ready node %s (result %+v)", got.Spec.NodeName, node.Name, res)
	}
	var out bytes.Buffer
	if err := rec.Flush(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"`+metrics.PodsBound+`":1`) {
		t.Fatalf("%s is not 1 in the pass's metrics:\n%s", metrics.PodsBound, out.String())
	}
}
