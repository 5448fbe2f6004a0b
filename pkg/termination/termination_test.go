package termination_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type fakeEC2 struct {
	mu         sync.Mutex
	terminated []string
	gone       []string
}

func (f *fakeEC2) Gone(_ context.Context, id string) (bool, error) {
	return slices.Contains(f.gone, id), nil
}

func (f *fakeEC2) Terminate(_ context.Context, ids ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.terminated = append(f.terminated, ids...)
	return nil
}

type fixture struct {
	t        *testing.T
	ctx      context.Context
	kube     *kube.Client
	ns       string
	node     string
	instance string
	ec2      *fakeEC2
	term     *termination.Terminator
}

// newFixture makes a namespace, a node and its instance named for base
// (testenv.Fresh: base itself unless the test runs again).
func newFixture(t *testing.T, base string) *fixture {
	env := testenv.Kube(t)
	name := testenv.Fresh(base)
	f := &fixture{t: t, ctx: context.Background(), kube: kube.New(env.Client), ns: name, node: name + "-node", instance: "i-" + name, ec2: &fakeEC2{}}
	f.term = &termination.Terminator{Kube: f.kube, EC2: f.ec2}
	if _, err := f.kube.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: f.node, Labels: map[string]string{"karpenter.sh/nodepool": "default"}},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///us-west-2a/" + f.instance},
	}
	if _, err := f.kube.CoreV1().Nodes().Create(f.ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Release and remove what is left, so later tests start clean.
		if err := testenv.RemoveNode(f.ctx, env.Client, f.node); err != nil {
			t.Error(err)
		}
	})
	return f
}

