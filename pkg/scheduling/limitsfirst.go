package scheduling

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// Pool limits that do not bind.
//
// Almost every NodePool carries a limit (Karpenter's own examples set
// `limits: cpu: 1000`) that a single provisioning pass rarely comes near.
// But a pool with limits makes the packer consider more types (a bigger
// type uses more of the limit, so only a type no bigger dominates
// another), answer no search from its memos (the answers depend on the
// pool's usage), and skip the local search's merges, regrouping, tail
// split and refill (other nodes' sizes count against the limit; only its
// rebuilds run, and only since December 2026): on the generated shapes a
// limit of 100,000 CPUs, which no plan comes near, made plans up to 11%
// dearer (many-shapes/250 $14.42 -> $16.00/h, few-big/2000 $1,000.12 ->
// $1,075.97, daemonsets/2000 $39.47 -> $43.02, with no rebuilds).
//
// So a solve with limited pools first plans as if no pool had limits, and
// keeps that plan when it holds them anyway, as verify.Plan checks them:
// every limited pool's existing and in-flight nodes' capacity plus, for
// each new node of the pool, the largest capacity among its options (so
// whichever type CreateFleet picks) stays within every limit, and the
// node count within a "nodes" limit. Otherwise it plans again with the
// limits, as before. Its lower bound reads the limits from the input
// Solve was given (limitBound), so it is the limited problem's either
// way. Both are heuristics, so the plan kept is not cheaper by proof;
// over 90 cases with every pool limited to 0.5-3x the CPU its unlimited
// plan requests it was never dearer than planning with the limits at
// once (3 cheaper, 87 equal).

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
// the limited packer, which has only the rebuilds: when a limit binds
// (spot-limits), the solve paid both (5-8x its time). So the packing
// without limits is checked first (packedWithin), and a limit its nodes
// already exceed, at their current types, skips the local search: the
// plan is made with the limits at once. That check only saves time;
// holdsLimits decides. minValues have no such early check (whether a
// node's options meet them is known only when the node is made): a
// minValues that binds costs the solve without them once more, local
// search included. Left so: on the generated shapes two families never
// bound.

// Before that packing, a limit is sometimes already known to bind: when
// every pod's class, as written, has no constraint between pods (free)
// and one limited pool is the only pool of the highest weight it may use,
// the packer puts every pod on that pool's new nodes or in existing room,
// and a node's capacity holds at least its pods' requests, so the pool's
// usage after packing is at least what it was plus the pods' requests
// less the existing nodes' free room. When that is over a limit, the
// packing without limits is skipped (the usual spot pool of a higher
// weight with a CPU limit, an on-demand pool behind it: spot-limits).
// Only time changes: that packing would have been refused by
// packedWithin (TestLimitsBindUnpackedSamePlans).

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
// its limits whichever option each new node gets.
func holdsLimits(in *Input, plan Plan) bool {
	for _, p := range in.Pools {
		if len(p.Limits) == 0 {
			continue
		}
		list, ok := in.PoolInstanceTypes[p.Name]
		if !ok {
			list = in.InstanceTypes
		}
		pc := newPoolCaps(p.Limits, list)
		used := make([]int64, len(pc.res))
		nodes := int64(0)
		for _, n := range in.Nodes {
			if n.Pool != p.Name {
				continue
			}
			nodes++
			c := limitCapacity(n)
			for i, r := range pc.res {
				if q, ok := c[r]; ok {
					used[i] += quantityValue(r, q)
				}
			}
		}
		for _, nn := range plan.NewNodes {
			if nn.Pool != p.Name {
				continue
			}
			nodes++
			largest, ok := pc.largest(nn.InstanceTypeOptions)
			if !ok {
				return false
			}
			for i, v := range largest {
				used[i] += v
			}
		}
		if q, ok := p.Limits["nodes"]; ok && nodes > q.Value() {
			return false
		}
		for i, r := range pc.res {
			if used[i] > quantityValue(r, p.Limits[r]) {
				return false
			}
		}
	}
	return true
}

