package provisioning

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
)

type instancesOnly []launch.Instance

func (l instancesOnly) Instances(context.Context) ([]launch.Instance, error) { return l, nil }
func (instancesOnly) Launch(context.Context, launch.Request) (*launch.Instance, error) {
	panic("read launches nothing")
}

// boundListed reports whether the pass listed the bound pods.
func boundListed(cs *fake.Clientset) bool {
	for _, a := range cs.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok && a.GetResource().Resource == "pods" &&
			strings.Contains(l.GetListRestrictions().Fields.String(), "spec.nodeName!=") {
			return true
		}
	}
	return false
}

func TestRead_BoundPodsOnlyWhenThePassHasSomethingToPlan(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///a/i-1"}}
	bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	pending := func(annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: "default", Annotations: annotations},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
	}
	fresh := launch.Instance{ID: "i-2", LaunchTime: now.Add(-time.Minute)}
	stale := launch.Instance{ID: "i-3", LaunchTime: now.Add(-time.Hour)}
	cases := []struct {
		name      string
		objs      []runtime.Object
		instances []launch.Instance
		retiring  *Retiring
		want      bool
	}{
		{"nothing pending", []runtime.Object{node, bound}, []launch.Instance{{ID: "i-1"}}, nil, false},
		{"pending pod planned onto a live instance", []runtime.Object{node, bound, pending(map[string]string{pods.AnnotationInstance: "i-2"})}, []launch.Instance{{ID: "i-1"}, fresh}, nil, false},
		{"a pod to plan", []runtime.Object{node, bound, pending(nil)}, []launch.Instance{{ID: "i-1"}}, nil, true},
		{"nodes going away", []runtime.Object{node, bound}, []launch.Instance{{ID: "i-1"}}, &Retiring{Nodes: []string{"n1"}}, true},
		{"an instance that never registered", []runtime.Object{node, bound}, []launch.Instance{{ID: "i-1"}, stale}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(tc.objs...)
			p := &Provisioner{
				Kube: kube.New(cs), Launcher: instancesOnly(tc.instances), Clock: clocktesting.NewFakePassiveClock(now),
				Specs:    func(context.Context) (*model.Spec, error) { return &model.Spec{}, nil },
				retiring: tc.retiring,
			}
			c, err := p.read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := boundListed(cs); got != tc.want {
				t.Fatalf("bound pods listed: %v, want %v", got, tc.want)
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
// other passes do not read them.
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
// it (a replacement waits for it) or reads its terms (pod affinity).
func TestReadBound_WholeOnlyWhenThePassMayMoveOrReadsTerms(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///a/i-1"}}
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
			cs := fake.NewClientset(node, bound, pending)
			p := &Provisioner{
				Kube: kube.New(cs), Launcher: instancesOnly([]launch.Instance{{ID: "i-1"}}), Clock: clocktesting.NewFakePassiveClock(now),
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
