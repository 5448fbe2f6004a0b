package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/test/testenv"
)

// controllers plays the two controller-manager loops a drain relies on
// (the test ground runs none): a ReplicaSet that keeps `replicas` pods of
// template (a deleted pod is replaced by a new pending one) and the
// disruption controller that writes the PDB's status (disruptionsAllowed
// = healthy - minAvailable). It also counts, on every round, the
// available pods against the PDB: each round below minAvailable, once
// all replicas first ran, is a violation.
type controllers struct {
	g           *testenv.Ground
	template    *corev1.Pod
	replicas    int
	minAvail    int
	pdb         string
	mu          sync.Mutex
	created     int
	violations  atomic.Int32
	minSeen     atomic.Int32
	established atomic.Bool
}

func available(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func (c *controllers) round(t *testing.T, ctx context.Context) {
	ns := c.g.Opts.Namespace
	// The PDB first: an eviction after this read makes the status write
	// below conflict; one before it is in status.disruptedPods.
	pdb, pdbErr := c.g.Kube.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, c.pdb, metav1.GetOptions{})
	list, err := c.g.Kube.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "type=karpenter-test"})
	if err != nil {
		return
	}
	live, healthy, allowedHealthy := 0, 0, 0
	disrupted := map[string]metav1.Time{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp == nil {
			live++
		}
		if available(p) {
			healthy++
			if pdbErr == nil {
				if at, ok := pdb.Status.DisruptedPods[p.Name]; ok {
					disrupted[p.Name] = at // evicted, not yet deleting
					continue
				}
			}
			allowedHealthy++
		}
	}
	if healthy >= c.replicas {
		c.established.Store(true)
	}
	if c.established.Load() {
		if healthy < c.minAvail {
			c.violations.Add(1)
		}
		if int32(healthy) < c.minSeen.Load() {
			c.minSeen.Store(int32(healthy))
		}
	}
	for ; live < c.replicas; live++ {
		c.mu.Lock()
		c.created++
		name := fmt.Sprintf("nginx-%d", c.created)
		c.mu.Unlock()
		p := c.template.DeepCopy()
		p.Name = name
		if _, err := c.g.CreatePending(ctx, p); err != nil {
			t.Logf("replicaset: %v", err)
		}
	}
	if pdbErr != nil {
		return
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation, DisruptionsAllowed: int32(max(allowedHealthy-c.minAvail, 0)),
		CurrentHealthy: int32(healthy), DesiredHealthy: int32(c.minAvail), ExpectedPods: int32(c.replicas),
		DisruptedPods: disrupted,
	}
	_, _ = c.g.Kube.Client.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
}

// TestE2E_DrainRespectsPDB: a node holding both replicas of a Deployment
// whose PDB wants one available is deleted. The drain evicts one pod, then
// waits (429) until its replacement runs on a new node before evicting the
// other; a watcher counting available pods through the whole drain sees
// the PDB broken 0 times, and the instance ends after the drain.
func TestE2E_DrainRespectsPDB(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "drain-pdb", Namespace: "drain-pdb", Specs: seed(t), ReadyDelay: 300 * time.Millisecond, ReaperEvery: 10 * time.Second,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tmpl := deploymentPods(t, seed(t))[0]
	one := intstr.FromInt32(1)
	if _, err := g.Kube.Client.PolicyV1().PodDisruptionBudgets("drain-pdb").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"type": "karpenter-test"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := &controllers{g: g, template: tmpl, replicas: 2, minAvail: 1, pdb: "nginx"}
	c.minSeen.Store(1 << 20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for ; ctx.Err() == nil; waitTick(ctx, tick) {
			c.round(t, ctx)
		}
	}()
	defer func() { cancel(); <-done }()

	// Both replicas on one service node.
	var first string
	eventually(t, 90*time.Second, "both replicas running on one node", func() (bool, error) {
		list, err := g.Kube.Client.CoreV1().Pods("drain-pdb").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 2 {
			return false, err
		}
		for _, p := range list.Items {
			if !available(&p) {
				return false, nil
			}
			first = p.Spec.NodeName
		}
		return list.Items[0].Spec.NodeName == list.Items[1].Spec.NodeName, nil
	})
	node, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, first, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := pods.InstanceID(node.Spec.ProviderID)
	eventually(t, 30*time.Second, "the node carries the termination finalizer", func() (bool, error) {
		n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, first, metav1.GetOptions{})
		return err == nil && len(n.Finalizers) > 0, err
	})
	if err := g.Kube.Client.CoreV1().Nodes().Delete(ctx, first, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	eventually(t, 150*time.Second, "the drained node's instance terminated", func() (bool, error) {
		return terminated(instanceState(g, id)), nil
	})
	eventually(t, 15*time.Second, "the node deleted", func() (bool, error) { return nodeGone(t, g, first), nil })
	eventually(t, 90*time.Second, "two replicas available again", func() (bool, error) {
		list, err := g.Kube.Client.CoreV1().Pods("drain-pdb").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		for i := range list.Items {
			if available(&list.Items[i]) && list.Items[i].Spec.NodeName != first {
				n++
			}
		}
		return n == 2, nil
	})
	if v := c.violations.Load(); v != 0 {
		t.Fatalf("the PDB (minAvailable 1) was broken in %d watcher rounds (lowest available: %d)", v, c.minSeen.Load())
	}
	t.Logf("drain under a PDB took %s; lowest available replicas seen: %d (minAvailable 1)", time.Since(start).Round(100*time.Millisecond), c.minSeen.Load())
}
