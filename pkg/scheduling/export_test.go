package scheduling

import (
	"fmt"
	"math"
	"slices"
)

// SetGrowIndex turns the growth index (growidx.go) on or off, for the
// test that plans are the same either way.
func SetGrowIndex(on bool) { growIndexOff = !on }

// SetPaidScan makes placeAt look for paid room after every growth step
// (all) or not after those of classes without topology (the default), for
// the test that plans are the same either way.
func SetPaidScan(all bool) { paidScanAll = all }

// SetPaidIndex turns fillPaid's list of nodes with paid room
// (paidroom.go) on or off, for the test that plans are the same either
// way.
func SetPaidIndex(on bool) { paidIndexOff = !on }

// SetDrainIndex turns the drains' index of nodes with CPU room (roomy.go)
// on or off, for the test that plans are the same either way.
func SetDrainIndex(on bool) { drainIndexOff = !on }

// SetVersionRestore makes the local search give a bin it put back its
// version back (on) or a new one (off), for the test that plans are the
// same either way.
func SetVersionRestore(on bool) { versionRestoreOff = !on }

// SetUpgradeCache turns upgradeValue's cache of upgrade answers on or
// off (off: upgradeFor every time), for the test that plans are the same
// either way.
func SetUpgradeCache(on bool) { upCacheOff = !on }

// SetOpenCache turns isOpen's shortcuts (a closed bin stays closed while
// the smallest pending request only rose; the type that made a bin open
// is tried first) on or off, for the test that plans are the same either
// way.
func SetOpenCache(on bool) { openCacheOff = !on }

// SetTopoGrowIndex turns the growth index for classes with topology
// (growidx.go) on or off, for the test that plans are the same either
// way.
func SetTopoGrowIndex(on bool) { topoGrowIndexOff = !on }

// SetRebuildBound turns the local search's stop of a rebuild whose price
// floor reached the price before it (rebuildbound.go) on or off, for the
// test that plans are the same either way.
func SetRebuildBound(on bool) { rebuildBoundOff = !on }

// SetFloorCheck hands f each rebuild floor and the sum over every node
// (nil: no check).
func SetFloorCheck(f func(incremental, full float64)) { floorCheck = f }

// SetNodeOpts turns newNode's answers kept for alike nodes (nodeOptsFor)
// on or off, for the test that plans are the same either way.
func SetNodeOpts(on bool) { nodeOptsOff = !on }

// SetKeptOpts turns the option lists and price lists kept with a
// prepared pool's types for later solves (keptOpts, keptPrices) on or off, for the test that plans are the
// same either way.
func SetKeptOpts(on bool) { keptOptsOff = !on }

// SetDrainExtIndex lets drains walk by an extended resource's tree
// (roomy.go) when a class requests one (on), or by CPU only (off), for
// the test that plans are the same either way.
func SetDrainExtIndex(on bool) { drainExtOff = !on }

// DrainTargets packs in and lists, per level of every class, the nodes
// (by id) a drain of one of its pods may move it to: those the drain
// index's walk visits (by an extended resource's tree when the class
// requests one) that the CPU check and allowance accept, then the same
// over every listed node, for the test that the walk misses none.
func DrainTargets(in Input) (walked, listed [][]int) {
	s := newSolver(&in)
	s.setup()
	s.pack()
	r := s.roomyBins()
	ok := func(l *level, t *bin) bool {
		if t.node == nil && len(t.entries) == 0 {
			return false
		}
		capType := t.typ
		if t.node != nil {
			capType = -1
		}
		return s.hasRoom(t, l.cls.req) && s.allowance(l, t, 1, capType).k > 0
	}
	for _, c := range s.classes {
		for _, l := range c.levels {
			var a, b []int
			w := r.walk(l)
			for id := w.next(0); id >= 0; id = w.next(id + 1) {
				if ok(l, s.bins[id]) {
					a = append(a, id)
				}
			}
			for _, t := range r.bins {
				if ok(l, t) {
					b = append(b, t.id)
				}
			}
			walked, listed = append(walked, a), append(listed, b)
		}
	}
	return walked, listed
}

// SetUpgradeMemo turns upgradeFor's answers kept by node contents
// (upgradeMemo) on or off, for the test that plans are the same either
// way.
func SetUpgradeMemo(on bool) { upMemoOff = !on }

// SetBoundMemo turns growBound's answers kept by node shape on or off,
// for the test that plans are the same either way.
func SetBoundMemo(on bool) { boundMemoOff = !on }

