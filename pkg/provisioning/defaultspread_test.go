package provisioning

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/iampolicy"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/rbac"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/test/testenv"
)

// launchesFirst launches each request as its first option (the cheapest
// the plan chose: its zone), one instance per request.
type launchesFirst struct {
	noReservations
	mu       sync.Mutex
	now      time.Time
	launched []launch.Instance
}

func (l *launchesFirst) Instances(context.Context) ([]launch.Instance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]launch.Instance(nil), l.launched...), nil
}

func (l *launchesFirst) Launch(_ context.Context, r launch.Request) (*launch.Instance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := r.Options[0]
	inst := launch.Instance{ID: fmt.Sprintf("i-%d", len(l.launched)), InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: o.CapacityType, Pool: r.Pool.Name, LaunchTime: l.now}
	l.launched = append(l.launched, inst)
	return &inst, nil
}

// asProvisioner is a client of the provisioner's own identity
// (rbac.User, rbac.Group) once the RBAC objects given are applied and the
// authorizer allows it verb on resource.
func asProvisioner(t *testing.T, a *apiServer, objs []runtime.Object, verb, group, resource string) *kube.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := testenv.Kube(t)
	if err := env.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	user, grp := rbac.User(iampolicy.Provisioner), rbac.Group(iampolicy.Provisioner)
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{grp, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: verb, Group: group, Resource: resource},
	}}
	for {
		res, err := a.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("subject access review: %v", err)
		}
		if res.Status.Allowed {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s may still not %s %s: %s", user, verb, resource, res.Status.Reason)
		case <-time.After(50 * time.Millisecond):
		}
	}
	cfg, err := env.IdentityConfig(user, grp, "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	return kube.New(kubernetes.NewForConfigOrDie(cfg))
}

// TestReconcile_SpreadsPodsByTheDefaultConstraint: with a scheduler
// config whose default constraint spreads over zones (maxSkew 1), a
// pass plans a ReplicaSet's three pods, which declare no spread, onto
// three nodes in three zones: their selector is deduced from the
// ReplicaSet, read from the API server. Without the config the three
// share one node. The pass runs as the provisioner's identity: with
// pkg/rbac's default rules it may not read the Services the deduction
// needs (the pass fails, and the next retries), with
// rbac.Features.DefaultSpread it may.
func TestReconcile_SpreadsPodsByTheDefaultConstraint(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	z9 := &catalog.InstanceType{Name: "z9.large", Family: "z9", Category: "z", Generation: 9, Size: "large", Arch: "amd64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, MaxENIsDefaultCard: 3, IPv4PerENI: 10}
	var offers []catalog.Offering
	for i, z := range zones {
		offers = append(offers, catalog.Offering{Zone: z, CapacityType: "on-demand", Price: 0.1 + float64(i)/100})
	}
	cat := catalog.New("us-east-1", zones, []*catalog.InstanceType{z9}, map[string][]catalog.Offering{"z9.large": offers})
	pool := &model.Pool{Name: "default", API: model.APIV1, NodeClass: "default"}
	cfg, err := scheduling.ParseSchedulerConfig("podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]}")
	if err != nil {
		t.Fatal(err)
	}

	a := newAPIServer(t)
	ctx := context.Background()
	labels := map[string]string{"app": "spread-web"}
	rs, err := a.cs.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "spread-web", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = a.cs.AppsV1().ReplicaSets("default").Delete(context.Background(), rs.Name, metav1.DeleteOptions{})
	})
	yes := true
	for i := range 3 {
		p := pendingPod(fmt.Sprintf("spread-web-%d", i), "100m")
		p.Labels = labels
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}
		a.pod(p)
	}
	provisioner := func(k *kube.Client, sc *scheduling.SchedulerConfig) (*Provisioner, *launchesFirst) {
		l := &launchesFirst{now: now}
		return &Provisioner{
			Cluster: "test", Kube: k, Catalog: cat, Clock: clocktesting.NewFakePassiveClock(now), Launcher: l, SchedulerConfig: sc,
			Specs: func(context.Context) (*model.Spec, error) {
				return &model.Spec{Pools: []*model.Pool{pool}, NodeClasses: map[string]*model.NodeClass{"default": {Name: "default"}}}, nil
			},
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}, l
	}

	// Without the config: one node for the three, and nothing but the
	// usual reads (no Service is listed).
	p, l := provisioner(a.Kube, nil)
	if _, err := p.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if len(l.launched) != 1 {
		t.Fatalf("without default constraints: %d launched, want 1", len(l.launched))
	}
	if a.listed("services", "") {
		t.Error("a pass without default constraints listed Services")
	}

	// The default rules do not let the provisioner read Services.
	plain, err := rbac.Objects("test", "")
	if err != nil {
		t.Fatal(err)
	}
	k := asProvisioner(t, a, plain, "list", "", "pods")
	p, l = provisioner(k, cfg)
	if _, err := p.Reconcile(ctx); err == nil || !apierrors.IsForbidden(err) {
		t.Fatalf("with the default rules: %v, want the Services read forbidden", err)
	}
	if len(l.launched) != 0 {
		t.Fatalf("a pass that could not deduce the selectors launched %v", l.launched)
	}

	// With the feature's rules: three nodes, one per zone.
	withSpread, err := rbac.ObjectsWith("test", "", rbac.Features{DefaultSpread: true})
	if err != nil {
		t.Fatal(err)
	}
	k = asProvisioner(t, a, withSpread, "get", "apps", "replicasets")
	p, l = provisioner(k, cfg)
	res, err := p.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inZone := map[string]int{}
	for _, inst := range l.launched {
		inZone[inst.Zone]++
	}
	if len(l.launched) != 3 || len(inZone) != 3 {
		t.Fatalf("with a zonal default constraint: launched %v (result %+v), want one node in each of 3 zones", l.launched, res)
	}
}
