package reaping_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/reaping"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

// TestConsolidationReplacesWithTheCatalog: with the catalog the reaper
// prices an underused node and finds it a cheaper replacement (a Replace
// decision after the 15 s validation, with its savings); without it the
// node's price is unknown and nothing is decided.
func TestConsolidationReplacesWithTheCatalog(t *testing.T) {
	env := testenv.Kube(t)
	ctx := context.Background()
	c := kube.New(env.Client)
	cat, err := catalog.Offline("us-east-1", []string{"us-east-1a"})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Duration(0)
	pool := &model.Pool{Name: "consol", API: model.APIV1, Requirements: []model.Requirement{
		{Key: model.LabelCapacityType, Operator: "In", Values: []string{"on-demand"}},
		{Key: "karpenter.k8s.aws/instance-category", Operator: "In", Values: []string{"m"}},
	}, Disruption: model.Disruption{ConsolidationPolicy: "WhenEmptyOrUnderutilized", ConsolidateAfter: &after}}
	mkNode := func(name, instanceType string, pod *corev1.Pod) {
		catalogNode(t, c, cat, pool.Name, name, instanceType, pod)
	}
	mkNode("consol-big", "m5.2xlarge", cpuPod("consol-small", "1", nil))
	mkNode("consol-full", "m5.large", cpuPod("consol-kept", "1500m", map[string]string{disruption.AnnotationDoNotDisrupt: "true"}))

	fc := clocktesting.NewFakeClock(time.Now())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &reaping.Reaper{
		Kube: c, Log: log, Clock: fc, Cloud: launched{"i-consol-big", "i-consol-full"}, Cluster: "c",
		Specs:      func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{pool}}, nil },
		Terminator: &termination.Terminator{Kube: c, EC2: &fakeEC2{}, Log: log},
	}
	command := func() string {
		n, err := c.CoreV1().Nodes().Get(ctx, "consol-big", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Annotations[disruption.AnnotationConsolidationCommand]
	}

	if _, err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if id := command(); id != "" {
		t.Fatalf("without the catalog the node was stamped for command %q", id)
	}

	r.Catalog = func(context.Context) (*catalog.Catalog, error) { return cat, nil }
	if _, err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if command() == "" {
		t.Fatal("with the catalog the underused node was not stamped")
	}
	fc.Step(disruption.ValidationDelay + time.Second)
	res, err := r.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Retired) != 1 || res.Retired[0].Node != "consol-big" || !res.Retired[0].Replace || res.Retired[0].SavingsPerHour <= 0 {
		t.Fatalf("retired %+v, want consol-big replaced with savings", res.Retired)
	}
}

// TestReplacementIsNotEmpty: a Ready replacement whose pods are still
// running on the node it replaces (pods.AnnotationReplacement) is not
// empty, even under a pool that retires empty nodes at once with no
// budget to stop it.
func TestReplacementIsNotEmpty(t *testing.T) {
	env := testenv.Kube(t)
	ctx := context.Background()
	c := kube.New(env.Client)
	after := time.Duration(0)
	pool := &model.Pool{Name: "replaced", API: model.APIV1, Disruption: model.Disruption{
		ConsolidationPolicy: "WhenEmpty", ConsolidateAfter: &after, Budgets: []model.Budget{{Nodes: "100%"}}}}
	for _, name := range []string{"replaced-old", "replaced-new"} {
		readyNode(t, c, name, "i-"+name, map[string]string{model.LabelNodePool: pool.Name})
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "replaced-pod", Namespace: "default",
		Annotations: map[string]string{pods.AnnotationReplacement: "i-replaced-new"}},
		Spec: corev1.PodSpec{NodeName: "replaced-old", Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
	if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = c.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &reaping.Reaper{
		Kube: c, Log: log, Cloud: launched{"i-replaced-old", "i-replaced-new"}, Cluster: "c",
		Specs:      func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{pool}}, nil },
		Terminator: &termination.Terminator{Kube: c, EC2: &fakeEC2{}, Log: log},
	}
	res, err := r.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range res.Retired {
		if d.Node == "replaced-new" {
			t.Fatalf("the replacement was retired as %s while the pod it waits for still runs on the old node", d.Reason)
		}
	}
	for _, n := range res.Stamped {
		if n == "replaced-new" {
			t.Fatalf("the replacement was stamped empty while the pod it waits for still runs on the old node")
		}
	}
}

