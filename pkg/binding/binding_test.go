package binding_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/joist-dev/joist/pkg/binding"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fixture is a Ready node of instance id with 2 cpu, in its own namespace.
// The node and the namespace (with its pods) go when the test ends, so that
// a test run again (go test -count=N) starts as the first run did.
func fixture(t *testing.T, ns, node, id string) *kube.Client {
	t.Helper()
	env := testenv.Kube(t)
	c := kube.New(env.Client)
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := testenv.RemoveNamespace(ctx, env.Client, ns); err != nil {
			t.Error(err)
		}
		if err := testenv.RemoveNode(ctx, env.Client, node); err != nil {
			t.Error(err)
		}
	})
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{corev1.LabelInstanceTypeStable: "t3.large"}},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///ap-northeast-2a/" + id},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status = corev1.NodeStatus{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("10")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
	}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// envtest's admission puts the not-ready taint on new nodes; the node
	// lifecycle controller would remove it.
	n, _ = c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	n.Spec.Taints = nil
	if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// plannedPod creates a pod planned onto instance, edited by mods first.
func plannedPod(t *testing.T, c *kube.Client, ns, name, cpu, instance string, mods ...func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{pods.AnnotationInstance: instance}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
	for _, m := range mods {
		m(p)
	}
	p, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantBound checks which pods of ns are bound to node (true) and which
// were handed back with no plan left (false).
func wantBound(t *testing.T, c *kube.Client, ns, node string, want map[string]bool) {
	t.Helper()
	for name, bound := range want {
		p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if (p.Spec.NodeName == node) != bound || (!bound && pods.PlannedInstance(p) != "") {
			t.Errorf("%s on %q planned for %q; want bound %v (and no plan left when not)", name, p.Spec.NodeName, pods.PlannedInstance(p), bound)
		}
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestBinder_BindsPlannedPodsAndUnplansWhatNoLongerFits(t *testing.T) {
	c := fixture(t, "fit", "node-fit", "i-fit")
	ctx := context.Background()
	plannedPod(t, c, "fit", "a", "1200m", "i-fit")
	plannedPod(t, c, "fit", "b", "1200m", "i-fit") // 2.4 cpu planned on 2: one must go back
	plannedPod(t, c, "fit", "other", "100m", "i-elsewhere")
	res, err := (&binding.Binder{Kube: c, Log: quiet()}).BindNode(ctx, "node-fit")
	if err != nil {
		t.Fatal(err)
	}
	if res.Bound != 1 || res.Unplanned != 1 {
		t.Fatalf("result %+v, want one bound and one handed back", res)
	}
	a, _ := c.CoreV1().Pods("fit").Get(ctx, "a", metav1.GetOptions{})
	b, _ := c.CoreV1().Pods("fit").Get(ctx, "b", metav1.GetOptions{})
	if a.Spec.NodeName != "node-fit" || b.Spec.NodeName != "" || pods.PlannedInstance(b) != "" {
		t.Fatalf("a on %q, b on %q planned for %q: want a bound and b unbound with no plan", a.Spec.NodeName, b.Spec.NodeName, pods.PlannedInstance(b))
	}
	other, _ := c.CoreV1().Pods("fit").Get(ctx, "other", metav1.GetOptions{})
	if other.Spec.NodeName != "" || pods.PlannedInstance(other) != "i-elsewhere" {
		t.Fatalf("a pod planned for another instance was touched")
	}
	node, _ := c.CoreV1().Nodes().Get(ctx, "node-fit", metav1.GetOptions{})
	if node.Labels["karpenter.k8s.aws/instance-family"] != "t3" {
		t.Fatalf("node labels %v: the binder must add the instance type's labels", node.Labels)
	}
}

// TestBinder_SkipsPodThatWouldBreakAntiAffinityOrHostPort: since the plan,
// kube-scheduler put on the new node a pod planned elsewhere (its own node
// not Ready yet): a web replica, and a pod on host port 9100. The planned
// replica whose required anti-affinity keeps web replicas apart, and the
// planned pod on the same host port, are not bound there (the kubelet
// would refuse the one, the user's rule forbids the other) but handed back
// to the provisioner; a pod without either conflict is bound.
//
// On the real API server: the pods on the node are read there.
func TestBinder_SkipsPodThatWouldBreakAntiAffinityOrHostPort(t *testing.T) {
	c := fixture(t, "apart", "node-apart", "i-apart")
	ctx := context.Background()
	labelHostname(t, c, "node-apart")
	web := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apart", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
				Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}}}
	}
	exporter := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apart"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "exporter", Ports: []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	}
	for _, p := range []*corev1.Pod{web("web-0"), exporter("exporter-0")} {
		p.Spec.NodeName = "node-apart" // what kube-scheduler did
		if _, err := c.CoreV1().Pods("apart").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*corev1.Pod{web("web-1"), exporter("exporter-1")} {
		p.Annotations = map[string]string{pods.AnnotationInstance: "i-apart"}
		if _, err := c.CoreV1().Pods("apart").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	plannedPod(t, c, "apart", "plain", "100m", "i-apart")
	res, err := (&binding.Binder{Kube: c, Log: quiet()}).BindNode(ctx, "node-apart")
	if err != nil {
		t.Fatal(err)
	}
	if res.Bound != 1 || res.Unplanned != 2 {
		t.Fatalf("result %+v, want the plain pod bound and two handed back", res)
	}
	wantBound(t, c, "apart", "node-apart", map[string]bool{"plain": true, "web-1": false, "exporter-1": false})
}

// labelHostname labels the node with its hostname, as the kubelet does.
func labelHostname(t *testing.T, c *kube.Client, node string) {
	t.Helper()
	ctx := context.Background()
	n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels[corev1.LabelHostname] = node
	if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestBinder_BindsPodAffinityOnlyBesideItsPartner: a pod whose required
// pod affinity by hostname names pods planned onto the same node is bound
// once they are (it comes first in the plan's order, so only the second
// look after the binds takes it), and a pod whose partner is on no node
// is handed back to the provisioner rather than bound where
// kube-scheduler would refuse it.
func TestBinder_BindsPodAffinityOnlyBesideItsPartner(t *testing.T) {
	c := fixture(t, "near", "node-near", "i-near")
	ctx := context.Background()
	labelHostname(t, c, "node-near")
	app := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Labels = map[string]string{"app": name} }
	}
	near := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}}}
		}
	}
	plannedPod(t, c, "near", "a-api", "100m", "i-near", app("api"), near("db"))
	plannedPod(t, c, "near", "b-db", "100m", "i-near", app("db"))
	plannedPod(t, c, "near", "c-worker", "100m", "i-near", app("worker"), near("cache"))
	res, err := (&binding.Binder{Kube: c, Log: quiet()}).BindNode(ctx, "node-near")
	if err != nil {
		t.Fatal(err)
	}
	if res.Bound != 2 || res.Unplanned != 1 {
		t.Fatalf("result %+v, want the api pod and its db bound, the worker handed back", res)
	}
	wantBound(t, c, "near", "node-near", map[string]bool{"a-api": true, "b-db": true, "c-worker": false})
}

