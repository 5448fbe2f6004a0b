package provisioning

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
)

type instancesOnly []launch.Instance

func (l instancesOnly) Instances(context.Context) ([]launch.Instance, error) { return l, nil }
func (instancesOnly) Reservations(context.Context, *model.NodeClass) ([]launch.Reservation, error) {
	return nil, nil
}
func (instancesOnly) Launch(context.Context, launch.Request) (*launch.Instance, error) {
	panic("read launches nothing")
}

// boundNodeSelector is (a part of) the field selector of the list of bound pods
// (kube.Client.BoundPods).
const boundNodeSelector = "spec.nodeName!="

// TestRead_BoundPodsOnlyWhenThePassHasSomethingToPlan runs on the real API
// server: the pass tells pending from bound pods by field selectors
// (spec.nodeName= and !=), which client-go's fake ignores (there the bound
// pod would also be listed as pending).
func TestRead_BoundPodsOnlyWhenThePassHasSomethingToPlan(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	pending := func(annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: "default", Annotations: annotations},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
	}
	fresh := launch.Instance{ID: "i-2", LaunchTime: now.Add(-time.Minute)}
	stale := launch.Instance{ID: "i-3", LaunchTime: now.Add(-time.Hour)}
	cases := []struct {
		name      string
		pending   *corev1.Pod
		instances []launch.Instance
		retiring  *Retiring
		want      bool
	}{
		{"nothing pending", nil, []launch.Instance{{ID: "i-1"}}, nil, false},
		{"pending pod planned onto a live instance", pending(map[string]string{pods.AnnotationInstance: "i-2"}), []launch.Instance{{ID: "i-1"}, fresh}, nil, false},
		{"a pod to plan", pending(nil), []launch.Instance{{ID: "i-1"}}, nil, true},
		{"nodes going away", nil, []launch.Instance{{ID: "i-1"}}, &Retiring{Nodes: []string{"n1"}}, true},
		{"an instance that never registered", nil, []launch.Instance{{ID: "i-1"}, stale}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPIServer(t)
			a.node(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///a/i-1"}})
			a.pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
			a.pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}})
			if tc.pending != nil {
				a.pod(tc.pending)
			}
			p := &Provisioner{
				Kube: a.Kube, Launcher: instancesOnly(tc.instances), Clock: clocktesting.NewFakePassiveClock(now),
				Specs:    func(context.Context) (*model.Spec, error) { return &model.Spec{}, nil },
				retiring: tc.retiring,
			}
			c, err := p.read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := a.listed("pods", boundNodeSelector); got != tc.want {
				t.Fatalf("bound pods listed: %v, want %v", got, tc.want)
			}
			// Finished pods take no room: the API server is asked to
			// leave them out (a cluster's completed Jobs are not sent).
			for _, phase := range []string{"status.phase!=Succeeded", "status.phase!=Failed"} {
				if got := a.listed("pods", phase); got != tc.want {
					t.Fatalf("bound pods listed with %s: %v, want %v", phase, got, tc.want)
				}
			}
			// The API server applies spec.nodeName!=: the pending pod
			// is not read as bound (to no node).
			if n := len(c.bound[""]) + len(c.compact[""]); n != 0 {
				t.Fatalf("%d pods read as bound to no node, want none", n)
			}
			// A pod of a node going away is kept whole (the pass moves
			// it); any other in its compact form.
			whole, compact := len(c.bound["n1"]), len(c.compact["n1"])
			if tc.want && tc.retiring != nil && (whole != 1 || compact != 0) {
				t.Fatalf("bound pods on n1: %d whole, %d compact; want web whole", whole, compact)
			}
			if tc.want && tc.retiring == nil && (whole != 0 || compact != 1) {
				t.Fatalf("bound pods on n1: %d whole, %d compact; want web compact", whole, compact)
			}
		})
	}
}

