package reaping_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/reaping"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

// TestNodeRepair: on the API server, a node whose kubelet has reported
// NotReady for over 30 minutes is retired for repair once the NodeRepair
// gate is on (not before), and its drain is bounded by the repair
// policy's 10 minutes rather than its pool's hour-long
// terminationGracePeriod: the deadline the termination engine stamps.
func TestNodeRepair(t *testing.T) {
	env := testenv.Kube(t)
	ctx := context.Background()
	c := kube.New(env.Client)
	hour := time.Hour
	pool := &model.Pool{Name: "repairing", API: model.APIV1, Disruption: model.Disruption{
		ConsolidationPolicy: "WhenEmpty", TerminationGracePeriod: &hour, Budgets: []model.Budget{{Nodes: "100%"}}}}
	created, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "repair-sick", Labels: map[string]string{model.LabelNodePool: "repairing"}},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///z/i-sick"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
		_, _ = c.CoreV1().Nodes().Patch(ctx, "repair-sick", types.MergePatchType, patch, metav1.PatchOptions{})
		_ = c.CoreV1().Nodes().Delete(ctx, "repair-sick", metav1.DeleteOptions{})
	})
	created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		LastTransitionTime: metav1.NewTime(created.CreationTimestamp.Time)}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A pod that keeps the drain waiting (do-not-disrupt), so the node
	// stays to be looked at.
	createPod(t, c, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "repair-kept", Annotations: map[string]string{disruption.AnnotationDoNotDisrupt: "true"}},
		Spec:       corev1.PodSpec{NodeName: "repair-sick", Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	})
	fc := clocktesting.NewFakeClock(created.CreationTimestamp.Add(31 * time.Minute))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &reaping.Reaper{
		Kube: c, Log: log, Clock: fc, Cloud: launched{"i-sick"}, Cluster: "c",
		Specs:      func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{pool}}, nil },
		Terminator: &termination.Terminator{Kube: c, EC2: &fakeEC2{}, Log: log, Clock: fc},
	}
	if res, err := r.Pass(ctx); err != nil || len(res.Retired) != 0 {
		t.Fatalf("gate off: retired %+v (%v), want nothing", res.Retired, err)
	}
	r.NodeRepair = true
	res, err := r.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Retired) != 1 || res.Retired[0].Node != "repair-sick" || res.Retired[0].Reason != disruption.ReasonUnhealthy {
		t.Fatalf("gate on: retired %+v, want repair-sick for Unhealthy", res.Retired)
	}
	got, err := c.CoreV1().Nodes().Get(ctx, "repair-sick", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp == nil {
		t.Fatal("node not being deleted")
	}
	want := got.DeletionTimestamp.Add(10 * time.Minute).UTC().Format(time.RFC3339)
	if d := got.Annotations[termination.AnnotationDeadline]; d != want || got.Annotations[termination.AnnotationReason] != disruption.ReasonUnhealthy {
		t.Errorf("deadline %q reason %q, want %s (the repair policy's 10 minutes) and Unhealthy", d, got.Annotations[termination.AnnotationReason], want)
	}
}