// TestBinder_ConflictMeansSomeoneElseBoundIt: kube-scheduler binds the pod
// between the binder's read of the unbound pods and its own bind. The API
// server answers the binder's bind with a Conflict, which the binder counts
// as bound by someone else: no error (the batch is not retried), no Bound
// event, no metric, the pod left where kube-scheduler put it.
func TestBinder_ConflictMeansSomeoneElseBoundIt(t *testing.T) {
	c := fixture(t, "race", "node-race", "i-race")
	ctx := context.Background()
	p := plannedPod(t, c, "race", "a", "100m", "i-race")
	rival := &schedulerFirst{Interface: c.Interface}
	res, err := (&binding.Binder{Kube: kube.New(rival), Log: quiet()}).BindNode(ctx, "node-race")
	if err != nil {
		t.Fatalf("bind with kube-scheduler first: %v, want no error", err)
	}
	if rival.won != 1 {
		t.Fatalf("kube-scheduler bound %d pods before the binder, want 1: the race did not happen", rival.won)
	}
	if res.Bound != 0 || res.AlreadyBound != 1 {
		t.Fatalf("result %+v, want the pod counted as already bound and not as bound", res)
	}
	got, _ := c.CoreV1().Pods("race").Get(ctx, p.Name, metav1.GetOptions{})
	if got.Spec.NodeName != "node-race" {
		t.Fatalf("pod on %q, want node-race", got.Spec.NodeName)
	}
	evs, err := c.CoreV1().Events("race").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + kube.ReasonBound})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 0 {
		t.Errorf("%d Bound events for a pod kube-scheduler bound, want none", len(evs.Items))
	}
}

// schedulerFirst is a client whose every pod binding is preceded by the
// same binding made by someone else (kube-scheduler winning the race).
type schedulerFirst struct {
	kubernetes.Interface
	won int
}

