package scheduling

import (
	"encoding/binary"
	"math"
	"slices"
	"sort"
	"sync"
)

// The lower bound is the linear-programming relaxation of buying capacity:
//
//	minimise   Σ_t price_t · x_t
//	subject to Σ_t alloc_{t,r} · x_t ≥ demand_r   for every resource r
//	           x_t ≥ 0
//
// where t ranges over (pool, instance type) pairs with their cheapest
// usable offering and allocatable net of DaemonSet overhead, and demand is
// the pods' total requests less the room existing nodes have free. Any real
// plan buys whole nodes that hold every pod, so it is a feasible x and
// costs at least the optimum. By weak duality any y ≥ 0 with
// Σ_r alloc_{t,r} y_r ≤ price_t for all t gives demand·y ≤ optimum, so the
// bound reported is demand·y for a y checked (and scaled) to be feasible:
// floating-point error can only make it lower, never invalid.
//
// The dual prices y also value a resource in $/h per unit; the packer uses
// them to rank instance types by cost efficiency.

// normPool holds solveCover's normalized columns, reused between solves.
var normPool = sync.Pool{New: func() any { return new([]float64) }}

// colPool holds the bound's restricted column lists (columns), reused
// between solves.
var colPool = sync.Pool{New: func() any { return new([]lpColumn) }}

// lpColumn is one purchasable capacity vector. dom, when above 0, is
// 1 + the index in its list of an earlier column dominating it: as much
// of every dimension for no more money (solveCover's pricing skips it
// while that column is a candidate, see priceSome).
type lpColumn struct {
	cost float64
	cap  []float64
	dom  int32
}

// lpDomOff makes solveCover price every column (tests compare).
var lpDomOff bool

// domPool holds solveCover's dominance scratch, reused between solves.
var domPool = sync.Pool{New: func() any { return new([]int32) }}

// solveCover solves the covering LP by a revised simplex with a big-M
// start and returns the optimum and the dual prices (per unit of demand
// dimension). Dimensions with no demand get price 0; dimensions no column
// covers are left out (their pods cannot be placed anyway).
func solveCover(cols []lpColumn, demand []float64) (float64, []float64) {
	return solveCoverBasic(cols, demand, nil)
}

