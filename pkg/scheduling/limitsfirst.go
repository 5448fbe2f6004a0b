package scheduling

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// Pool limits that do not bind.
//
// Almost every NodePool carries a limit (Karpenter's own examples set
// `limits: cpu: 1000`) that a single provisioning pass rarely comes near.
// But a pool with limits makes the packer consider every type (a bigger
// type uses more of the limit: no frontier), answer no search from its
// memos (the answers depend on the pool's usage), and skip the local
// search's merges and rebuilds (other nodes' sizes count against the
// limit): on the generated shapes a limit of 100,000 CPUs, which no plan
// comes near, made plans up to 11% dearer (many-shapes/250 $14.42 ->
// $16.00/h, few-big/2000 $1,000.12 -> $1,075.97, daemonsets/2000 $39.47 ->
// $43.02).
//
// So a solve with limited pools first plans as if no pool had limits, and
// keeps that plan when it holds them anyway, as verify.Plan checks them:
// every limited pool's existing and in-flight nodes' capacity plus, for
// each new node of the pool, the largest capacity among its options (so
// whichever type CreateFleet picks) stays within every limit, and the
// node count within a "nodes" limit. Otherwise it plans again with the
// limits, as before. Its lower bound, the unlimited problem's, is still a
// bound for the limited one. Both are heuristics, so the plan kept is not
// cheaper by proof; over 90 cases with every pool limited to 0.5-3x the
// CPU its unlimited plan requests it was never dearer than planning with
// the limits at once (3 cheaper, 87 equal).

// minValues do the same: a pool's minValues (say two instance families,
// for spot diversity) make the packer stop growing a node before its
// options offer fewer, and turn regroup, the tail split and refill off for
// the pool; yet the options of a node, every type that holds its pods,
// almost always offer many families. Every pool of the generated shapes
// given `instance-family Exists minValues: 2`: few-big/2000 $1,000.12 ->
// $1,037.13/h, many-shapes/2000 $117.53 -> $120.11, and up to three times
// the time. So the first solve also packs as if no pool had minValues,
// and its plan is kept only if every new node's options meet its pool's
// minValues (checked and written into the node's requirements by the
// output, as always: nodeFailed); else the plan is made with both.

// The plan without limits costs its whole local search, far more than
// the limited packer, which has none: when a limit binds (spot-limits),
// the solve paid both (5-8x its time). So the packing without limits is
// checked first (packedWithin), and a limit its nodes already exceed, at
// their current types, skips the local search: the plan is made with the
// limits at once. That check only saves time; holdsLimits decides.
// minValues have no such early check (whether a node's options meet them
// is known only when the node is made): a minValues that binds costs the
// solve without them once more, local search included. Left so: on the
// generated shapes two families never bound.

// limitsFirstOff makes a solve with limited pools (or pools with
// minValues) plan with the limits (minValues) at once (tests compare).
var limitsFirstOff bool

// packsMinValues tells whether a pool requirement's minValues limits
// packing: more than 1, unless minValues are best effort.
func packsMinValues(q model.Requirement, in *Input) bool {
	return q.MinValues != nil && *q.MinValues > 1 && !in.Options.MinValuesBestEffort
}

// hasMinValues tells whether a pool of in has a minValues that limits
// packing.
func hasMinValues(in *Input) bool {
	for _, p := range in.Pools {
		for _, q := range p.Requirements {
			if packsMinValues(q, in) {
				return true
			}
		}
	}
	return false
}

// hasLimits tells whether a pool of in has limits.
func hasLimits(in *Input) bool {
	for _, p := range in.Pools {
		if len(p.Limits) > 0 {
			return true
		}
	}
	return false
}

// withoutLimits is in with its pools' limits dropped (the pools copied).
func withoutLimits(in Input) Input {
	pools := make([]*model.Pool, len(in.Pools))
	for i, p := range in.Pools {
		if len(p.Limits) == 0 {
			pools[i] = p
			continue
		}
		q := *p
		q.Limits = nil
		pools[i] = &q
	}
	in.Pools = pools
	return in
}

