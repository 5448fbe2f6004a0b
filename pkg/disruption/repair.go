package disruption

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// Node repair, as Karpenter v1.15's (its NodeRepair feature gate, off by
// default: Snapshot.NodeRepair; sigs.k8s.io/karpenter
// pkg/controllers/disruption/repair.go with the AWS provider's repair
// policies): a node whose condition has been unhealthy for longer than its
// policy tolerates is replaced, its pods given their new place first, its
// drain bounded by the policy's grace period.

// AnnotationDoNotRepair is Karpenter's node annotation that keeps repair
// off the node (an operator investigating it, say).
const AnnotationDoNotRepair = "karpenter.sh/do-not-repair"

// RepairPolicy is one unhealthy node condition: its type and status,
// the reasons it covers, how long it is tolerated and how long the drain
// of a node repaired for it may take.
type RepairPolicy struct {
	Condition corev1.NodeConditionType
	Status    corev1.ConditionStatus
	// Reasons matches the condition's reason; nil: the fallback, for a
	// reason no policy of the condition matches.
	Reasons     *regexp.Regexp
	Toleration  time.Duration
	GracePeriod time.Duration
}

// RepairPolicies are the AWS provider's (karpenter-provider-aws v1.15.2
// cloudprovider.RepairPolicies): the kubelet's Ready condition, and the
// EKS node monitoring agent's conditions. Reboot-clearable GPU faults are
// replaced, as the AWS provider does without its RebootForRepair gate.
var RepairPolicies = []RepairPolicy{
	{Condition: corev1.NodeReady, Status: corev1.ConditionFalse, Reasons: anyReason, Toleration: 30 * time.Minute, GracePeriod: 10 * time.Minute},
	{Condition: corev1.NodeReady, Status: corev1.ConditionUnknown, Reasons: anyReason, Toleration: 30 * time.Minute, GracePeriod: 10 * time.Minute},
	{Condition: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Reasons: regexp.MustCompile(`.*XID(46|48|54|62|63|95|109|110|136|140|143|155|156|158).*`), Toleration: 10 * time.Minute, GracePeriod: 5 * time.Minute},
	{Condition: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Reasons: regexp.MustCompile(`.*XID(64|74|79|119|120).*`), Toleration: 10 * time.Minute, GracePeriod: 5 * time.Minute},
	{Condition: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Toleration: 30 * time.Minute, GracePeriod: 10 * time.Minute},
	{Condition: "StorageReady", Status: corev1.ConditionFalse, Reasons: anyReason, Toleration: 30 * time.Minute, GracePeriod: 10 * time.Minute},
	{Condition: "NetworkingReady", Status: corev1.ConditionFalse, Reasons: anyReason, Toleration: 30 * time.Minute, GracePeriod: 10 * time.Minute},
	{Condition: "KernelReady", Status: corev1.ConditionFalse, Reasons: anyReason, Toleration: 30 * time.Minute, GracePeriod: 10 * time.Minute},
	{Condition: "ContainerRuntimeReady", Status: corev1.ConditionFalse, Reasons: anyReason, Toleration: 30 * time.Minute, GracePeriod: 10 * time.Minute},
}

var anyReason = regexp.MustCompile(`.*`)

// repairUnhealthyShare is Karpenter's circuit breaker: no node of a pool is
// repaired while more than this share of its nodes (rounded up, so one
// unhealthy node never stops a small pool) has an unhealthy condition,
// tolerated or not: a fault shared by many nodes (a bad AMI, a network
// outage) is not cured by replacing them.
const repairUnhealthyShare = 0.2

// Repair is why a node is to be repaired: the condition that has been
// unhealthy longest past its toleration, since when it may be repaired
// and the drain's bound (the shortest of its eligible policies').
type Repair struct {
	Condition   corev1.NodeConditionType
	Status      corev1.ConditionStatus
	Reason      string
	EligibleAt  time.Time
	GracePeriod time.Duration
}

// String says it as an event would.
func (r Repair) String() string {
	s := fmt.Sprintf("condition %s is %s", r.Condition, r.Status)
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s + " past its toleration"
}

// repairMatches are the policies each of the node's conditions matches,
// with when each becomes eligible: the condition's last transition (no
// earlier than the node's creation, so a missing time is a lower bound)
// plus the toleration.
func repairMatches(n *corev1.Node, each func(c corev1.NodeCondition, p RepairPolicy, eligibleAt time.Time)) {
	for _, c := range n.Status.Conditions {
		since := c.LastTransitionTime.Time
		if since.Before(n.CreationTimestamp.Time) {
			since = n.CreationTimestamp.Time
		}
		var fallback *RepairPolicy
		matched := false
		for i := range RepairPolicies {
			p := &RepairPolicies[i]
			if p.Condition != c.Type || p.Status != c.Status {
				continue
			}
			if p.Reasons == nil {
				fallback = p
				continue
			}
			if p.Reasons.MatchString(c.Reason) {
				matched = true
				each(c, *p, since.Add(p.Toleration))
			}
		}
		if !matched && fallback != nil {
			each(c, *fallback, since.Add(fallback.Toleration))
		}
	}
}