func (s *schedulerFirst) CoreV1() typedcorev1.CoreV1Interface {
	return schedulerFirstCore{s.Interface.CoreV1(), s}
}

type schedulerFirstCore struct {
	typedcorev1.CoreV1Interface
	s *schedulerFirst
}

func (c schedulerFirstCore) Pods(ns string) typedcorev1.PodInterface {
	return schedulerFirstPods{c.CoreV1Interface.Pods(ns), c.s}
}

type schedulerFirstPods struct {
	typedcorev1.PodInterface
	s *schedulerFirst
}

func (p schedulerFirstPods) Bind(ctx context.Context, b *corev1.Binding, opts metav1.CreateOptions) error {
	if err := p.PodInterface.Bind(ctx, b, opts); err != nil {
		return fmt.Errorf("kube-scheduler's bind of %s: %w", b.Name, err)
	}
	p.s.won++
	return p.PodInterface.Bind(ctx, b, opts)
}

func TestBinder_WaitsForStartupTaints(t *testing.T) {
	c := fixture(t, "taint", "node-taint", "i-taint")
	ctx := context.Background()
	n, _ := c.CoreV1().Nodes().Get(ctx, "node-taint", metav1.GetOptions{})
	n.Spec.Taints = []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}}
	if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	plannedPod(t, c, "taint", "a", "100m", "i-taint")
	res, err := (&binding.Binder{Kube: c, Log: quiet()}).BindNode(ctx, "node-taint")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.CoreV1().Pods("taint").Get(ctx, "a", metav1.GetOptions{})
	if res.Bound != 0 || res.Unplanned != 0 || a.Spec.NodeName != "" || pods.PlannedInstance(a) != "i-taint" {
		t.Fatalf("result %+v, pod on %q planned for %q: want it left waiting for the taint to go", res, a.Spec.NodeName, pods.PlannedInstance(a))
	}
}

func TestBinder_LeavesPodsOfOtherSchedulers(t *testing.T) {
	c := fixture(t, "sched", "node-sched", "i-sched")
	ctx := context.Background()
	p := plannedPod(t, c, "sched", "mine", "100m", "i-sched")
	other, err := c.CoreV1().Pods("sched").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "sched", Annotations: map[string]string{pods.AnnotationInstance: "i-sched"}},
		Spec:       corev1.PodSpec{SchedulerName: "volcano", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := (&binding.Binder{Kube: c, Log: quiet()}).BindNode(ctx, "node-sched")
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := c.CoreV1().Pods("sched").Get(ctx, p.Name, metav1.GetOptions{})
	theirs, _ := c.CoreV1().Pods("sched").Get(ctx, other.Name, metav1.GetOptions{})
	if res.Bound != 1 || mine.Spec.NodeName != "node-sched" || theirs.Spec.NodeName != "" {
		t.Fatalf("result %+v; default-scheduler pod on %q, volcano pod on %q: want only the first bound", res, mine.Spec.NodeName, theirs.Spec.NodeName)
	}
}

// instances is EC2 as the binder reads it: each id's cluster tag.
type instances map[string]string

func (m instances) Describe(_ context.Context, ids ...string) ([]launch.Instance, error) {
	var out []launch.Instance
	for _, id := range ids {
		if cluster, ok := m[id]; ok {
			out = append(out, launch.Instance{ID: id, State: "running", Tags: map[string]string{launch.TagCluster: cluster}})
		}
	}
	return out, nil
}

// TestBinder_FinalizerOnlyOnNodesJoistLaunched: a node turning Ready gets
// the termination finalizer when its instance is tagged for the cluster,
// and not when it is Karpenter's (same labels, untagged) or another
// cluster's.
func TestBinder_FinalizerOnlyOnNodesJoistLaunched(t *testing.T) {
	ctx := context.Background()
	ec2 := instances{"i-joists": "c", "i-other-cluster": "elsewhere"}
	for _, tc := range []struct {
		node, id string
		want     bool
	}{
		{"node-joists", "i-joists", true},
		{"node-karpenters", "i-karpenters", false},
		{"node-other-cluster", "i-other-cluster", false},
	} {
		t.Run(tc.node, func(t *testing.T) {
			c := fixture(t, tc.node, tc.node, tc.id)
			node, _ := c.CoreV1().Nodes().Get(ctx, tc.node, metav1.GetOptions{})
			node.Labels[model.LabelNodePool] = "default"
			if _, err := c.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
				_, _ = c.CoreV1().Nodes().Patch(ctx, tc.node, types.MergePatchType, patch, metav1.PatchOptions{})
			})
			if _, err := (&binding.Binder{Kube: c, Log: quiet(), Instances: ec2, Cluster: "c"}).BindNode(ctx, tc.node); err != nil {
				t.Fatal(err)
			}
			got, _ := c.CoreV1().Nodes().Get(ctx, tc.node, metav1.GetOptions{})
			if has := slices.Contains(got.Finalizers, termination.Finalizer); has != tc.want {
				t.Fatalf("finalizers %v, want the termination finalizer %v", got.Finalizers, tc.want)
			}
		})
	}
}