// limitCapacity is what an existing or in-flight node counts against its
// pool's limits: its capacity (its allocatable when it reports none).
func limitCapacity(n *Node) corev1.ResourceList {
	if len(n.Capacity) == 0 {
		return n.Allocatable
	}
	return n.Capacity
}

// holdsLimits tells whether plan keeps every limited pool of in within
// its limits whichever option each new node gets. It reads only the
// limited resources, each type's once, and each shared list of options
// once (new nodes with the same options share one list): a node's
// options are every offering of every type that holds it, hundreds of
// entries, and reading every one's capacity list per node was about
// 30 µs of a 2 ms mix solve at 299 pods.
func holdsLimits(in *Input, plan Plan) bool {
	var byName map[string]*InstanceType
	var byNameOf *InstanceType // the list byName indexes (its first entry)
	type optsKey struct {
		first *InstanceTypeOption
		n     int
	}
	for _, p := range in.Pools {
		if len(p.Limits) == 0 {
			continue
		}
		var res []corev1.ResourceName
		for r := range p.Limits {
			if r != "nodes" {
				res = append(res, r)
			}
		}
		used := make([]int64, len(res))
		nodes := int64(0)
		for _, n := range in.Nodes {
			if n.Pool != p.Name {
				continue
			}
			nodes++
			c := limitCapacity(n)
			for i, r := range res {
				if q, ok := c[r]; ok {
					used[i] += quantityValue(r, q)
				}
			}
		}
		list, ok := in.PoolInstanceTypes[p.Name]
		if !ok {
			list = in.InstanceTypes
		}
		capOf := map[string][]int64{}
		largestOf := map[optsKey][]int64{}
		for _, nn := range plan.NewNodes {
			if nn.Pool != p.Name {
				continue
			}
			nodes++
			if len(nn.InstanceTypeOptions) == 0 {
				continue
			}
			key := optsKey{&nn.InstanceTypeOptions[0], len(nn.InstanceTypeOptions)}
			largest, ok := largestOf[key]
			if !ok {
				largest = make([]int64, len(res))
				for _, o := range nn.InstanceTypeOptions {
					c, ok := capOf[o.Name]
					if !ok {
						if len(list) == 0 {
							return false // an option of no type listed
						}
						if byName == nil || byNameOf != list[0] {
							byName, byNameOf = make(map[string]*InstanceType, len(list)), list[0]
							for _, it := range list {
								byName[it.Name] = it
							}
						}
						it := byName[o.Name]
						if it == nil {
							return false
						}
						c = make([]int64, len(res))
						for i, r := range res {
							if q, ok := it.Capacity[r]; ok {
								c[i] = quantityValue(r, q)
							}
						}
						capOf[o.Name] = c
					}
					for i, v := range c {
						largest[i] = max(largest[i], v)
					}
				}
				largestOf[key] = largest
			}
			for i, v := range largest {
				used[i] += v
			}
		}
		if q, ok := p.Limits["nodes"]; ok && nodes > q.Value() {
			return false
		}
		for i, r := range res {
			if used[i] > quantityValue(r, p.Limits[r]) {
				return false
			}
		}
	}
	return true
}

// packedWithin tells whether the packing of a solve of in without limits
// keeps each pool of in within its limits, counting each new node at its
// current type (the local search mostly makes nodes smaller; holdsLimits
// decides on the final plan).
func (s *solver) packedWithin(in *Input) bool {
	for _, p := range in.Pools {
		if len(p.Limits) == 0 {
			continue
		}
		var ps *poolState
		for _, q := range s.pools {
			if q.pool.Name == p.Name {
				ps = q
			}
		}
		if ps == nil {
			continue
		}
		// The pool's usage: existing and in-flight nodes (setup), and
		// the new nodes at their types (openBin, setType).
		used, nodes := ps.usage, ps.usageNodes
		for r, q := range p.Limits {
			if r == "nodes" {
				if nodes > q.Value() {
					return false
				}
				continue
			}
			if i, ok := s.dims.index[r]; ok && used[i] > quantityValue(r, q) {
				return false
			}
		}
	}
	return true
}