// TestPlannedPodKeepsItsNodeFromBeingEmpty: a node whose instance a
// pending pod is planned onto (pods.AnnotationInstance) is not empty,
// under a pool that retires empty nodes at once with no budget to stop
// it; a finished pod planned onto it, which will never run there, does
// not keep it (the reaper's read leaves finished pods out).
func TestPlannedPodKeepsItsNodeFromBeingEmpty(t *testing.T) {
	for _, tc := range []struct {
		name      string
		phase     corev1.PodPhase
		wantEmpty bool
	}{
		{"a pending pod planned onto it", corev1.PodPending, false},
		{"a failed pod planned onto it", corev1.PodFailed, true},
		{"a succeeded pod planned onto it", corev1.PodSucceeded, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.Kube(t)
			ctx := context.Background()
			c := kube.New(env.Client)
			after := time.Duration(0)
			name := "planned-" + strings.ToLower(string(tc.phase))
			pool := &model.Pool{Name: name, API: model.APIV1, Disruption: model.Disruption{
				ConsolidationPolicy: "WhenEmpty", ConsolidateAfter: &after, Budgets: []model.Budget{{Nodes: "100%"}}}}
			readyNode(t, c, name, "i-"+name, map[string]string{model.LabelNodePool: pool.Name})
			p, err := c.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-pod", Namespace: "default",
				Annotations: map[string]string{pods.AnnotationInstance: "i-" + name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				zero := int64(0)
				_ = c.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			})
			p.Status.Phase = tc.phase
			if _, err := c.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			r := &reaping.Reaper{
				Kube: c, Log: log, Cloud: launched{"i-" + name}, Cluster: "c",
				Specs:      func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{pool}}, nil },
				Terminator: &termination.Terminator{Kube: c, EC2: &fakeEC2{}, Log: log},
			}
			res, err := r.Pass(ctx)
			if err != nil {
				t.Fatal(err)
			}
			empty := slices.Contains(res.Stamped, name)
			for _, d := range res.Retired {
				empty = empty || d.Node == name
			}
			if empty != tc.wantEmpty {
				t.Errorf("node stamped or retired as empty: %v, want %v (stamped %v, retired %v)", empty, tc.wantEmpty, res.Stamped, res.Retired)
			}
		})
	}
}

