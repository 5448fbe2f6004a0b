package reaping

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/provisioning"
	"github.com/joist-dev/joist/pkg/scheduling/fromcatalog"
)

// recordCost sets each pool's running cost and node count
// (metrics.NodePoolCost, NodePoolNodes) from the pass's nodes, Joist's
// own, each at its offering's price (its instance type, zone and capacity
// type labels) as its pool plans it: the catalog's, or the price a
// NodeOverlay sets (a discount the account has); a node in a capacity
// reservation at 0. What a pool costs now, which the launches' prices
// alone do not tell once nodes come and go. Without the catalog (none configured, or unreadable:
// drift says so) nothing is recorded: a wrong zero would read as a free
// pool.
func (r *Reaper) recordCost(cat *catalog.Catalog, spec *model.Spec, nodes []disruption.Node) {
	if r.Metrics == nil || cat == nil {
		return
	}
	pools := spec.Pools
	overlaid := map[string]map[string]float64{} // pool: offering: $/h
	if len(spec.Overlays) > 0 {
		ns := make([]*corev1.Node, 0, len(nodes))
		for _, n := range nodes {
			ns = append(ns, n.Node)
		}
		c := fromcatalog.Cluster{Pools: pools, NodeClasses: spec.NodeClasses, Overlays: spec.Overlays, ZoneIDs: provisioning.ZoneIDs(nil, ns)}
		for _, p := range pools {
			overlaid[p.Name] = fromcatalog.PoolPrices(cat, c, p.Name)
		}
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
		t, zone, ct := disruption.NodeOffering(n.Node)
		count[p.Name]++
		cost[p.Name] += fromcatalog.OfferingPrice(cat, overlaid[p.Name], t, zone, ct)
	}
	for name, c := range cost {
		dims := map[string]string{metrics.DimPool: name}
		r.Metrics.Gauge(metrics.NodePoolCost, c, dims)
		r.Metrics.Gauge(metrics.NodePoolNodes, float64(count[name]), dims)
	}
}
