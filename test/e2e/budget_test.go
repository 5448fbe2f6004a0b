package e2e

import (
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/test/testenv"
)

// budgetSpecs is a v1 NodePool whose empty nodes go after 5 s, at most
// one at a time.
const budgetSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: batch}
spec:
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 5s
    budgets: [{nodes: "1"}]
  template:
    metadata:
      labels: {workload: batch}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: batch}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.large]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: batch}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-budget-one
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
`

// TestE2E_BudgetOfOneDisruptsOneAtATime: three nodes of a pool with the
// budget {nodes: "1"} empty at once; they are retired one after the
// other, each in a later reaper pass, never together.
func TestE2E_BudgetOfOneDisruptsOneAtATime(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "budget-one", Namespace: "budget-one", Specs: []byte(budgetSpecs), ReadyDelay: 300 * time.Millisecond,
		ExtraEnv: al2023Env, ReaperEvery: 10 * time.Second,
	})
	// Three pods of 1.5 CPU: one t3.large (2 vCPU) each.
	var ps []*corev1.Pod
	for i := 0; i < 3; i++ {
		p := workloadPod(fmt.Sprintf("batch-%d", i), "batch", "1500m")
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1Gi")
		ps = append(ps, p)
	}
	ps = createPending(t, g, ps)
	waitBound(t, g, ps, 90*time.Second)
	var ids []string
	for _, i := range g.EC2.Instances() {
		if i.Tags[launch.TagNodePool] == "batch" {
			ids = append(ids, i.ID)
		}
	}
	if len(ids) != 3 {
		t.Fatalf("batch instances %v, want 3", ids)
	}
	deletePods(t, g, ps)

	// Watch the instances end; note when each is first seen terminated.
	ended := map[string]time.Time{}
	eventually(t, 120*time.Second, "the three empty nodes retired", func() (bool, error) {
		for _, id := range ids {
			if _, ok := ended[id]; !ok && terminated(instanceState(g, id)) {
				ended[id] = time.Now()
			}
		}
		return len(ended) == len(ids), nil
	})
	var at []time.Time
	for _, t := range ended {
		at = append(at, t)
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < 3*time.Second {
			t.Fatalf("instances ended %s apart: the budget of one node let several go at once (ended at %v)", gap, at)
		}
	}
	t.Logf("three empty nodes retired one at a time, %s and %s apart", at[1].Sub(at[0]).Round(100*time.Millisecond), at[2].Sub(at[1]).Round(100*time.Millisecond))
}