// SetLiveEmpty leaves new nodes without pods out of the live list
// (on) or keeps them there (off), for the test that plans are the same
// either way.
func SetLiveEmpty(on bool) { liveEmptyKept = !on }

// SetWorkMin makes a rebuild without the growth index take the smallest
// request of its work still to place as the pending minimum (on), or the
// request of the class it places (off), for the test that plans are the
// same either way.
func SetWorkMin(on bool) { workMinOff = !on }

// SetFitIndex makes upgradeFor and isOpen visit only the frontier types
// with the CPU and memory asked (on) or scan the whole frontier (off),
// for the test that plans are the same either way.
func SetFitIndex(on bool) { fitIndexOff = !on }

// SetFitAnswers keeps upgradeFor's answers by bin version and the
// frontier rows a request falls in (on) or not (off), for the test that
// plans are the same either way.
func SetFitAnswers(on bool) { fitAnswersOff = !on }

// SetRepeatPass skips a rebuild pass that would find every node as the
// last pass that kept nothing left it (on) or runs it (off), for the
// test that plans are the same either way.
func SetRepeatPass(on bool) { repeatPassOff = !on }

// SetLPDominance makes the bound's LP skip columns an earlier column
// dominates while pricing (on) or price every column (off), for the test
// that plans are the same either way.
func SetLPDominance(on bool) { lpDomOff = !on }

// SetRefillTried makes refill skip a group it tried in another order the
// same round (on) or try it again (off), for the test that plans are the
// same either way.
func SetRefillTried(on bool) { refillTriedOff = !on }

// SetEstimateCut makes refillEstimate stop once its price reached the
// group's (on) or price the whole refill (off), for the test that plans
// are the same either way.
func SetEstimateCut(on bool) { estimateCutOff = !on }

// SetSearchScratch turns the local search's reused buffers and
// reflection-free sorts (searchbuf.go) on or off, for the test that
// plans are the same either way.
func SetSearchScratch(on bool) { searchScratchOff = !on }

// SetMergeTwins turns the merges' skipping of nodes whose twin was
// refused early (twins.go) on or off, for the test that plans are the
// same either way.
func SetMergeTwins(on bool) { mergeTwinsOff = !on }

// SetSlabs turns the memos' entries from slabs and the growth index's
// reuse of emptied groups (slabs.go) on or off, for the test that plans
// are the same either way.
func SetSlabs(on bool) { slabsOff = !on }

// SetRebuildTopo lets the local search rebuild nodes of constrained pods
// (on) or only nodes of free pods (off), for the tests that compare.
func SetRebuildTopo(on bool) { rebuildTopoOff = !on }

// SetLimitsFirst makes a solve with limited pools (or pools with
// minValues) plan without the limits (minValues) first and keep that plan
// when it holds them (on), or plan with them at once (off), for the tests
// that compare.
func SetLimitsFirst(on bool) { limitsFirstOff = !on }

// SetScanTwins turns bestGrowth's answers by node shape in its scan of
// every open node (scantwins.go) on or off, for the test that plans are
// the same either way.
func SetScanTwins(on bool) { scanTwinsOff = !on }

// SetTwinNumbered hands f every node shape the scan's table numbers (nil:
// none).
func SetTwinNumbered(f func()) { twinNumbered = f }

// SetDrainBound turns the skipping of drains that cannot make a node
// cheaper (drainbound.go) on or off, for the test that plans are the same
// either way.
func SetDrainBound(on bool) { drainBoundOff = !on }

// SetDrainFit turns mayShrink's count of only the room where a node's
// pods fit (drainbound.go fittingFree) on or off.
func SetDrainFit(on bool) { drainFitOff = !on }

// SetFitCheck hands f, for every sum of room where a drained node's pods
// fit, whether the kept sum equals one made afresh (nil: none).
func SetFitCheck(f func(same bool)) { fitCheck = f }

// SetOwnTypes turns on or off isOpen's and upgradeScan's walking a
// label-cut bin's own types instead of every type of its pool.
func SetOwnTypes(on bool) { ownTypesOff = !on }

// SetFillCovers turns on or off the balanced fill's leaving out of the
// running a level a bigger level before it covers (filldom.go).
func SetFillCovers(on bool) { domOff = !on }

// SetTwinsAgree turns on or off fastUpgrades' taking a twin group's
// first node for the group for levels whose topology twins share
// (level.twinsAgree); off, it walks the group for a node topology accepts.
func SetTwinsAgree(on bool) { twinsAgreeOff = !on }

