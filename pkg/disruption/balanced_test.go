package disruption

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestBalancedScore: Karpenter v1.15's ScoreMove cases (balanced_test.go:
// the RFC's pool of eight m7i.xlarge and two m7i.2xlarge, $58.08/day, 80
// pods: disruption 90), as (savings share) / (disruption share) >= 1/2.
func TestBalancedScore(t *testing.T) {
	rfc := poolTotals{cost: 58.08, disruption: 90}
	cases := []struct {
		name                string
		totals              poolTotals
		savings, disruption float64
		approved            bool
		score               float64 // NaN: not checked beyond approval
	}{
		{"should approve an oversized node consolidation", rfc, 7.26, 4, true, (7.26 / 58.08) / (4.0 / 90)},
		{"should approve a spare capacity delete", rfc, 4.84, 5, true, (4.84 / 58.08) / (5.0 / 90)},
		{"should reject a marginal move", rfc, 2.42, 9, false, (2.42 / 58.08) / (9.0 / 90)},
		{"should reject a well-packed node with zero savings", rfc, 0, 11, false, 0},
		{"should approve a replace in a uniform pool", poolTotals{cost: 48.40, disruption: 90}, 2.42, 9, true, (2.42 / 48.40) / (9.0 / 90)},
		{"should approve low-disruption nodes", poolTotals{cost: 58.08, disruption: 117}, 4.84, 5, true, (4.84 / 58.08) / (5.0 / 117)},
		{"and reject high-disruption nodes", poolTotals{cost: 58.08, disruption: 117}, 4.84, 32, false, (4.84 / 58.08) / (32.0 / 117)},
		{"should produce the same score regardless of pool size", poolTotals{cost: 580.8, disruption: 900}, 72.6, 40, true, (7.26 / 58.08) / (4.0 / 90)},
		{"should approve with +Inf score when move disruption is zero and savings positive", rfc, 4.84, 0, true, math.Inf(1)},
		{"should reject when both savings and disruption are zero", rfc, 0, 0, false, 0},
		{"should reject when nodepool cost is zero", poolTotals{cost: 0, disruption: 90}, 4.84, 5, false, 0},
		{"negative savings", rfc, -5, 10, false, 0},
		{"NaN savings (an unpriced replacement) never passes", rfc, math.NaN(), 5, false, 0},
		{"spot pool proportionally equivalent to an on-demand one", poolTotals{cost: 14.50, disruption: 90}, 1.45, 4, true, (4.84 / 48.40) / (4.0 / 90)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.totals.score(tc.savings, tc.disruption)
			if got := s >= 1.0/BalancedK; got != tc.approved {
				t.Errorf("score %.3f approved %v, want %v", s, got, tc.approved)
			}
			if !(math.IsInf(tc.score, 1) && math.IsInf(s, 1)) && math.Abs(s-tc.score) > 1e-9*math.Max(1, tc.score) {
				t.Errorf("score %.6f, want %.6f", s, tc.score)
			}
		})
	}
}