// TestReadForPlanning_NamespacesWhenAnAffinitySelectsThem: a pod whose
// affinity (or a bound pod whose anti-affinity) selects namespaces by
// label has the namespaces read, with their labels, for the simulator;
// other passes do not read them. What is checked is whether the pass asks
// (Joist's decision) and what it keeps of the answer; the list carries no
// selector the API server would apply, so client-go's fake, whose action
// log shows the asking directly, stays.
func TestReadForPlanning_NamespacesWhenAnAffinitySelectsThem(t *testing.T) {
	team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"team": "data"}}}
	withSelector := func(name string, anti bool) *corev1.Pod {
		term := corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}}
		a := &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
		if anti {
			a = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term}}}}
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "web"}, Spec: corev1.PodSpec{Affinity: a}}
	}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "web"}}
	everyNamespace := withSelector("all", false)
	everyNamespace.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector = &metav1.LabelSelector{}
	cases := []struct {
		name  string
		todo  []*corev1.Pod
		bound []*corev1.Pod
		want  bool
	}{
		{"no affinity", []*corev1.Pod{plain}, nil, false},
		{"an affinity over every namespace ({})", []*corev1.Pod{everyNamespace}, nil, false},
		{"a pod to plan selects namespaces", []*corev1.Pod{plain, withSelector("api", false)}, nil, true},
		{"a bound pod's anti-affinity selects them", []*corev1.Pod{plain}, []*corev1.Pod{withSelector("cache", true)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(team)
			p := &Provisioner{Kube: kube.New(cs)}
			c := &cluster{spec: &model.Spec{}, todo: tc.todo, bound: map[string][]*corev1.Pod{"n1": tc.bound}}
			if err := p.readForPlanning(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			listed := false
			for _, a := range cs.Actions() {
				listed = listed || (a.GetVerb() == "list" && a.GetResource().Resource == "namespaces")
			}
			if listed != tc.want {
				t.Fatalf("namespaces listed: %v, want %v", listed, tc.want)
			}
			if tc.want && (len(c.objects.Namespaces) != 1 || c.objects.Namespaces[0].Labels["team"] != "data") {
				t.Errorf("namespaces read: %v, want data with its labels", c.objects.Namespaces)
			}
		})
	}
}

// TestReadBound_WholeOnlyWhenThePassMayMoveOrReadsTerms: a bound pod is
// kept in its compact form (scheduling.BoundPod) unless the pass may move
// it (a replacement waits for it) or reads its terms (pod affinity). On
// the real API server, which selects the bound pods by spec.nodeName.
func TestReadBound_WholeOnlyWhenThePassMayMoveOrReadsTerms(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: "default"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
	anti := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1,
		PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}}
	for _, tc := range []struct {
		name  string
		mod   func(*corev1.Pod)
		whole bool
	}{
		{"plain", func(*corev1.Pod) {}, false},
		{"awaited by a replacement", func(p *corev1.Pod) { p.Annotations = map[string]string{pods.AnnotationReplacement: "i-9"} }, true},
		{"pod anti-affinity", func(p *corev1.Pod) { p.Spec.Affinity = anti }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			tc.mod(bound)
			a := newAPIServer(t)
			a.node(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///a/i-1"}})
			a.pod(bound)
			a.pod(pending)
			p := &Provisioner{
				Kube: a.Kube, Launcher: instancesOnly([]launch.Instance{{ID: "i-1"}}), Clock: clocktesting.NewFakePassiveClock(now),
				Specs: func(context.Context) (*model.Spec, error) { return &model.Spec{}, nil },
			}
			c, err := p.read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			whole, compact := len(c.bound["n1"]), len(c.compact["n1"])
			if tc.whole && (whole != 1 || compact != 0) || !tc.whole && (whole != 0 || compact != 1) {
				t.Fatalf("web: %d whole, %d compact; want whole %v", whole, compact, tc.whole)
			}
		})
	}
}

// TestReadForPlanning_CSINodeLimitsWithTheVolumes: a pass planning a pod
// with a claim reads the CSINodes with the volumes, and each registered
// node gets its published attachment counts (a driver without a count is
// not limited); a pass without claims reads neither.
func TestReadForPlanning_CSINodeLimitsWithTheVolumes(t *testing.T) {
	ten := int32(10)
	csi := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "ebs.csi.aws.com", NodeID: "i-1", Allocatable: &storagev1.VolumeNodeResources{Count: &ten}},
		{Name: "efs.csi.aws.com", NodeID: "i-1"},
	}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	withClaim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "web"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}}}}}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"}}
	for _, tc := range []struct {
		name string
		todo *corev1.Pod
		want map[string]int64
	}{
		{"a pod with a claim", withClaim, map[string]int64{"ebs.csi.aws.com": 10}},
		{"no claim", plain, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(csi)
			p := &Provisioner{Kube: kube.New(cs)}
			c := &cluster{spec: &model.Spec{}, todo: []*corev1.Pod{tc.todo}, nodes: []*corev1.Node{node}}
			if err := p.readForPlanning(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			got := p.simulatorNodes(c)[0].VolumeLimits
			if !maps.Equal(got, tc.want) {
				t.Errorf("node n1 limits %v, want %v", got, tc.want)
			}
		})
	}
}

