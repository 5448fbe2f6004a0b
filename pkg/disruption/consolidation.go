package disruption

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// AnnotationConsolidatableAt is when a node was first found deletable by
// consolidation (its pods fit on the other nodes), RFC 3339. The node is
// retired on a later pass that still finds it so, once the stamp is
// ValidationDelay and consolidateAfter old: Karpenter re-validates a
// consolidation command after 15 s.
const AnnotationConsolidatableAt = "joist.sh/consolidatable-at"

// ValidationDelay is how long a consolidation decision must hold before
// it is acted on.
const ValidationDelay = 15 * time.Second

func underutilizedPolicy(p *model.Pool) bool {
	return p.Disruption.ConsolidateAfter != nil &&
		(p.Disruption.ConsolidationPolicy == "WhenEmptyOrUnderutilized" || p.Disruption.ConsolidationPolicy == "Balanced")
}

// consolidate is single-node delete consolidation: the first node (fewest
// pods first) of a WhenEmptyOrUnderutilized pool whose reschedulable pods
// all fit on the other Ready nodes, as pkg/scheduling places them, with
// nothing new launched. Replacing nodes with cheaper ones is not done yet.
func consolidate(s Snapshot, nodes []Node, state func(pool string) (total, disrupting int), plan *Plan) {
	type cand struct {
		n    Node
		pool *model.Pool
		pods []*corev1.Pod
	}
	var cands []cand
	for _, n := range nodes {
		p := PoolOf(n.Node, s.Pools)
		if !underutilizedPolicy(p) || Empty(n) || s.Planned[pods.InstanceID(n.Node.Spec.ProviderID)] > 0 {
			continue
		}
		if gracefulBlock(n) != "" {
			continue
		}
		var move []*corev1.Pod
		for _, pod := range n.Pods {
			if Reschedulable(pod) {
				move = append(move, pod)
			}
		}
		cands = append(cands, cand{n: n, pool: p, pods: move})
	}
	sort.SliceStable(cands, func(i, j int) bool { return len(cands[i].pods) < len(cands[j].pods) })
	decided := false
	for _, c := range cands {
		stamped := ConsolidatableAt(c.n.Node)
		if decided || !fitsElsewhere(c.n, c.pods, nodes) {
			if !stamped.IsZero() {
				plan.Unstamp = append(plan.Unstamp, c.n.Node.Name)
				plan.unstampConsolidation = append(plan.unstampConsolidation, c.n.Node.Name)
			}
			continue
		}
		// One consolidation per pass: pods moved off this node change
		// what fits elsewhere.
		decided = true
		if stamped.IsZero() {
			plan.StampConsolidation = append(plan.StampConsolidation, c.n.Node.Name)
			continue
		}
		wait := max(ValidationDelay, *c.pool.Disruption.ConsolidateAfter)
		if s.Now.Before(stamped.Add(wait)) {
			continue
		}
		total, disrupting := state(c.pool.Name)
		if disrupting >= Allowed(c.pool.Disruption.Budgets, ReasonUnderutilized, total, s.Now) {
			plan.Blocked = append(plan.Blocked, Blocked{Node: c.n.Node.Name, Reason: ReasonUnderutilized, Why: "disruption budget of pool " + c.pool.Name + " exhausted"})
			continue
		}
		plan.Retire = append(plan.Retire, Decision{Node: c.n.Node.Name, Pool: c.pool.Name, Reason: ReasonUnderutilized})
	}
}

// ConsolidatableAt is the node's consolidation stamp, zero when absent.
func ConsolidatableAt(n *corev1.Node) time.Time {
	t, err := time.Parse(time.RFC3339, n.Annotations[AnnotationConsolidatableAt])
	if err != nil {
		return time.Time{}
	}
	return t
}

// fitsElsewhere reports whether every pod in move fits on the nodes other
// than candidate, launching nothing.
func fitsElsewhere(candidate Node, move []*corev1.Pod, nodes []Node) bool {
	var others []*scheduling.Node
	for _, n := range nodes {
		if n.Node.Name == candidate.Node.Name || Retiring(n.Node) || !pods.NodeReady(n.Node) {
			continue
		}
		others = append(others, &scheduling.Node{
			Name: n.Node.Name, Pool: n.Node.Labels[model.LabelNodePool] + n.Node.Labels[model.LabelProvisionerName],
			Labels: n.Node.Labels, Taints: n.Node.Spec.Taints, Unschedulable: n.Node.Spec.Unschedulable,
			Capacity: n.Node.Status.Capacity, Allocatable: n.Node.Status.Allocatable, Pods: n.Pods,
		})
	}
	if len(others) == 0 {
		return false
	}
	pending := make([]*corev1.Pod, 0, len(move))
	for _, p := range move {
		c := p.DeepCopy()
		c.Spec.NodeName = ""
		pending = append(pending, c)
	}
	plan := scheduling.Solve(scheduling.Input{Pods: pending, Nodes: others, Options: scheduling.Options{NoImprove: true}})
	placed := 0
	for _, e := range plan.Existing {
		placed += len(e.Pods)
	}
	return placed == len(pending) && len(plan.NewNodes) == 0 && len(plan.Unschedulable) == 0
}