// solveCoverBasic is solveCover that also tells basic, when not nil,
// each column of the final basis and how many of it the LP's solution
// buys (the limit bound reads what the solution counts against a limit).
func solveCoverBasic(cols []lpColumn, demand []float64, basic func(j int, x float64)) (float64, []float64) {
	nd := len(demand)
	y := make([]float64, nd)
	// Active rows: positive demand that some column covers.
	var rows []int
	for r := 0; r < nd; r++ {
		if demand[r] <= 0 {
			continue
		}
		for _, c := range cols {
			if c.cap[r] > 0 {
				rows = append(rows, r)
				break
			}
		}
	}
	m := len(rows)
	if m == 0 || len(cols) == 0 {
		return 0, y
	}
	// Normalized problem: a'_{i,t} = cap_{rows[i],t} / demand, rhs 1.
	n := len(cols)
	// Columns: 0..n-1 types, n..n+m-1 surplus (−e_i, cost 0), n+m..n+2m-1
	// artificial (e_i, cost M). The types' normalized columns are computed
	// once (every pricing pass reads them all) into one array, type j at
	// [j*m:].
	// Scratch (every entry is written below): the LP is solved a few
	// times per solve, over every type of the catalog.
	// After them, each type's cost and the divisor of its reduced cost
	// in the pricing pass.
	np := normPool.Get().(*[]float64)
	defer normPool.Put(np)
	if cap(*np) < n*m+2*n {
		*np = make([]float64, n*m+2*n)
	}
	norm := (*np)[:n*m]
	costs, den := (*np)[n*m:n*m+n], (*np)[n*m+n:n*m+2*n]
	// The columns no earlier column dominates (cands), and each
	// column's dominated ones (kids[kidAt[u]:kidAt[u+1]], in order),
	// counted in the same pass (one sweep over the columns).
	var cands, kidAt, kids, domOf []int32
	if !lpDomOff {
		dp := domPool.Get().(*[]int32)
		defer domPool.Put(dp)
		if cap(*dp) < 4*n+1 {
			*dp = make([]int32, 4*n+1)
		}
		buf := (*dp)[:4*n+1]
		kidAt, kids, domOf = buf[:n+1], buf[n+1:2*n+1], buf[3*n+1:4*n+1]
		clear(kidAt)
		cands = buf[2*n+1 : 2*n+1 : 3*n+1]
	}
	maxCost := 0.0
	for j, c := range cols {
		maxCost = max(maxCost, c.cost) // as math.Max, inlined
		for i, r := range rows {
			norm[j*m+i] = c.cap[r] / demand[r]
		}
		costs[j], den[j] = c.cost, max(c.cost, 1e-9)
		if kidAt == nil {
			continue
		}
		domOf[j] = c.dom
		if c.dom > 0 {
			kidAt[c.dom]++ // counted at u+1: prefix sums below
		} else {
			cands = append(cands, int32(j))
		}
	}
	bigM := 1e6 * math.Max(maxCost, 1)
	col := func(j int, out []float64) {
		switch {
		case j < n:
			copy(out, norm[j*m:(j+1)*m])
		case j < n+m:
			clear(out)
			out[j-n] = -1
		default:
			clear(out)
			out[j-n-m] = 1
		}
	}
	cost := func(j int) float64 {
		switch {
		case j < n:
			return costs[j]
		case j < n+m:
			return 0
		}
		return bigM
	}
	if kidAt != nil {
		if len(cands) == n {
			cands = nil // nothing dominated: price every column
		} else {
			for u := 1; u <= n; u++ {
				kidAt[u] += kidAt[u-1]
			}
			// Fill each dominator's kids in order, moving kidAt[u]
			// from u's start to u+1's; a second pass puts them back.
			for j, d := range domOf {
				if d > 0 {
					u := d - 1
					kids[kidAt[u]] = int32(j)
					kidAt[u]++
				}
			}
			for u := n; u > 0; u-- {
				kidAt[u] = kidAt[u-1]
			}
			kidAt[0] = 0
		}
	}
	basis := make([]int, m)
	binv := make([][]float64, m)
	binvArr := make([]float64, m*m)
	xb := make([]float64, m)
	isBasic := make([]bool, n+2*m)
	for i := range basis {
		basis[i] = n + m + i
		binv[i] = binvArr[i*m : (i+1)*m : (i+1)*m]
		binv[i][i] = 1
		xb[i] = 1
		isBasic[basis[i]] = true
	}
	a := make([]float64, m)
	d := make([]float64, m)
	dual := make([]float64, m)
	const eps = 1e-12
	for iter := 0; iter < 50*(m+1)+200; iter++ {
		// dual = c_B^T B^-1
		for k := 0; k < m; k++ {
			v := 0.0
			for i := 0; i < m; i++ {
				v += cost(basis[i]) * binv[i][k]
			}
			dual[k] = v
		}
		var enter int
		var best float64
		if cands != nil && nonNegative(dual) {
			enter, best = priceSome(norm, costs, den, isBasic[:n], dual, cands)
			// A dominated column whose dominator is basic (skipped by
			// the pricing) is priced too.
			for _, u := range basis {
				if u >= n {
					continue
				}
				for _, t := range kids[kidAt[u]:kidAt[u+1]] {
					if isBasic[t] {
						continue
					}
					if sc, ok := priceOne(norm, costs, den, dual, int(t)); ok && (sc < best || sc == best && int(t) < enter) {
						best, enter = sc, int(t)
					}
				}
			}
		} else {
			enter, best = priceTypes(norm, costs, den, isBasic[:n], dual)
		}
		for j := n; j < n+2*m; j++ {
			if isBasic[j] {
				continue
			}
			col(j, a)
			rc := cost(j)
			for i := 0; i < m; i++ {
				rc -= dual[i] * a[i]
			}
			if rc < best {
				best, enter = rc, j
			}
		}
		if enter < 0 {
			break
		}
		col(enter, a)
		for i := 0; i < m; i++ {
			v := 0.0
			for k := 0; k < m; k++ {
				v += binv[i][k] * a[k]
			}
			d[i] = v
		}
		leave, theta := -1, math.Inf(1)
		for i := 0; i < m; i++ {
			if d[i] > eps {
				if t := xb[i] / d[i]; t < theta-eps || (math.Abs(t-theta) <= eps && leave >= 0 && basis[i] < basis[leave]) {
					theta, leave = t, i
				}
			}
		}
		if leave < 0 {
			break // unbounded: cannot happen for a covering problem
		}
		// Pivot.
		piv := d[leave]
		for k := 0; k < m; k++ {
			binv[leave][k] /= piv
		}
		xb[leave] /= piv
		for i := 0; i < m; i++ {
			if i == leave || d[i] == 0 {
				continue
			}
			f := d[i]
			for k := 0; k < m; k++ {
				binv[i][k] -= f * binv[leave][k]
			}
			xb[i] -= f * xb[leave]
		}
		isBasic[basis[leave]] = false
		basis[leave] = enter
		isBasic[enter] = true
	}
	for k := 0; k < m; k++ {
		v := 0.0
		for i := 0; i < m; i++ {
			v += cost(basis[i]) * binv[i][k]
		}
		dual[k] = v
	}
	if basic != nil {
		for i, j := range basis {
			if j < n {
				basic(j, xb[i])
			}
		}
	}
	// Back to per-unit prices, made dual feasible.
	for i, r := range rows {
		y[r] = math.Max(0, dual[i]/demand[r])
	}
	scale := 1.0
	for _, c := range cols {
		if c.dom > 0 && !lpDomOff {
			// y ≥ 0: its dominator's check is as strict (see priceSome).
			continue
		}
		v := 0.0
		for r := range y {
			v += c.cap[r] * y[r]
		}
		if v > c.cost && v > 0 {
			scale = math.Min(scale, c.cost/v)
		}
	}
	bound := 0.0
	for r := range y {
		y[r] *= scale
		bound += demand[r] * y[r]
	}
	return bound, y
}

