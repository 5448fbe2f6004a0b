// Package scheduling is Joist's scheduling simulator: given pending pods,
// the cluster's nodes, pools (NodePools or Provisioners) and instance
// types with prices, Solve decides where each pod goes (an existing or
// in-flight node, a new node it sizes and prices, or nowhere with a
// reason), honouring what the kube-scheduler and Karpenter honour:
// requests, node selectors and affinity, taints, pod affinity and
// anti-affinity, topology spreads, host ports, volumes' zones, pool
// limits, weights and minValues. It is pure (no I/O) and deterministic.
//
// The files follow the method (docs/scheduling.md has the long form):
//
//   - types.go: Input and Plan.
//   - solve.go: Solve, setup, and the value of room at the dual prices.
//   - classes.go, classkey.go: pods grouped into classes of identical
//     scheduling shape; relaxation levels of their preferences.
//   - compat.go, requirements.go, taints.go, volumes.go: what a class
//     allows of each pool (types, zones, capacity types, custom labels).
//   - prepared.go: an instance type list prepared once for many solves
//     (resources, offerings, label values, price and name orders), which
//     fromcatalog keeps per catalog.
//   - pools.go: pools prepared for packing (types net of DaemonSets, the
//     frontier of undominated types, limits).
//   - topology.go: topology keys, groups and domains for affinity and
//     spreads.
//   - bound.go: the lower bound (an LP over instance types) whose dual
//     prices value each resource.
//   - packing.go, allowance.go, growth.go, live.go, bins.go: the packer:
//     paid room first, then the most cost-efficient growth; growidx.go
//     (open nodes by a bound on their upgrade's efficiency, so a growth
//     step looks at few nodes), pendmin.go (the smallest pending
//     request), roomy.go (the nodes a drain may move pods to) keep its
//     cost with classes and nodes rather than their product.
//   - improve.go: the local search after packing.
//   - output.go, explain.go: the plan and the reasons for pods left out.
//   - resources.go, bits.go: resource vectors and bitsets.
//
// The verify subpackage checks a plan against the input with code that
// shares nothing with the packer.
package scheduling
