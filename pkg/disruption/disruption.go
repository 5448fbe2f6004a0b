// Package disruption decides which of Joist's nodes to retire and why. It
// is pure: it reads a snapshot (nodes with their pods, the pools, the
// clock) and returns a plan; the reaper acts on it through the termination
// engine (pkg/termination).
//
// Rules, in Karpenter's order:
//
//   - Expiry (forceful): a node older than its pool's expireAfter
//     (v1alpha5 ttlSecondsUntilExpired) is retired, whatever its budgets
//     and its node-level do-not-disrupt say; its drain still honours PDBs
//     and do-not-disrupt pods until the terminationGracePeriod.
//   - Consolidation (graceful, within budgets, WhenEmptyOrUnderutilized
//     pools): Karpenter's multi-node then single-node search for a command
//     that retires nodes whose pods fit on the other nodes (delete) or on
//     the others plus one cheaper new node (replace); acted on once the
//     same command holds after 15 s and consolidateAfter
//     (consolidation.go, simulate.go).
//   - Emptiness (graceful, within budgets): a node with no reschedulable
//     pods is stamped karpenter.sh/emptiness-timestamp (as v0.20 did); once
//     the stamp is consolidateAfter old (v1alpha5 ttlSecondsAfterEmpty) the
//     node is retired. A pod arriving removes the stamp.
//
// Graceful rules skip nodes annotated karpenter.sh/do-not-disrupt=true
// (v1) or karpenter.sh/do-not-consolidate=true (v0.20), nodes holding a pod
// with do-not-disrupt/do-not-evict, nodes not yet Ready, nodes that pods
// are still planned onto, and nodes already being retired. Each pool's
// budgets (count or percentage, optional cron schedule and duration,
// reasons) cap how many of its nodes are being disrupted at once.
package disruption

