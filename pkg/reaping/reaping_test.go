package reaping_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/reaping"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type fakeEC2 struct{ terminated, gone []string }

func (f *fakeEC2) Gone(_ context.Context, id string) (bool, error) {
	return slices.Contains(f.gone, id), nil
}

func (f *fakeEC2) Terminate(_ context.Context, ids ...string) error {
	f.terminated = append(f.terminated, ids...)
	return nil
}

// launched is EC2 as the reaper reads it: these instances, running and
// tagged for cluster "c".
type launched []string

func (l launched) Tagged(context.Context) ([]launch.Instance, error) {
	out := make([]launch.Instance, len(l))
	for i, id := range l {
		out[i] = launch.Instance{ID: id, State: "running", Tags: map[string]string{launch.TagCluster: "c"}}
	}
	return out, nil
}

func (launched) Desired(_ context.Context, nc *model.NodeClass) (launch.Desired, error) {
	return launch.Desired{}, fmt.Errorf("node class %s: no classes in these tests", nc.Name)
}

func (launched) Reservations(context.Context, *model.NodeClass) ([]launch.Reservation, error) {
	return nil, nil
}

// karpenterNode creates a node Karpenter launched (same labels as Joist's,
// its instance not tagged for the cluster), held by Karpenter's finalizer
// of the same name and, with deleting, being deleted by Karpenter.
func karpenterNode(t *testing.T, c *kube.Client, name string, labels map[string]string, deleting bool) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Finalizers: []string{termination.Finalizer}},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///z/i-" + name},
	}
	got, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
		_, _ = c.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		_ = c.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	})
	if deleting {
		if err := c.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKarpenterNodesAreNotJoists: during a migration with both running, a
// node Karpenter launched carries the same pool labels and a finalizer of
// the same name; its instance is not tagged for the cluster, so the reaper
// never stamps, expires or retires it, nor steps its deletion (Karpenter's
// own termination does).
func TestKarpenterNodesAreNotJoists(t *testing.T) {
	env := testenv.Kube(t)
	ctx := context.Background()
	c := kube.New(env.Client)
	ttl, hour := time.Duration(0), time.Hour
	pool := &model.Pool{Name: "shared", API: model.APIV1, Disruption: model.Disruption{ConsolidationPolicy: "WhenEmpty", ConsolidateAfter: &ttl, ExpireAfter: &hour}}
	labels := map[string]string{model.LabelNodePool: "shared"}
	karpenterNode(t, c, "karpenters-empty", labels, false)
	karpenterNode(t, c, "karpenters-deleting", labels, true)
	fc := clocktesting.NewFakeClock(time.Now().Add(2 * time.Hour))
	ec2 := &fakeEC2{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &reaping.Reaper{
		Kube: c, Log: log, Clock: fc, Cloud: launched{}, Cluster: "c",
		Specs:      func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{pool}}, nil },
		Terminator: &termination.Terminator{Kube: c, EC2: ec2, Log: log, Clock: fc},
	}
	for range 2 {
		res, err := r.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Stamped)+len(res.Retired)+len(res.Finished)+len(res.InProgress) != 0 {
			t.Fatalf("pass acted on Karpenter's nodes: %+v", res)
		}
		fc.Step(time.Minute)
	}
	for _, name := range []string{"karpenters-empty", "karpenters-deleting"} {
		got, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		disrupted := slices.ContainsFunc(got.Spec.Taints, func(t corev1.Taint) bool { return t.Key == termination.TaintDisrupted })
		if len(got.Annotations) != 0 || disrupted || !slices.Equal(got.Finalizers, []string{termination.Finalizer}) {
			t.Errorf("%s touched: annotations %v taints %v finalizers %v", name, got.Annotations, got.Spec.Taints, got.Finalizers)
		}
	}
	if len(ec2.terminated) != 0 {
		t.Errorf("terminated %v, want nothing", ec2.terminated)
	}
}

func TestEmptyNodeIsStampedThenRetiredAfterItsTTL(t *testing.T) {
	env := testenv.Kube(t)
	ctx := context.Background()
	c := kube.New(env.Client)
	ttl := 30 * time.Second
	pool := &model.Pool{Name: "service", API: model.APIV1Alpha5, Disruption: model.Disruption{ConsolidationPolicy: "WhenEmpty", ConsolidateAfter: &ttl}}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "reaping-empty", Labels: map[string]string{model.LabelProvisionerName: "service"}},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///z/i-empty"},
	}
	created, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fc := clocktesting.NewFakeClock(time.Now())
	ec2 := &fakeEC2{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &reaping.Reaper{
		Kube: c, Log: log, Clock: fc, Cloud: launched{"i-empty"}, Cluster: "c",
		Specs:      func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{pool}}, nil },
		Terminator: &termination.Terminator{Kube: c, EC2: ec2, Log: log},
	}

	res, err := r.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Stamped, []string{"reaping-empty"}) || len(res.Retired) != 0 {
		t.Fatalf("first pass: %+v, want the node stamped, not retired", res)
	}
	if want := fc.Now().Add(ttl).Truncate(time.Second); !res.NextDue.Equal(want) && !res.NextDue.Equal(fc.Now().Add(ttl)) {
		t.Errorf("next due %s, want about %s", res.NextDue, want)
	}
	got, _ := c.CoreV1().Nodes().Get(ctx, "reaping-empty", metav1.GetOptions{})
	if got.Annotations[disruption.AnnotationEmptinessTimestamp] == "" || !slices.Contains(got.Finalizers, termination.Finalizer) {
		t.Fatalf("node after a pass: annotations %v finalizers %v; want the stamp and the finalizer", got.Annotations, got.Finalizers)
	}

	fc.Step(ttl - time.Second)
	if res, _ := r.Pass(ctx); len(res.Retired) != 0 {
		t.Fatalf("retired before the TTL: %+v", res)
	}

	fc.Step(2 * time.Second)
	res, err = r.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Retired) != 1 || res.Retired[0].Reason != disruption.ReasonEmpty || !slices.Equal(res.Finished, []string{"reaping-empty"}) {
		t.Fatalf("pass after the TTL: %+v, want the node retired and finished", res)
	}
	if !slices.Equal(ec2.terminated, []string{"i-empty"}) {
		t.Fatalf("terminated %v, want i-empty", ec2.terminated)
	}
	if _, err := c.CoreV1().Nodes().Get(ctx, "reaping-empty", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node still there: %v", err)
	}
}
