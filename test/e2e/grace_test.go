package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

// graceSpecs is a v1 NodePool whose drains give up waiting after 20 s.
const graceSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: capped}
spec:
  template:
    metadata:
      labels: {workload: capped}
    spec:
      terminationGracePeriod: 20s
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: capped}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.large]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: capped}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-grace
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
`

// TestE2E_TerminationGracePeriodForcesDrain: a pod with
// karpenter.sh/do-not-disrupt holds the drain of its deleted node, but
// only until the pool's terminationGracePeriod (20 s): then it is deleted
// and the instance terminated.
func TestE2E_TerminationGracePeriodForcesDrain(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "grace", Namespace: "grace", Specs: []byte(graceSpecs), ReadyDelay: 300 * time.Millisecond,
		ExtraEnv: al2023Env, ReaperEvery: 5 * time.Second,
	})
	ctx := context.Background()
	grace := int64(5)
	p := withAnnotations(workloadPod("job", "capped", "500m"), map[string]string{termination.AnnotationDoNotDisrupt: "true"})
	p.Spec.TerminationGracePeriodSeconds = &grace
	ps := createPending(t, g, []*corev1.Pod{p})
	nodeName := waitBound(t, g, ps, 90*time.Second)["job"]
	var node *corev1.Node
	eventually(t, 30*time.Second, "the node carries the termination finalizer", func() (bool, error) {
		n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		node = n
		return err == nil && len(n.Finalizers) > 0, err
	})
	id := pods.InstanceID(node.Spec.ProviderID)
	if err := g.Kube.Client.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var held time.Duration
	eventually(t, 90*time.Second, "the instance terminated", func() (bool, error) {
		_, err := g.Kube.Client.CoreV1().Pods("grace").Get(ctx, "job", metav1.GetOptions{})
		if err == nil {
			held = time.Since(start) // the do-not-disrupt pod still there
		}
		return terminated(instanceState(g, id)), nil
	})
	// The pod is deleted at the deadline less its own 5 s grace.
	if held < 10*time.Second {
		t.Fatalf("the do-not-disrupt pod went after %s: before terminationGracePeriod (20 s) less its grace (5 s)", held)
	}
	eventually(t, 15*time.Second, "the node deleted", func() (bool, error) { return nodeGone(t, g, nodeName), nil })
	t.Logf("do-not-disrupt pod held the drain %s; instance terminated %s after the delete (terminationGracePeriod 20 s)",
		held.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}
