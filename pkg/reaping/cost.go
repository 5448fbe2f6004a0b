package reaping

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/model"
)

// recordCost sets each pool's running cost and node count
// (metrics.NodePoolCost, NodePoolNodes) from the pass's nodes, Joist's
// own, priced from the pass's catalog: what a pool costs now, which the
// launches' prices alone do not tell once nodes come and go. Without the
// catalog (none configured, or unreadable: drift says so) nothing is
// recorded: a wrong zero would read as a free pool.
func (r *Reaper) recordCost(cat *catalog.Catalog, pools []*model.Pool, nodes []disruption.Node) {
	if r.Metrics == nil || cat == nil {
		return
	}
	cost := make(map[string]float64, len(pools))
	count := make(map[string]int, len(pools))
	for _, p := range pools {
		cost[p.Name], count[p.Name] = 0, 0
	}
	for _, n := range nodes {
		p := disruption.PoolOf(n.Node, pools)
		if p == nil {
			continue
		}
		count[p.Name]++
		cost[p.Name] += nodeCost(cat, n.Node)
	}
	for name, c := range cost {
		dims := map[string]string{metrics.DimPool: name}
		r.Metrics.Gauge(metrics.NodePoolCost, c, dims)
		r.Metrics.Gauge(metrics.NodePoolNodes, float64(count[name]), dims)
	}
}

// nodeCost is a node's $/h by its labels: its offering's catalog price, 0
// when the catalog does not price it, as a node in a capacity reservation
// (the catalog has no reserved offerings).
func nodeCost(cat *catalog.Catalog, n *corev1.Node) float64 {
	p, _ := cat.OfferingPrice(disruption.NodeOffering(n))
	return p
}