// priceTypes is solveCover's pricing pass over the types: the first type
// of least reduced cost relative to its cost (den, the cost but at least
// 1e-9), below -1e-9 (enter -1: none), with the duals of the m rows
// (norm holds type j's normalized column at [j*m:]). Three rows (CPU,
// memory and pods: most solves) have their own loop, doing the same
// arithmetic in the same order.
func priceTypes(norm, costs, den []float64, isBasic []bool, dual []float64) (enter int, best float64) {
	enter, best = -1, -1e-9
	m := len(dual)
	if m == 3 {
		d0, d1, d2 := dual[0], dual[1], dual[2]
		for j := range costs {
			if isBasic[j] {
				continue
			}
			v := norm[j*3 : j*3+3 : j*3+3]
			rc := costs[j]
			rc -= d0 * v[0]
			rc -= d1 * v[1]
			rc -= d2 * v[2]
			// Scale-free comparison: reduced cost relative to the cost
			// (best is negative, so a reduced cost of 0 or more, most
			// types, needs no division).
			if rc >= 0 {
				continue
			}
			if score := rc / den[j]; score < best {
				best, enter = score, j
			}
		}
		return enter, best
	}
	for j := range costs {
		if isBasic[j] {
			continue
		}
		rc := costs[j]
		for i, v := range norm[j*m : (j+1)*m] {
			rc -= dual[i] * v
		}
		if rc >= 0 {
			continue
		}
		if score := rc / den[j]; score < best {
			best, enter = score, j
		}
	}
	return enter, best
}

// nonNegative tells whether every dual is 0 or more (NaN is not).
func nonNegative(dual []float64) bool {
	for _, v := range dual {
		if !(v >= 0) {
			return false
		}
	}
	return true
}

