package handler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/interruption"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/provisioning"
)

const id = "i-1234567890abcdef0"

func body(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile("../../../events/testdata/aws/" + file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type fakeEC2 struct {
	insts []launch.Instance
	err   error
}

func (f *fakeEC2) Describe(_ context.Context, ids ...string) ([]launch.Instance, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []launch.Instance
	for _, i := range f.insts {
		for _, want := range ids {
			if i.ID == want {
				out = append(out, i)
			}
		}
	}
	return out, nil
}

type rig struct {
	h        *Handler
	replaced []provisioning.Retiring
	retired  []string
	cs       *fake.Clientset
}

func newRig(t *testing.T, tags map[string]string, poolAnnotations map[string]string) *rig {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1", Labels: map[string]string{model.LabelNodePool: "spot"}},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///us-east-2a/" + id},
	}
	r := &rig{cs: fake.NewSimpleClientset(node)}
	r.h = &Handler{
		Cluster: "c1", Kube: kube.New(r.cs),
		Instances: &fakeEC2{insts: []launch.Instance{{ID: id, InstanceType: "m5.large", Zone: "us-east-2a", CapacityType: "spot", State: "running", Tags: tags}}},
		Specs: func(context.Context) (*model.Spec, error) {
			return &model.Spec{Pools: []*model.Pool{{Name: "spot", ObjectAnnotations: poolAnnotations}}}, nil
		},
		Replace: func(_ context.Context, ret provisioning.Retiring) (*provisioning.Result, error) {
			r.replaced = append(r.replaced, ret)
			return &provisioning.Result{Launched: []launch.Instance{{ID: "i-0replacement000000"}}}, nil
		},
		Retire: func(_ context.Context, n *corev1.Node) error {
			r.retired = append(r.retired, n.Name)
			return nil
		},
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: metrics.New("c1", nil),
	}
	return r
}

