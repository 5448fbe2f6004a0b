package scheduling

import (
	"math"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// Solve decides where each pending pod goes: onto an existing or in-flight
// node, onto a new node (which it also sizes and prices), or nowhere, with
// a reason. It is deterministic: the same input gives the same plan,
// whatever the order of Input.Pods.
//
// The method (docs/scheduling.md has the long form):
//  1. group pods into classes of identical scheduling shape;
//  2. solve a small linear program for a lower bound on $/h, whose dual
//     prices value each resource;
//  3. pack classes, biggest first, into existing nodes, then into new
//     nodes sized to the most cost-efficient type under those prices,
//     relaxing preferences in Karpenter's order when a pod fits nowhere;
//  4. right-size every new node to the cheapest type that holds it, then
//     move pods between nodes while that makes some node cheaper or empty.
func Solve(in Input) Plan {
	in.DaemonSets = withoutResourceClaims(in.DaemonSets)
	// Limits and minValues that do not bind change nothing
	// (limitsfirst.go).
	limits := !limitsFirstOff && hasLimits(&in)
	minValues := !limitsFirstOff && hasMinValues(&in)
	var seed *classSeed // the limits-free attempt's classes, when it was made
	if limits || minValues {
		freeIn := in
		if limits {
			freeIn = withoutLimits(in)
		}
		s := newSolver(&freeIn)
		s.noMinValues = minValues
		if limits {
			s.limitsFrom = &in // the bound reads the limits (limitbound.go)
		}
		s.setup()
		// A limit the packing must exceed skips it (limitsfirst.go).
		packed := !limits || !s.limitsBindUnpacked()
		if packed {
			s.pack()
		}
		if packed && (!limits || s.packedWithin(&in)) {
			plan := s.improveAndFinish()
			if !s.nodeFailed && (!limits || holdsLimits(&in, plan)) {
				s.release()
				return plan
			}
		}
		seed = s.classSeed()
		s.release() // its tables and slabs to the solve below
	}
	s := newSolver(&in)
	s.seed = seed
	s.setup()
	s.pack()
	plan := s.improveAndFinish()
	s.release()
	return plan
}

// improveAndFinish improves the packed plan (the local search) and makes the
// Plan; the caller then releases the solver (release: nothing of the plan
// is in what it gives back).
func (s *solver) improveAndFinish() Plan {
	if !s.in.Options.NoImprove {
		// Rebuilds stop within a gap of the bound (nearbound.go).
		s.gap = stopGap(s.newNodePods())
		if !nearBoundOff {
			s.stopPrice = s.boundNow() * (1 + s.gap)
		}
		// Exchanges between lopsided nodes and others (refill.go), first
		// of the later steps on small plans, else last (refillFirst).
		refillFirst := s.refillFirst()
		refill := func() {
			if !s.nearBound() && s.refill() {
				s.improve()
			}
		}
		// The plan packed again the balanced way (rebalance.go), kept
		// here only when that ends the search.
		if !s.nearBound() {
			s.rebalance(true)
		}
		s.improve()
		if refillFirst {
			refill()
		}
		// Again at the nodes' final sizes, after the regrouping (regroup.go).
		if s.settle() {
			s.improve()
		}
		// The tail's sizes, knowing every other node (regroup.go).
		if !s.nearBound() && s.tailSplit() {
			s.improve()
		}
		if !refillFirst {
			refill()
		}
		// Kept at the end when cheaper than where the search ended.
		if !s.nearBound() {
			s.rebalance(false)
		}
	}
	s.finish()
	return s.plan
}

// refillFirst tells whether the refill runs right after the local
// search's first round rather than last. On a small plan (at most
// nearBoundPods pods on new nodes, where the stop near the bound keeps
// its full gap) the search ends as soon as the plan is within that gap,
// so the step that finds most goes first: the refill, whose tries are
// gated by an estimate, is the one that brings plans of many pod shapes
// to the stop (many-shapes at 100-299 pods: about 12-16 % less CPU; 675
// plans cost the same in all). Past that the gap shrinks and the search
// runs on; a refill kept there, however small, runs the local search
// again before settle, which costs more than it finds in time (few-big
// at 2,000 pods: 22 % more CPU for a plan 0.3 % cheaper), so the refill
// stays last, as it was (docs/scheduling.md, "7 December 2026 (night)").
func (s *solver) refillFirst() bool {
	return s.newNodePods() <= nearBoundPods
}

// solver holds one Solve's state.
type solver struct {
	in *Input
	// limitSmall are smallestHolding's answers.
	limitSmall map[limitKey]vec
	// rbTried are the groups a rebuild pass or the tail split tried since
	// it last kept one (rebuildtwins.go).
	rbTried []rebuildTried
	// limOut, when set, is where the next upgradeScan notes what it read
	// of a limited pool's usage (limRec).
	limOut *limRec
	// labelsIdle: no pod's labels can matter (labelsSelected), so
	// classKey leaves them out.
	labelsIdle bool
	// limitsFrom, when set, is the input with the pool limits that in
	// (the limits-first solve's) had taken off: the bound reads them.
	limitsFrom *Input
	// seed, when set, is the classes of the limits-free attempt on the
	// same pods (limitsfirst.go), which setup takes (classSeed).
	seed *classSeed
	plan Plan
	dims *dims
	// ip is the whole-node bound's search (intbound.go), nil where it
	// does not run.
	ip    *ipSearch
	world *world
	// prepared are the instance type lists in their prepared form (from
	// Input.Prepared, or prepared for this solve).
	prepared []*PreparedTypes
	// trial holds, per topology key, the value allowance is trying for an
	// open new bin (trialUnset: none); pinPods counts pods per pinned
	// value, to spread ties.
	trial   []int
	pinPods []domCounts
	// pending is the requests of the pods not placed yet.
	pending vec
	// jr, when set, journals every bin placement and type change touch
	// (a rebuild in the local search), and jrPlaced the placements.
	jr       *journal
	jrPlaced []placedRec
	// jrBuf and workBuf are tryRebuildBy's scratch.
	jrBuf   []placedRec
	workBuf []removed
	// priceCap, when above 0, keeps growth to nodes of capPool cheaper
	// than it (a split in the local search: other pools, of a lower
	// weight, must not win because the cap ruled out their betters).
	priceCap float64
	capPool  *poolState
	// rbBefore, while a rebuild packs, is the new nodes' price before it
	// (rebuildbound.go); floors their price floors.
	rbBefore float64
	// workMin, while a rebuild places work without the growth index, is
	// the smallest request of the work left (setWorkMin), a row of
	// workMinBuf.
	workMin    vec
	workMinBuf []int64
	// pendBuf and pendEpoch are pendingLost's scratch: the group's
	// requests, and the mark of its bins.
	pendBuf   vec
	pendEpoch uint32
	floors    floorCache
	pools     []*poolState
	// anyPreferNoSchedule enables the last relaxation step.
	anyPreferNoSchedule bool

	classes []*class

	keys        []*keyInfo
	keyIdx      map[string]int
	groups      []*group
	groupIdx    map[string]*group
	groupByPair map[string][]*group
	groupsAny   []*group
	namespaces  map[string]map[string]string

	bins []*bin
	// upShared are the upgrade caches by what upgradeFor reads; upKey
	// is upCachesFor's scratch, upBest bestGrowth's.
	upShared map[string]*upCaches
	upKey    []byte
	upBest   growth
	// chain is what the last growth step leaves for the next
	// (growchain.go); boundPools is poolsBound, asked once a solve.
	chain      growChain
	boundPools bool
	// live are the bins not closed (live.go): minPending, the smallest
	// pending request, and minGen, its version; liveLen is how many of
	// s.bins live has seen; liveStale asks for a rebuild.
	live      []*bin
	liveLen   int
	liveStale bool
	// liveGen counts the open list's rebuilds (rebuildpaid.go).
	liveGen uint32
	// rbPaid is a rebuild's list of nodes with paid room (rebuildpaid.go).
	rbPaid       rebuildPaid
	minPending   vec
	minGen       uint32
	minFellGen   uint32 // the last minGen at which some dimension fell
	pmin         *pendMin
	gidx         *growIdx              // growidx.go, while packing
	bounds       map[uint64]*boundMemo // growBound's answers by node shape (shapememo.go)
	boundStats   memoStats             // how bounds has served
	upStats      memoStats             // how the levels' upgrade memos have served
	existingBins []*bin
	portSetsMemo *portSets // portSets'
	paidBuf      paidCands // fillPaid's candidates (scratch)
	// priceMemo is pricesFor's: each pool's types priced per zone and
	// capacity type masks.
	priceMemo map[priceKey][]priceRow

	lastRes      resMemo // classKey's
	affinityMemo map[*corev1.Affinity]uint64
	spreadMemo   map[*corev1.TopologySpreadConstraint]uint64
	typeMemo     map[string]bitset
	matchKeep    []bool            // matchTypes' scratch
	holdMemo     map[string]bitset // typesHolding's
	holdKey      []byte            // typesHolding's scratch
	// offeredMemo is labelOffered's, by typesMatching's answer.
	offeredMemo map[*uint64][2]uint64

	// unitPrice are the bound's dual prices: $/h per unit of each
	// dimension (a millicore, a byte, a pod slot), what a unit of it is
	// worth when bought at the most efficient types.
	unitPrice []float64
	// zoneLoad counts pods pinned to each zone on new nodes, to spread
	// zone-free choices.
	zoneLoad []int

	// allCols are the bound's unrestricted columns (allColumns), and full
	// their LP solved before packing (dualPrices).
	allCols []lpColumn
	colBuf  []lpColumn // columns' scratch
	colAt   []int32    // columns' scratch
	full    cover
	// freeBefore is the room existing and in-flight nodes had before
	// packing put pods in it (dualPrices): what the bound subtracts.
	freeBefore vec
	// bound is lowerBound's answer while boundLeft pods are unplaced
	// (boundNow); stopPrice the new nodes' price at which the local
	// search's rebuilds stop, gap its distance from the bound (stopGap,
	// nearbound.go), set when the local search starts.
	bound     float64
	boundLeft int
	boundSet  bool
	stopPrice float64
	gap       float64
	// split is shapeSplit's scratch.
	split splitScratch
	// rebuildTries counts tryRebuildBy's rebuilds (tests read it).
	rebuildTries int
	// drainTries counts tryDrain's drains (tests read it).
	drainTries int
	// paidSeen counts the nodes fillPaid looked at in rebuilds (tests
	// read it).
	paidSeen int
	// needBuf is isOpen's scratch, upNeed upgradeFor's, newScratch
	// newBinFor's by pool; zeroVec is all zeros (read only).
	needBuf    vec
	mergeBuf   vec // tryMerge's scratch
	upNeed     vec
	newScratch []*newScratch
	zeroVec    vec
	// priceSaves are setPrices' saves by depth of nesting, priceDepth
	// how many are in force.
	priceSaves []*priceSave
	priceDepth int
	// refillBuf is refillEstimate's scratch.
	refillBuf  refillScratch
	balanceBuf balanceScratch
	// verSeq is the last bin version given out (changed): versions are
	// unique over the solve, so a bin put back as it was can take its
	// old version back without another state ever having had it.
	verSeq uint32
	// jbuf is the local search's journal (begin), preShape tryDrain's
	// scratch.
	jbuf     journal
	preShape shape
	// optBuf and rankBuf are newNode's scratch, and optLists the option
	// lists made so far, by a hash of their key (sharedOpts).
	optBuf   []opt
	rankBuf  bitset
	selBuf   bitset
	optLists map[uint64][]*optList
	// nodeOpts are newNode's answers by what decides them (nodeOptsFor).
	nodeOpts map[uint64][]*nodeOpts
	// outReqs are newNode's requirements (scratch).
	outReqs reqs

	pvcs map[string]*corev1.PersistentVolumeClaim
	pvs  map[string]*corev1.PersistentVolume
	// attach are the volume attachment dimensions (attach.go).
	attach []attachDim
	// dsReq are DaemonSets' requests read from their pods
	// (observeDaemonPods, pools.go).
	dsReq map[*appsv1.DaemonSet]corev1.ResourceList

	// fits are the pools' frontiers by CPU and memory (fitidx.go), by
	// pool.
	fits []*fitIndex
	// fitsAll are the pools' types, every one, by CPU and memory
	// (fitForAll).
	fitsAll []*fitIndex
	// scratch lends the answer caches their tables (scratch.go).
	scratch *solveScratch
	// fitTables are upgradeFor's answers by bin (id) version and rows,
	// fitKeys the levels' fit keys, fitKeyBuf fitKeyOf's scratch.
	fitTables [][2]fitTable
	fitKeys   map[string]uint32
	fitKeyBuf []byte
	// lastPass are the bins' versions after the last rebuild pass, when
	// it kept nothing, under the dual prices lastPrices points at;
	// passBuf their buffer (improve.go).
	lastPass   []uint32
	passBuf    []uint32
	lastPrices *float64
	// search is the local search's scratch (searchbuf.go).
	search searchScratch
	// topo is a rebuild's topology counts before it (rebuildtopo.go).
	topo topoSnap
	// mergeTwins are the merges' nodes refused early (twins.go).
	mergeTwins twinTable
	// slabs hold the memos' entries (slabs.go).
	slabs slabs
	// noMinValues packs as if no pool had minValues (the plan's nodes
	// are still checked against them: nodeFailed); limitsfirst.go.
	noMinValues bool
	// nodeFailed is set when a new node failed its pool's minValues.
	nodeFailed bool
}

// world indexes zones and capacity types.
type world struct {
	zones   []string
	zoneIdx map[string]int
	cts     []string
	ctIdx   map[string]int
}

func (w *world) zoneMaskOf(set valueSet) uint64 {
	var m uint64
	for i, z := range w.zones {
		if set.has(z) {
			m |= maskOf(i)
		}
	}
	return m
}

func (w *world) ctMaskOf(set valueSet) uint64 {
	var m uint64
	for i, c := range w.cts {
		if set.has(c) {
			m |= maskOf(i)
		}
	}
	return m
}

func newSolver(in *Input) *solver {
	return &solver{
		in:           in,
		scratch:      takeScratch(),
		keyIdx:       map[string]int{},
		upShared:     map[string]*upCaches{},
		groupIdx:     map[string]*group{},
		namespaces:   map[string]map[string]string{},
		affinityMemo: map[*corev1.Affinity]uint64{},
		spreadMemo:   map[*corev1.TopologySpreadConstraint]uint64{},
		typeMemo:     map[string]bitset{},
		holdMemo:     map[string]bitset{},
		pvcs:         map[string]*corev1.PersistentVolumeClaim{},
		pvs:          map[string]*corev1.PersistentVolume{},
	}
}

// setup prepares everything the packer reads.
func (s *solver) setup() {
	s.prepareLists()
	for _, n := range s.in.Namespaces {
		l := map[string]string{corev1.LabelMetadataName: n.Name}
		for k, v := range n.Labels {
			l[k] = v
		}
		s.namespaces[n.Name] = l
	}
	for _, c := range s.in.PersistentVolumeClaims {
		s.pvcs[c.Namespace+"/"+c.Name] = c
	}
	for _, v := range s.in.PersistentVolumes {
		s.pvs[v.Name] = v
	}
	s.observeDaemonPods()
	if s.seed != nil {
		s.classes = s.seed.classes
		s.plan.Skipped = append(s.plan.Skipped, s.seed.skipped...)
		s.seed = nil
	} else {
		s.buildClasses()
	}
	s.buildDims()
	s.buildWorld()
	s.buildExisting()
	s.preparePools()
	s.boundPools = s.poolsBound()
	// Existing and in-flight nodes count against their pool's limits.
	for _, b := range s.existingBins {
		for _, ps := range s.pools {
			if ps.pool.Name == b.node.Pool {
				ps.usage.add(s.dims.fromList(limitCapacity(b.node)))
				ps.usageNodes++
			}
		}
	}
	for _, ps := range s.pools {
		ps.baseUsage, ps.baseNodes = ps.usage.clone(), ps.usageNodes
	}
	for _, ps := range s.pools {
		if ps.ok && ps.hasPreferNoSchedule {
			s.anyPreferNoSchedule = true
		}
	}
	s.zoneLoad = make([]int, len(s.world.zones))
	s.buildTopology()
	s.unitPrice = s.dualPrices()
	for _, ps := range s.pools {
		ps.setValues(make([]float64, len(ps.types)))
		for i, t := range ps.types {
			ps.values[i] = s.valueOf(t.net)
		}
	}
	for _, c := range s.classes {
		c.value = s.valueOf(c.req)
	}
	// Pods with host ports first: a node takes one pod per host port, so
	// they fix how many nodes there must be at least, and the others then
	// fill the room around them rather than being packed tight first onto
	// nodes of their own, beside port pods on small nodes of idle room
	// (hostports at 250 to 2,000 pods, 12 seeds each: 4-5 % cheaper, every
	// plan at 700 and 2,000). Then biggest first (by dual value, then cpu
	// and memory, as Karpenter sorts), ties by the first pod's name.
	sort.SliceStable(s.classes, func(i, j int) bool {
		a, b := s.classes[i], s.classes[j]
		if (len(a.ports) > 0) != (len(b.ports) > 0) {
			return len(a.ports) > 0
		}
		if a.value != b.value {
			return a.value > b.value
		}
		if a.req[dimCPU] != b.req[dimCPU] {
			return a.req[dimCPU] > b.req[dimCPU]
		}
		if a.req[dimMemory] != b.req[dimMemory] {
			return a.req[dimMemory] > b.req[dimMemory]
		}
		return podLess(a.pod, b.pod)
	})
	for i, c := range s.classes {
		c.idx = i
	}
}

func (s *solver) typeLists() [][]*InstanceType {
	out := [][]*InstanceType{s.in.InstanceTypes}
	names := make([]string, 0, len(s.in.PoolInstanceTypes))
	for n := range s.in.PoolInstanceTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, s.in.PoolInstanceTypes[n])
	}
	return out
}

