package disruption

import (
	"fmt"
	"math"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
)

// Karpenter v1.15's Balanced consolidation policy (consolidationPolicy:
// Balanced; sigs.k8s.io/karpenter pkg/controllers/disruption/balanced.go
// and designs/balanced-consolidation.md): a pool consolidates only moves
// whose share of the pool's savings is worth their share of the pool's
// disruption. A move's score in a pool is
//
//	(savings / pool's cost) / (disruption / pool's disruption)
//
// and it is made only when every Balanced pool it retires nodes of scores
// at least 1/BalancedK. A pool's cost is the $/h of all its nodes; its
// disruption is the sum over all its nodes of 1 + their pods' eviction
// costs (the candidates' and every other node's: a move that disrupts
// half the pool must save at least a quarter of its cost). A move
// retiring nodes of several pools gives each its share of the savings by
// its nodes' share of the price. Other policies' pools are not scored.

// BalancedK is Karpenter's scoring parameter for the Balanced policy: a
// move passes when it scores at least 1/BalancedK.
const BalancedK = 2

// poolTotals are a pool's sums the Balanced score divides by.
type poolTotals struct {
	cost       float64 // $/h of all its nodes
	disruption float64 // sum of its nodes' rescheduling costs
}

// balancedPolicy tells whether the pool's consolidation is scored.
func balancedPolicy(p *model.Pool) bool {
	return p != nil && p.Disruption.ConsolidationPolicy == "Balanced"
}

// nodeDisruptionCost is Karpenter's rescheduling disruption cost of a
// node: 1 plus the eviction costs (each at least 0) of the pods that
// would need a new home if it went, whole (Pods) or compact (Bound).
func nodeDisruptionCost(n Node) float64 {
	cost := 1 + n.moving.cost
	for _, p := range n.Pods {
		if pods.Reschedulable(p) {
			cost += max(0, EvictionCost(p))
		}
	}
	return cost
}

// balancedTotals sums, for every Balanced pool, the price and disruption
// cost of all its nodes in the snapshot (retiring and not Ready ones too:
// they are still the pool's, as in Karpenter's cluster state).
func (c *consolidator) balancedTotals() map[string]poolTotals {
	var totals map[string]poolTotals
	for _, n := range c.s.Nodes {
		p := PoolOf(n.Node, c.s.Pools)
		if !balancedPolicy(p) {
			continue
		}
		if totals == nil {
			totals = map[string]poolTotals{}
		}
		t := totals[p.Name]
		t.cost += c.nodePrice(n.Node)
		t.disruption += nodeDisruptionCost(n)
		totals[p.Name] = t
	}
	return totals
}

// score is a move's Balanced score in one pool: its savings' share of the
// pool's cost over its disruption's share of the pool's disruption. As in
// Karpenter, no savings scores 0, and so does a pool with nothing to
// normalize against (no priced node: its moves cannot be shown to save);
// no disruption (not possible with a node's base cost of 1) scores +Inf.
func (t poolTotals) score(savings, disruption float64) float64 {
	if t.cost <= 0 || t.disruption <= 0 {
		return 0
	}
	saved := savings / t.cost
	if !(saved > 0) { // NaN too
		return 0
	}
	disrupted := disruption / t.disruption
	if disrupted == 0 {
		return math.Inf(1)
	}
	return saved / disrupted
}

// balancedScore scores a command in each Balanced pool it retires nodes
// of. approved is whether every one of them scores at least 1/BalancedK;
// why says, for the first that does not (in the command's order), by how
// much it fails.
func (c *consolidator) balancedScore(cmd command) (approved bool, why string, scores []Move) {
	type share struct{ price, disruption float64 }
	var order []*model.Pool
	byPool := map[string]*share{}
	var source float64
	for _, cd := range cmd.nodes {
		source += cd.price
		sh := byPool[cd.pool.Name]
		if sh == nil {
			sh = &share{}
			byPool[cd.pool.Name] = sh
			order = append(order, cd.pool)
		}
		sh.price += cd.price
		sh.disruption += cd.cost
	}
	for _, p := range order {
		if !balancedPolicy(p) {
			continue
		}
		sh := byPool[p.Name]
		savings := cmd.savings
		if len(byPool) > 1 && source > 0 {
			savings *= sh.price / source
		}
		t := c.totals[p.Name]
		s := t.score(savings, sh.disruption)
		scores = append(scores, Move{Pool: p.Name, Score: s, Approved: s >= 1.0/BalancedK})
		if s < 1.0/BalancedK && why == "" {
			why = fmt.Sprintf("pool %s consolidates Balanced: the move saves %.1f%% of the pool's cost for %.1f%% of its disruption (score %.2f, needs %.2f)",
				p.Name, pct(savings, t.cost), pct(sh.disruption, t.disruption), s, 1.0/BalancedK)
		}
	}
	return why == "", why, scores
}

// canPassBalanced tells whether deleting the candidate outright, the best
// any move of it alone can do (its whole price saved, nothing launched),
// would pass its pool's Balanced score: when not, single-node
// consolidation does not simulate it. Other policies always pass.
func (c *consolidator) canPassBalanced(cd *candidate) bool {
	if !balancedPolicy(cd.pool) {
		return true
	}
	t, ok := c.totals[cd.pool.Name]
	if !ok || t.cost <= 0 {
		return true
	}
	return t.score(cd.price, cd.cost) >= 1.0/BalancedK
}

func pct(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * part / whole
}

// Move is a consolidation command scored in a Balanced pool, for the
// joist_consolidation_moves_total metric (Karpenter's
// karpenter_consolidation_moves_total), by pool, approved or not: a pass
// reports the scores of the command it found and of the first it refused.
type Move struct {
	Pool     string
	Score    float64
	Approved bool
}

// approve tells whether a command found to hold passes the Balanced
// score of every Balanced pool it retires nodes of (balancedScore),
// keeping the first refusal of the pass to report. Commands retiring no
// node of a Balanced pool pass unscored.
func (c *consolidator) approve(cmd command) bool {
	if len(c.totals) == 0 {
		return true
	}
	ok, why, scores := c.balancedScore(cmd)
	if !ok && c.rejected == nil {
		c.rejected = &refusal{Blocked: Blocked{Node: cmd.nodes[0].name(), Reason: ReasonUnderutilized, Why: why}, moves: scores}
	}
	return ok
}

// refusal is a command the Balanced score refused: why, on its first
// node, and its scores.
type refusal struct {
	Blocked
	moves []Move
}
