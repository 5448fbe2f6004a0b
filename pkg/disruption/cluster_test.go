package disruption

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/verify"
)

// simCluster is a cluster the tests and the benchmark consolidate: nodes
// made from a scheduling plan, with their pods bound, and the reaper's
// part played by apply (stamps, and retirements done the way the
// orchestration does them: the retired nodes' pods planned again with
// pkg/scheduling onto the other nodes and at most the new nodes the plan
// asks, then the nodes removed).
type simCluster struct {
	in    scheduling.Input // pools, instance types, DaemonSets, region
	nodes []Node
	pdbs  []PDB
	now   time.Time
	seq   int
	// verify checks every replan with verify.Plan (pkg/scheduling/verify) (slow on a
	// thousand nodes: the property test does, the benchmark does not).
	verify bool
}

func (c *simCluster) snapshot() Snapshot {
	return Snapshot{Now: c.now, Pools: c.in.Pools, Nodes: c.nodes, Simulation: c.in, PDBs: c.pdbs}
}

func (c *simCluster) typeNamed(name string) *scheduling.InstanceType {
	for _, it := range c.in.InstanceTypes {
		if it.Name == name {
			return it
		}
	}
	return nil
}

// addNodes turns a plan's new nodes into Ready nodes holding their pods.
func (c *simCluster) addNodes(plan scheduling.Plan) {
	for _, nn := range plan.NewNodes {
		it := c.typeNamed(nn.Cheapest.InstanceType)
		c.seq++
		name := fmt.Sprintf("n%05d", c.seq)
		labels := map[string]string{}
		for k, v := range it.Labels {
			labels[k] = v
		}
		for k, v := range nn.Labels {
			labels[k] = v
		}
		for _, p := range c.in.Pools {
			if p.Name == nn.Pool {
				labels[p.Label()] = p.Name
			}
		}
		labels[model.LabelZone] = nn.Cheapest.Zone
		labels[model.LabelCapacityType] = nn.Cheapest.CapacityType
		labels[corev1.LabelHostname] = name
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{},
				CreationTimestamp: metav1.NewTime(c.now)},
			Spec: corev1.NodeSpec{ProviderID: "aws:///" + nn.Cheapest.Zone + "/i-" + name},
			Status: corev1.NodeStatus{Capacity: it.Capacity, Allocatable: it.Allocatable,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}
		var ps []*corev1.Pod
		for _, p := range nn.Pods {
			p = p.DeepCopy()
			p.Spec.NodeName = name
			ps = append(ps, p)
		}
		c.nodes = append(c.nodes, Node{Node: node, Pods: ps})
	}
}

// bind puts placed pods onto existing nodes.
func (c *simCluster) bind(plan scheduling.Plan) {
	for _, pl := range plan.Existing {
		for i := range c.nodes {
			if c.nodes[i].Node.Name == pl.Node {
				for _, p := range pl.Pods {
					p = p.DeepCopy()
					p.Spec.NodeName = pl.Node
					c.nodes[i].Pods = append(c.nodes[i].Pods, p)
				}
			}
		}
	}
}

// pricePerHour is the cluster's $/h by node labels.
func (c *simCluster) pricePerHour() float64 {
	s := c.snapshot()
	var sum float64
	for _, n := range c.nodes {
		sum += s.NodePrice(n.Node)
	}
	return sum
}

// pods are every pod bound in the cluster.
func (c *simCluster) pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range c.nodes {
		for _, p := range n.Pods {
			p = p.DeepCopy()
			p.Spec.NodeName = ""
			out = append(out, p)
		}
	}
	return out
}

// apply plays the reaper and the orchestration for one plan: stamps and
// unstamps nodes, and retires the decided nodes (their pods planned
// again onto the rest and at most the new nodes Solve asks for). It
// returns an error when a retirement leaves a pod without a place or
// needs more new capacity than the decision said.
func (c *simCluster) apply(plan Plan) error {
	byName := map[string]*Node{}
	for i := range c.nodes {
		byName[c.nodes[i].Node.Name] = &c.nodes[i]
	}
	for _, n := range plan.Unstamp {
		delete(byName[n].Node.Annotations, AnnotationConsolidatableAt)
		delete(byName[n].Node.Annotations, AnnotationConsolidationCommand)
		delete(byName[n].Node.Annotations, AnnotationEmptinessTimestamp)
	}
	for _, n := range plan.StampConsolidation {
		byName[n].Node.Annotations[AnnotationConsolidatableAt] = c.now.Format(time.RFC3339)
		byName[n].Node.Annotations[AnnotationConsolidationCommand] = plan.ConsolidationCommand
	}
	for _, n := range plan.Stamp {
		byName[n].Node.Annotations[AnnotationEmptinessTimestamp] = c.now.Format(time.RFC3339)
	}
	if len(plan.Retire) == 0 {
		return nil
	}
	retired := map[string]bool{}
	replace := false
	var move []*corev1.Pod
	for _, d := range plan.Retire {
		retired[d.Node] = true
		replace = replace || d.Replace
		for _, p := range byName[d.Node].Pods {
			if pods.Reschedulable(p) {
				p = p.DeepCopy()
				p.Spec.NodeName = ""
				move = append(move, p)
			}
		}
	}
	var keep []Node
	var others []*scheduling.Node
	for _, n := range c.nodes {
		if retired[n.Node.Name] {
			continue
		}
		keep = append(keep, n)
		others = append(others, &scheduling.Node{Name: n.Node.Name, Labels: n.Node.Labels, Taints: n.Node.Spec.Taints,
			Capacity: n.Node.Status.Capacity, Allocatable: n.Node.Status.Allocatable, Pods: n.Pods,
			Pool: n.Node.Labels[model.LabelProvisionerName] + n.Node.Labels[model.LabelNodePool]})
	}
	in := c.in
	in.Pods, in.Nodes = move, others
	sp := scheduling.Solve(in)
	if len(sp.Unschedulable) > 0 {
		return fmt.Errorf("retiring %v leaves pod %s without a place: %s", names(plan.Retire), sp.Unschedulable[0].Pod.Name, sp.Unschedulable[0].Reason)
	}
	if c.verify {
		if errs := verify.Plan(in, sp); len(errs) > 0 {
			return fmt.Errorf("replan of %v invalid: %v", names(plan.Retire), errs[0])
		}
	}
	if want := map[bool]int{false: 0, true: 1}[replace]; len(sp.NewNodes) > want {
		return fmt.Errorf("retiring %v (replace=%v) needs %d new nodes", names(plan.Retire), replace, len(sp.NewNodes))
	}
	c.nodes = keep
	c.bind(sp)
	c.addNodes(sp)
	return nil
}

func names(ds []Decision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Node)
	}
	sort.Strings(out)
	return out
}
