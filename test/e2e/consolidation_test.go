package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

// consolidationSpecs is a v1 NodePool with Karpenter's default policy,
// WhenEmptyOrUnderutilized after 0 s, on t3.large (1930m allocatable).
const consolidationSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
  template:
    metadata:
      labels: {workload: general}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: general}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.large]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: general}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-%s
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
`

// underused builds two nodes, each with a big pod, and a small pod on one
// of them, then deletes that node's big pod: the node left holds only the
// small pod, which fits on the other (and the other's big pod fits there
// too). Every pod gets annotations. It returns the two nodes: the
// underused one and the other.
func underused(t *testing.T, g *testenv.Ground, annotations map[string]string) (string, string) {
	t.Helper()
	ctx := context.Background()
	big1 := createPending(t, g, []*corev1.Pod{withAnnotations(workloadPod("big-1", "general", "1500m"), annotations)})
	waitBound(t, g, big1, 90*time.Second)
	big2 := createPending(t, g, []*corev1.Pod{withAnnotations(workloadPod("big-2", "general", "1500m"), annotations)})
	waitBound(t, g, big2, 90*time.Second)
	s := createPending(t, g, []*corev1.Pod{withAnnotations(workloadPod("small", "general", "300m"), annotations)})
	nodes := waitBound(t, g, s, 60*time.Second)
	under := nodes["small"]
	var big, other string
	for _, name := range []string{"big-1", "big-2"} {
		p, err := g.Kube.Client.CoreV1().Pods(g.Opts.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName == under {
			big = name
		} else {
			other = p.Spec.NodeName
		}
	}
	if big == "" || other == "" || other == under {
		t.Fatalf("pods not on two nodes as planned (small on %s, other %s)", under, other)
	}
	deletePods(t, g, []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: g.Opts.Namespace, Name: big}}})
	return under, other
}

// TestE2E_ConsolidationDeletesUnderusedNode: a node whose only pod fits on
// another node is retired (reason Underutilized) once the decision held
// 15 s; the other node stays.
func TestE2E_ConsolidationDeletesUnderusedNode(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "consolidate", Namespace: "consolidate", Specs: []byte(fmt.Sprintf(consolidationSpecs, "consolidate")), ReadyDelay: 300 * time.Millisecond,
		ExtraEnv: al2023Env, ReaperEvery: 5 * time.Second,
	})
	ctx := context.Background()
	under, other := underused(t, g, nil)
	node, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, under, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := pods.InstanceID(node.Spec.ProviderID)
	start := time.Now()
	eventually(t, 90*time.Second, "the underused node's instance terminated", func() (bool, error) {
		return terminated(instanceState(g, id)), nil
	})
	if d := time.Since(start); d < 10*time.Second {
		t.Errorf("consolidated %s after the node became underused: the decision must hold 15 s first", d)
	}
	evs, err := g.Kube.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + under + ",reason=" + termination.ReasonTerminating})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		found = found || strings.Contains(e.Message, "Underutilized")
	}
	if !found {
		t.Errorf("no Terminating event saying Underutilized on %s", under)
	}
	if nodeGone(t, g, other) {
		t.Errorf("the other node %s was retired too", other)
	}
	t.Logf("underused node consolidated %s after it became underused", time.Since(start).Round(100*time.Millisecond))
}

// TestE2E_DoNotDisruptBlocksConsolidation: the same underused node, but
// the pods have karpenter.sh/do-not-disrupt: it stays, and says why for
// longer than the 15 s a consolidation needs to hold.
func TestE2E_DoNotDisruptBlocksConsolidation(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "dnd-consolidate", Namespace: "dnd-consolidate", Specs: []byte(fmt.Sprintf(consolidationSpecs, "dnd-consolidate")), ReadyDelay: 300 * time.Millisecond,
		ExtraEnv: al2023Env, ReaperEvery: 5 * time.Second,
	})
	ctx := context.Background()
	under, _ := underused(t, g, map[string]string{termination.AnnotationDoNotDisrupt: "true"})
	var blocked *corev1.Event
	eventually(t, 60*time.Second, "a DisruptionBlocked event on the underused node", func() (bool, error) {
		evs, err := g.Kube.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + under + ",reason=" + termination.ReasonDisruptionBlocked})
		if err != nil {
			return false, err
		}
		for i := range evs.Items {
			// Counted twice: blocked for longer than the 15 s the
			// decision would have needed to hold.
			if strings.HasPrefix(evs.Items[i].Message, "Underutilized:") && strings.Contains(evs.Items[i].Message, "do-not-disrupt") && evs.Items[i].LastTimestamp.Sub(evs.Items[i].FirstTimestamp.Time) >= 16*time.Second {
				blocked = &evs.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, under, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node %s: %v (consolidated despite its do-not-disrupt pod?)", under, err)
	}
	if n.DeletionTimestamp != nil || len(n.Spec.Taints) > 0 {
		t.Fatalf("node %s is being retired (deleting %v, taints %v) despite its do-not-disrupt pod", under, n.DeletionTimestamp, n.Spec.Taints)
	}
	t.Logf("consolidation blocked: %s (x%d)", blocked.Message, blocked.Count)
}

// TestE2E_MultiNodeConsolidation: three t3.large nodes each left with
// one small pod. No single node can go (the others have no room for its
// pod, and a t3.large replacement would not be cheaper), but two can go
// together: their pods fit on the third. Multi-node consolidation retires
// both in one command — in the same pass, not one validation (15 s)
// after the other — and the third stays.
func TestE2E_MultiNodeConsolidation(t *testing.T) {
	// The default budget (10 %: one of three nodes) would allow one node
	// per command.
	specs := strings.Replace(consolidationSpecs, "consolidateAfter: 0s", "consolidateAfter: 0s\n    budgets: [{nodes: \"100%%\"}]", 1)
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "multi-consolidate", Namespace: "multi-consolidate", Specs: []byte(fmt.Sprintf(specs, "multi-consolidate")), ReadyDelay: 300 * time.Millisecond,
		ExtraEnv: al2023Env, ReaperEvery: 5 * time.Second,
	})
	ctx := context.Background()
	// big-i then small-i: each big pod needs its own node, each small pod
	// lands beside it (the earlier nodes are full).
	var bigs []*corev1.Pod
	nodeOf := map[string]string{}
	for i := 1; i <= 3; i++ {
		big := createPending(t, g, []*corev1.Pod{workloadPod(fmt.Sprintf("big-%d", i), "general", "1500m")})
		waitBound(t, g, big, 90*time.Second)
		small := createPending(t, g, []*corev1.Pod{workloadPod(fmt.Sprintf("small-%d", i), "general", "300m")})
		for k, v := range waitBound(t, g, small, 90*time.Second) {
			nodeOf[k] = v
		}
		bigs = append(bigs, big...)
	}
	if nodeOf["small-1"] == nodeOf["small-2"] || nodeOf["small-2"] == nodeOf["small-3"] || nodeOf["small-1"] == nodeOf["small-3"] {
		t.Fatalf("small pods not on three nodes: %v", nodeOf)
	}
	deletePods(t, g, bigs)

	// Two of the three nodes are retired; when each began is when its
	// Node got its deletion timestamp.
	began := map[string]time.Time{}
	eventually(t, 120*time.Second, "two of the three nodes retired", func() (bool, error) {
		for _, name := range nodeOf {
			n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			switch {
			case err != nil && !strings.Contains(err.Error(), "not found"):
				return false, err
			case err != nil:
				if _, seen := began[name]; !seen {
					began[name] = time.Now()
				}
			case n.DeletionTimestamp != nil:
				began[name] = n.DeletionTimestamp.Time
			}
		}
		return len(began) >= 2, nil
	})
	if len(began) != 2 {
		t.Fatalf("%d nodes retired (%v), want 2", len(began), began)
	}
	var times []time.Time
	var kept string
	for _, name := range nodeOf {
		if at, ok := began[name]; ok {
			times = append(times, at)
		} else {
			kept = name
		}
	}
	gap := times[0].Sub(times[1])
	if gap < 0 {
		gap = -gap
	}
	// Deletion timestamps have a second's resolution; one pass retires
	// both, a single-node consolidation would take 15 s between them.
	if gap > 5*time.Second {
		t.Errorf("the two nodes were retired %s apart: two single-node commands, not one multi-node command", gap)
	}
	eventually(t, 60*time.Second, "the two retired nodes gone", func() (bool, error) {
		for name := range began {
			if !nodeGone(t, g, name) {
				return false, nil
			}
		}
		return true, nil
	})
	if nodeGone(t, g, kept) {
		t.Errorf("the kept node %s was retired too", kept)
	}
	t.Logf("two nodes retired %s apart; %s kept", gap, kept)
}

// TestE2E_ConsolidationReplacesWithCheaperNode: a t3.xlarge left with one
// small pod (nowhere else to go) is replaced by a t3.large, which is
// cheaper: the replacement is launched and Ready before the pod is
// evicted, then the t3.xlarge's instance is terminated.
func TestE2E_ConsolidationReplacesWithCheaperNode(t *testing.T) {
	specs := strings.Replace(consolidationSpecs, "values: [t3.large]}", "values: [t3.large, t3.xlarge]}", 1)
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "replace-consolidate", Namespace: "replace-consolidate", Specs: []byte(fmt.Sprintf(specs, "replace-consolidate")), ReadyDelay: 300 * time.Millisecond,
		ExtraEnv: al2023Env, ReaperEvery: 5 * time.Second,
	})
	ctx := context.Background()
	big := createPending(t, g, []*corev1.Pod{workloadPod("big", "general", "3")})
	old := waitBound(t, g, big, 90*time.Second)["big"]
	small := createPending(t, g, []*corev1.Pod{workloadPod("small", "general", "300m")})
	if on := waitBound(t, g, small, 60*time.Second)["small"]; on != old {
		t.Fatalf("small pod on %s, want beside the big one on %s", on, old)
	}
	oldNode, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, old, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if it := oldNode.Labels[corev1.LabelInstanceTypeStable]; it != "t3.xlarge" {
		t.Fatalf("the big pod's node is a %s, want t3.xlarge", it)
	}
	oldID := pods.InstanceID(oldNode.Spec.ProviderID)
	deletePods(t, g, big)
	start := time.Now()

	// Watch the small pod's eviction and the replacement's readiness.
	var evicted, ready time.Time
	var replacement string
	eventually(t, 180*time.Second, "the t3.xlarge's instance terminated", func() (bool, error) {
		if evicted.IsZero() {
			if _, err := g.Kube.Client.CoreV1().Pods(g.Opts.Namespace).Get(ctx, "small", metav1.GetOptions{}); err != nil {
				evicted = time.Now()
			}
		}
		if ready.IsZero() {
			nodes, err := g.Kube.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=general"})
			if err != nil {
				return false, err
			}
			for _, n := range nodes.Items {
				if n.Name == old || !pods.NodeReady(&n) {
					continue
				}
				replacement = n.Name + " (" + n.Labels[corev1.LabelInstanceTypeStable] + ")"
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady {
						ready = c.LastTransitionTime.Time
					}
				}
			}
		}
		return terminated(instanceState(g, oldID)), nil
	})
	if replacement == "" {
		t.Fatal("no replacement node became Ready before the t3.xlarge went")
	}
	if !strings.Contains(replacement, "t3.large") {
		t.Errorf("replacement %s, want a t3.large (cheaper than the t3.xlarge)", replacement)
	}
	if !evicted.IsZero() && evicted.Before(ready) {
		t.Errorf("the small pod was evicted %s before the replacement %s was Ready", ready.Sub(evicted), replacement)
	}
	var xl, large int
	for _, i := range poolInstances(g, "general") {
		if terminated(i.State) {
			continue
		}
		switch i.InstanceType {
		case "t3.xlarge":
			xl++
		case "t3.large":
			large++
		}
	}
	if xl != 0 || large != 1 {
		t.Errorf("running instances: %d t3.xlarge, %d t3.large; want the one t3.large", xl, large)
	}
	t.Logf("t3.xlarge replaced by %s %s after it became underused", replacement, time.Since(start).Round(100*time.Millisecond))
}

// TestE2E_MultiNodeConsolidationReplaces: two t3.xlarge each left with an
// 800m pod are replaced together by one t3.large (one command, one
// replacement launched for both, Ready before either is drained).
func TestE2E_MultiNodeConsolidationReplaces(t *testing.T) {
	specs := strings.Replace(consolidationSpecs, "values: [t3.large]}", "values: [t3.large, t3.xlarge]}", 1)
	specs = strings.Replace(specs, "consolidateAfter: 0s", "consolidateAfter: 0s\n    budgets: [{nodes: \"100%%\"}]", 1)
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "multi-replace", Namespace: "multi-replace", Specs: []byte(fmt.Sprintf(specs, "multi-replace")), ReadyDelay: 300 * time.Millisecond,
		ExtraEnv: al2023Env, ReaperEvery: 5 * time.Second,
	})
	ctx := context.Background()
	var bigs []*corev1.Pod
	var olds []string
	for i := 1; i <= 2; i++ {
		big := createPending(t, g, []*corev1.Pod{workloadPod(fmt.Sprintf("big-%d", i), "general", "3")})
		on := waitBound(t, g, big, 90*time.Second)[big[0].Name]
		small := createPending(t, g, []*corev1.Pod{workloadPod(fmt.Sprintf("small-%d", i), "general", "800m")})
		if got := waitBound(t, g, small, 90*time.Second)[small[0].Name]; got != on {
			t.Fatalf("%s on %s, want beside %s on %s", small[0].Name, got, big[0].Name, on)
		}
		bigs = append(bigs, big...)
		olds = append(olds, on)
	}
	var oldIDs []string
	for _, name := range olds {
		n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if it := n.Labels[corev1.LabelInstanceTypeStable]; it != "t3.xlarge" {
			t.Fatalf("node %s is a %s, want t3.xlarge", name, it)
		}
		oldIDs = append(oldIDs, pods.InstanceID(n.Spec.ProviderID))
	}
	deletePods(t, g, bigs)

	var firstEviction, ready time.Time
	eventually(t, 180*time.Second, "both t3.xlarge instances terminated", func() (bool, error) {
		if firstEviction.IsZero() {
			for i := 1; i <= 2; i++ {
				if _, err := g.Kube.Client.CoreV1().Pods(g.Opts.Namespace).Get(ctx, fmt.Sprintf("small-%d", i), metav1.GetOptions{}); err != nil {
					firstEviction = time.Now()
				}
			}
		}
		if ready.IsZero() {
			nodes, err := g.Kube.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=general,node.kubernetes.io/instance-type=t3.large"})
			if err != nil {
				return false, err
			}
			for _, n := range nodes.Items {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready = c.LastTransitionTime.Time
					}
				}
			}
		}
		return terminated(instanceState(g, oldIDs[0])) && terminated(instanceState(g, oldIDs[1])), nil
	})
	if ready.IsZero() {
		t.Fatal("no t3.large replacement became Ready")
	}
	if !firstEviction.IsZero() && firstEviction.Before(ready) {
		t.Errorf("a small pod was evicted %s before the replacement was Ready", ready.Sub(firstEviction))
	}
	var large, xl int
	for _, i := range poolInstances(g, "general") {
		switch {
		case i.InstanceType == "t3.large":
			large++ // launched ever: one replacement for both
		case i.InstanceType == "t3.xlarge" && !terminated(i.State):
			xl++
		}
	}
	if large != 1 || xl != 0 {
		t.Errorf("%d t3.large launched and %d t3.xlarge still running; want one t3.large for both, no t3.xlarge", large, xl)
	}
}