// SetTwinsAgreeCheck hands f, for every twin group its first node
// refused that way, whether a walk of the group refuses it too (nil: none).
func SetTwinsAgreeCheck(f func(agreed bool)) { twinsAgreeCheck = f }

// SetRebuildPaid turns the rebuilds' list of nodes with paid room
// (rebuildpaid.go) on or off.
func SetRebuildPaid(on bool) { rebuildPaidOff = !on }

// SetNewTypeMemo turns newBinFor's memo of a level's new-node type on or
// off (on by default).
func SetNewTypeMemo(on bool) { newTypeMemoOff = !on }

// SetTailWorth turns the tail split's skipping of nodes worth their
// price (regroup.go) on or off.
func SetTailWorth(on bool) { tailWorthOff = !on }

// SetNearBound turns the local search's stop near the bound
// (nearbound.go) on or off.
func SetNearBound(on bool) { nearBoundOff = !on }

// SetRebalance turns the balanced repacking before and after the local
// search on or off (rebalance.go).
func SetRebalance(on bool) { rebalanceOff = !on }

// NearBoundGap is nearbound.go's gap.
const NearBoundGap = nearBoundGap

// WorkCounts is what the local search tried: rebuilds, drains, and the
// nodes fillPaid looked at in rebuilds.
type WorkCounts struct {
	Rebuilds, Drains, PaidLooks int
}

// SolveCountingWork plans in as Solve does without the limits-first pass
// (limitsfirst.go), and counts the local search's work.
func SolveCountingWork(in Input) (Plan, WorkCounts) {
	s := newSolver(&in)
	s.setup()
	s.pack()
	plan := s.improveAndFinish()
	s.release()
	return plan, WorkCounts{s.rebuildTries, s.drainTries, s.paidSeen}
}

// SolveCountingRebuilds is SolveCountingWork's rebuilds.
func SolveCountingRebuilds(in Input) (Plan, int) {
	p, w := SolveCountingWork(in)
	return p, w.Rebuilds
}

// SetScratch makes solves reuse the answer caches' tables of earlier
// solves (on) or take new ones (off), for the test that plans are the
// same either way.
func SetScratch(on bool) { scratchOff = !on }

// SetRegroupPoolColumns makes the regrouping's LP take the group's pools'
// types (on) or every pool's (off), for the test that plans are the same
// either way.
func SetRegroupPoolColumns(on bool) { regroupAllColumns = !on }

// SetLimitRebuilds turns the local search's rebuilds on or off for
// solves with limited pools.
func SetLimitRebuilds(on bool) { limitRebuildsOff = !on }

// SetIntBound turns the whole-node bounds (intbound.go) on or off.
func SetIntBound(on bool) { intBoundOff = !on }

// SetGrowChain makes consecutive growth steps for a class take the grown
// node's next upgrade without a search where it decides the search (on)
// or search every step (off), for the test that plans are the same
// either way.
func SetGrowChain(on bool) { growChainOff = !on }

// SetChainTaken hands f a call for every growth step taken from a chain
// (nil: none).
func SetChainTaken(f func()) { chainTaken = f }

// SetUpgradeCheck hands f the type of each answer upgradeFor gives and
// that of a scan of every type (-1: none).
func SetUpgradeCheck(f func(cut, full int)) { upgradeCheck = f }

// SetGrowBoundCheck hands f each growth bound the growth index computes
// and the bound of a scan of every type.
func SetGrowBoundCheck(f func(cut, full float64)) { growBoundCheck = f }

// SetAllowanceSkipped hands f, for every node the scan did not ask
// allowance about, whether allowance would have refused it and whether
// its upgrade was found.
func SetAllowanceSkipped(f func(refused, found bool)) { allowanceSkipped = f }

// ClassesBothWays describes the classes the solve after Solve's
// limits-free attempt on in takes over from that attempt (classSeed)
// and those it builds itself (buildClasses), after setup, with the pods
// setup skipped: every field either sets, and what setup derives from
// them.
func ClassesBothWays(in Input) (reused, built string) {
	describe := func(s *solver) string {
		out := ""
		for _, f := range s.plan.Skipped {
			out += fmt.Sprintf("skipped %s: %s\n", f.Pod.Name, f.Reason)
		}
		for _, c := range s.classes {
			names := make([]string, len(c.pods))
			for i, p := range c.pods {
				names[i] = p.Name
			}
			vols := make([]string, len(c.volTerms))
			for i, r := range c.volTerms {
				vols[i] = r.signature()
			}
			out += fmt.Sprintf("class %d %s/%s %v labels %v res %x req %v value %g ports %v vols %q err %q remaining %d\n",
				c.idx, c.ns, c.pod.Name, names, c.labels, c.resKey, c.req, c.value, c.ports, vols, c.err, c.remaining)
		}
		return out
	}
	freeIn := withoutLimits(in)
	free := newSolver(&freeIn)
	free.noMinValues = hasMinValues(&in)
	free.limitsFrom = &in
	free.setup()
	free.pack()
	seed := free.classSeed()
	free.release()
	a := newSolver(&in)
	a.seed = seed
	a.setup()
	b := newSolver(&in)
	b.setup()
	return describe(a), describe(b)
}