// poolCaps reads a pool's types' capacities of its limited resources
// (res: every limit but "nodes"), each type's once and each shared list
// of options once (new nodes with the same options share one list): a
// node's options are every offering of every type that holds it,
// hundreds of entries, and reading every one's capacity list per node
// was about 30 µs of a 2 ms mix solve at 299 pods.
type poolCaps struct {
	res    []corev1.ResourceName
	list   []*InstanceType
	byName map[string]*InstanceType // list by name, made on first use
	ofType map[string][]int64
	ofOpts map[optsKey][]int64
}

// optsKey names an options list by its first entry and length.
type optsKey struct {
	first *InstanceTypeOption
	n     int
}

func newPoolCaps(limits corev1.ResourceList, list []*InstanceType) *poolCaps {
	pc := &poolCaps{list: list, ofType: map[string][]int64{}, ofOpts: map[optsKey][]int64{}}
	for r := range limits {
		if r != "nodes" {
			pc.res = append(pc.res, r)
		}
	}
	return pc
}

// largest is the most of each limited resource an option of opts has;
// false when an option's type is not in the pool's list.
func (pc *poolCaps) largest(opts []InstanceTypeOption) ([]int64, bool) {
	out := make([]int64, len(pc.res))
	if len(opts) == 0 {
		return out, true
	}
	key := optsKey{&opts[0], len(opts)}
	if l, ok := pc.ofOpts[key]; ok {
		return l, true
	}
	for _, o := range opts {
		c, ok := pc.capacity(o.Name)
		if !ok {
			return nil, false
		}
		for i, v := range c {
			out[i] = max(out[i], v)
		}
	}
	pc.ofOpts[key] = out
	return out, true
}

// capacity is type name's capacity of each limited resource.
func (pc *poolCaps) capacity(name string) ([]int64, bool) {
	if c, ok := pc.ofType[name]; ok {
		return c, true
	}
	if pc.byName == nil {
		pc.byName = make(map[string]*InstanceType, len(pc.list))
		for _, it := range pc.list {
			pc.byName[it.Name] = it
		}
	}
	it := pc.byName[name]
	if it == nil {
		return nil, false
	}
	c := make([]int64, len(pc.res))
	for i, r := range pc.res {
		if q, ok := it.Capacity[r]; ok {
			c[i] = quantityValue(r, q)
		}
	}
	pc.ofType[name] = c
	return c, true
}

// limitsBindUnpacked tells whether this limits-free solve's packing (set
// up, not packed) must exceed a limit of the input it was made from
// (limitsFrom, whose limits the pools' bound limits are), by the
// sufficient condition above.
func (s *solver) limitsBindUnpacked() bool {
	if limitsBindCheckOff {
		return false
	}
	var ps *poolState
	for _, c := range s.classes {
		if c.err != "" || c.remaining == 0 {
			continue
		}
		l := s.level(c)
		if l == nil || !l.free() || l.badKey != "" {
			return false
		}
		// The one pool of the highest weight the class may use (s.pools
		// are by weight, highest first).
		var top *poolState
		for _, q := range s.pools {
			if !q.ok || !l.pools[q.idx].ok {
				continue
			}
			if top != nil {
				if q.pool.Weight == top.pool.Weight {
					return false // a tie: the packer may use either
				}
				break
			}
			top = q
		}
		if top == nil || (ps != nil && top != ps) {
			return false
		}
		ps = top
	}
	if ps == nil {
		return false
	}
	// The pods' requests less the existing room, as the LP before
	// packing has them (dualPrices).
	for _, d := range limitedDims(ps.boundLimit) {
		if float64(ps.baseUsage[d])+s.full.demand[d] > float64(ps.boundLimit[d]) {
			return true
		}
	}
	return false
}

// limitsBindCheckOff makes the limits-free attempt pack whatever the
// check before packing says (tests compare).
var limitsBindCheckOff bool

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
