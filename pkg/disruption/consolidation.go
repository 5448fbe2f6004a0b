package disruption

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
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

// underutilizedPolicy tells whether the pool's nodes are consolidated
// when underused: not a static pool's (Karpenter's candidates are of
// dynamic pools only), else by its policy.
func underutilizedPolicy(p *model.Pool) bool {
	return p.Replicas == nil && p.Disruption.ConsolidateAfter != nil &&
		(p.Disruption.ConsolidationPolicy == "WhenEmptyOrUnderutilized" || p.Disruption.ConsolidationPolicy == "Balanced")
}

// AnnotationConsolidationCommand names the consolidation command a node
// was stamped for (with AnnotationConsolidatableAt): a hash of the names
// of all the command's nodes, so a later pass finds the whole command
// again from the nodes that carry it.
const AnnotationConsolidationCommand = "joist.sh/consolidation-command"

// consolidate is Karpenter's consolidation over the snapshot, for nodes
// of WhenEmptyOrUnderutilized pools that are not empty (emptiness is its
// own rule): multi-node first, then single-node; a command retires its
// nodes by deleting them (their pods fit on the other nodes) or by
// replacing them with one node cheaper than all of them. A command found
// is stamped on its nodes; a later pass acts once the stamp is
// max(ValidationDelay, consolidateAfter) old and the same command, re-
// simulated, still holds. One command per pass.
func consolidate(s Snapshot, nodes []Node, state func(pool string) (total, disrupting int), plan *Plan) {
	c := newConsolidator(s, nodes)
	var cands []*candidate
	for _, n := range nodes {
		p := PoolOf(n.Node, s.Pools)
		if !underutilizedPolicy(p) || Empty(n) || s.Planned[pods.InstanceID(n.Node.Spec.ProviderID)] > 0 {
			continue
		}
		cands = append(cands, c.candidate(n, p))
	}
	sortCandidates(cands)

	// Budgets first, in order, as Karpenter does: a candidate beyond its
	// pool's allowance is not considered.
	remaining := map[string]int{}
	overBudget := map[string]bool{}
	var ok, blocked []*candidate
	for _, cd := range cands {
		if cd.block != "" {
			blocked = append(blocked, cd)
			continue
		}
		r, seen := remaining[cd.pool.Name]
		if !seen {
			total, disrupting := state(cd.pool.Name)
			r = Allowed(cd.pool.Disruption.Budgets, ReasonUnderutilized, total, s.Now) - disrupting
		}
		if r <= 0 {
			remaining[cd.pool.Name] = r
			if !overBudget[cd.pool.Name] { // one report per pool
				overBudget[cd.pool.Name] = true
				cd.block = "disruption budget of pool " + cd.pool.Name + " exhausted"
				blocked = append(blocked, cd)
			}
			continue
		}
		remaining[cd.pool.Name] = r - 1
		ok = append(ok, cd)
	}
	byName := map[string]*candidate{}
	for _, cd := range ok {
		byName[cd.name()] = cd
	}

	// The command stamped by an earlier pass, if its nodes are all still
	// candidates; every other stamp goes.
	groups := map[string][]string{}
	for _, n := range nodes {
		id := n.Node.Annotations[AnnotationConsolidationCommand]
		if id != "" || !ConsolidatableAt(n.Node).IsZero() {
			groups[id] = append(groups[id], n.Node.Name)
		}
	}
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var pending []*candidate
	var unstamp []string
	for _, id := range ids {
		names := groups[id]
		whole := pending == nil && id != "" && groupID(names) == id
		for _, name := range names {
			whole = whole && byName[name] != nil
		}
		if !whole {
			unstamp = append(unstamp, names...)
			continue
		}
		for _, cd := range ok { // in candidate order
			if hasString(names, cd.name()) {
				pending = append(pending, cd)
			}
		}
	}
	defer func() {
		stamp := map[string]bool{}
		for _, n := range plan.StampConsolidation {
			stamp[n] = true
		}
		for _, n := range unstamp {
			if !stamp[n] {
				plan.Unstamp = append(plan.Unstamp, n)
				plan.unstampConsolidation = append(plan.unstampConsolidation, n)
			}
		}
	}()
	if pending != nil {
		var at time.Time
		for _, cd := range pending {
			if t := ConsolidatableAt(cd.n.Node); t.After(at) {
				at = t
			}
		}
		if s.Now.Before(at.Add(waitFor(pending))) {
			return // still validating
		}
		// Still holding, and (Balanced pools) still worth it.
		if cmd, why := c.simulate(pending); why == "" && c.approve(cmd) {
			retire(cmd, plan)
			return
		}
		for _, cd := range pending {
			unstamp = append(unstamp, cd.name())
		}
	}

	c.deadline = time.Now().Add(SearchBudget)
	cmd, found := c.multiNode(ok)
	if !found {
		cmd, found = c.singleNode(ok)
	}
	// The first command a Balanced pool refused this pass: its scores,
	// and why when nothing else was found.
	if r := c.rejected; r != nil {
		plan.Moves = r.moves
		if !found {
			plan.Blocked = append(plan.Blocked, r.Blocked)
		}
	}
	if found {
		for _, cd := range cmd.nodes {
			plan.StampConsolidation = append(plan.StampConsolidation, cd.name())
		}
		plan.ConsolidationCommand = cmd.id()
		if len(c.totals) > 0 {
			_, _, scores := c.balancedScore(cmd)
			plan.Moves = append(plan.Moves, scores...)
		}
		return
	}
	// Say why a node that could go stays (a few: each costs a simulation).
	reported := 0
	for _, cd := range blocked {
		if reported == maxBlockedReports {
			break
		}
		if _, why := c.simulate([]*candidate{cd}); why == "" {
			plan.Blocked = append(plan.Blocked, Blocked{Node: cd.name(), Reason: ReasonUnderutilized, Why: cd.block})
			reported++
		}
	}
}