// catalogNode creates a Ready node of the catalog's instance type in the
// pool (none: ""; us-east-1a, on-demand; instance i-<name>) with pod bound to it
// (in default), both removed when the test ends.
func catalogNode(t *testing.T, c *kube.Client, cat *catalog.Catalog, pool, name, instanceType string, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	it, ok := cat.Lookup(instanceType)
	if !ok {
		t.Fatalf("no %s", instanceType)
	}
	labels := it.Labels()
	if pool != "" {
		labels[model.LabelNodePool] = pool
	}
	labels[model.LabelZone] = "us-east-1a"
	labels[model.LabelCapacityType] = "on-demand"
	labels[corev1.LabelHostname] = name
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status = corev1.NodeStatus{Capacity: it.Capacity(nil), Allocatable: it.Allocatable(nil),
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}
	if n, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's admission tainted the new node not-ready; the node
	// lifecycle controller, which envtest lacks, lifts the taint once the
	// node is Ready.
	n.Spec.Taints = nil
	if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Spec.NodeName = name
	createPod(t, c, pod)
	t.Cleanup(func() {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
		_, _ = c.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		_ = c.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// createPod creates pod (in default), deleted when the test ends.
func createPod(t *testing.T, c *kube.Client, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = c.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
}

// cpuPod is a pod in default requesting cpu and 1Gi.
func cpuPod(name, cpu string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
}

// TestConsolidationLeavesRoomPromisedToIncomingPods: a node's room is
// promised to the pods on their way to it — a pending pod planned onto
// its instance (pods.AnnotationInstance), a running pod waiting for it as
// its replacement (pods.AnnotationReplacement) — so an underused node
// whose pod would fit only into that room is replaced by a cheaper node,
// not deleted onto it. The same cluster with nothing on its way deletes
// it.
func TestConsolidationLeavesRoomPromisedToIncomingPods(t *testing.T) {
	g := newConsolidating(t, "promised")
	for _, tc := range []struct {
		name     string
		incoming string // "", "planned": a pending pod planned onto room, "replacement": a pod waiting for room as its replacement
		replace  bool
	}{
		{"nothing on its way", "", false},
		{"a pod planned", "planned", true},
		{"a pod waiting for its replacement", "replacement", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case its own nodes: the other case's are not Joist's
			// here (the EC2 listing has these alone).
			src, room := fmt.Sprintf("promised-%s-src", tc.incoming), fmt.Sprintf("promised-%s-room", tc.incoming)
			g.node(t, src, "m5.xlarge", cpuPod(src+"-mover", "1", nil))
			g.node(t, room, "m5.xlarge", cpuPod(room+"-kept", "1", map[string]string{disruption.AnnotationDoNotDisrupt: "true"}))
			switch tc.incoming {
			case "planned":
				createPod(t, g.c, cpuPod(room+"-pending", "2500m", map[string]string{pods.AnnotationInstance: "i-" + room}))
			case "replacement":
				// On a cordoned node Joist does not list (neither a
				// candidate nor a destination), waiting to move to room.
				g.node(t, room+"-old", "m5.xlarge", cpuPod(room+"-moving", "2500m", map[string]string{pods.AnnotationReplacement: "i-" + room}))
				cordon, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": true}})
				if _, err := g.c.CoreV1().Nodes().Patch(g.ctx, room+"-old", types.MergePatchType, cordon, metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			res := g.decide(t, g.reaper("i-"+src, "i-"+room))
			if len(res.Retired) != 1 || res.Retired[0].Node != src || res.Retired[0].Replace != tc.replace {
				t.Fatalf("retired %+v, want %s retired with replace=%v", res.Retired, src, tc.replace)
			}
		})
	}
}

// TestConsolidationAsksThePodDisruptionBudgets: the reaper reads the
// PodDisruptionBudgets and leaves alone an underused node whose pod a
// budget protects now (status.disruptionsAllowed 0, as the disruption
// controller writes it), saying so; once the budget allows a disruption
// the node is consolidated.
func TestConsolidationAsksThePodDisruptionBudgets(t *testing.T) {
	g := newConsolidating(t, "budgeted")
	guarded := cpuPod("budgeted-guarded", "1", nil)
	guarded.Labels = map[string]string{"app": "budgeted-guarded"}
	g.node(t, "budgeted-src", "m5.xlarge", guarded)
	g.node(t, "budgeted-room", "m5.xlarge", cpuPod("budgeted-kept", "1", map[string]string{disruption.AnnotationDoNotDisrupt: "true"}))
	zero := intstr.FromInt32(0)
	pdb, err := g.c.PolicyV1().PodDisruptionBudgets("default").Create(g.ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "budgeted"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: guarded.Labels}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = g.c.PolicyV1().PodDisruptionBudgets("default").Delete(g.ctx, pdb.Name, metav1.DeleteOptions{})
	})

	// The disruption controller (not on this ground) would write 0: the
	// budget tolerates no pod unavailable.
	r := g.reaper("i-budgeted-src", "i-budgeted-room")
	res := g.decide(t, r)
	if len(res.Retired) != 0 {
		t.Fatalf("retired %+v under a budget that allows no disruption", res.Retired)
	}
	blocked := false
	for _, b := range res.Blocked {
		blocked = blocked || b.Node == "budgeted-src" && strings.Contains(b.Why, "PodDisruptionBudget default/budgeted allows no disruption")
	}
	if !blocked {
		t.Fatalf("blocked %+v, want budgeted-src blocked by its pod's budget", res.Blocked)
	}

	pdb.Status.DisruptionsAllowed = 1
	if _, err := g.c.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(g.ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := g.decide(t, r); len(res.Retired) != 1 || res.Retired[0].Node != "budgeted-src" || res.Retired[0].Replace {
		t.Fatalf("retired %+v once the budget allows one, want budgeted-src deleted", res.Retired)
	}
}

// TestConsolidationMovesPodsOntoNodesNotJoists: a node Joist did not
// launch (a managed node group's: no pool, no instance in Joist's
// listing) takes an underused Joist node's pod into its room, so the Joist
// node is deleted rather than replaced, and is itself left alone.
func TestConsolidationMovesPodsOntoNodesNotJoists(t *testing.T) {
	g := newConsolidating(t, "beside")
	g.node(t, "beside-src", "m5.xlarge", cpuPod("beside-mover", "1", nil))
	catalogNode(t, g.c, g.cat, "", "beside-mng", "m5.2xlarge", cpuPod("beside-system", "1", nil))
	if res := g.decide(t, g.reaper("i-beside-src")); len(res.Retired) != 1 || res.Retired[0].Node != "beside-src" || res.Retired[0].Replace {
		t.Fatalf("retired %+v, want beside-src deleted onto beside-mng's room", res.Retired)
	}
}

// consolidating is the ground of the consolidation tests on the API
// server: the offline catalog (us-east-1a) and a v1 pool of on-demand m
// types that consolidates at once, with no budget to stop it.
type consolidating struct {
	ctx  context.Context
	c    *kube.Client
	cat  *catalog.Catalog
	pool *model.Pool
	log  *slog.Logger
}

func newConsolidating(t *testing.T, pool string) *consolidating {
	t.Helper()
	env := testenv.Kube(t)
	cat, err := catalog.Offline("us-east-1", []string{"us-east-1a"})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Duration(0)
	return &consolidating{ctx: context.Background(), c: kube.New(env.Client), cat: cat, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		pool: &model.Pool{Name: pool, API: model.APIV1, Requirements: []model.Requirement{
			{Key: model.LabelCapacityType, Operator: "In", Values: []string{"on-demand"}},
			{Key: "karpenter.k8s.aws/instance-category", Operator: "In", Values: []string{"m"}},
		}, Disruption: model.Disruption{ConsolidationPolicy: "WhenEmptyOrUnderutilized", ConsolidateAfter: &after, Budgets: []model.Budget{{Nodes: "100%"}}}}}
}

// node is catalogNode in the ground's pool.
func (g *consolidating) node(t *testing.T, name, instanceType string, pod *corev1.Pod) {
	t.Helper()
	catalogNode(t, g.c, g.cat, g.pool.Name, name, instanceType, pod)
}

// clockedReaper is a Reaper and its clock.
type clockedReaper struct {
	*reaping.Reaper
	fc *clocktesting.FakeClock
}

// reaper is a Reaper of the ground whose EC2 listing has the instances
// ids (those nodes are Joist's), on a clock of its own.
func (g *consolidating) reaper(ids ...string) clockedReaper {
	fc := clocktesting.NewFakeClock(time.Now())
	return clockedReaper{&reaping.Reaper{
		Kube: g.c, Log: g.log, Clock: fc, Cloud: launched(ids), Cluster: "c",
		Specs:      func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{g.pool}}, nil },
		Catalog:    func(context.Context) (*catalog.Catalog, error) { return g.cat, nil },
		Terminator: &termination.Terminator{Kube: g.c, EC2: &fakeEC2{}, Log: g.log},
	}, fc}
}

// decide runs a pass, then another once a consolidation command found by
// the first holds (after the validation delay), and returns the second.
func (g *consolidating) decide(t *testing.T, r clockedReaper) reaping.Result {
	t.Helper()
	if _, err := r.Pass(g.ctx); err != nil {
		t.Fatal(err)
	}
	r.fc.Step(disruption.ValidationDelay + time.Second)
	res, err := r.Pass(g.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// reservingCloud is launched with the capacity reservations every node
// class selects.
type reservingCloud struct {
	launched
	res []launch.Reservation
}

func (c reservingCloud) Reservations(context.Context, *model.NodeClass) ([]launch.Reservation, error) {
	return c.res, nil
}

// TestConsolidationMovesPodsIntoAReservation: a node class's capacity
// reservation with room is capacity already paid for, so an underused
// bought node whose pods fit there is replaced by a node in it: the
// whole price is saved (a cheaper bought node would save only the
// difference). Without the reservation, the same node is replaced by a
// cheaper bought one.
func TestConsolidationMovesPodsIntoAReservation(t *testing.T) {
	g := newConsolidating(t, "reserving")
	g.pool.NodeClass = "nc"
	g.pool.Requirements[0].Values = []string{model.CapacityTypeReserved, model.CapacityTypeOnDemand}
	price, _ := g.cat.Price("m5.xlarge", "on-demand")
	spec := &model.Spec{Pools: []*model.Pool{g.pool}, NodeClasses: map[string]*model.NodeClass{
		"nc": {Name: "nc", CapacityReservationSelector: []model.CapacityReservationTerm{{Tags: map[string]string{"team": "a"}}}}}}
	for _, tc := range []struct {
		name string
		res  []launch.Reservation
		all  bool // the whole price saved
	}{
		{"with a reservation's room", []launch.Reservation{{ID: "cr-1", InstanceType: "m5.large", Zone: "us-east-1a", Type: "default", Available: 1}}, true},
		{"without", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case its own node: the other case's is not Joist's here
			// (the EC2 listing has this one alone).
			src := fmt.Sprintf("reserving-%d", len(tc.res))
			g.node(t, src, "m5.xlarge", cpuPod(src+"-mover", "1", nil))
			r := g.reaper("i-" + src)
			r.Cloud = resolvingCloud{reservingCloud{launched{"i-" + src}, tc.res}}
			r.Specs = func(context.Context) (*model.Spec, error) { return spec, nil }
			res := g.decide(t, r)
			if len(res.Retired) != 1 || res.Retired[0].Node != src || !res.Retired[0].Replace {
				t.Fatalf("retired %+v, want %s replaced", res.Retired, src)
			}
			if saved := res.Retired[0].SavingsPerHour; (abs(saved-price) < 1e-9) != tc.all {
				t.Fatalf("saves $%.4f/h of the node's $%.4f/h; want the whole price saved: %v", saved, price, tc.all)
			}
		})
	}
}

// TestConsolidationReplacesOnlyWhereANodeCanLaunch: an underused node is
// replaced by a cheaper one only in a pool whose node class can launch a
// node, in its subnets' zones (provisioning.ReadyPools): not when the
// class selects no subnet, nor when its subnets are all in a zone the
// catalog does not offer here; when the class resolves to the catalog's
// zone, it is.
func TestConsolidationReplacesOnlyWhereANodeCanLaunch(t *testing.T) {
	g := newConsolidating(t, "ready")
	g.pool.NodeClass = "nc"
	spec := &model.Spec{Pools: []*model.Pool{g.pool}, NodeClasses: map[string]*model.NodeClass{"nc": {Name: "nc"}}}
	for i, tc := range []struct {
		name     string
		zones    []string
		err      error
		replaced bool
	}{
		{name: "a class that selects no subnet", err: errors.New(`node class "nc": no subnet matches spec.subnetSelectorTerms`)},
		{name: "a class whose subnets are in another zone", zones: []string{"us-east-1b"}},
		{name: "a class whose subnets are in the zone", zones: []string{"us-east-1a"}, replaced: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fmt.Sprintf("ready-%d", i)
			g.node(t, src, "m5.xlarge", cpuPod(src+"-mover", "1", nil))
			r := g.reaper("i-" + src)
			r.Cloud = classCloud{launched{"i-" + src}, tc.zones, tc.err}
			r.Specs = func(context.Context) (*model.Spec, error) { return spec, nil }
			res := g.decide(t, r)
			replaced := len(res.Retired) == 1 && res.Retired[0].Node == src && res.Retired[0].Replace
			if replaced != tc.replaced || len(res.Retired) > 1 {
				t.Fatalf("retired %+v, want %s replaced: %v", res.Retired, src, tc.replaced)
			}
		})
	}
}

// classCloud resolves every node class to zones, or fails with err.
type classCloud struct {
	launched
	zones []string
	err   error
}

func (c classCloud) Desired(context.Context, *model.NodeClass) (launch.Desired, error) {
	return launch.Desired{Zones: c.zones}, c.err
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// resolvingCloud is reservingCloud whose node classes resolve (to no
// images, subnets or groups: only the reservations judge drift here).
type resolvingCloud struct{ reservingCloud }

func (resolvingCloud) Desired(context.Context, *model.NodeClass) (launch.Desired, error) {
	return launch.Desired{}, nil
}

// TestDriftOfReservedNodes: a reaper pass reads the class's capacity
// reservations (once, for consolidation and drift) and replaces a
// reserved node whose reservation the class no longer selects, or whose
// capacity block is about to end; one still in a selected reservation
// stays.
func TestDriftOfReservedNodes(t *testing.T) {
	g := newConsolidating(t, "resdrift")
	g.pool.NodeClass = "nc"
	g.pool.Requirements[0].Values = []string{model.CapacityTypeReserved, model.CapacityTypeOnDemand}
	spec := &model.Spec{Pools: []*model.Pool{g.pool}, NodeClasses: map[string]*model.NodeClass{
		"nc": {Name: "nc", CapacityReservationSelector: []model.CapacityReservationTerm{{Tags: map[string]string{"team": "a"}}}}}}
	for _, tc := range []struct {
		name    string
		res     []launch.Reservation
		drifted bool
	}{
		{"its reservation still selected", []launch.Reservation{{ID: "cr-1", InstanceType: "m5.xlarge", Zone: "us-east-1a", Type: "default"}}, false},
		{"its reservation gone", nil, true},
		{"its capacity block about to end", []launch.Reservation{{ID: "cr-1", InstanceType: "m5.xlarge", Zone: "us-east-1a",
			Type: launch.ReservationTypeCapacityBlock, End: time.Now().Add(20 * time.Minute)}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("resdrift-%d-%v", len(tc.res), tc.drifted)
			g.node(t, name, "m5.xlarge", cpuPod(name+"-app", "3", nil))
			n, err := g.c.CoreV1().Nodes().Get(g.ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n.Labels[model.LabelCapacityType] = model.CapacityTypeReserved
			n.Labels[model.LabelReservationID] = "cr-1"
			if _, err := g.c.CoreV1().Nodes().Update(g.ctx, n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			r := g.reaper("i-" + name)
			calls := 0
			r.Cloud = resolvingCloud{reservingCloud{launched{"i-" + name}, tc.res}}
			r.Cloud = countingCloud{r.Cloud, &calls}
			r.Specs = func(context.Context) (*model.Spec, error) { return spec, nil }
			res, err := r.Pass(g.ctx)
			if err != nil {
				t.Fatal(err)
			}
			drifted := len(res.Retired) == 1 && res.Retired[0].Node == name && res.Retired[0].Reason == disruption.ReasonDrifted
			if drifted != tc.drifted || len(res.Retired) > 1 {
				t.Fatalf("retired %+v, want %s drifted: %v", res.Retired, name, tc.drifted)
			}
			if calls != 1 {
				t.Fatalf("%d reads of the class's reservations in a pass, want 1", calls)
			}
		})
	}
}

// countingCloud counts the reads of reservations.
type countingCloud struct {
	reaping.Cloud
	calls *int
}

func (c countingCloud) Reservations(ctx context.Context, nc *model.NodeClass) ([]launch.Reservation, error) {
	*c.calls++
	return c.Cloud.Reservations(ctx, nc)
}