// SetLimitsBindCheck turns the check before the limits-free packing
// (limitsBindUnpacked) on or off, for the test that plans are the same.
func SetLimitsBindCheck(on bool) { limitsBindCheckOff = !on }

// LimitsBindBothWays sets up the limits-free solve of in as Solve does and
// tells what the check before packing says, and then whether the packing
// kept every limit (packedWithin).
func LimitsBindBothWays(in Input) (bind, within bool) {
	freeIn := withoutLimits(in)
	s := newSolver(&freeIn)
	s.limitsFrom = &in
	s.setup()
	bind = s.limitsBindUnpacked()
	s.pack()
	within = s.packedWithin(&in)
	s.release()
	return bind, within
}

// StopGap is the near-bound stop's gap for a plan of pods on new nodes
// (nearbound.go).
func StopGap(pods int) float64 { return stopGap(pods) }

// BestFill packs in and, for the pods on its first pool's nodes of free
// pods, tells what the fill bestFillType chooses is worth per dollar
// and the best over filling every frontier type; false
// when there are no such pods.
func BestFill(in Input) (got, best float64, ok bool) {
	s, ps, ls, counts, allowed := packedFreeLevels(&in)
	defer s.release()
	if len(ls) == 0 {
		return 0, 0, false
	}
	worth := func(typ int, sel []int) float64 {
		used := s.dims.zero()
		for i, l := range ls {
			used.addScaled(l.cls.req, int64(sel[i]))
		}
		return s.valueOf(used) / ps.types[typ].minPrice
	}
	typ, sel := s.bestFillType(ps, allowed, ls, counts, nil)
	if typ < 0 {
		return 0, 0, false
	}
	got = worth(typ, sel)
	for _, i := range ps.frontier {
		if !allowed.has(i) || ps.types[i].minPrice <= 0 {
			continue
		}
		best = max(best, worth(i, balancedFill(ls, counts, ps.types[i].net)))
	}
	return got, best, true
}

// SetFillMemo turns the balanced estimate's memo of fills on or off
// (rebalance.go).
func SetFillMemo(on bool) { fillMemoOff = !on }

// BalancedEstimate packs in and prices packing its first pool's nodes of
// free pods again the balanced way (balancedEstimate, no limit): the
// price, each node's type and fill, and the fills the memo saved; false
// when there are fewer than two such nodes.
func BalancedEstimate(in Input) (price float64, types, sels []int, hits int, ok bool) {
	s, ps, group := packedFree(&in)
	defer s.release()
	if len(group) < 2 {
		return 0, nil, nil, 0, false
	}
	price = s.balancedEstimate(group, ps, math.Inf(1))
	sc := &s.balanceBuf
	return price, slices.Clone(sc.plan), slices.Clone(sc.sels), sc.memo.hits, true
}

// packedFree packs in (with the LP's prices set) and returns the solver,
// its first pool and that pool's nodes of free pods.
func packedFree(in *Input) (*solver, *poolState, []*bin) {
	s := newSolver(in)
	s.setup()
	s.pack()
	s.boundNow()
	ps := s.pools[0]
	var group []*bin
	for _, b := range s.freeBins(false) {
		if b.pool == ps {
			group = append(group, b)
		}
	}
	return s, ps, group
}

// SetPendingFloor turns the rebuilds' check of their pending pods' floor
// on or off (rebuildbound.go, pendingLost).
func SetPendingFloor(on bool) { pendingFloorOff = !on }

// SetPendingCut has f called for each rebuild pendingLost cuts.
func SetPendingCut(f func()) { pendingCut = f }

// SetShapeSplit makes the bound skip the shape bound where the LP's own
// solution split class by class prices no higher (on) or always make it
// (off) (bound.go, withShapes).
func SetShapeSplit(on bool) { shapeSplitOff = !on }

