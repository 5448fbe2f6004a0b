package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// TestE2E_ExpiredNodeRetired: a node past its pool's expireAfter (40 s) is
// drained and its instance terminated, busy or not; never before.
// (Replacement-first for expiry is not done: the evicted pods go pending
// and are provisioned for, as with Karpenter's expiration controller.)
func TestE2E_ExpiredNodeRetired(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "expiry", Namespace: "expiry", Specs: []byte(expirySpecs), ReadyDelay: 300 * time.Millisecond,
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
	id := pods.InstanceID(node.Spec.ProviderID)
	created := node.CreationTimestamp.Time
	var ended time.Time
	eventually(t, 40*time.Second+60*time.Second, "the expired node's instance terminated", func() (bool, error) {
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
	t.Logf("node expired (expireAfter 40 s) and its instance terminated %s after it registered", ended.Sub(created).Round(100*time.Millisecond))
}