// preparedFor returns a list's prepared form: the caller's, when
// Input.Prepared holds this very list, else one made for this solve.
func (s *solver) preparedFor(list []*InstanceType) *PreparedTypes {
	for _, p := range s.prepared {
		if sameList(p.list, list) {
			return p
		}
	}
	for _, p := range s.in.Prepared {
		if p != nil && sameList(p.list, list) {
			s.prepared = append(s.prepared, p)
			return p
		}
	}
	p := PrepareTypes(list)
	s.prepared = append(s.prepared, p)
	return p
}

// prepareLists finds or makes every list's prepared form (setup does it
// first: everything after reads them).
func (s *solver) prepareLists() {
	for _, l := range s.typeLists() {
		s.preparedFor(l)
	}
}

// isTypeKey tells whether some instance type sets the label key:
// requirements on such keys are decided per type.
func (s *solver) isTypeKey(k string) bool {
	for _, p := range s.prepared {
		if p.keys[k] {
			return true
		}
	}
	return false
}

// buildDims collects the resources anybody asks for or limits.
func (s *solver) buildDims() {
	extra := map[corev1.ResourceName]bool{}
	// Classes whose requests are made of the same (classKey's res) have
	// the same requests: few-big at 50,000 pods has 5,000 classes of
	// some fifty sizes.
	requests := make([]corev1.ResourceList, len(s.classes))
	// bare: requests[i] is the pod's lone container's, read in place,
	// without the pod's slot (containerOnly).
	bare := make([]bool, len(s.classes))
	byRes := map[uint64]int{}
	extra[corev1.ResourcePods] = true
	for i, c := range s.classes {
		if j, ok := byRes[c.resKey]; ok {
			requests[i], bare[i] = requests[j], bare[j]
			continue
		}
		byRes[c.resKey] = i
		if rl, ok := containerOnly(c.pod); ok {
			requests[i], bare[i] = rl, true
		} else {
			requests[i] = podRequests(c.pod)
		}
		for n := range requests[i] {
			extra[n] = true
		}
	}
	for _, ds := range s.in.DaemonSets {
		for n := range s.daemonRequests(ds) {
			extra[n] = true
		}
	}
	for _, p := range s.in.Pools {
		for n := range p.Limits {
			if n != "nodes" {
				extra[n] = true
			}
		}
	}
	reserve := s.addAttachRequests(requests, extra)
	s.dims = newDims(extra)
	s.buildAttachDims(reserve)
	for i, c := range s.classes {
		// Attachment requests follow a class's claims, not its
		// resources: with limited drivers every class reads its own.
		if j := byRes[c.resKey]; j < i && len(s.attach) == 0 {
			c.req = s.classes[j].req.clone()
			continue
		}
		c.req = s.dims.fromList(requests[i])
		if bare[i] {
			c.req[s.dims.index[corev1.ResourcePods]]++
		}
	}
}