// priceSome is priceTypes over the columns cands only (ascending), for
// duals all 0 or more. It finds the column priceTypes would: a column t
// left out has an earlier column u dominating it (cols[t].dom), and with
// no dual below 0 u's reduced cost is at most t's, in floating point
// too (every step is monotone: the normalized columns are cap/demand,
// the products of a dual ≥ 0, the differences, and the division by the
// cost, at most t's), so u, earlier and not basic, is chosen before t
// whenever t could be; when u is basic, solveCover prices t itself.
func priceSome(norm, costs, den []float64, isBasic []bool, dual []float64, cands []int32) (enter int, best float64) {
	enter, best = -1, -1e-9
	m := len(dual)
	if m == 3 {
		d0, d1, d2 := dual[0], dual[1], dual[2]
		for _, j := range cands {
			if isBasic[j] {
				continue
			}
			v := norm[j*3 : j*3+3 : j*3+3]
			rc := costs[j]
			rc -= d0 * v[0]
			rc -= d1 * v[1]
			rc -= d2 * v[2]
			if rc >= 0 {
				continue
			}
			if score := rc / den[j]; score < best {
				best, enter = score, int(j)
			}
		}
		return enter, best
	}
	for _, j := range cands {
		if isBasic[j] {
			continue
		}
		rc := costs[j]
		for i, v := range norm[int(j)*m : (int(j)+1)*m] {
			rc -= dual[i] * v
		}
		if rc >= 0 {
			continue
		}
		if score := rc / den[j]; score < best {
			best, enter = score, int(j)
		}
	}
	return enter, best
}

// priceOne is one column's score as priceTypes computes it (ok: its
// reduced cost is below 0).
func priceOne(norm, costs, den, dual []float64, j int) (float64, bool) {
	m := len(dual)
	rc := costs[j]
	if m == 3 {
		v := norm[j*3 : j*3+3 : j*3+3]
		rc -= dual[0] * v[0]
		rc -= dual[1] * v[1]
		rc -= dual[2] * v[2]
	} else {
		for i, v := range norm[j*m : (j+1)*m] {
			rc -= dual[i] * v
		}
	}
	if rc >= 0 {
		return 0, false
	}
	return rc / den[j], true
}

// columns lists (pool, type) capacity vectors, optionally restricted (a
// restricted list is scratch, valid until the next such call).
// Every solve lists them twice or more over the whole catalog, so each
// pool's columns are made once (lpCols) and, for one pool, are the
// unrestricted list as they are.
func (s *solver) columns(allowed func(ps *poolState, t *ptype) bool) []lpColumn {
	n, nd, pools := 0, s.dims.n(), 0
	var only *poolState
	for _, ps := range s.pools {
		if ps.ok {
			n += len(ps.types)
			pools++
			only = ps
		}
	}
	var out []lpColumn
	if allowed != nil {
		// Restricted lists are read by one solveCover and dropped: they
		// share one buffer.
		out = s.colBuf[:0]
		defer func() { s.colBuf = out[:0] }()
	} else {
		if pools == 1 {
			return only.lpCols(nd)
		}
		if pools == 0 {
			return nil
		}
		if j, ok := s.keptJoint(); ok {
			return j
		}
		out = make([]lpColumn, 0, n)
		defer func() { s.keepJoint(out) }()
	}
	for _, ps := range s.pools {
		if !ps.ok {
			continue
		}
		cols := ps.lpCols(nd)
		base := int32(len(out))
		if allowed == nil {
			for _, c := range cols {
				if c.dom > 0 {
					c.dom += base
				}
				out = append(out, c)
			}
			continue
		}
		// A column keeps its dominator only if that one is listed too
		// (at[i]: type i's place in out, plus 1).
		if cap(s.colAt) < len(cols) {
			s.colAt = make([]int32, len(cols))
		}
		at := s.colAt[:len(cols)]
		for i, t := range ps.types {
			at[i] = 0
			if !allowed(ps, t) {
				continue
			}
			c := cols[i]
			if c.dom > 0 {
				c.dom = at[c.dom-1]
			}
			out = append(out, c)
			at[i] = int32(len(out))
		}
	}
	return out
}

