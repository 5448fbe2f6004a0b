package scheduling

import "math"

// A limited pool's upgrade answers (upgradeFor) depend on the pool's
// usage: a type whose growth would take the pool past a limit is passed
// over. They were asked again at every search (no cache held them), and
// where a limit binds (spot-limits) the local search's rebuilds are half
// of the solve, most of it those scans. Yet the usage enters the scan only
// through withinLimits, asked of each type that would become the best so
// far: the scan goes the same way, to the same answer, as long as each of
// those asks answers as it did. A type it let through is let through
// again while usage plus that type's growth stays within every limit (so
// a record of the largest growth among them, dimension by dimension,
// answers for all of them), and a type it refused is refused again while
// the usage is no lower in any dimension (nor the node count). So the
// answer is cached with that record (limRec) and holds while both do
// (TestLimitCacheSameAnswers, TestLimitCacheSamePlans).

// limCacheOff makes a limited pool's answers be asked again every time
// (tests compare).
var limCacheOff bool

// newTypeCheck, when set, is told for each new-node type of a limited
// pool that the memo kept whether a walk now gives the same (tests
// compare).
var newTypeCheck func(same bool)

// limCheck, when set, is handed each cached answer of a limited pool's
// bin (upCache's code) that limRec.holds kept and the answer a scan gives
// now (tests compare).
var limCheck func(cached, fresh int32)

// limRec is what one upgradeScan of a limited pool's bin read of the
// pool's usage.
type limRec struct {
	// set: a scan filled the record.
	set bool
	// grow, when passed, is the largest growth (type's capacity less the
	// bin's type's) by dimension among the types the limits let through.
	passed bool
	grow   vec
	// usage and nodes, when refused, are the pool's usage and node count
	// when the limits refused a type.
	refused bool
	usage   vec
	nodes   int64
	// extra is the nodes the scanned node adds to the pool's count.
	extra int64
}

// begin starts a scan's record, of types for a node that adds extra
// nodes to the pool (1 for a new node, 0 for a node's new type).
func (r *limRec) begin(extra int64) {
	r.set, r.passed, r.refused, r.extra = true, false, false, extra
}

// pass notes a type of capacity capv the limits let through for a bin of
// capacity cur (nil: a new node).
func (r *limRec) pass(capv, cur vec) {
	if !r.passed {
		r.passed = true
		r.grow = append(r.grow[:0], capv...)
		if cur != nil {
			r.grow.sub(cur)
		}
		return
	}
	for i := range r.grow {
		g := capv[i]
		if cur != nil {
			g -= cur[i]
		}
		r.grow[i] = max(r.grow[i], g)
	}
}

// refuse notes that the limits refused a type, at pool ps's usage.
func (r *limRec) refuse(ps *poolState) {
	if !r.refused {
		r.refused = true
		r.usage = append(r.usage[:0], ps.usage...)
		r.nodes = ps.usageNodes
	}
}

// holds tells whether a scan now, at pool ps's usage, would get every
// answer from withinLimits that the recorded one got (see above).
func (r *limRec) holds(ps *poolState) bool {
	if !r.set {
		return false
	}
	if r.passed {
		if ps.limitNodes >= 0 && ps.usageNodes+r.extra > ps.limitNodes {
			return false
		}
		for i, lim := range ps.limit {
			if lim != math.MaxInt64 && ps.usage[i]+r.grow[i] > lim {
				return false
			}
		}
	}
	if r.refused {
		if ps.usageNodes < r.nodes {
			return false
		}
		for i, lim := range ps.limit {
			if lim != math.MaxInt64 && ps.usage[i] < r.usage[i] {
				return false
			}
		}
	}
	return true
}

// limSlot is the record beside the answer of bin id in caches u (the
// capped ones under a price cap), in its second slot when second.
func (s *solver) limSlot(u *upCaches, capped bool, id int, second bool) *limRec {
	e := &u.lim
	if capped {
		e = &u.cappedLim
	}
	for len(*e) <= id {
		*e = append(*e, [2]limRec{})
	}
	if second {
		return &(*e)[id][1]
	}
	return &(*e)[id][0]
}