// candidate is node n of pool p as a consolidation candidate.
func (c *consolidator) candidate(n Node, p *model.Pool) *candidate {
	cd := &candidate{n: n, pool: p, price: c.nodePrice(n.Node), instanceType: instanceTypeOf(n.Node),
		capacityType: n.Node.Labels[model.LabelCapacityType], block: gracefulBlock(n, c.s.Now, c.s.pdbs)}
	if cd.capacityType == "" {
		cd.capacityType = model.CapacityTypeOnDemand
	}
	cd.cost = nodeDisruptionCost(n)
	for _, pod := range n.Pods {
		if pods.Reschedulable(pod) {
			cpu, mem := podCPUMem(pod)
			cd.pods, cd.cpu, cd.mem = cd.pods+1, cd.cpu+cpu, cd.mem+mem
		}
	}
	cd.pods, cd.cpu, cd.mem = cd.pods+n.moving.pods, cd.cpu+n.moving.cpu, cd.mem+n.moving.mem
	return cd
}

// maxBlockedReports bounds the blocked consolidations one pass reports.
const maxBlockedReports = 3

// sortCandidates orders candidates as Karpenter v1.15 does: by savings
// per unit of disruption (price over 1 + the evicted pods' eviction
// costs: 1 + pods, unless their annotations weigh them), highest first;
// then fewest pods, then name.
func sortCandidates(cands []*candidate) {
	ratio := func(c *candidate) float64 { return c.price / c.cost }
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if ra, rb := ratio(a), ratio(b); ra != rb {
			return ra > rb
		}
		if a.pods != b.pods {
			return a.pods < b.pods
		}
		return a.name() < b.name()
	})
}

// retire turns a validated command into decisions, splitting its savings
// over its nodes by price.
func retire(cmd command, plan *Plan) {
	id := ""
	if len(cmd.nodes) > 1 {
		id = cmd.id()
	}
	var sum float64
	for _, cd := range cmd.nodes {
		sum += cd.price
	}
	for _, cd := range cmd.nodes {
		save := cmd.savings / float64(len(cmd.nodes))
		if sum > 0 {
			save = cd.price - cmd.price*cd.price/sum
		}
		plan.Retire = append(plan.Retire, Decision{Node: cd.name(), Pool: cd.pool.Name, Reason: ReasonUnderutilized,
			Replace: cmd.replace, Command: id, SavingsPerHour: save})
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