func (r *rig) run(t *testing.T, bodies ...string) []string {
	t.Helper()
	var recs []events.SQSMessage
	for i, b := range bodies {
		recs = append(recs, events.SQSMessage{MessageId: string(rune('a' + i)), Body: b})
	}
	resp, err := r.h.HandleSQS(context.Background(), events.SQSEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

func (r *rig) nodeExists(t *testing.T) bool {
	_, err := r.cs.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	return err == nil
}

var ours = map[string]string{interruption.TagCluster: "c1"}

func TestHandleSQS_SpotWarningReplacesFirstThenRetires(t *testing.T) {
	r := newRig(t, ours, nil)
	order := []string{}
	replace, retire := r.h.Replace, r.h.Retire
	r.h.Replace = func(ctx context.Context, ret provisioning.Retiring) (*provisioning.Result, error) {
		order = append(order, "replace")
		return replace(ctx, ret)
	}
	r.h.Retire = func(ctx context.Context, n *corev1.Node) error {
		order = append(order, "retire")
		return retire(ctx, n)
	}
	if failed := r.run(t, body(t, "ec2-spot-instance-interruption-warning.json")); len(failed) != 0 {
		t.Fatalf("failed %v", failed)
	}
	want := provisioning.Retiring{Nodes: []string{"n1"}, Unavailable: []catalog.OfferingKey{{InstanceType: "m5.large", Zone: "us-east-2a", CapacityType: "spot"}}}
	if len(r.replaced) != 1 || !reflect.DeepEqual(r.replaced[0], want) {
		t.Fatalf("replaced %+v, want %+v", r.replaced, want)
	}
	if !reflect.DeepEqual(order, []string{"replace", "retire"}) {
		t.Fatalf("order %v, want the replacement before the retirement", order)
	}
	if !r.nodeExists(t) {
		t.Fatal("the node was deleted; the drain is the termination engine's")
	}
}

func TestHandleSQS_WithoutRetireTheReplacementIsStillLaunched(t *testing.T) {
	r := newRig(t, ours, nil)
	r.h.Retire = nil
	r.h.Instances.(*fakeEC2).insts[0].State = "stopping"
	if failed := r.run(t, body(t, "aws-health-event-ec2-scheduled-change.json"), body(t, "ec2-instance-state-change-notification-stopping.json")); len(failed) != 0 {
		t.Fatalf("failed %v", failed)
	}
	// The Health sample names i-abcd1111, which EC2 does not know: no-op.
	if len(r.replaced) != 1 || r.replaced[0].Nodes[0] != "n1" || r.replaced[0].Unavailable != nil {
		t.Fatalf("replaced %+v, want n1 once with no offering marked (stopping)", r.replaced)
	}
}

func TestHandleSQS_TerminatedDeletesTheNodeAtOnce(t *testing.T) {
	for _, f := range []string{"ec2-instance-state-change-notification-terminated.json", "ec2-instance-state-change-notification-shutting-down.json"} {
		r := newRig(t, ours, nil)
		r.h.Instances.(*fakeEC2).insts[0].State = "shutting-down"
		if failed := r.run(t, body(t, f)); len(failed) != 0 {
			t.Fatalf("%s: failed %v", f, failed)
		}
		if r.nodeExists(t) || len(r.replaced) != 0 || len(r.retired) != 0 {
			t.Fatalf("%s: node exists %v, replaced %v, retired %v; want deleted only", f, r.nodeExists(t), r.replaced, r.retired)
		}
	}
}

func TestHandleSQS_TerminatedReleasesTheNodeThroughTheHook(t *testing.T) {
	r := newRig(t, ours, nil)
	r.h.Instances.(*fakeEC2).insts[0].State = "terminated"
	var released []string
	r.h.Release = func(_ context.Context, n *corev1.Node) error { released = append(released, n.Name); return nil }
	if failed := r.run(t, body(t, "ec2-instance-state-change-notification-terminated.json")); len(failed) != 0 || !reflect.DeepEqual(released, []string{"n1"}) {
		t.Fatalf("failed %v, released %v; want n1 released", failed, released)
	}
}

func TestHandleSQS_TerminatedWhileEC2SaysRunningLeavesTheNode(t *testing.T) {
	r := newRig(t, ours, nil)
	if failed := r.run(t, body(t, "ec2-instance-state-change-notification-terminated.json")); len(failed) != 0 || !r.nodeExists(t) {
		t.Fatalf("failed %v, node exists %v; want the node kept (EC2's truth over the event)", failed, r.nodeExists(t))
	}
}

func TestHandleSQS_ForeignInstanceIsANoop(t *testing.T) {
	for _, tags := range []map[string]string{{interruption.TagCluster: "other"}, nil} {
		r := newRig(t, tags, nil)
		failed := r.run(t, body(t, "ec2-spot-instance-interruption-warning.json"), body(t, "ec2-instance-state-change-notification-terminated.json"))
		if len(failed) != 0 || len(r.replaced) != 0 || len(r.retired) != 0 || !r.nodeExists(t) {
			t.Fatalf("tags %v: failed %v replaced %v retired %v node %v; want nothing done", tags, failed, r.replaced, r.retired, r.nodeExists(t))
		}
	}
}

func TestHandleSQS_MalformedIsDroppedAndOnlyTransientFailuresAreRetried(t *testing.T) {
	r := newRig(t, ours, nil)
	calls := 0
	r.h.Instances = &flaky{fakeEC2: r.h.Instances.(*fakeEC2), fail: func() bool { calls++; return calls == 2 }}
	failed := r.run(t,
		"garbage",
		body(t, "ec2-spot-instance-interruption-warning.json"),
		body(t, "ec2-spot-instance-interruption-warning.json"), // EC2 fails for this one
		`{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{}}`,
	)
	if !reflect.DeepEqual(failed, []string{"c"}) {
		t.Fatalf("batchItemFailures %v, want [c] (only the message whose EC2 call failed)", failed)
	}
}

type flaky struct {
	*fakeEC2
	fail func() bool
}

func (f *flaky) Describe(ctx context.Context, ids ...string) ([]launch.Instance, error) {
	if f.fail() {
		return nil, errors.New("RequestLimitExceeded")
	}
	return f.fakeEC2.Describe(ctx, ids...)
}

func TestHandleSQS_LeaseHeldElsewhereIsTriedAgainThenRetried(t *testing.T) {
	r := newRig(t, ours, nil)
	tries := 0
	r.h.Replace = func(context.Context, provisioning.Retiring) (*provisioning.Result, error) {
		tries++
		return &provisioning.Result{Skipped: true}, nil
	}
	if failed := r.run(t, body(t, "ec2-spot-instance-interruption-warning.json")); !reflect.DeepEqual(failed, []string{"a"}) {
		t.Fatalf("failed %v, want [a]", failed)
	}
	if tries != leaseAttempts {
		t.Fatalf("%d tries for the lease, want %d", tries, leaseAttempts)
	}
	if len(r.retired) != 0 {
		t.Fatal("retired before the replacement was launched")
	}
}

func TestHandleSQS_LeaseFreedOnASecondTryReplaces(t *testing.T) {
	r := newRig(t, ours, nil)
	replace, tries := r.h.Replace, 0
	r.h.Replace = func(ctx context.Context, ret provisioning.Retiring) (*provisioning.Result, error) {
		if tries++; tries == 1 {
			return &provisioning.Result{Skipped: true}, nil
		}
		return replace(ctx, ret)
	}
	if failed := r.run(t, body(t, "ec2-spot-instance-interruption-warning.json")); len(failed) != 0 || len(r.retired) != 1 {
		t.Fatalf("failed %v, retired %v; want the node replaced and retired on the second try", failed, r.retired)
	}
}

func TestHandleSQS_RebalanceIsOnlyNotedUnlessThePoolOptsIn(t *testing.T) {
	r := newRig(t, ours, nil)
	r.run(t, body(t, "ec2-instance-rebalance-recommendation.json"))
	if len(r.replaced) != 0 || len(r.retired) != 0 {
		t.Fatalf("replaced %v retired %v without the opt-in", r.replaced, r.retired)
	}
	evs, _ := r.cs.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if len(evs.Items) != 1 || evs.Items[0].Reason != kube.ReasonSpotRebalanceRecommendation {
		t.Fatalf("events %+v, want one %s", evs.Items, kube.ReasonSpotRebalanceRecommendation)
	}
	r = newRig(t, ours, map[string]string{interruption.AnnotationRebalance: interruption.RebalanceReplace})
	r.run(t, body(t, "ec2-instance-rebalance-recommendation.json"))
	if len(r.replaced) != 1 || len(r.retired) != 1 {
		t.Fatalf("replaced %v retired %v with the opt-in, want both once", r.replaced, r.retired)
	}
}