// TestBalancedScore_AcrossPools: a command retiring nodes of several
// pools scores each Balanced pool with its nodes' share of the savings and
// its own nodes' disruption, and passes only when every Balanced pool
// approves; pools of other policies are not scored (Karpenter's
// EvaluateBalancedMove cases).
func TestBalancedScore_AcrossPools(t *testing.T) {
	pool := func(name, policy string) *model.Pool {
		return &model.Pool{Name: name, Disruption: model.Disruption{ConsolidationPolicy: policy}}
	}
	a, b, eager := pool("a", "Balanced"), pool("b", "Balanced"), pool("eager", "WhenEmptyOrUnderutilized")
	cand := func(name string, p *model.Pool, price, cost float64) *candidate {
		return &candidate{n: Node{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}, pool: p, price: price, cost: cost}
	}
	c := &consolidator{totals: map[string]poolTotals{"a": {cost: 10, disruption: 20}, "b": {cost: 10, disruption: 20}}}
	cases := []struct {
		name     string
		cmd      command
		approved bool
		scores   []Move
	}{
		{name: "a delete in one pool: the whole savings",
			cmd:      command{nodes: []*candidate{cand("a1", a, 2, 4)}, savings: 2},
			approved: true, scores: []Move{{Pool: "a", Score: (2.0 / 10) / (4.0 / 20), Approved: true}}},
		{name: "two pools share the savings by their nodes' price: a's share passes, b's does not",
			// savings 3 of a source of 4: a (price 3) gets 2.25, b (price 1) 0.75.
			cmd:      command{nodes: []*candidate{cand("a1", a, 3, 4), cand("b1", b, 1, 4)}, savings: 3},
			approved: false, scores: []Move{{Pool: "a", Score: (2.25 / 10) / (4.0 / 20), Approved: true}, {Pool: "b", Score: (0.75 / 10) / (4.0 / 20)}}},
		{name: "a pool of another policy is not scored, and does not stop the move",
			cmd:      command{nodes: []*candidate{cand("e1", eager, 5, 30)}, savings: 0.1},
			approved: true},
		{name: "but its nodes take their share of the savings from a Balanced pool's",
			// savings 2 of a source of 4: a (price 2) gets 1.
			cmd:      command{nodes: []*candidate{cand("e1", eager, 2, 1), cand("a1", a, 2, 4)}, savings: 2},
			approved: true, scores: []Move{{Pool: "a", Score: (1.0 / 10) / (4.0 / 20), Approved: true}}},
		{name: "a Balanced pool without totals (no priced node) rejects",
			cmd:      command{nodes: []*candidate{cand("x1", pool("x", "Balanced"), 2, 2)}, savings: 2},
			approved: false, scores: []Move{{Pool: "x"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, why, scores := c.balancedScore(tc.cmd)
			if ok != tc.approved || (why == "") != tc.approved {
				t.Errorf("approved %v (%q), want %v", ok, why, tc.approved)
			}
			if len(scores) != len(tc.scores) {
				t.Fatalf("scores %+v, want %+v", scores, tc.scores)
			}
			for i := range scores {
				if scores[i].Pool != tc.scores[i].Pool || scores[i].Approved != tc.scores[i].Approved || math.Abs(scores[i].Score-tc.scores[i].Score) > 1e-9 {
					t.Errorf("score %d: %+v, want %+v", i, scores[i], tc.scores[i])
				}
			}
		})
	}
}

// TestBalancedConsolidation: over the simulator, a Balanced pool makes the
// moves worth their disruption and refuses the others (saying why, once),
// where WhenEmptyOrUnderutilized makes them all; in a cluster of both, each
// pool keeps its own policy (Karpenter's balanced_integration_test.go).
func TestBalancedConsolidation(t *testing.T) {
	types := testTypes(t)
	withPolicy := func(name, policy string) *model.Pool {
		p := consolidating(model.CapacityTypeOnDemand)
		p.Name, p.Disruption.ConsolidationPolicy = name, policy
		return p
	}
	// inPool is a node of pool. Busy nodes are of the cheapest type for
	// their pods, which take most of their CPU and are pinned to them: no
	// busy node goes, and pods leaving another node need a new one.
	inPool := func(pool string, n Node) Node {
		n.Node.Labels[model.LabelNodePool] = pool
		return n
	}
	busy := func(pool, name string) Node {
		return inPool(pool, typed(types, name, "c6a.xlarge", model.CapacityTypeOnDemand,
			pinned(name+"-1", "1250m", name), pinned(name+"-2", "1250m", name), pinned(name+"-3", "1250m", name)))
	}
	// loose is an m5.xlarge holding n pods of 200m that stay in their
	// pool: a c-class large node holds up to eight for less than half
	// its price.
	loose := func(pool, name string, n int) Node {
		var ps []*corev1.Pod
		for i := range n {
			p := cpuPod(fmt.Sprintf("%s-%d", name, i), "200m")
			p.Spec.NodeSelector = map[string]string{model.LabelNodePool: pool}
			ps = append(ps, p)
		}
		return inPool(pool, typed(types, name, "m5.xlarge", model.CapacityTypeOnDemand, ps...))
	}
	cluster := func(pool string, looseName string, pods int) []Node {
		return []Node{busy(pool, pool+"-b1"), busy(pool, pool+"-b2"), busy(pool, pool+"-b3"), busy(pool, pool+"-b4"), loose(pool, looseName, pods)}
	}
	type want struct {
		retire  []string // node:replace|delete, after the second pass
		blocked string   // a word of the first pass's refusal ("": none)
		moves   []string // pool:approved|rejected of the first pass
	}
	cases := []struct {
		name  string
		pools []*model.Pool
		nodes []Node
		want  want
	}{
		{name: "an oversized node with one pod is replaced: it saves half its price for little disruption",
			pools: []*model.Pool{withPolicy("bal", "Balanced")},
			nodes: cluster("bal", "x", 1),
			want:  want{retire: []string{"x:replace"}, moves: []string{"bal:approved"}}},
		{name: "the same node holding eight pods is kept: the savings are not worth over a third of the pool's disruption",
			pools: []*model.Pool{withPolicy("bal", "Balanced")},
			nodes: cluster("bal", "x", 8),
			want:  want{blocked: "pool bal consolidates Balanced", moves: []string{"bal:rejected"}}},
		{name: "where WhenEmptyOrUnderutilized replaces it",
			pools: []*model.Pool{withPolicy("eager", "WhenEmptyOrUnderutilized")},
			nodes: cluster("eager", "x", 8),
			want:  want{retire: []string{"x:replace"}}},
		{name: "mixed policies: the Balanced pool keeps its node, the other pool's is replaced",
			pools: []*model.Pool{withPolicy("bal", "Balanced"), withPolicy("eager", "WhenEmptyOrUnderutilized")},
			nodes: slices.Concat(cluster("bal", "x", 8), cluster("eager", "y", 8)),
			want:  want{retire: []string{"y:replace"}, moves: []string{"bal:rejected"}}},
		{name: "several underused nodes of a Balanced pool go in one command",
			pools: []*model.Pool{withPolicy("bal", "Balanced")},
			nodes: []Node{busy("bal", "b1"), loose("bal", "x1", 1), loose("bal", "x2", 1), loose("bal", "x3", 1)},
			want:  want{retire: []string{"x1:replace:group", "x2:replace:group", "x3:replace:group"}, moves: []string{"bal:approved"}}},
	}
	// A command stamped under WhenEmptyOrUnderutilized is re-scored when
	// it is due: the pool is Balanced now, and the move is not worth it.
	t.Run("a stamped command is scored again when it is due", func(t *testing.T) {
		p := withPolicy("bal", "WhenEmptyOrUnderutilized")
		s := Snapshot{Now: now, Pools: []*model.Pool{p}, Nodes: cluster("bal", "x", 8),
			Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}}
		first := Decide(s)
		if !slices.Equal(first.StampConsolidation, []string{"x"}) {
			t.Fatalf("first pass stamped %v, want [x]", first.StampConsolidation)
		}
		for _, n := range s.Nodes {
			if n.Node.Name == "x" {
				n.Node.Annotations[AnnotationConsolidatableAt] = now.Format(time.RFC3339)
				n.Node.Annotations[AnnotationConsolidationCommand] = first.ConsolidationCommand
			}
		}
		p.Disruption.ConsolidationPolicy = "Balanced"
		s.Now = now.Add(ValidationDelay + time.Second)
		second := Decide(s)
		if len(second.Retire) > 0 || !slices.Contains(second.Unstamp, "x") || len(second.Blocked) != 1 {
			t.Errorf("second pass retired %v, unstamped %v, blocked %+v; want x unstamped and its refusal reported", describe(second.Retire), second.Unstamp, second.Blocked)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first, second := twoPassesOf(Snapshot{Now: now, Pools: tc.pools, Nodes: tc.nodes,
				Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}})
			if got := describe(second.Retire); !slices.Equal(got, tc.want.retire) {
				t.Errorf("retired %v, want %v", got, tc.want.retire)
			}
			var moves []string
			for _, m := range first.Moves {
				d := "rejected"
				if m.Approved {
					d = "approved"
				}
				moves = append(moves, m.Pool+":"+d)
			}
			if !slices.Equal(moves, tc.want.moves) {
				t.Errorf("moves %v (%+v), want %v", moves, first.Moves, tc.want.moves)
			}
			var blocked []string
			for _, b := range first.Blocked {
				blocked = append(blocked, b.Node+": "+b.Why)
			}
			if tc.want.blocked == "" && len(blocked) > 0 || tc.want.blocked != "" && (len(blocked) != 1 || !strings.Contains(blocked[0], tc.want.blocked)) {
				t.Errorf("blocked %q, want one saying %q", blocked, tc.want.blocked)
			}
		})
	}
}