// pod creates a Running, Ready pod bound to the node.
func (f *fixture) pod(name string, mut func(*corev1.Pod)) *corev1.Pod {
	f.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"app": "web"}, Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: f.node, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	if mut != nil {
		mut(p)
	}
	created, err := f.kube.CoreV1().Pods(f.ns).Create(f.ctx, p, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	created, err = f.kube.CoreV1().Pods(f.ns).UpdateStatus(f.ctx, created, metav1.UpdateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return created
}

// kubelet plays the kubelet: pods being deleted go at once.
func (f *fixture) kubelet() {
	f.t.Helper()
	list, err := f.kube.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	zero := int64(0)
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			_ = f.kube.CoreV1().Pods(f.ns).Delete(f.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
}

func (f *fixture) step() termination.Status {
	f.t.Helper()
	st, err := f.term.Step(f.ctx, f.node)
	if err != nil {
		f.t.Fatalf("Step: %v", err)
	}
	return st
}

func (f *fixture) exists(pod string) bool {
	_, err := f.kube.CoreV1().Pods(f.ns).Get(f.ctx, pod, metav1.GetOptions{})
	return !apierrors.IsNotFound(err)
}

func TestDeletedNodeDrainsInTiersThenTerminatesItsInstance(t *testing.T) {
	f := newFixture(t, "tiers")
	node, err := f.kube.CoreV1().Nodes().Get(f.ctx, f.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A Joist node carries the finalizer, so kubectl delete node drains it.
	if err := f.term.EnsureFinalizer(f.ctx, node); err != nil {
		t.Fatal(err)
	}
	f.pod("web", nil)
	f.pod("logs", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "logs", UID: "u1"}}
	})
	f.pod("static", func(p *corev1.Pod) { p.Annotations[corev1.MirrorPodAnnotationKey] = "x" })
	if err := f.kube.CoreV1().Nodes().Delete(f.ctx, f.node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	st := f.step()
	if !slices.Equal(st.Evicted, []string{f.ns + "/web"}) || st.Done {
		t.Fatalf("first step: %+v, want only the web pod evicted (DaemonSet pods wait for the workloads)", st)
	}
	node, _ = f.kube.CoreV1().Nodes().Get(f.ctx, f.node, metav1.GetOptions{})
	if node.Labels[termination.LabelExcludeLB] != "true" || !hasTaint(node) {
		t.Fatalf("node not marked: labels %v taints %v", node.Labels, node.Spec.Taints)
	}
	f.kubelet()
	if st := f.step(); !slices.Equal(st.Evicted, []string{f.ns + "/logs"}) {
		t.Fatalf("second step: %+v, want the DaemonSet pod evicted", st)
	}
	if len(f.ec2.terminated) != 0 {
		t.Fatalf("instance terminated before the drain ended")
	}
	f.kubelet()
	st = f.step()
	if !st.Done || st.Instance != f.instance || !slices.Equal(f.ec2.terminated, []string{f.instance}) {
		t.Fatalf("last step: %+v, EC2 saw %v; want %s terminated and the node released", st, f.ec2.terminated, f.instance)
	}
	if _, err := f.kube.CoreV1().Nodes().Get(f.ctx, f.node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node still there after release: %v", err)
	}
	if !f.exists("static") {
		t.Fatalf("the mirror pod was evicted")
	}
	if st := f.step(); !st.Done {
		t.Fatalf("a step on a gone node: %+v, want done", st)
	}
}

func TestPDBBlocksEvictionUntilItAllows(t *testing.T) {
	f := newFixture(t, "pdb")
	f.pod("web-1", nil)
	one := intstr.FromInt32(1)
	pdb, err := f.kube.PolicyV1().PodDisruptionBudgets(f.ns).Create(f.ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No disruption controller here: write the status it would.
	setAllowed := func(n int32) {
		cur, err := f.kube.PolicyV1().PodDisruptionBudgets(f.ns).Get(f.ctx, pdb.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: cur.Generation, DisruptionsAllowed: n, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
		if _, err := f.kube.PolicyV1().PodDisruptionBudgets(f.ns).UpdateStatus(f.ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setAllowed(0)
	if err := f.term.Begin(f.ctx, f.node, "Empty"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st := f.step()
	if len(st.Evicted) != 0 || !slices.Equal(st.Blocked, []string{f.ns + "/web-1"}) || st.Done {
		t.Fatalf("step under a PDB: %+v, want web-1 blocked", st)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a refused eviction took %s: Step must not wait out retries", d)
	}
	f.kubelet()
	if !f.exists("web-1") {
		t.Fatal("the PDB-protected pod is gone")
	}
	setAllowed(1)
	if st := f.step(); !slices.Equal(st.Evicted, []string{f.ns + "/web-1"}) {
		t.Fatalf("step once the PDB allows: %+v, want web-1 evicted", st)
	}
	f.kubelet()
	if st := f.step(); !st.Done {
		t.Fatalf("step after the drain: %+v, want done", st)
	}
}

func TestDoNotDisruptBlocksUntilTheDeadlineThenIsDeleted(t *testing.T) {
	f := newFixture(t, "dnd")
	f.pod("batch", func(p *corev1.Pod) { p.Annotations[termination.AnnotationDoNotDisrupt] = "true" })
	f.pod("old", func(p *corev1.Pod) { p.Annotations[termination.AnnotationDoNotEvict] = "true" })
	grace := time.Hour
	f.term.GracePeriod = func(*corev1.Node) *time.Duration { return &grace }
	if err := f.term.Begin(f.ctx, f.node, "Expired"); err != nil {
		t.Fatal(err)
	}
	st := f.step()
	if len(st.Evicted) != 0 || len(st.Blocked) != 2 || st.Done {
		t.Fatalf("step before the deadline: %+v, want both pods blocked", st)
	}
	node, _ := f.kube.CoreV1().Nodes().Get(f.ctx, f.node, metav1.GetOptions{})
	deadline := termination.Deadline(node)
	if want := node.DeletionTimestamp.Add(grace); !deadline.Equal(want) {
		t.Fatalf("deadline %s, want deletion + 1h = %s", deadline, want)
	}
	f.term.Clock = clocktesting.NewFakePassiveClock(deadline)
	st = f.step()
	if len(st.ForceDeleted) != 2 {
		t.Fatalf("step at the deadline: %+v, want both pods deleted", st)
	}
	f.kubelet()
	if st := f.step(); !st.Done {
		t.Fatalf("step after: %+v, want done", st)
	}
}

// TestDoNotDisruptDurationHoldsTheDrainUntilItEnds: a pod's
// do-not-disrupt given as a duration (Karpenter v1.15) holds the drain
// until that long after the pod started, then the pod is evicted; an
// unreadable value holds nothing, and the pod gets a Warning event saying
// why it was evicted anyway.
func TestDoNotDisruptDurationHoldsTheDrainUntilItEnds(t *testing.T) {
	f := newFixture(t, "dnd-duration")
	warm := f.pod("warm", func(p *corev1.Pod) { p.Annotations[termination.AnnotationDoNotDisrupt] = "1h" })
	started := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	warm.Status.StartTime = &metav1.Time{Time: started}
	if _, err := f.kube.CoreV1().Pods(f.ns).UpdateStatus(f.ctx, warm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.pod("typo", func(p *corev1.Pod) { p.Annotations[termination.AnnotationDoNotDisrupt] = "1 hour" })
	if err := f.term.Begin(f.ctx, f.node, "Expired"); err != nil {
		t.Fatal(err)
	}
	f.term.Clock = clocktesting.NewFakePassiveClock(started.Add(time.Hour - time.Second))
	st := f.step()
	if !slices.Equal(st.Evicted, []string{f.ns + "/typo"}) || !slices.Equal(st.Blocked, []string{f.ns + "/warm"}) {
		t.Fatalf("step within the hour: evicted %v, blocked %v; want typo evicted, warm blocked", st.Evicted, st.Blocked)
	}
	evs, err := f.kube.CoreV1().Events(f.ns).List(f.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=typo,reason=" + termination.ReasonInvalidDoNotDisrupt})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 1 || evs.Items[0].Type != corev1.EventTypeWarning || !strings.Contains(evs.Items[0].Message, `"1 hour"`) {
		t.Fatalf("events on typo: %+v, want one Warning naming the value", evs.Items)
	}
	f.kubelet()
	f.term.Clock = clocktesting.NewFakePassiveClock(started.Add(time.Hour))
	if st := f.step(); !slices.Equal(st.Evicted, []string{f.ns + "/warm"}) || len(st.Blocked) != 0 {
		t.Fatalf("step once the hour is up: evicted %v, blocked %v; want warm evicted", st.Evicted, st.Blocked)
	}
}

func TestVolumeAttachmentsHoldTheInstance(t *testing.T) {
	f := newFixture(t, "volumes")
	va, err := f.kube.StorageV1().VolumeAttachments().Create(f.ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "va-volumes"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "ebs.csi.aws.com", NodeName: f.node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr("pv-1")}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.term.Begin(f.ctx, f.node, "Empty"); err != nil {
		t.Fatal(err)
	}
	if st := f.step(); st.Phase != termination.PhaseVolumes || len(f.ec2.terminated) != 0 {
		t.Fatalf("step with an attachment: %+v, terminated %v; want waiting for volumes", st, f.ec2.terminated)
	}
	if err := f.kube.StorageV1().VolumeAttachments().Delete(f.ctx, va.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := f.step(); !st.Done || len(f.ec2.terminated) != 1 {
		t.Fatalf("step after detach: %+v, want done", st)
	}
}

func TestStepLeavesANodeNotBeingDeletedAlone(t *testing.T) {
	f := newFixture(t, "alive")
	f.pod("web", nil)
	if st := f.step(); st.Phase != termination.PhaseNotDeleting || len(st.Evicted) != 0 {
		t.Fatalf("step on a live node: %+v", st)
	}
	if !f.exists("web") {
		t.Fatal("pod evicted from a live node")
	}
}

func hasTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == termination.TaintDisrupted {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

var _ = fmt.Sprintf

func TestANodeWhoseInstanceIsGoneIsReleasedWithoutDraining(t *testing.T) {
	f := newFixture(t, "gone")
	f.pod("web", nil)
	f.ec2.gone = []string{f.instance}
	if err := f.term.Begin(f.ctx, f.node, ""); err != nil {
		t.Fatal(err)
	}
	st := f.step()
	if !st.Done || len(st.Evicted) != 0 || len(f.ec2.terminated) != 0 {
		t.Fatalf("step: %+v, terminated %v; want the node released, nothing evicted or terminated", st, f.ec2.terminated)
	}
	if _, err := f.kube.CoreV1().Nodes().Get(f.ctx, f.node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node still there: %v", err)
	}
}