// ShapeBoundAndSplit packs in (no local search) and tells the shape
// bound's ascent, shapeSplit's price (ok: it applies) and the bound the
// solve reports before its local search.
func ShapeBoundAndSplit(in Input) (shape, split float64, ok bool, bound float64) {
	s := newSolver(&in)
	s.setup()
	s.pack()
	bound = s.boundNow()
	shape = s.shapeBound(s.full.y)
	split, ok = s.shapeSplit(s.full)
	s.release()
	return shape, split, ok, bound
}

// SetDensityBound makes bestFillType skip the types whose fill the
// per-resource knapsack shows cannot beat the best (on), or fill them
// (off) (rebalance.go, densityBound).
func SetDensityBound(on bool) { densityOff = !on }

// DensityBoundHolds fills every allowed frontier type with the pods of
// the packed plan's nodes of free pods (as BestFill) and tells how many
// fills it compared and by how much the most a fill's worth exceeded
// densityBound's bound for its type (0 or less when it held).
func DensityBoundHolds(in Input) (n int, over float64) {
	s, ps, ls, counts, allowed := packedFreeLevels(&in)
	defer s.release()
	var db densityBound
	if len(ls) == 0 || !db.prepare(s, ls, counts) {
		return 0, 0
	}
	over = math.Inf(-1)
	for _, i := range ps.frontier {
		t := ps.types[i]
		if !allowed.has(i) {
			continue
		}
		used := s.dims.zero()
		sel := balancedFill(ls, counts, t.net)
		for k, l := range ls {
			used.addScaled(l.cls.req, int64(sel[k]))
		}
		n++
		over = max(over, s.valueOf(used)-db.worth(t.net))
	}
	return n, over
}

// packedFreeLevels is packedFree's nodes as the levels on them, the pods
// of each and the types of the pool every one allows.
func packedFreeLevels(in *Input) (s *solver, ps *poolState, ls []*level, counts []int, allowed bitset) {
	s, ps, group := packedFree(in)
	for _, b := range group {
		for _, e := range b.entries {
			ls = append(ls, e.l)
			counts = append(counts, e.n)
			if allowed == nil {
				allowed = e.l.pools[ps.idx].types.clone()
			} else {
				allowed.and(e.l.pools[ps.idx].types)
			}
		}
	}
	return s, ps, ls, counts, allowed
}

// EstimateFills is how many fills the balanced estimate of packedFree's
// nodes begins.
func EstimateFills(in Input) int {
	s, ps, group := packedFree(&in)
	defer s.release()
	if len(group) < 2 {
		return 0
	}
	s.balancedEstimate(group, ps, math.Inf(1))
	return s.balanceBuf.memo.fills
}

// SetShapeRan has f called for each shape bound the bound makes.
func SetShapeRan(f func()) { shapeRan = f }

// SetLimitCache makes a limited pool's upgrade answers be cached with
// what they read of the pool's usage (on) or asked every time (off)
// (limitcache.go).
func SetLimitCache(on bool) { limCacheOff = !on }

// SetLimitCheck hands f each cached upgrade answer of a limited pool's
// node that the cache kept and a fresh scan's answer (nil: none).
func SetLimitCheck(f func(cached, fresh int32)) { limCheck = f }

// SetNewTypeCheck has f told, for each new-node type of a limited pool
// that the memo kept, whether a walk of the types gives the same (nil:
// none).
func SetNewTypeCheck(f func(same bool)) { newTypeCheck = f }

// SetRebuildTwins makes a rebuild pass skip a group of twins of a group
// it tried since it last kept one (on), or try every group (off)
// (rebuildtwins.go).
func SetRebuildTwins(on bool) { rebuildTwinsOff = !on }

// OfferedInDisagrees asks, for every pool of in's solve, offeredIn for
// each pair of zone and capacity type masks in masks in turn, twice over,
// and tells the first answer that is not the pool's types offered in some
// zone and some capacity type of the pair, type by type ("" when none).
func OfferedInDisagrees(in Input, masks [][2]uint64) string {
	s := newSolver(&in)
	defer s.release()
	s.setup()
	for round := 0; round < 2; round++ {
		for _, ps := range s.pools {
			for _, m := range masks {
				got := ps.offeredIn(m[0], m[1])
				for i, t := range ps.types {
					if want := t.zoneMask&m[0] != 0 && t.ctMask&m[1] != 0; got.has(i) != want {
						return fmt.Sprintf("pool %s masks %b/%b round %d: type %s offered %v, want %v", ps.pool.Name, m[0], m[1], round, t.it.Name, got.has(i), want)
					}
				}
			}
		}
	}
	return ""
}