// keptJoint returns the joint columns kept for the solve's pools (more
// than one, each with kept types: solves of the same pools share them).
func (s *solver) keptJoint() ([]lpColumn, bool) {
	var first *keptTypes
	for _, ps := range s.pools {
		if !ps.ok {
			continue
		}
		if ps.kept == nil || keptOptsOff {
			return nil, false
		}
		if first == nil {
			first = ps.kept
		}
	}
	first.optMu.Lock()
	defer first.optMu.Unlock()
	for _, j := range first.joint {
		if s.jointIs(j.with) {
			return j.cols, true
		}
	}
	return nil, false
}

// jointIs tells whether with are the kept types of the solve's pools.
func (s *solver) jointIs(with []*keptTypes) bool {
	i := 0
	for _, ps := range s.pools {
		if !ps.ok {
			continue
		}
		if i >= len(with) || with[i] != ps.kept {
			return false
		}
		i++
	}
	return i == len(with)
}

// keepJoint keeps the solve's joint columns with its first pool's kept
// types, when every pool has kept types (the oldest go when full).
func (s *solver) keepJoint(cols []lpColumn) {
	var with []*keptTypes
	for _, ps := range s.pools {
		if !ps.ok {
			continue
		}
		if ps.kept == nil || keptOptsOff {
			return
		}
		with = append(with, ps.kept)
	}
	first := with[0]
	first.optMu.Lock()
	defer first.optMu.Unlock()
	for _, j := range first.joint {
		if s.jointIs(j.with) {
			return
		}
	}
	if len(first.joint) >= maxJoint {
		first.joint = first.joint[1:]
	}
	first.joint = append(first.joint, jointCols{with: with, cols: cols})
}

// lpCols are the pool's types as the bound's columns (type i at i: its
// cheapest price and its allocatable), made on first use; kept pool
// types keep them too (read only: shared by every solve of the kept
// types, and by a solve's lists of all columns).
func (ps *poolState) lpCols(nd int) []lpColumn {
	if ps.cols == nil {
		capf := make([]float64, len(ps.types)*nd)
		ps.cols = make([]lpColumn, len(ps.types))
		for i, t := range ps.types {
			for d, v := range t.net {
				capf[i*nd+d] = float64(max(v, 0))
			}
			ps.cols[i] = lpColumn{cost: t.minPrice, cap: capf[i*nd : (i+1)*nd : (i+1)*nd]}
		}
	}
	return ps.cols
}

// lpDominance marks each of the pool's columns dominated by an earlier
// one (lpColumn.dom): as much of every dimension for no more money. A
// column dominated by an earlier dominated one is dominated by what
// dominates that (transitivity), so each is compared with the columns
// found undominated so far only. Made once per kept pool types (a
// pool's columns are then read only).
func (ps *poolState) lpDominance() {
	var front []int
	for j := range ps.cols {
		t := &ps.cols[j]
		for _, u := range front {
			if c := &ps.cols[u]; c.cost <= t.cost && capAtLeast(c.cap, t.cap) {
				t.dom = int32(u) + 1
				break
			}
		}
		if t.dom == 0 {
			front = append(front, j)
		}
	}
}

func capAtLeast(a, b []float64) bool {
	for i, v := range b {
		if a[i] < v {
			return false
		}
	}
	return true
}

// allColumns are the unrestricted columns: the types do not change after
// setup, so the bound before packing and the one after share them.
func (s *solver) allColumns() []lpColumn {
	if s.allCols == nil {
		s.allCols = s.columns(nil)
	}
	return s.allCols
}

// existingFree is the room existing and in-flight nodes have left; the
// bound reads it before packing (freeBefore), when it is still free.
func (s *solver) existingFree() vec {
	free := s.dims.zero()
	for _, b := range s.existingBins {
		if b.node.Unschedulable {
			continue
		}
		for i := range free {
			free[i] += max(0, b.alloc[i]-b.used[i])
		}
	}
	return free
}

