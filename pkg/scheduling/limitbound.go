package scheduling

import (
	"math"
)

// The limit bound: the resource LP (bound.go) with the pools' limits.
//
// The resource LP buys any amount of every column, so a pool with a
// limit counts as if unlimited: spot-limits, whose cheap spot pool may
// take only part of the workload's CPU, had its bound priced all spot,
// about a fifth of any plan. With the limits the LP reads
//
//	minimise   Σ_t price_t · x_t
//	subject to Σ_t net_t · x_t ≥ demand
//	           Σ_{t in P} cap_{t,r} · x_t ≤ left_{P,r}   for each limit (pool P, resource r)
//
// (cap: the capacity a node counts against its pool's limits; left: the
// limit less what the pool's existing and in-flight nodes count; a
// "nodes" limit counts 1 per node). Every plan that keeps its pools'
// limits is a feasible x (each new node at the type its price assumes,
// which counts no more than the largest of its options, what the limits
// are checked with). Relaxing the limits with multipliers z ≥ 0
// (Lagrange) gives, for every z,
//
//	L(z) = min_x { Σ_t (price_t + Σ_{limits of t's pool} z·cap_{t,r}) · x_t : cover } − Σ z·left
//
// at most that LP's optimum: the resource LP over the same columns with
// the limited pools' prices raised by z per unit they count, less z times
// what is left. Any z gives a bound (and the LP solver's value is itself
// demand·y for dual-feasible y, a bound of that LP), so z need not be
// optimal: each limit's z is found in turn by cutting planes on the
// concave L (each LP's solution gives L's slope there), a few LP solves
// per binding limit and one for the others.
//
// The limits-first solve (limitsfirst.go) plans without the limits; its
// bound reads them from the input it was given (limitsFrom), so the plan
// it keeps reports the same bound as the plan made with them.

// limitBoundSteps caps the cutting-plane steps per limit (each an LP
// solve; L is piecewise linear with few pieces, and the steps usually
// end at its top in two or three).
const limitBoundSteps = 8

// limitBoundOff turns the limit bound off (tests compare).
var limitBoundOff bool

// poolLimit is one limit of a pool, as the limit bound reads it: dim
// (-1: the number of nodes) and what is left of it.
type poolLimit struct {
	pool *poolState
	dim  int
	left float64
}

// boundLimits lists the limits the solve's pools have for the bound
// (poolState.boundLimit), with what their existing and in-flight nodes
// leave.
func (s *solver) boundLimits() []poolLimit {
	var out []poolLimit
	for _, ps := range s.pools {
		if !ps.ok {
			continue
		}
		if ps.boundNodes >= 0 {
			out = append(out, poolLimit{ps, -1, math.Max(0, float64(ps.boundNodes-ps.baseNodes))})
		}
		for _, d := range limitedDims(ps.boundLimit) {
			out = append(out, poolLimit{ps, d, math.Max(0, float64(ps.boundLimit[d]-ps.baseUsage[d]))})
		}
	}
	return out
}

// limitBound is the bound above for full's demand (full: the LP without
// the limits, solved), or 0 when no pool has limits.
func (s *solver) limitBound(full cover) float64 {
	demand := full.demand
	if limitBoundOff {
		return 0
	}
	lims := s.boundLimits()
	if len(lims) == 0 {
		return 0
	}
	base := s.allColumns()
	// Each ok pool's columns are a run of allColumns' list (every ok
	// pool's types in turn): lims[j] counts columns lo[j] to hi[j].
	lo, hi := make([]int, len(lims)), make([]int, len(lims))
	at := 0
	for _, ps := range s.pools {
		if !ps.ok {
			continue
		}
		for j, lm := range lims {
			if lm.pool == ps {
				lo[j], hi[j] = at, at+len(ps.types)
			}
		}
		at += len(ps.types)
	}
	if at != len(base) {
		return 0
	}
	z := make([]float64, len(lims))
	// counts is how much column k counts against limit j.
	counts := func(j, k int) float64 {
		if k < lo[j] || k >= hi[j] {
			return 0
		}
		if d := lims[j].dim; d >= 0 {
			return float64(max(lims[j].pool.types[k-lo[j]].capv[d], 0))
		}
		return 1
	}
	cp := colPool.Get().(*[]lpColumn)
	defer colPool.Put(cp)
	cols := append((*cp)[:0], base...)
	defer func() { *cp = cols[:0] }()
	for k := range cols {
		// A column's dominator (as much of everything for no more
		// money) still dominates it at raised prices when it counts no
		// more against any limit; else the LP prices it.
		if d := int(cols[k].dom) - 1; d >= 0 {
			for j := range lims {
				if counts(j, d) > counts(j, k) {
					cols[k].dom = 0
					break
				}
			}
		}
	}
	// eval solves the LP at z: L(z), and in g each limit's slope, what
	// the LP's solution counts against it less what is left (a
	// supergradient of the concave L).
	g := make([]float64, len(lims))
	eval := func() float64 {
		// Only the limited pools' columns change.
		for j := range lims {
			for k := lo[j]; k < hi[j]; k++ {
				cols[k].cost = base[k].cost
			}
		}
		for j := range lims {
			for k := lo[j]; k < hi[j]; k++ {
				cols[k].cost += z[j] * counts(j, k)
			}
		}
		for j, lm := range lims {
			g[j] = -lm.left
		}
		v, _ := solveCoverBasic(cols, demand, func(k int, x float64) {
			for j := range lims {
				g[j] += x * counts(j, k)
			}
		})
		for j, lm := range lims {
			v -= z[j] * lm.left
		}
		return v
	}
	// At z = 0 the LP is full's.
	best := full.bound
	for j, lm := range lims {
		g[j] = -lm.left
		for _, b := range full.basic {
			g[j] += b.x * counts(j, b.col)
		}
	}
	for j := range lims {
		if g[j] <= 0 {
			continue // the limit does not bind at these prices
		}
		// zMax: twice the dearest price per unit of the limited
		// resource (per node for a nodes limit) of any column. The best
		// z is what a unit of the limit saves, at most what the dearest
		// column asks for that unit.
		zMax := 0.0
		for _, c := range base {
			per := c.cost
			if d := lims[j].dim; d >= 0 {
				if c.cap[d] <= 0 {
					continue
				}
				per /= c.cap[d]
			}
			zMax = math.Max(zMax, 2*per)
		}
		// Kelley's cutting planes on [a, b]: L lies under the line
		// through each point with its slope; the next z is where the
		// lines of the two ends meet, until the point found lies on
		// them (a corner of L) or the steps run out.
		a, va, ga := z[j], best, g[j]
		z[j] = zMax
		vb := eval()
		b, gb := zMax, g[j]
		bestZ, bestV := a, va
		if vb > bestV {
			bestZ, bestV = b, vb
		}
		for step := 0; step < limitBoundSteps && gb < 0 && ga > 0; step++ {
			zc := (vb - va + ga*a - gb*b) / (ga - gb)
			if !(zc > a && zc < b) {
				break
			}
			top := va + ga*(zc-a)
			z[j] = zc
			v := eval()
			if v > bestV {
				bestZ, bestV = zc, v
			}
			if v >= top-1e-9*math.Max(1, math.Abs(top)) {
				break // on both lines: the top of L between a and b
			}
			if g[j] > 0 {
				a, va, ga = zc, v, g[j]
			} else {
				b, vb, gb = zc, v, g[j]
			}
		}
		z[j] = bestZ
		best = bestV
		if j+1 < len(lims) {
			best = eval() // the next limit's slope at these prices
		}
	}
	return best
}