// RepairOf says whether node n is to be repaired at now, and why: some
// condition matches a repair policy and has waited out its toleration.
func RepairOf(n *corev1.Node, now time.Time) (Repair, bool) {
	var r Repair
	found := false
	repairMatches(n, func(c corev1.NodeCondition, p RepairPolicy, at time.Time) {
		if at.After(now) {
			return
		}
		// The longest eligible decides; the shortest grace bounds.
		if !found || at.Before(r.EligibleAt) || at.Equal(r.EligibleAt) && c.Type < r.Condition {
			grace := p.GracePeriod
			if found {
				grace = min(grace, r.GracePeriod)
			}
			r = Repair{Condition: c.Type, Status: c.Status, Reason: c.Reason, EligibleAt: at, GracePeriod: grace}
		} else {
			r.GracePeriod = min(r.GracePeriod, p.GracePeriod)
		}
		found = true
	})
	return r, found
}

// RepairGracePeriod bounds the drain of a node retired for repair: its
// policy's grace period, or the pool's terminationGracePeriod when that is
// shorter (nil: the node is not to be repaired now, so the pool's alone).
func RepairGracePeriod(n *corev1.Node, pool *time.Duration, now time.Time) *time.Duration {
	r, ok := RepairOf(n, now)
	if !ok {
		return pool
	}
	g := r.GracePeriod
	if pool != nil && *pool < g {
		g = *pool
	}
	return &g
}

// unhealthy says whether some condition of the node matches a repair
// policy now, tolerated or not (the circuit breaker's count).
func unhealthy(n *corev1.Node) bool {
	found := false
	repairMatches(n, func(corev1.NodeCondition, RepairPolicy, time.Time) { found = true })
	return found
}

// repair plans node repair over the nodes no earlier rule decided (Ready
// or not, none retiring), and returns the node it retires: of those to be repaired, the one unhealthy
// longest past its toleration (then the least disruptive, then by name)
// that its pool's circuit breaker, do-not-repair and Unhealthy budget
// allow is replaced, its pods first; one per pass, as Karpenter. Node and
// pod do-not-disrupt and budgets do not block it: the policy's grace
// period bounds the drain (RepairGracePeriod).
func repair(s Snapshot, nodes []Node, state func(pool string) (total, retiring int), plan *Plan) (Node, bool) {
	type cand struct {
		n    Node
		p    *model.Pool
		r    Repair
		cost float64
	}
	var cands []cand
	for _, n := range nodes {
		r, ok := RepairOf(n.Node, s.Now)
		if !ok {
			continue
		}
		cands = append(cands, cand{n, PoolOf(n.Node, s.Pools), r, nodeDisruptionCost(n)})
	}
	if len(cands) == 0 {
		return Node{}, false
	}
	// Karpenter scores a candidate by its policy's rank plus its time
	// past the toleration over 30 minutes; every AWS policy has the same
	// rank, so the node unhealthy longest past its toleration goes first.
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if !a.r.EligibleAt.Equal(b.r.EligibleAt) {
			return a.r.EligibleAt.Before(b.r.EligibleAt)
		}
		if a.cost != b.cost {
			return a.cost < b.cost
		}
		return a.n.Node.Name < b.n.Node.Name
	})
	sick := map[string]int{}
	for _, n := range s.Nodes {
		if p := PoolOf(n.Node, s.Pools); p != nil && unhealthy(n.Node) {
			sick[p.Name]++
		}
	}
	for _, c := range cands {
		total, retiring := state(c.p.Name)
		if limit := int(math.Ceil(repairUnhealthyShare * float64(total))); sick[c.p.Name] > limit {
			plan.Blocked = append(plan.Blocked, Blocked{Node: c.n.Node.Name, Reason: ReasonUnhealthy,
				Why: fmt.Sprintf("more than %d%% of the nodes of pool %s are unhealthy (%d of %d)", int(repairUnhealthyShare*100), c.p.Name, sick[c.p.Name], total)})
			continue
		}
		if c.n.Node.Annotations[AnnotationDoNotRepair] == "true" {
			plan.Blocked = append(plan.Blocked, Blocked{Node: c.n.Node.Name, Reason: ReasonUnhealthy, Why: "node has " + AnnotationDoNotRepair})
			continue
		}
		if retiring >= Allowed(c.p.Disruption.Budgets, ReasonUnhealthy, total, s.Now) {
			plan.Blocked = append(plan.Blocked, Blocked{Node: c.n.Node.Name, Reason: ReasonUnhealthy, Why: "disruption budget of pool " + c.p.Name + " exhausted"})
			continue
		}
		plan.Retire = append(plan.Retire, Decision{Node: c.n.Node.Name, Pool: c.p.Name, Reason: ReasonUnhealthy,
			Replace: !Empty(c.n), Detail: c.r.String()})
		return c.n, true
	}
	return Node{}, false
}
