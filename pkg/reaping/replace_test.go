package reaping_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/provisioning"
	"github.com/joist-dev/joist/pkg/reaping"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

// replacer plays provisioning.Replace: it nominates every pod of the
// retiring nodes to instance id (pods.AnnotationReplacement).
type replacer struct {
	c     *kube.Client
	id    string
	calls [][]string
}

func (f *replacer) replace(ctx context.Context, r provisioning.Retiring) (*provisioning.Result, error) {
	f.calls = append(f.calls, r.Nodes)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{pods.AnnotationReplacement: f.id}}})
	for _, node := range r.Nodes {
		on, err := f.c.PodsOnNode(ctx, node)
		if err != nil {
			return nil, err
		}
		for _, p := range on {
			if _, err := f.c.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return nil, err
			}
		}
	}
	return &provisioning.Result{}, nil
}

func readyNode(t *testing.T, c *kube.Client, name, id string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///z/" + id},
	}
	got, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	got.Status.Allocatable = corev1.ResourceList{corev1.ResourcePods: *resourceQuantity("110")}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := testenv.RemoveNode(context.Background(), c, name); err != nil {
			t.Error(err)
		}
	})
}

func busyPod(t *testing.T, c *kube.Client, ns, name, node string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !isExists(err) {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Gone at once (no kubelet to finish a graceful deletion), so that a
	// test run again (go test -count=N) can make it anew.
	t.Cleanup(func() {
		zero := int64(0)
		_ = c.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
}

// TestReplacementFirst_DrainsOnlyOnceTheReplacementIsReady: an expired busy
// node is tainted and its replacement asked for, but not deleted; passes
// while the replacement has no Ready node ask again and wait; once it is
// Ready the node is deleted and drained.
func TestReplacementFirst_DrainsOnlyOnceTheReplacementIsReady(t *testing.T) {
	env := testenv.Kube(t)
	ctx := context.Background()
	c := kube.New(env.Client)
	hour := time.Hour
	pool := &model.Pool{Name: "aging", API: model.APIV1, Disruption: model.Disruption{ConsolidationPolicy: "WhenEmpty", ExpireAfter: &hour}}
	labels := map[string]string{model.LabelNodePool: "aging"}
	readyNode(t, c, "reaping-old", "i-old", labels)
	busyPod(t, c, "reaping-replace", "app", "reaping-old")
	fc := clocktesting.NewFakeClock(time.Now().Add(2 * time.Hour))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &replacer{c: c, id: "i-new"}
	r := &reaping.Reaper{
		Kube: c, Log: log, Clock: fc, Replace: f.replace, Cloud: launched{"i-old", "i-new"}, Cluster: "c",
		Specs:      func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{pool}}, nil },
		Terminator: &termination.Terminator{Kube: c, EC2: &fakeEC2{}, Log: log, Clock: fc},
	}

	res, err := r.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Retired) != 1 || res.Retired[0].Reason != disruption.ReasonExpired || !res.Retired[0].Replace {
		t.Fatalf("first pass retired %+v, want reaping-old Expired with a replacement", res.Retired)
	}
	old, _ := c.CoreV1().Nodes().Get(ctx, "reaping-old", metav1.GetOptions{})
	if old.DeletionTimestamp != nil || !disruption.Retiring(old) || termination.ReplacingSince(old).IsZero() {
		t.Fatalf("after the decision the node is deleting=%v tainted=%v; want tainted and waiting, not deleted", old.DeletionTimestamp != nil, disruption.Retiring(old))
	}
	if !slices.Equal(res.Replacing, []string{"reaping-old"}) || len(f.calls) != 1 {
		t.Fatalf("replacing %v after %d replacement passes, want reaping-old after 1", res.Replacing, len(f.calls))
	}

	fc.Step(5 * time.Second)
	if res, err = r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	old, _ = c.CoreV1().Nodes().Get(ctx, "reaping-old", metav1.GetOptions{})
	if old.DeletionTimestamp != nil || len(f.calls) != 2 || !slices.Contains(res.InProgress, "reaping-old") {
		t.Fatalf("with no replacement node: deleting=%v, %d replacement passes, in progress %v; want waiting, asked again", old.DeletionTimestamp != nil, len(f.calls), res.InProgress)
	}

	readyNode(t, c, "reaping-new", "i-new", labels)
	fc.Step(5 * time.Second)
	if _, err = r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	old, _ = c.CoreV1().Nodes().Get(ctx, "reaping-old", metav1.GetOptions{})
	if old == nil || old.DeletionTimestamp == nil {
		t.Fatalf("the replacement is Ready but the node is not being retired: %+v", old)
	}
}

// TestReplacementFirst_GracefulGivesUpAfterTheTimeout: a drifted node whose
// replacement never turns Ready is untainted after ReplacementTimeout and
// takes pods again.
func TestReplacementFirst_GracefulGivesUpAfterTheTimeout(t *testing.T) {
	env := testenv.Kube(t)
	ctx := context.Background()
	c := kube.New(env.Client)
	pool := &model.Pool{Name: "ondemand", API: model.APIV1, Requirements: []model.Requirement{{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"on-demand"}}}}
	readyNode(t, c, "reaping-drifted", "i-drifted", map[string]string{model.LabelNodePool: "ondemand", "karpenter.sh/capacity-type": "spot"})
	busyPod(t, c, "reaping-giveup", "app", "reaping-drifted")
	fc := clocktesting.NewFakeClock(time.Now())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &replacer{c: c, id: "i-never"}
	r := &reaping.Reaper{
		Kube: c, Log: log, Clock: fc, Replace: f.replace, ReplacementTimeout: time.Minute, Cloud: launched{"i-drifted", "i-never"}, Cluster: "c",
		Specs:      func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{pool}}, nil },
		Terminator: &termination.Terminator{Kube: c, EC2: &fakeEC2{}, Log: log, Clock: fc},
	}
	res, err := r.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Retired) != 1 || res.Retired[0].Reason != disruption.ReasonDrifted {
		t.Fatalf("retired %+v, want the node Drifted", res.Retired)
	}
	fc.Step(61 * time.Second)
	if _, err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	n, _ := c.CoreV1().Nodes().Get(ctx, "reaping-drifted", metav1.GetOptions{})
	if n.DeletionTimestamp != nil || disruption.Retiring(n) || !termination.ReplacingSince(n).IsZero() {
		t.Fatalf("after the timeout: deleting=%v tainted=%v annotations %v; want the node back in service", n.DeletionTimestamp != nil, disruption.Retiring(n), n.Annotations)
	}
}

func resourceQuantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func isExists(err error) bool { return apierrors.IsAlreadyExists(err) }