// dualPrices solves the bound for every pending pod before packing, to
// price resources.
func (s *solver) dualPrices() []float64 {
	demand := make([]float64, s.dims.n())
	free := s.existingFree()
	s.freeBefore = free
	for _, c := range s.classes {
		if c.err != "" {
			continue
		}
		for i, v := range c.req {
			demand[i] += float64(v) * float64(len(c.pods))
		}
	}
	for i := range demand {
		demand[i] = math.Max(0, demand[i]-float64(free[i]))
	}
	s.full = s.coverAll(demand)
	return s.full.y
}

// cover is a solved LP over all columns: its demand, optimum and duals.
type cover struct {
	demand []float64
	bound  float64
	y      []float64
	// basic is the solution's columns and amounts (the limit bound
	// reads what it counts against the pools' limits).
	basic []basicCol
}

// basicCol is a column of an LP's solution and how many of it.
type basicCol struct {
	col int
	x   float64
}

// coverAll solves the LP over all columns for a demand, or returns the
// solve before packing when the demand is the same: the columns do not
// change, so neither does the answer (the demands are sums of integers,
// exact in float64 whatever the order, so equal plans compare equal).
func (s *solver) coverAll(demand []float64) cover {
	if s.full.demand != nil && slices.Equal(s.full.demand, demand) {
		return s.full
	}
	var basic []basicCol
	b, y := solveCoverBasic(s.allColumns(), demand, func(j int, x float64) { basic = append(basic, basicCol{j, x}) })
	return cover{demand: demand, bound: b, y: y, basic: basic}
}

