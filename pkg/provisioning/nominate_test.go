package provisioning

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestPlaceOnExisting_NominatesSeveralPodsAtOnce: the pods planned onto
// one instance are nominated several at a time, not each after the last
// (a write each, a third of a second for 20 at 5,000 nodes): here the API
// server answers a pod's nomination only once another is on its way too,
// so nominating one at a time fails. Every pod ends nominated, and the
// count is right.
func TestPlaceOnExisting_NominatesSeveralPodsAtOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	a := newAPIServer(t)
	var list []*corev1.Pod
	for i := range 5 {
		list = append(list, a.pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("burst-%d", i), Namespace: "default"},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}))
	}
	patches := func() int {
		a.mu.Lock()
		defer a.mu.Unlock()
		n := 0
		for _, r := range a.sent {
			if r.Method == http.MethodPatch {
				n++
			}
		}
		return n
	}
	a.mu.Lock()
	a.hold = func(r *http.Request) error {
		if r.Method != http.MethodPatch {
			return nil
		}
		return awaitOr(r.Context(), func() bool { return patches() >= 2 }, "no other nomination was sent while this one waited")
	}
	a.mu.Unlock()
	cat, err := catalog.Offline("us-east-1", []string{"us-east-1a"})
	if err != nil {
		t.Fatal(err)
	}
	p := &Provisioner{Kube: a.Kube, Catalog: cat, Launcher: instancesOnly{{ID: "i-1"}}, Clock: clocktesting.NewFakePassiveClock(now)}
	p.setDefaults()
	c := &cluster{instances: []launch.Instance{{ID: "i-1", InstanceType: "m5.large"}}}
	res := &Result{}
	if err := p.placeOnExisting(context.Background(), c, []scheduling.Placement{{Node: "i-1", InFlight: true, Pods: list}}, now, res); err != nil {
		t.Fatal(err)
	}
	if res.Nominated != len(list) {
		t.Errorf("nominated %d pods, want %d", res.Nominated, len(list))
	}
	for _, pod := range list {
		got, err := a.cs.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if id := pods.PlannedInstance(got); id != "i-1" {
			t.Errorf("pod %s planned onto %q, want i-1", pod.Name, id)
		}
	}
}

// overlapLauncher launches only once two launches have been in flight
// at the same time (or, after a while, fails them).
type overlapLauncher struct {
	launchesFirst
	inFlight, most atomic.Int32
}

func (l *overlapLauncher) Launch(ctx context.Context, r launch.Request) (*launch.Instance, error) {
	n := l.inFlight.Add(1)
	for m := l.most.Load(); n > m && !l.most.CompareAndSwap(m, n); m = l.most.Load() {
	}
	defer l.inFlight.Add(-1)
	if err := awaitOr(ctx, func() bool { return l.most.Load() >= 2 }, "no other launch was sent while this one waited"); err != nil {
		return nil, err
	}
	return l.launchesFirst.Launch(ctx, r)
}

// TestReconcile_LaunchesTheNewNodesAtOnce: a plan's new nodes are
// launched several at a time (an instant CreateFleet takes a second or
// more: one after another, the last node's pods waited for every launch
// before theirs), and each launched node's pods are nominated to it: here
// a launch returns only once another is on its way too, so launching one
// at a time fails.
func TestReconcile_LaunchesTheNewNodesAtOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	z9 := &catalog.InstanceType{Name: "z9.large", Family: "z9", Category: "z", Generation: 9, Size: "large", Arch: "amd64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, MaxENIsDefaultCard: 3, IPv4PerENI: 10}
	cat := catalog.New("us-east-1", []string{"us-east-1a"}, []*catalog.InstanceType{z9},
		map[string][]catalog.Offering{"z9.large": {{Zone: "us-east-1a", CapacityType: "on-demand", Price: 0.1}}})
	a := newAPIServer(t)
	for i := range 3 {
		a.pod(pendingPod(fmt.Sprintf("big-%d", i), "1500m")) // one a node
	}
	l := &overlapLauncher{launchesFirst: launchesFirst{now: now}}
	p := &Provisioner{
		Cluster: "test", Kube: a.Kube, Catalog: cat, Clock: clocktesting.NewFakePassiveClock(now), Launcher: l,
		Specs: func(context.Context) (*model.Spec, error) {
			return &model.Spec{Pools: []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "default"}},
				NodeClasses: map[string]*model.NodeClass{"default": {Name: "default"}}}, nil
		},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	res, err := p.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Launched) != 3 || res.Nominated != 3 || len(res.Unschedulable) != 0 {
		t.Fatalf("launched %d, nominated %d, unschedulable %v; want 3, 3 and none", len(res.Launched), res.Nominated, res.Unschedulable)
	}
	planned := map[string]bool{}
	for i := range 3 {
		got, err := a.cs.CoreV1().Pods("default").Get(context.Background(), fmt.Sprintf("big-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		planned[pods.PlannedInstance(got)] = true
	}
	if len(planned) != 3 || planned[""] {
		t.Errorf("the pods are planned onto %v, want three instances", planned)
	}
}