// TestBalancedSkipsHopelessCandidates: single-node consolidation does not
// simulate a Balanced pool's candidate that even a delete (its whole price
// saved) would not pass (Karpenter's CanPassThreshold); another policy's
// is simulated.
func TestBalancedSkipsHopelessCandidates(t *testing.T) {
	types := testTypes(t)
	for _, tc := range []struct {
		policy    string
		simulated int
	}{{"Balanced", 0}, {"WhenEmptyOrUnderutilized", 1}} {
		t.Run(tc.policy, func(t *testing.T) {
			p := consolidating(model.CapacityTypeOnDemand)
			p.Disruption.ConsolidationPolicy = tc.policy
			// crowded holds most of the pool's pods on a small share of its
			// price: deleting it saves 0.0765/0.8445 = 9% for 21/29 = 72%
			// of the disruption.
			var ps []*corev1.Pod
			for i := range 20 {
				ps = append(ps, cpuPod(fmt.Sprintf("c-%d", i), "50m"))
			}
			crowded := typed(types, "crowded", "c6a.large", model.CapacityTypeOnDemand, ps...)
			nodes := []Node{crowded}
			for i := range 4 {
				name := fmt.Sprintf("big-%d", i)
				nodes = append(nodes, typed(types, name, "m5.xlarge", model.CapacityTypeOnDemand, pinned(name+"-p", "3", name)))
			}
			s := Snapshot{Now: now, Pools: []*model.Pool{p}, Nodes: nodes, Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}}
			c := newConsolidator(s, nodes)
			if _, found := c.singleNode([]*candidate{c.candidate(crowded, p)}); found && tc.policy == "Balanced" {
				t.Error("a Balanced pool's hopeless candidate was consolidated")
			}
			if c.simulations != tc.simulated {
				t.Errorf("%d simulations, want %d", c.simulations, tc.simulated)
			}
		})
	}
}