// lowerBound is the bound for the pods the plan places. Besides the LP over
// all columns it solves one LP per distinct set of (pool, type) pairs the
// classes may use, with the demand of the classes limited to that set (a
// GPU pod can only be covered by GPU types), and reports the largest: each
// is a valid bound, so their maximum is.
func (s *solver) lowerBound() float64 {
	type set struct {
		key    string
		bits   []bitset
		demand []float64
	}
	// The room existing nodes had before packing (setup's dualPrices): the
	// pods placed in it are in the demand below, so the room they took is
	// still subtracted (the room left now would count them twice).
	free := s.freeBefore
	var sets []*set
	byKey := map[string]*set{}
	var kb []byte // a set's key, scratch
	total := make([]float64, s.dims.n())
	for c, l := range s.placedLevels() {
		placed := c.placed()
		kb = kb[:0]
		for _, cp := range l.pools {
			if cp.ok {
				for _, w := range cp.types {
					kb = binary.LittleEndian.AppendUint64(kb, w)
				}
			}
			kb = append(kb, '|')
		}
		st, ok := byKey[string(kb)]
		if !ok {
			bits := make([]bitset, len(s.pools))
			for i, cp := range l.pools {
				if cp.ok {
					bits[i] = cp.types
				}
			}
			st = &set{key: string(kb), bits: bits, demand: make([]float64, s.dims.n())}
			byKey[st.key] = st
			sets = append(sets, st)
		}
		for i, v := range c.req {
			st.demand[i] += float64(v) * float64(placed)
			total[i] += float64(v) * float64(placed)
		}
	}
	sub := func(d []float64) []float64 {
		out := make([]float64, len(d))
		for i := range d {
			out[i] = math.Max(0, d[i]-float64(free[i]))
		}
		return out
	}
	allCols := s.allColumns()
	full := s.coverAll(sub(total))
	best, y := full.bound, full.y
	// Pool limits (limitbound.go).
	if v := s.limitBound(full); v > best {
		best = v
	}
	// Integrality: when existing room cannot hold everything, some new node
	// is bought, and it holds at least one pod, so it costs at least the
	// cheapest type that fits the smallest such pod.
	needNew := false
	for _, v := range sub(total) {
		if v > 0 {
			needNew = true
		}
	}
	if needNew {
		cheapest := math.Inf(1)
		for c, l := range s.placedLevels() {
			for i, ps := range s.pools {
				cp := l.pools[i]
				if !cp.ok {
					continue
				}
				// Types come cheapest first: the first that fits is
				// the pool's cheapest for the class.
				for j, t := range ps.types {
					if t.minPrice >= cheapest {
						break
					}
					if cp.types.has(j) && c.req.le(t.net) {
						cheapest = t.minPrice
						break
					}
				}
			}
		}
		if !math.IsInf(cheapest, 1) && cheapest > best {
			best = cheapest
		}
	}
	if len(sets) <= 1 {
		return s.withShapes(best, allCols, full)
	}
	// A set holding every column tight under the duals y (reduced cost
	// zero: the only columns an optimal solution uses) cannot raise the
	// bound: its LP with all the demand costs what the full LP does, and
	// with less demand no more. Its LP is skipped. (A column missed by the
	// tolerance only skips fewer sets.)
	tight := make([]bitset, len(s.pools))
	k := 0
	for _, ps := range s.pools {
		if !ps.ok {
			continue
		}
		tight[ps.idx] = newBitset(len(ps.types))
		for _, t := range ps.types {
			c := allCols[k]
			k++
			rc := c.cost
			for i, v := range c.cap {
				rc -= v * y[i]
			}
			if rc <= 1e-6*c.cost+1e-12 {
				tight[ps.idx].set(t.idx)
			}
		}
		if !tight[ps.idx].any() {
			tight[ps.idx] = nil
		}
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].key < sets[j].key })
	// The restricted lists' buffer outlives the solve (a list of a whole
	// catalog's columns is tens of KB).
	cb := colPool.Get().(*[]lpColumn)
	s.colBuf = *cb
	defer func() {
		*cb, s.colBuf = s.colBuf[:0], nil
		colPool.Put(cb)
	}()
	for _, a := range sets {
		if subsetOf(tight, a.bits) {
			continue
		}
		// Demand of every class whose set lies within a's.
		d := make([]float64, s.dims.n())
		for _, b := range sets {
			if subsetOf(b.bits, a.bits) {
				for i := range d {
					d[i] += b.demand[i]
				}
			}
		}
		cols := s.columns(func(ps *poolState, t *ptype) bool {
			return a.bits[ps.idx] != nil && a.bits[ps.idx].has(t.idx)
		})
		if v, _ := solveCover(cols, sub(d)); v > best {
			best = v
		}
	}
	return s.withShapes(best, allCols, full)
}

// withShapes is lowerBound's last steps: the whole-node bounds
// (wholeNodesAt) over best, the other bounds', and the shape bound where it
// could be higher. Pods' shapes are what the resource LP's mixing of
// families cannot reach (shapebound.go), but its ascent is a sixth of a
// solve of many classes, where it ends far under the LP: many-shapes at
// 100-299 pods, 20-27 % under. Where the LP's own solution can be split
// between its types class by class (shapeSplit: a solution of the shape
// LP) at a price no higher than the bound without it, the shape bound,
// which is at most that LP's optimum, cannot raise it and is not made.
func (s *solver) withShapes(best float64, cols []lpColumn, full cover) float64 {
	kb := s.knapsack(cols, full)
	if !shapeSplitOff {
		if v, ok := s.shapeSplit(full); ok && v <= max(best, kb)*(1+1e-9) {
			return s.wholeNodesAt(best, kb, cols, full)
		}
	}
	if shapeRan != nil {
		shapeRan()
	}
	if v := s.shapeBound(full.y); v > best {
		best = v
	}
	return s.wholeNodesAt(best, kb, cols, full)
}

// shapeSplitOff makes every bound solve the shape bound (tests compare).
var shapeSplitOff bool

// shapeRan, when set, is called for each shape bound made.
var shapeRan func()

func subsetOf(a, b []bitset) bool {
	for i := range a {
		if a[i] == nil {
			continue
		}
		if b[i] == nil {
			return false
		}
		for w := range a[i] {
			if a[i][w]&^b[i][w] != 0 {
				return false
			}
		}
	}
	return true
}