// awaitingLauncher's read of the instances ends only once the bound
// pods have been listed (or, if they are not, after a while, with an
// error), or with failure's error.
type awaitingLauncher struct {
	instancesOnly
	a       *apiServer
	failure error
}

func (l awaitingLauncher) Instances(ctx context.Context) ([]launch.Instance, error) {
	if l.failure != nil {
		return nil, l.failure
	}
	if err := awaitOr(ctx, func() bool { return l.a.listed("pods", boundNodeSelector) }, "the bound pods were not listed while EC2's read went on"); err != nil {
		return nil, err
	}
	return l.instancesOnly, nil
}

// TestRead_BoundPodsWhileEC2IsReadWhenAPodIsPlannedOntoNone: a pending
// pod planned onto no instance needs the bound pods whatever EC2's read
// says, so their read starts while EC2's goes on, not after it; a
// failed EC2 read fails the pass.
func TestRead_BoundPodsWhileEC2IsReadWhenAPodIsPlannedOntoNone(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		failure error
	}{
		{"EC2 read", nil},
		{"EC2 read fails", errors.New("DescribeInstances refused by the test")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPIServer(t)
			a.node(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///a/i-1"}})
			a.pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
			a.pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: "default"},
				Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}})
			p := &Provisioner{
				Kube: a.Kube, Launcher: awaitingLauncher{instancesOnly{{ID: "i-1"}}, a, tc.failure}, Clock: clocktesting.NewFakePassiveClock(now),
				Specs: func(context.Context) (*model.Spec, error) { return &model.Spec{}, nil },
			}
			c, err := p.read(context.Background())
			if tc.failure != nil {
				if !errors.Is(err, tc.failure) {
					t.Fatalf("read: %v, want EC2's error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(c.todo) != 1 || len(c.compact["n1"]) != 1 || len(c.instances) != 1 {
				t.Fatalf("read %d pods to plan, %d bound on n1, %d instances; want 1 each", len(c.todo), len(c.compact["n1"]), len(c.instances))
			}
		})
	}
}

// TestRead_BoundPodsWhileTheNodesAreRead: the bound pods' read starts as
// soon as the pending pods show a pod planned onto no instance, or when
// nodes are being replaced, while the nodes' read goes on (at 5,000 nodes
// it takes half a second of every planning pass): here the nodes' list
// is answered only once the bound pods have been listed, so a read that
// waited for the nodes before listing the bound pods fails.
func TestRead_BoundPodsWhileTheNodesAreRead(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		pending  bool
		retiring *Retiring
	}{
		{name: "a pending pod planned onto no instance", pending: true},
		{name: "a node being replaced", retiring: &Retiring{Nodes: []string{"n1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPIServer(t)
			a.node(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///a/i-1"}})
			a.pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
			if tc.pending {
				a.pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: "default"},
					Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}})
			}
			a.mu.Lock()
			a.hold = func(r *http.Request) error {
				if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/nodes") {
					return nil
				}
				return awaitOr(r.Context(), func() bool { return a.listed("pods", boundNodeSelector) }, "the bound pods were not listed while the nodes were read")
			}
			a.mu.Unlock()
			p := &Provisioner{
				Kube: a.Kube, Launcher: instancesOnly{{ID: "i-1"}}, Clock: clocktesting.NewFakePassiveClock(now),
				Specs:    func(context.Context) (*model.Spec, error) { return &model.Spec{}, nil },
				retiring: tc.retiring,
			}
			c, err := p.read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(c.nodes) != 1 || len(c.bound["n1"])+len(c.compact["n1"]) != 1 {
				t.Fatalf("read %d nodes and %d pods bound on n1, want 1 each", len(c.nodes), len(c.bound["n1"])+len(c.compact["n1"]))
			}
		})
	}
}