// TestBinder_LabelsATypeOnlyThePlanKnows: a pod planned with the live
// catalog onto a type the embedded catalog does not know (z9.large here)
// selects on its instance family. The plan carries the labels it needs
// (pods.AnnotationInstanceLabels); the binder puts them on the node and
// binds, rather than unplanning the pod (which the provisioner would plan
// again, forever). Keys that are not instance-type labels are not taken
// from a pod.
func TestBinder_LabelsATypeOnlyThePlanKnows(t *testing.T) {
	c := fixture(t, "live", "node-live", "i-live")
	ctx := context.Background()
	patch := []byte(`{"metadata":{"labels":{"` + corev1.LabelInstanceTypeStable + `":"z9.large"}}}`)
	if _, err := c.CoreV1().Nodes().Patch(ctx, "node-live", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := c.CoreV1().Pods("live").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "z9", Namespace: "live", Annotations: map[string]string{
			pods.AnnotationInstance:       "i-live",
			pods.AnnotationInstanceLabels: `{"karpenter.k8s.aws/instance-family":"z9","team.example.com/owner":"me"}`,
		}},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"karpenter.k8s.aws/instance-family": "z9"},
			Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := (&binding.Binder{Kube: c, Log: quiet()}).BindNode(ctx, "node-live")
	if err != nil {
		t.Fatal(err)
	}
	if res.Bound != 1 {
		t.Fatalf("result %+v, want the pod bound", res)
	}
	got, _ := c.CoreV1().Pods("live").Get(ctx, p.Name, metav1.GetOptions{})
	if got.Spec.NodeName != "node-live" {
		t.Fatalf("pod on %q, want node-live", got.Spec.NodeName)
	}
	node, _ := c.CoreV1().Nodes().Get(ctx, "node-live", metav1.GetOptions{})
	if node.Labels["karpenter.k8s.aws/instance-family"] != "z9" {
		t.Fatalf("node labels %v: want the plan's instance family", node.Labels)
	}
	if _, ok := node.Labels["team.example.com/owner"]; ok {
		t.Fatalf("node labels %v: a pod's annotation set a label that is no instance-type label", node.Labels)
	}
}

// TestBinder_BindAllBindsEveryReadyNodesPlanAndKeepsTheCause: the safety
// net's pass binds the pods planned onto every Ready node, leaves pods
// planned onto instances that have no node yet, and a bind that fails comes
// back with its cause (callers test it with errors.Is/As, e.g. for a
// Forbidden from RBAC) while the other binds still happen.
func TestBinder_BindAllBindsEveryReadyNodesPlanAndKeepsTheCause(t *testing.T) {
	c := fixture(t, "all", "node-all", "i-all")
	ctx := context.Background()
	plannedPod(t, c, "all", "a", "100m", "i-all")
	plannedPod(t, c, "all", "refused", "100m", "i-all")
	plannedPod(t, c, "all", "waits", "100m", "i-no-node-yet")

	errRefused := fmt.Errorf("connection refused for this test")
	k := wrapped(t, func(r *http.Request, next http.RoundTripper) (*http.Response, error) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/namespaces/all/pods/refused/binding") {
			return nil, errRefused
		}
		return next.RoundTrip(r)
	})
	res, err := (&binding.Binder{Kube: k, Log: quiet()}).BindAll(ctx)
	if !errors.Is(err, errRefused) {
		t.Fatalf("err = %v, want the failed bind's cause in the chain", err)
	}
	if res.Bound < 1 {
		t.Fatalf("result %+v, want pod a bound despite the failure", res)
	}
	for name, want := range map[string]string{"a": "node-all", "refused": "", "waits": ""} {
		p, err := c.CoreV1().Pods("all").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != want {
			t.Errorf("pod %s on %q, want %q", name, p.Spec.NodeName, want)
		}
	}
}