import (
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Annotations read on nodes.
const (
	// AnnotationEmptinessTimestamp is when the node was first seen empty
	// (RFC 3339), v0.20's name.
	AnnotationEmptinessTimestamp = "karpenter.sh/emptiness-timestamp"
	// AnnotationDoNotDisrupt (v1) on a node or a pod blocks graceful
	// disruption.
	// On a pod it takes a duration too (pods.DoNotDisruptUntil).
	AnnotationDoNotDisrupt = pods.AnnotationDoNotDisrupt
	// AnnotationDoNotEvict is v0.20's pod annotation.
	AnnotationDoNotEvict = pods.AnnotationDoNotEvict
	// AnnotationDoNotConsolidate is v0.20's node annotation.
	AnnotationDoNotConsolidate = "karpenter.sh/do-not-consolidate"
	// TaintDisrupted marks a node being retired.
	TaintDisrupted = pods.TaintDisrupted
)

// Node is one node of the snapshot with the pods bound to it: whole in
// Pods, or compact in Bound (Add: what a reader of a large cluster keeps).
// The rules read both alike.
type Node struct {
	Node *corev1.Node
	Pods []*corev1.Pod
	// Bound are pods kept compact (Add); moving sums up those of them that
	// would need a new home.
	Bound  []scheduling.BoundPod
	moving movingFacts
	// Incoming are the pods on their way to the node, compacted
	// (AddIncoming): pending pods planned onto its instance
	// (pods.AnnotationInstance) and running pods waiting for it as their
	// replacement (pods.AnnotationReplacement). No rule reads them as the
	// node's pods (Snapshot.Planned counts them); consolidation's
	// simulation counts their room on the node, which is promised to them,
	// as Karpenter's simulation schedules the pending pods beside a
	// candidate's.
	Incoming []*corev1.Pod
}

// Snapshot is the truth a decision reads.
type Snapshot struct {
	Now   time.Time
	Pools []*model.Pool
	Nodes []Node
	// NodeRepair turns node repair on (repair.go): Karpenter's NodeRepair
	// feature gate, off by default.
	NodeRepair bool
	// NoSpotToSpot keeps consolidation from replacing spot nodes by a
	// spot node (Karpenter's SpotToSpotConsolidation=false; deleting them
	// is still allowed).
	NoSpotToSpot bool
	// Planned counts, per instance id, the pending pods planned onto it
	// (pods.AnnotationInstance): such a node is about to receive pods.
	Planned map[string]int
	// PodsOn reads the pods bound to a node again, whole: consolidation
	// moves a candidate's pods in its simulation, and a reader that kept
	// them compact (Node.Add) gives them back this way, for the few nodes
	// a pass simulates. A node with compact pods to move cannot be
	// consolidated without it (or when it fails).
	PodsOn func(node string) ([]*corev1.Pod, error)
	// Others are the cluster's nodes that are not Joist's to retire (a
	// managed node group's, another autoscaler's), with their pods: no
	// rule retires them, but consolidation moves pods onto their room and
	// counts their pods in topology, as it does Joist's nodes, and as the
	// provisioner plans onto every node (Karpenter's "can delete nodes,
	// when non-Karpenter capacity can fit pods").
	Others []Node
	// Reserved are empty nodes that capacity reservations could still
	// hold, as the provisioner offers them to its simulation
	// (provisioning.ReservedNodes): room consolidation may move a
	// candidate's pods to at no price. A command that uses one replaces
	// its nodes (the provisioner plans the replacement, and fills the
	// reservation first, as it does any pods).
	Reserved []*scheduling.Node
	// PDBs are the cluster's PodDisruptionBudgets: graceful disruption
	// leaves alone a node with a pod whose eviction one refuses now
	// (pdb.go); PDBsUnread says they could not be read, and then leaves
	// alone every node with a pod to evict. pdbs indexes them, by Decide.
	PDBs       []PDB
	PDBsUnread bool
	pdbs       pdbIndex

	// Simulation is what consolidation asks pkg/scheduling where pods
	// would go and what a new node would cost: the input the provisioner
	// plans with (fromcatalog.Input: the catalog's instance types per
	// pool kubelet settings, the region, DaemonSets, volumes, namespaces).
	// Its options carry the policies (each simulation adds NoImprove).
	// Its pools, when set, are the snapshot's as planning may use them
	// (provisioning.ReadyPools: in their node classes' zones), and its
	// NotReady pools get no replacement. Its pods, nodes and offerings
	// out of capacity are ignored: the snapshot's are used. Without
	// instance types consolidation only deletes, and a node's price is
	// unknown.
	Simulation scheduling.Input
	// VolumeLimits are the nodes' volume attachment limits per CSI
	// driver, by node name, from their CSINodes (read with the volumes).
	VolumeLimits map[string]map[string]int64
	// Unavailable tells offerings that recently ran out of capacity.
	Unavailable func(instanceType, zone, capacityType string) bool
	// DefaultSpread gives the pods a simulation moves the cluster's
	// default topology spread constraints, as the provisioner gives the
	// pods it plans (provisioning.SpreadDefaults); nil when none are
	// configured.
	DefaultSpread func(pods []*corev1.Pod) ([]*corev1.Pod, error)
	// Instances are the EC2 facts of the nodes' instances, by instance
	// id, and Classes what each node class resolves to now, by name: the
	// drift rule reads them. A node whose instance or class is missing
	// is judged on its labels only.
	Instances map[string]InstanceFacts
	Classes   map[string]ClassFacts
	// SpecHashes are model.SpecHash of each pool (by name) with its class
	// as they are now.
	SpecHashes map[string]string
	// OfferedTypes are the instance types the catalog offers now; nil when
	// it is not known (no instance type is then judged gone).
	OfferedTypes map[string]bool
	// Declared and SpecPartial are model.Spec's: the pools the source
	// holds an object for, and whether it could be read whole. A node
	// whose instance Joist launched (in Instances) and whose pool is not
	// declared is retired (ReasonPoolDeleted); with Declared nil or
	// SpecPartial set, none is.
	Declared    map[string]bool
	SpecPartial bool
}

// Decision retires one node.
type Decision struct {
	Node   string
	Pool   string
	Reason string
	// Replace: the pods need new capacity; launch it and wait until it is
	// Ready before draining.
	Replace bool
	// Command groups the decisions retired by one command (multi-node
	// consolidation); "" alone.
	Command string
	// SavingsPerHour is the $/h the decision saves (retired price minus
	// replacement's).
	SavingsPerHour float64
	// Detail says more than Reason (what drifted).
	Detail string
}

// Blocked is a node a rule would retire but may not, and why.
type Blocked struct {
	Node   string
	Reason string // the rule (Empty, ...)
	Why    string
}

// Plan is what the reaper does this pass.
type Plan struct {
	// Stamp and Unstamp name nodes whose emptiness timestamp to set (to
	// the snapshot's Now) or remove.
	Stamp, Unstamp []string
	// StampConsolidation names the nodes of a consolidation command found
	// for the first time: each gets AnnotationConsolidatableAt (Now) and
	// AnnotationConsolidationCommand (ConsolidationCommand). Unstamp also
	// removes both.
	StampConsolidation   []string
	ConsolidationCommand string
	// unstampConsolidation are the Unstamp entries that came from
	// consolidation (for tests).
	unstampConsolidation []string
	// Retire are the nodes to retire, expired ones first.
	Retire  []Decision
	Blocked []Blocked
	// Moves are the Balanced scores of the consolidation command found
	// this pass, or of the first one refused (balanced.go).
	Moves []Move
}

// launchedByJoist says whether the node's instance is one Joist launched
// for this cluster (among Instances, the instances tagged for it). A node
// of the same labels that Karpenter launched, during a migration with both
// running, is never Joist's to retire for a pool Joist does not know; nor
// is any node when the instances could not be read (Instances nil).
func (s Snapshot) launchedByJoist(n *corev1.Node) bool {
	_, ok := s.Instances[pods.InstanceID(n.Spec.ProviderID)]
	return ok
}

// PoolLabel is the name of the pool a node was launched for, from its
// karpenter.sh/nodepool (v1) or karpenter.sh/provisioner-name (v1alpha5)
// label; "" when it has neither.
func PoolLabel(n *corev1.Node) string {
	if v := n.Labels["karpenter.sh/nodepool"]; v != "" {
		return v
	}
	return n.Labels["karpenter.sh/provisioner-name"]
}

// PoolOf returns the pool a node belongs to by its pool label, or nil
// when it is not a Joist node of a known pool.
func PoolOf(n *corev1.Node, pools []*model.Pool) *model.Pool {
	for _, p := range pools {
		if v, ok := n.Labels[p.Label()]; ok && v == p.Name {
			return p
		}
	}
	return nil
}

// Retiring reports whether a node is already being retired (deleting, or
// carrying the disrupted taint).
func Retiring(n *corev1.Node) bool {
	if n.DeletionTimestamp != nil {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Key == TaintDisrupted {
			return true
		}
	}
	return false
}

// Empty reports whether no pod on the node needs a new home.
func Empty(n Node) bool {
	if n.moving.pods > 0 {
		return false
	}
	for _, p := range n.Pods {
		if pods.Reschedulable(p) {
			return false
		}
	}
	return true
}

// EmptySince is the node's emptiness timestamp, zero when absent or
// unreadable.
func EmptySince(n *corev1.Node) time.Time {
	t, err := time.Parse(time.RFC3339, n.Annotations[AnnotationEmptinessTimestamp])
	if err != nil {
		return time.Time{}
	}
	return t
}

// Expired reports whether a node of pool p is past its expireAfter at now.
func Expired(n *corev1.Node, p *model.Pool, now time.Time) bool {
	e := p.Disruption.ExpireAfter
	return e != nil && !n.CreationTimestamp.IsZero() && !now.Before(n.CreationTimestamp.Add(*e))
}

// gracefulBlock says why graceful disruption may not touch the node at
// now, or "": the node's own annotations, a pod's do-not-disrupt, or a
// pod whose eviction a PodDisruptionBudget refuses now (pdbs).
func gracefulBlock(n Node, now time.Time, pdbs pdbIndex) string {
	if why := nodeBlock(n); why != "" {
		return why
	}
	return podBlock(n, now, pdbs)
}

// nodeBlock says why the node's own annotations keep voluntary
// disruption off it, or "".
func nodeBlock(n Node) string {
	a := n.Node.Annotations
	switch {
	case a[AnnotationDoNotDisrupt] == "true":
		return "node has " + AnnotationDoNotDisrupt
	case a[AnnotationDoNotConsolidate] == "true":
		return "node has " + AnnotationDoNotConsolidate
	}
	return ""
}

// podBlock says why the node's pods keep graceful disruption off it at
// now, or "": a pod's do-not-disrupt, or a pod whose eviction a
// PodDisruptionBudget refuses now (pdbs).
func podBlock(n Node, now time.Time, pdbs pdbIndex) string {
	// The least key among the pods protected now, whole or compact (a
	// list's order, by key).
	var f movingFacts
	for _, p := range n.Pods {
		if blocks(p) {
			f.noteBlock(p)
		}
	}
	f.block = minKey(f.block, n.moving.block)
	f.timed = append(f.timed, n.moving.timed...)
	switch block, until := f.blockAt(now); {
	case block == "":
		return pdbs.evictionRefused(n)
	case until.IsZero():
		return "pod " + block + " has do-not-disrupt"
	default:
		return "pod " + block + " has do-not-disrupt until " + until.UTC().Format(time.RFC3339)
	}
}

// minKey is the lesser of two keys, "" counting as none.
func minKey(a, b string) string {
	if a == "" || (b != "" && b < a) {
		return b
	}
	return a
}

// Decide plans one pass.
func Decide(s Snapshot) Plan {
	s.pdbs = indexPDBs(s.PDBs, s.PDBsUnread)
	var plan Plan
	// disrupting counts a pool's nodes being retired or not Ready (the
	// budgets' usage), retiring those being retired alone (the Unhealthy
	// budget's: a node that is not Ready is what repair is for).
	type poolState struct {
		total, disrupting, retiring int
	}
	state := map[string]*poolState{}
	// nodes are the Ready nodes no rule retires yet; notReady the others.
	var nodes, notReady []Node
	for _, n := range s.Nodes {
		p := PoolOf(n.Node, s.Pools)
		if p == nil {
			if name := PoolLabel(n.Node); name != "" && s.Declared != nil && !s.SpecPartial && !s.Declared[name] && !Retiring(n.Node) && s.launchedByJoist(n.Node) {
				plan.Retire = append(plan.Retire, Decision{Node: n.Node.Name, Pool: name, Reason: ReasonPoolDeleted,
					Detail: "its pool " + name + " no longer exists"})
			}
			continue
		}
		st := state[p.Name]
		if st == nil {
			st = &poolState{}
			state[p.Name] = st
		}
		st.total++
		switch {
		case Retiring(n.Node):
			st.disrupting++
			st.retiring++
		case !pods.NodeReady(n.Node):
			st.disrupting++
			notReady = append(notReady, n)
		default:
			nodes = append(nodes, n)
		}
	}
	byName := func(ns []Node) {
		sort.Slice(ns, func(i, j int) bool { return ns[i].Node.Name < ns[j].Node.Name })
	}
	byName(nodes)
	byName(notReady)

	// Expiry: forceful, no budget, Ready or not (Karpenter's expiration
	// deletes the NodeClaim whatever its node's state). decided are the
	// nodes a rule retires this pass: no later rule looks at them.
	decided := map[string]bool{}
	// decide counts a node the rules before the budgeted ones retire in
	// its pool's usage (a node not Ready is disrupting already).
	decide := func(n Node, p *model.Pool) {
		decided[n.Node.Name] = true
		st := state[p.Name]
		if pods.NodeReady(n.Node) {
			st.disrupting++
		}
		st.retiring++
	}
	for _, n := range slices.Concat(nodes, notReady) {
		p := PoolOf(n.Node, s.Pools)
		if Expired(n.Node, p, s.Now) {
			// Its pods get their new place before the node drains.
			plan.Retire = append(plan.Retire, Decision{Node: n.Node.Name, Pool: p.Name, Reason: ReasonExpired, Replace: !Empty(n)})
			decide(n, p)
		}
	}

	// Static pools: the nodes past a pool's count.
	for _, n := range staticExcess(s, nodes, decided) {
		p := PoolOf(n.Node, s.Pools)
		plan.Retire = append(plan.Retire, Decision{Node: n.Node.Name, Pool: p.Name, Reason: ReasonStaticScaleDown,
			Detail: fmt.Sprintf("pool %s keeps %d nodes (replicas)", p.Name, p.StaticTarget())})
		decide(n, p)
	}

	// Repair (repair.go), first of the budgeted rules as in Karpenter,
	// when its gate is on: the nodes, Ready or not, no rule decided.
	if s.NodeRepair {
		var rest []Node
		for _, n := range slices.Concat(nodes, notReady) {
			if !decided[n.Node.Name] {
				rest = append(rest, n)
			}
		}
		if n, ok := repair(s, rest, func(pool string) (int, int) { return state[pool].total, state[pool].retiring }, &plan); ok {
			decide(n, PoolOf(n.Node, s.Pools))
		}
	}

	// Emptiness: stamp, unstamp, retire within budgets.
	for _, n := range nodes {
		if decided[n.Node.Name] {
			continue
		}
		p := PoolOf(n.Node, s.Pools)
		since := EmptySince(n.Node)
		empty := Empty(n) && s.Planned[pods.InstanceID(n.Node.Spec.ProviderID)] == 0
		if !empty {
			if !since.IsZero() || n.Node.Annotations[AnnotationEmptinessTimestamp] != "" {
				plan.Unstamp = append(plan.Unstamp, n.Node.Name)
			}
			continue
		}
		after := p.Disruption.ConsolidateAfter
		if after == nil || p.Replicas != nil {
			continue // never; a static pool's nodes are not consolidated
		}
		if since.IsZero() {
			plan.Stamp = append(plan.Stamp, n.Node.Name)
			since = s.Now
		}
		if s.Now.Before(since.Add(*after)) {
			continue
		}
		if why := gracefulBlock(n, s.Now, s.pdbs); why != "" {
			plan.Blocked = append(plan.Blocked, Blocked{Node: n.Node.Name, Reason: ReasonEmpty, Why: why})
			continue
		}
		st := state[p.Name]
		if st.disrupting >= Allowed(p.Disruption.Budgets, ReasonEmpty, st.total, s.Now) {
			plan.Blocked = append(plan.Blocked, Blocked{Node: n.Node.Name, Reason: ReasonEmpty, Why: "disruption budget of pool " + p.Name + " exhausted"})
			continue
		}
		st.disrupting++
		plan.Retire = append(plan.Retire, Decision{Node: n.Node.Name, Pool: p.Name, Reason: ReasonEmpty})
	}

	// Drift, then consolidation, each only when nothing graceful was
	// decided earlier this pass (one method per pass, as Karpenter).
	graceful := func() bool {
		for _, d := range plan.Retire {
			if d.Reason != ReasonExpired && d.Reason != ReasonStaticScaleDown {
				return true
			}
		}
		return false
	}
	var rest []Node
	for _, n := range nodes {
		if !decided[n.Node.Name] {
			rest = append(rest, n)
		}
	}
	if !graceful() {
		drift(s, rest, func(pool string) (int, *int) { return state[pool].total, &state[pool].disrupting }, &plan)
	}
	if !graceful() {
		consolidate(s, rest, func(pool string) (int, int) { return state[pool].total, state[pool].disrupting }, &plan)
	}
	return plan
}
