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
	"k8s.io/client-go/kubernetes/fake"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/model"
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
	labels[corev1.LabelHostname] = "ready"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ready", Labels: labels},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-ready"},
		Status: corev1.NodeStatus{Capacity: it.Capacity(nil), Allocatable: it.Allocatable(nil),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web"},
		Spec: corev1.PodSpec{SchedulerName: corev1.DefaultSchedulerName, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
	cs := fake.NewClientset(node, pending)
	rec := metrics.New("test", func() time.Time { return now })
	p := &Provisioner{
		Cluster: "test", Kube: kube.New(cs), Catalog: cat, Now: func() time.Time { return now },
		Launcher: instancesOnly([]launch.Instance{{ID: "i-ready", InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand", LaunchTime: now.Add(-time.Hour)}}),
		Specs:    func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{pool}}, nil },
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics:  rec,
	}
	res, err := p.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bound := false
	for _, a := range cs.Actions() {
		bound = bound || (a.GetVerb() == "create" && a.GetSubresource() == "binding")
	}
	if !bound {
		t.Fatalf("the pod was not bound onto the Ready node (result %+v)", res)
	}
	var out bytes.Buffer
	if err := rec.Flush(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"`+metrics.PodsBound+`":1`) {
		t.Fatalf("%s is not 1 in the pass's metrics:\n%s", metrics.PodsBound, out.String())
	}
}
