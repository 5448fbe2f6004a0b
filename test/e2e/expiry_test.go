package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/test/testenv"
)

// expirySpecs is a v1 NodePool whose nodes live 40 s and are never
// retired for emptiness.
const expirySpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: shortlived}
spec:
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: Never
  template:
    metadata:
      labels: {workload: shortlived}
    spec:
      expireAfter: 40s
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: shortlived}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.large]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: shortlived}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-expiry
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
`

// TestE2E_ExpiredNodeReplacedFirst: a busy node past its pool's
// expireAfter (40 s) gets its replacement launched and Ready before it is
// drained: the old node is deleted (its drain begins) only once the
// replacement's node is Ready; the pod's successor (the test plays its
// ReplicaSet) is bound on the replacement; the old instance is
// terminated, never before expireAfter.
func TestE2E_ExpiredNodeReplacedFirst(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "expiry", Namespace: "expiry", Specs: []byte(expirySpecs), ReadyDelay: 3 * time.Second,
		ExtraEnv: al2023Env, ReaperEvery: 10 * time.Second,
	})
	ctx := context.Background()
	p := workloadPod("app", "shortlived", "500m")
	ps := createPending(t, g, []*corev1.Pod{p})
	nodeName := waitBound(t, g, ps, 90*time.Second)["app"]
	node, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	successors := replicaSet(t, g, ps)
	fleetsBefore := len(g.EC2.CreateFleetOperations())
	id := pods.InstanceID(node.Spec.ProviderID)
	created := node.CreationTimestamp.Time

	_, ready, deleted := replacedFirst(t, g, nodeName, fleetsBefore, successors, 40*time.Second+60*time.Second)
	var ended time.Time
	eventually(t, 60*time.Second, "the expired node's instance terminated", func() (bool, error) {
		if terminated(instanceState(g, id)) {
			ended = time.Now()
			return true, nil
		}
		return false, nil
	})
	// The creation timestamp has second precision.
	if age := ended.Sub(created); age < 39*time.Second {
		t.Fatalf("instance terminated %s after its node registered: before expireAfter (40 s)", age)
	}
	eventually(t, 15*time.Second, "the node deleted", func() (bool, error) { return nodeGone(t, g, nodeName), nil })
	t.Logf("node expired (expireAfter 40 s): replacement Ready at %s, drain begun at %s, instance terminated %s after it registered",
		ready.Sub(created).Round(time.Second), deleted.Sub(created).Round(time.Second), ended.Sub(created).Round(100*time.Millisecond))
}

// replacedFirst waits, within timeout, for a retirement of nodeName done
// replacement-first: a CreateFleet after fleetsBefore launches the
// replacement; nodeName is deleted (its drain begins) only once the
// replacement's node is Ready; a successor of its pod (the test's
// ReplicaSet) is bound on the replacement. It returns the replacement's
// node, when it turned Ready and when nodeName was deleted.
func replacedFirst(t *testing.T, g *testenv.Ground, nodeName string, fleetsBefore int, successors func() []*corev1.Pod, timeout time.Duration) (*corev1.Node, time.Time, time.Time) {
	t.Helper()
	ctx := context.Background()
	var replacement string
	eventually(t, timeout, "the replacement launched", func() (bool, error) {
		calls := g.EC2.CreateFleetOperations()
		if len(calls) > fleetsBefore && len(calls[fleetsBefore].InstanceIDs) == 1 {
			replacement = calls[fleetsBefore].InstanceIDs[0]
			return true, nil
		}
		return false, nil
	})
	var deleted time.Time
	eventually(t, 60*time.Second, "the retired node deleted (its drain begun)", func() (bool, error) {
		n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("node %s gone before its deletion was seen", nodeName)
		}
		if err != nil || n.DeletionTimestamp == nil {
			return false, err
		}
		deleted = n.DeletionTimestamp.Time
		return true, nil
	})
	repl := nodeOfInstance(t, g, replacement)
	if repl == nil {
		t.Fatalf("node %s began draining before its replacement %s registered", nodeName, replacement)
	}
	ready := readySince(repl)
	// Both timestamps have second precision.
	if ready.IsZero() || deleted.Before(ready.Truncate(time.Second)) {
		t.Fatalf("node %s was deleted at %s, before its replacement %s was Ready (%s)", nodeName, deleted, repl.Name, ready)
	}
	eventually(t, 60*time.Second, "the pod's successor bound on the replacement", func() (bool, error) {
		for _, s := range successors() {
			got, err := g.Kube.Client.CoreV1().Pods(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got.Spec.NodeName == repl.Name {
				return true, nil
			}
			if got.Spec.NodeName != "" {
				return false, fmt.Errorf("successor bound to %s, want the replacement %s", got.Spec.NodeName, repl.Name)
			}
		}
		return false, nil
	})
	return repl, ready, deleted
}

// nodeOfInstance is the node of an instance, nil when none registered.
func nodeOfInstance(t *testing.T, g *testenv.Ground, id string) *corev1.Node {
	t.Helper()
	ns, err := g.Kube.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ns.Items {
		if pods.InstanceID(ns.Items[i].Spec.ProviderID) == id {
			return &ns.Items[i]
		}
	}
	return nil
}

// readySince is when the node's Ready condition turned true, zero when it
// is not Ready.
func readySince(n *corev1.Node) time.Time {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