// buildWorld indexes every zone and capacity type mentioned anywhere.
func (s *solver) buildWorld() {
	zones := map[string]bool{}
	cts := map[string]bool{model.CapacityTypeOnDemand: true, model.CapacityTypeSpot: true}
	for _, p := range s.prepared {
		for _, z := range p.zones {
			zones[z] = true
		}
		for _, c := range p.cts {
			cts[c] = true
		}
	}
	for _, n := range s.in.Nodes {
		if z := nodeLabel(n.Labels, corev1.LabelTopologyZone); z != "" {
			zones[z] = true
		}
		if c := n.Labels[model.LabelCapacityType]; c != "" {
			cts[c] = true
		}
	}
	s.world = &world{zoneIdx: map[string]int{}, ctIdx: map[string]int{}}
	for _, z := range sortedKeys(zones) {
		s.world.zoneIdx[z] = len(s.world.zones)
		s.world.zones = append(s.world.zones, z)
	}
	for _, c := range sortedKeys(cts) {
		s.world.ctIdx[c] = len(s.world.cts)
		s.world.cts = append(s.world.cts, c)
	}
}

// nodeLabel reads a label by its normalized key or any alias.
func nodeLabel(l map[string]string, key string) string {
	if v, ok := l[key]; ok {
		return v
	}
	for _, a := range aliasesOf[key] {
		if v, ok := l[a]; ok {
			return v
		}
	}
	return ""
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// usefulValue is what a node of allocatable net already holding used is
// worth to the pods still to place, when want more pods of class c come
// next: the copies of c it takes (at most want) at c's value, plus the
// rest of its room at the dual prices but, per dimension, no more than the
// other pending pods request. Room nobody will use is worth nothing, so a
// growth that mostly buys such room (a huge node for the last few pods)
// is not efficient. capped tells whether the pending pods limited the
// value (it then changes as pods are placed).
func (s *solver) usefulValue(l *level, want int, net, used vec) (v float64, capped bool) {
	c := l.cls
	var k int
	if used == nil {
		k = maxCopies(s.zeros(), c.req, net)
	} else {
		k = maxCopies(used, c.req, net)
	}
	if k >= want {
		k, capped = want, true
	}
	if pn := s.perNode(l); k > pn {
		k = pn
	}
	v = float64(k) * c.value
	var room, other float64
	for i, price := range s.unitPrice {
		if price == 0 {
			continue
		}
		r := net[i] - int64(k)*c.req[i]
		if used != nil {
			r -= used[i]
		}
		if r > 0 {
			room += price * float64(r)
		}
		if o := s.pending[i] - int64(want)*c.req[i]; o > 0 {
			other += price * float64(o)
		}
	}
	if room > other {
		room, capped = other, true
	}
	v += room
	return v, capped
}

// usefulPair is usefulValue of a node holding used at allocatables a
// and b (an upgrade's new type and its current one) in one pass: the
// other pending pods' worth and the per-node cap are the same for both.
// Each sum adds the same terms in the same order as usefulValue's, so
// the values are usefulValue's to the bit.
func (s *solver) usefulPair(l *level, want int, a, b, used vec) (va, vb float64) {
	c := l.cls
	ka, kb := maxCopies(used, c.req, a), maxCopies(used, c.req, b)
	ka, kb = min(ka, want), min(kb, want)
	if pn := s.perNode(l); ka > pn || kb > pn {
		ka, kb = min(ka, pn), min(kb, pn)
	}
	va, vb = float64(ka)*c.value, float64(kb)*c.value
	var roomA, roomB, other float64
	for i, price := range s.unitPrice {
		if price == 0 {
			continue
		}
		u := used[i]
		if r := a[i] - int64(ka)*c.req[i] - u; r > 0 {
			roomA += price * float64(r)
		}
		if r := b[i] - int64(kb)*c.req[i] - u; r > 0 {
			roomB += price * float64(r)
		}
		if o := s.pending[i] - int64(want)*c.req[i]; o > 0 {
			other += price * float64(o)
		}
	}
	return va + min(roomA, other), vb + min(roomB, other)
}

// zeros is the all-zero vector, made once (read only: a node with
// nothing on it, asked for at every growth step).
func (s *solver) zeros() vec {
	if s.zeroVec == nil {
		s.zeroVec = s.dims.zero()
	}
	return s.zeroVec
}

// clearPending makes nothing pending, reusing the vector: a rebuild in
// the local search starts from nothing pending, dozens of times a solve
// (nothing keeps the old vector).
func (s *solver) clearPending() {
	if len(s.pending) != s.dims.n() {
		s.pending = s.dims.zero()
		return
	}
	clear(s.pending)
}

// perNode is how many pods of a level one node may hold by its own
// hostname constraints (self anti-affinity, hostname spreads).
func (s *solver) perNode(l *level) int {
	n := math.MaxInt32
	for i, g := range l.anti {
		if l.antiSelf[i] && s.keys[g.key].kind == keyHostname {
			n = 1
		}
	}
	for _, sp := range l.spreads {
		if sp.member && s.keys[sp.g.key].kind == keyHostname && sp.maxSkew < n {
			n = sp.maxSkew
		}
	}
	return n
}

// valueOf is a vector's worth under the dual prices.
func (s *solver) valueOf(v vec) float64 {
	var x float64
	for i, price := range s.unitPrice {
		x += price * float64(v[i])
	}
	return x
}
