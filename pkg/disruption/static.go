package disruption

import (
	"sort"

	"github.com/joist-dev/joist/pkg/pods"
)

// staticExcess are the nodes to retire so that each static pool (replicas,
// Karpenter's static NodePools) keeps its count (model.Pool.StaticTarget):
// of its nodes not retiring nor decided this pass (skip), as many as it
// has too many, as Karpenter's static deprovisioning picks them: empty
// ones first, then those no do-not-disrupt pod or PDB holds, then by
// fewest pods to move; by name on ties. No budget applies (Karpenter's
// does not either): the pool's size is what the user asked for. The
// provisioner launches what a static pool lacks (pkg/provisioning).
func staticExcess(s Snapshot, nodes []Node, skip map[string]bool) []Node {
	type cand struct {
		n       Node
		empty   bool
		blocked bool
		pods    int
	}
	byPool := map[string][]cand{}
	for _, n := range nodes {
		p := PoolOf(n.Node, s.Pools)
		if p == nil || p.Replicas == nil || skip[n.Node.Name] {
			continue
		}
		empty := Empty(n) && s.Planned[pods.InstanceID(n.Node.Spec.ProviderID)] == 0
		byPool[p.Name] = append(byPool[p.Name], cand{n, empty, gracefulBlock(n, s.Now, s.pdbs) != "", len(n.Pods)})
	}
	var out []Node
	for _, p := range s.Pools {
		cs := byPool[p.Name]
		extra := len(cs) - p.StaticTarget()
		if p.Replicas == nil || extra <= 0 {
			continue
		}
		sort.Slice(cs, func(i, j int) bool {
			a, b := cs[i], cs[j]
			switch {
			case a.empty != b.empty:
				return a.empty
			case a.blocked != b.blocked:
				return !a.blocked
			case a.pods != b.pods:
				return a.pods < b.pods
			}
			return a.n.Node.Name < b.n.Node.Name
		})
		for _, c := range cs[:extra] {
			out = append(out, c.n)
		}
	}
	return out
}
