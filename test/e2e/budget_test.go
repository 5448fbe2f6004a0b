package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

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
// other, each begun only once the previous one is gone, never together.
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
	// Watch the batch nodes: each one's retirement runs from the moment it
	// is seen deleting to the moment it is gone. The budget holds when no
	// two of those windows overlap (whichever reaper run, scheduled or
	// woken by the forwarder, made each decision).
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	w, err := g.Kube.Client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: "workload=batch"})
	if err != nil {
		t.Fatal(err)
	}
	type window struct{ from, to time.Time }
	var mu sync.Mutex
	windows := map[string]*window{}
	go func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			mu.Lock()
			win := windows[n.Name]
			if win == nil && (n.DeletionTimestamp != nil || ev.Type == watch.Deleted) {
				win = &window{from: time.Now()}
				windows[n.Name] = win
			}
			if win != nil && ev.Type == watch.Deleted {
				win.to = time.Now()
			}
			mu.Unlock()
		}
	}()
	deletePods(t, g, ps)

	eventually(t, 120*time.Second, "the three empty nodes retired", func() (bool, error) {
		for _, id := range ids {
			if !terminated(instanceState(g, id)) {
				return false, nil
			}
		}
		mu.Lock()
		defer mu.Unlock()
		done := 0
		for _, win := range windows {
			if !win.to.IsZero() {
				done++
			}
		}
		return done == len(ids), nil
	})
	mu.Lock()
	var all []window
	for _, win := range windows {
		all = append(all, *win)
	}
	mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].from.Before(all[j].from) })
	var spans []string
	for _, win := range all {
		spans = append(spans, win.from.Format("15:04:05.000")+"–"+win.to.Format("15:04:05.000"))
	}
	for i := 1; i < len(all); i++ {
		if all[i].from.Before(all[i-1].to) {
			t.Fatalf("a node began retiring %s before the previous one was gone: the budget of one node let several go at once (retiring %v)",
				all[i-1].to.Sub(all[i].from), spans)
		}
	}
	t.Logf("three empty nodes retired one at a time, each begun %s and %s after the previous was gone",
		all[1].from.Sub(all[0].to).Round(10*time.Millisecond), all[2].from.Sub(all[1].to).Round(10*time.Millisecond))
}
