package reaping_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/kube"
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
	clock := time.Now()
	ec2 := &fakeEC2{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &reaping.Reaper{
		Kube: c, Log: log, Now: func() time.Time { return clock },
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
	if want := clock.Add(ttl).Truncate(time.Second); !res.NextDue.Equal(want) && !res.NextDue.Equal(clock.Add(ttl)) {
		t.Errorf("next due %s, want about %s", res.NextDue, want)
	}
	got, _ := c.CoreV1().Nodes().Get(ctx, "reaping-empty", metav1.GetOptions{})
	if got.Annotations[disruption.AnnotationEmptinessTimestamp] == "" || !slices.Contains(got.Finalizers, termination.Finalizer) {
		t.Fatalf("node after a pass: annotations %v finalizers %v; want the stamp and the finalizer", got.Annotations, got.Finalizers)
	}

	clock = clock.Add(ttl - time.Second)
	if res, _ := r.Pass(ctx); len(res.Retired) != 0 {
		t.Fatalf("retired before the TTL: %+v", res)
	}

	clock = clock.Add(2 * time.Second)
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
