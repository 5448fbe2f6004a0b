package disruption

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// randomCluster is a small random cluster of one consolidating pool:
// nodes of a few types, zones and the pool's capacity types, filled with
// random pods (some do-not-disrupt, some pinned to their node, some to
// their zone) as far as they fit.
func randomCluster(rng *rand.Rand, types []*scheduling.InstanceType) *simCluster {
	cts := [][]string{{model.CapacityTypeOnDemand}, {model.CapacityTypeSpot}, {model.CapacityTypeSpot, model.CapacityTypeOnDemand}}[rng.Intn(3)]
	pool := consolidating(cts...)
	switch rng.Intn(4) {
	case 0:
		withBudget(pool, "1")
	case 1:
		withBudget(pool, "50%")
	}
	c := &simCluster{in: scheduling.Input{Pools: []*model.Pool{pool}, InstanceTypes: types, Region: "us-east-1"}, now: now, verify: true}
	names := []string{"m5.large", "m5.xlarge", "m5.2xlarge", "c5.large", "c5.xlarge", "c5.2xlarge", "r5.large", "r5.xlarge", "m5.4xlarge"}
	nodes := 2 + rng.Intn(7)
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("n%d", i)
		n := typed(types, name, names[rng.Intn(len(names))], cts[rng.Intn(len(cts))])
		zone := testZones[rng.Intn(len(testZones))]
		n.Node.Labels[model.LabelZone] = zone
		free := [2]int64{n.Node.Status.Allocatable.Cpu().MilliValue(), n.Node.Status.Allocatable.Memory().Value()}
		for j := 0; j < 1+rng.Intn(8); j++ {
			cpu, mem := int64(100+rng.Intn(15)*100), int64(128+rng.Intn(16)*128)<<20
			if cpu > free[0] || mem > free[1] {
				break
			}
			free[0], free[1] = free[0]-cpu, free[1]-mem
			p := app(fmt.Sprintf("%s-p%d", name, j), fmt.Sprintf("%dm", cpu))
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
			switch rng.Intn(20) {
			case 0:
				p.Annotations[AnnotationDoNotDisrupt] = "true"
			case 4:
				// Guarded by a budget that allows no disruption, when
				// the cluster has one.
				p.Labels = map[string]string{"guarded": "true"}
			case 1:
				p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: name}
			case 2, 3:
				p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zone}
			}
			p.Spec.NodeName = name
			n.Pods = append(n.Pods, p)
		}
		if rng.Intn(15) == 0 {
			n.Node.Annotations[AnnotationDoNotDisrupt] = "true"
		}
		c.nodes = append(c.nodes, n)
	}
	if rng.Intn(2) == 0 {
		pdb, err := NewPDB(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: "ns"},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"guarded": "true"}}}})
		if err != nil {
			panic(err)
		}
		c.pdbs = []PDB{pdb}
	}
	return c
}

// TestPropertyConsolidationKeepsEveryPodAndSaves consolidates random
// clusters pass after pass: no decision leaves a pod without a place or
// needs more new nodes than it says (apply re-plans the retired nodes'
// pods with pkg/scheduling and checks the plan with verify.Plan (pkg/scheduling/verify)),
// every decision saves money and the cluster's $/h falls with every
// command, do-not-disrupt nodes and pods stay, as do nodes whose pods a
// PodDisruptionBudget protects, and budgets hold.
func TestPropertyConsolidationKeepsEveryPodAndSaves(t *testing.T) {
	types := testTypes(t)
	clusters := 80
	if testing.Short() {
		clusters = 20
	}
	commands := 0
	for seed := 0; seed < clusters; seed++ {
		rng := rand.New(rand.NewSource(int64(seed)))
		c := randomCluster(rng, types)
		pool := c.in.Pools[0]
		kept := map[string]bool{}
		for _, n := range c.nodes {
			// Said independently of the rules: what must keep a node.
			if n.Node.Annotations[AnnotationDoNotDisrupt] == "true" {
				kept[n.Node.Name] = true
			}
			for _, p := range n.Pods {
				if p.Annotations[AnnotationDoNotDisrupt] == "true" || (len(c.pdbs) > 0 && p.Labels["guarded"] == "true") {
					kept[n.Node.Name] = true
				}
			}
		}
		podsBefore := len(c.pods())
		for pass := 0; pass < 20; pass++ {
			plan := Decide(c.snapshot())
			before := c.pricePerHour()
			if len(plan.Retire) > 0 {
				commands++
				if allowed := Allowed(pool.Disruption.Budgets, ReasonUnderutilized, len(c.nodes), c.now); len(plan.Retire) > allowed {
					t.Fatalf("seed %d: %d nodes retired, the budget allows %d", seed, len(plan.Retire), allowed)
				}
			}
			for _, d := range plan.Retire {
				if d.SavingsPerHour <= 0 {
					t.Fatalf("seed %d: decision %+v saves nothing", seed, d)
				}
				if kept[d.Node] {
					t.Fatalf("seed %d: node %s has do-not-disrupt (on it or a pod) or a pod a budget protects, and was retired", seed, d.Node)
				}
			}
			if err := c.apply(plan); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if len(plan.Retire) > 0 && c.pricePerHour() >= before {
				t.Fatalf("seed %d: retiring %v took the cluster from $%.4f/h to $%.4f/h", seed, names(plan.Retire), before, c.pricePerHour())
			}
			if len(plan.Retire) == 0 && len(plan.StampConsolidation) == 0 {
				break
			}
			c.now = c.now.Add(ValidationDelay)
		}
		if got := len(c.pods()); got != podsBefore {
			t.Fatalf("seed %d: %d pods before, %d after", seed, podsBefore, got)
		}
	}
	t.Logf("%d clusters, %d commands applied", clusters, commands)
	if commands < clusters/4 {
		t.Errorf("only %d commands over %d clusters: the property is barely exercised", commands, clusters)
	}
}
