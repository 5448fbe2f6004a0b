package provisioning

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// launchesAs launches every request as one instance of the type given.
type launchesAs struct {
	noReservations
	inst launch.Instance
}

func (launchesAs) Instances(context.Context) ([]launch.Instance, error) { return nil, nil }
func (l launchesAs) Launch(context.Context, launch.Request) (*launch.Instance, error) {
	i := l.inst
	return &i, nil
}

// TestReconcile_PlanCarriesTheLabelsThePodSelectsOn: planned with a
// catalog that knows a type the embedded one does not (z9.large), a pod
// that selects on its instance family is nominated with that label
// (pods.AnnotationInstanceLabels): the binder, which has no live catalog,
// labels the node from it (binding's TestBinder_LabelsATypeOnlyThePlanKnows).
//
// On the real API server: the pass finds the pod by field selector and
// nominates it with a patch the API server applies.
func TestReconcile_PlanCarriesTheLabelsThePodSelectsOn(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if _, ok := catalog.Lookup("z9.large"); ok {
		t.Fatal("the embedded catalog knows z9.large: pick a type it does not")
	}
	pool := &model.Pool{Name: "default", API: model.APIV1, NodeClass: "default"}
	pod := pendingPod("z9", "100m")
	pod.Spec.NodeSelector = map[string]string{catalog.LabelInstanceFamily: "z9"}
	a := newAPIServer(t)
	a.pod(pod)
	p := z9Provisioner(a, pool, now)
	res, err := p.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Launched) != 1 {
		t.Fatalf("result %+v, want one z9.large launched", res)
	}
	got, err := a.Kube.CoreV1().Pods("default").Get(context.Background(), "z9", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pods.PlannedInstance(got) != "i-z9" {
		t.Fatalf("pod planned onto %q, want i-z9", pods.PlannedInstance(got))
	}
	labels := pods.InstanceLabels(got)
	if len(labels) != 1 || labels[catalog.LabelInstanceFamily] != "z9" {
		t.Fatalf("plan labels %v (annotation %q), want only the instance family z9", labels, got.Annotations[pods.AnnotationInstanceLabels])
	}
}

// TestReconcile_PlansUnderTheMinValuesPolicy: a pool asking for two
// instance types per node when the catalog has one. Under Karpenter's
// default (Strict) the pod waits, unschedulable; under BestEffort
// (JOIST_MIN_VALUES_POLICY, Provisioner.Policy) the node is launched with
// the one type there is.
func TestReconcile_PlansUnderTheMinValuesPolicy(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	two := 2
	pool := &model.Pool{Name: "default", API: model.APIV1, NodeClass: "default", Requirements: []model.Requirement{
		{Key: corev1.LabelInstanceTypeStable, Operator: "Exists", MinValues: &two}}}
	for _, c := range []struct {
		policy        string
		launched      int
		unschedulable int
	}{
		{scheduling.MinValuesPolicyStrict, 0, 1},
		{scheduling.MinValuesPolicyBestEffort, 1, 0},
	} {
		t.Run(c.policy, func(t *testing.T) {
			policy, err := scheduling.PolicyOptions("", c.policy)
			if err != nil {
				t.Fatal(err)
			}
			a := newAPIServer(t)
			a.pod(pendingPod("web", "100m"))
			p := z9Provisioner(a, pool, now)
			p.Policy = policy
			res, err := p.Reconcile(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Launched) != c.launched || len(res.Unschedulable) != c.unschedulable {
				t.Fatalf("launched %d, unschedulable %v; want %d launched, %d unschedulable", len(res.Launched), res.Unschedulable, c.launched, c.unschedulable)
			}
		})
	}
}

// z9Provisioner plans against a catalog of one type the embedded one
// lacks (z9.large, on-demand in us-east-1a) for the pool, and launches
// every node as one such instance.
func z9Provisioner(a *apiServer, pool *model.Pool, now time.Time) *Provisioner {
	z9 := &catalog.InstanceType{Name: "z9.large", Family: "z9", Category: "z", Generation: 9, Size: "large", Arch: "amd64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, MaxENIsDefaultCard: 3, IPv4PerENI: 10}
	cat := catalog.New("us-east-1", []string{"us-east-1a"}, []*catalog.InstanceType{z9},
		map[string][]catalog.Offering{"z9.large": {{Zone: "us-east-1a", CapacityType: "on-demand", Price: 0.1}}})
	return &Provisioner{
		Cluster: "test", Kube: a.Kube, Catalog: cat, Clock: clocktesting.NewFakePassiveClock(now),
		Launcher: launchesAs{inst: launch.Instance{ID: "i-z9", InstanceType: "z9.large", Zone: "us-east-1a", CapacityType: "on-demand", LaunchTime: now}},
		Specs: func(context.Context) (*model.Spec, error) {
			return &model.Spec{Pools: []*model.Pool{pool}, NodeClasses: map[string]*model.NodeClass{"default": {Name: "default"}}}, nil
		},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// pendingPod is an unschedulable pod in namespace default requesting cpu.
func pendingPod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
}
