package disruption

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Bounds of the consolidation search (Karpenter bounds its own by time:
// 1 min multi-node, 3 min single-node; Joist runs in a Lambda pass and
// bounds by count, so a pass stays within seconds on 1,000 nodes and
// the same snapshot always gives the same command).
const (
	// MaxMultiNodeCandidates is the longest candidate prefix multi-node
	// consolidation tries (Karpenter's 100).
	MaxMultiNodeCandidates = 100
	// MaxSingleNodeSimulations bounds the candidates single-node
	// consolidation simulates per pass (after the price prefilter).
	MaxSingleNodeSimulations = 30
	// SearchBudget bounds the wall-clock time one pass spends searching:
	// no simulation starts after it (the best command found so far is
	// kept, as Karpenter does on its timeouts).
	SearchBudget = 750 * time.Millisecond
	// MinSpotToSpotOptions is how many cheaper spot types a single spot
	// node's replacement must have (Karpenter's 15-types rule).
	MinSpotToSpotOptions = 15
)

// candidate is a node consolidation may retire.
type candidate struct {
	n    Node
	pool *model.Pool
	// pods counts its reschedulable pods, cpu (milli) and mem (bytes)
	// their effective requests.
	pods     int
	cpu, mem int64
	// cost is 1 + its reschedulable pods' eviction costs (EvictionCost,
	// each at least 0): Karpenter's reschedule disruption cost.
	cost float64
	// moved are its reschedulable pods whole, once read (movers).
	moved   []*corev1.Pod
	readErr error
	read    bool
	// price is its $/h by its labels (0: unknown), capacityType and
	// instanceType its labels.
	price                      float64
	capacityType, instanceType string
	block                      string
}

// name is the node's name.
func (c *candidate) name() string { return c.n.Node.Name }

// command is one consolidation: retire nodes, launching at most one.
type command struct {
	nodes []*candidate
	// replace: one new node is needed; price is its $/h (cheapest
	// option), options its instance types cheaper than the nodes.
	replace bool
	price   float64
	options []string
	// savings is the nodes' $/h less the replacement's.
	savings float64
}

// id names the command by its nodes: a node stamped with it is part of
// this command and no other.
func (c command) id() string {
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		names[i] = n.name()
	}
	return groupID(names)
}

func groupID(names []string) string {
	names = append([]string(nil), names...)
	sort.Strings(names)
	sum := sha256.Sum256([]byte(strings.Join(names, "\n")))
	return hex.EncodeToString(sum[:8])
}

// consolidator answers "what would retiring these nodes take" over one
// snapshot.
type consolidator struct {
	s     Snapshot
	nodes []*scheduling.Node // every node pods may go to, by name order
	types map[string]*scheduling.InstanceType
	// poolTypes are the pools' own lists by type name (a NodeOverlay's
	// prices, a kubelet's sizes), made when first asked.
	poolTypes map[string]map[string]*scheduling.InstanceType
	// minFit memoizes the prefilter's cheapest type per request size.
	minFit map[[2]int64]float64
	// reserved are the snapshot's reserved nodes whose offering is not
	// marked out of capacity.
	reserved []*scheduling.Node
	// simulations counts Solve calls; deadline ends the search.
	simulations int
	deadline    time.Time
	// totals are the Balanced pools' sums (balanced.go), rejected the
	// first command their score refused this pass.
	totals   map[string]poolTotals
	rejected *refusal
}

// outOfTime reports whether the search budget is spent.
func (c *consolidator) outOfTime() bool {
	return !c.deadline.IsZero() && time.Now().After(c.deadline)
}

func newConsolidator(s Snapshot, nodes []Node) *consolidator {
	c := &consolidator{s: s, types: map[string]*scheduling.InstanceType{}, minFit: map[[2]int64]float64{}}
	for _, it := range s.Simulation.InstanceTypes {
		c.types[it.Name] = it
	}
	for _, n := range s.Reserved {
		if !c.unavailable(n.Labels[model.LabelInstanceType], n.Labels[model.LabelZone], model.CapacityTypeReserved) {
			c.reserved = append(c.reserved, n)
		}
	}
	for i, n := range slices.Concat(nodes, s.Others) {
		if Retiring(n.Node) || !pods.NodeReady(n.Node) {
			continue
		}
		// Karpenter v1.15 moves no pod onto a node of its own still
		// under its pool's consolidateAfter (its simulation's
		// IsUnderConsolidateAfter): one that came up so recently may be
		// about to receive the pods it came up for.
		settling := i < len(nodes) && underConsolidateAfter(n.Node, PoolOf(n.Node, s.Pools), s.Now)
		pool := n.Node.Labels[model.LabelNodePool]
		if pool == "" {
			pool = n.Node.Labels[model.LabelProvisionerName]
		}
		// Finished pods are left out, whole or compact (Add drops them):
		// they hold no room, and the scheduler counts them in no spread.
		var onNode []*corev1.Pod
		for _, p := range n.Pods {
			if !pods.Finished(p) {
				onNode = append(onNode, p)
			}
		}
		// The room promised to the pods on their way takes no other pod.
		onNode = append(onNode, n.Incoming...)
		c.nodes = append(c.nodes, &scheduling.Node{
			Name: n.Node.Name, Pool: pool, Labels: n.Node.Labels, Taints: n.Node.Spec.Taints,
			Unschedulable: n.Node.Spec.Unschedulable || settling, Capacity: n.Node.Status.Capacity,
			Allocatable: n.Node.Status.Allocatable, Pods: onNode, Bound: n.Bound,
			VolumeLimits: s.VolumeLimits[n.Node.Name],
		})
	}
	c.totals = c.balancedTotals()
	return c
}

// underConsolidateAfter says whether node n of pool p turned Ready less
// than the pool's consolidateAfter before now. Karpenter measures from the
// node's last pod event, else its initialization; Joist keeps no pod
// event times (no watch, and compact pods keep none), so from the Ready
// condition's transition: a node busy for longer is a destination again.
func underConsolidateAfter(n *corev1.Node, p *model.Pool, now time.Time) bool {
	if p == nil || p.Disruption.ConsolidateAfter == nil || *p.Disruption.ConsolidateAfter <= 0 {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return !c.LastTransitionTime.IsZero() && now.Sub(c.LastTransitionTime.Time) < *p.Disruption.ConsolidateAfter
		}
	}
	return false
}

// typeIn is an instance type as pool plans it: from the pool's own list
// when it has one (its overlaid prices), else the shared one.
func (c *consolidator) typeIn(pool, name string) *scheduling.InstanceType {
	list, ok := c.s.Simulation.PoolInstanceTypes[pool]
	if !ok {
		return c.types[name]
	}
	m, ok := c.poolTypes[pool]
	if !ok {
		m = make(map[string]*scheduling.InstanceType, len(list))
		for _, it := range list {
			m[it.Name] = it
		}
		if c.poolTypes == nil {
			c.poolTypes = map[string]map[string]*scheduling.InstanceType{}
		}
		c.poolTypes[pool] = m
	}
	return m[name]
}

// offeringPrice is the $/h of an instance type's offering in a pool, 0
// when the snapshot does not know it.
func (c *consolidator) offeringPrice(pool, instanceType, zone, capacityType string) float64 {
	it := c.typeIn(pool, instanceType)
	if it == nil {
		return 0
	}
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == capacityType {
			return o.Price
		}
	}
	return 0
}

// nodePrice is a node's $/h from its instance type, zone and capacity
// type labels, as its pool plans it (0: unknown).
func (c *consolidator) nodePrice(n *corev1.Node) float64 {
	t, zone, ct := NodeOffering(n)
	return c.offeringPrice(PoolLabel(n), t, zone, ct)
}

// NodeOffering is the offering a node runs on, by its labels: instance
// type, zone and capacity type (on-demand when unlabelled).
func NodeOffering(n *corev1.Node) (instanceType, zone, capacityType string) {
	ct := n.Labels[model.LabelCapacityType]
	if ct == "" {
		ct = model.CapacityTypeOnDemand
	}
	return instanceTypeOf(n), n.Labels[model.LabelZone], ct
}

func instanceTypeOf(n *corev1.Node) string {
	if t := n.Labels[model.LabelInstanceType]; t != "" {
		return t
	}
	return n.Labels[corev1.LabelInstanceType]
}

// NodePrice is a node's $/h from the snapshot's instance types by its
// labels (instance type, zone, capacity type), 0 when unknown.
func (s Snapshot) NodePrice(n *corev1.Node) float64 {
	return newConsolidator(Snapshot{Simulation: scheduling.Input{InstanceTypes: s.Simulation.InstanceTypes}}, nil).nodePrice(n)
}

func (c *consolidator) unavailable(t, z, ct string) bool {
	return c.s.Unavailable != nil && c.s.Unavailable(t, z, ct)
}

// simulate computes the command retiring exactly these candidates, or
// why there is none: every reschedulable pod must find a place on the
// other nodes plus at most one new node, and that node must be cheaper
// than the candidates together.
func (c *consolidator) simulate(cands []*candidate) (command, string) {
	retired := map[string]bool{}
	var move []*corev1.Pod
	var sum float64
	priced := true
	for _, cd := range cands {
		retired[cd.name()] = true
		ps, err := c.movers(cd)
		if err != nil {
			return command{nodes: cands}, err.Error()
		}
		for _, p := range ps {
			cp := p.DeepCopy()
			cp.Spec.NodeName = ""
			move = append(move, cp)
		}
		sum += cd.price
		priced = priced && cd.price > 0
	}
	others := make([]*scheduling.Node, 0, len(c.nodes)+len(c.reserved))
	for _, n := range c.nodes {
		if !retired[n.Name] {
			others = append(others, n)
		}
	}
	others = append(others, c.reserved...)
	if c.s.DefaultSpread != nil {
		var err error
		if move, err = c.s.DefaultSpread(move); err != nil {
			return command{nodes: cands}, "its pods' default spread constraints cannot be read: " + err.Error()
		}
	}
	c.simulations++
	in := c.s.Simulation
	in.Pods, in.Nodes, in.Unavailable = move, others, c.s.Unavailable
	if in.Pools == nil {
		in.Pools = c.s.Pools
	}
	// The snapshot's policies, and no local search: a candidate only
	// asks whether its pods fit.
	in.Options.NoImprove = true
	plan := scheduling.Solve(in)
	cmd := command{nodes: cands}
	// A node launched into a reservation (Snapshot.Reserved) is a new
	// node too, one that costs nothing more.
	reserved := c.reservedUsed(plan)
	launches := len(reserved) + len(plan.NewNodes)
	switch {
	case len(plan.Unschedulable) > 0:
		return cmd, "pod " + pods.Key(plan.Unschedulable[0].Pod) + " would have no place: " + plan.Unschedulable[0].Reason
	case launches == 0:
		cmd.savings = sum
		return cmd, ""
	case launches > 1:
		return cmd, fmt.Sprintf("its pods need %d new nodes", launches)
	case len(reserved) == 1 && sum <= 0:
		return cmd, "it costs nothing more than a reservation its pods would move to"
	case len(reserved) == 1:
		cmd.replace, cmd.price, cmd.options, cmd.savings = true, 0, reserved, sum
		return cmd, ""
	case !priced:
		return cmd, "its price is unknown, so a replacement cannot be shown cheaper"
	}
	return c.replacement(cmd, plan.NewNodes[0], sum)
}

// reservedUsed are the instance types of the reserved nodes
// (Snapshot.Reserved) a plan puts pods on, one per node.
func (c *consolidator) reservedUsed(plan scheduling.Plan) []string {
	if len(c.reserved) == 0 {
		return nil
	}
	var out []string
	for _, pl := range plan.Existing {
		for _, n := range c.reserved {
			if n.Name == pl.Node && len(pl.Pods) > 0 {
				out = append(out, n.Labels[model.LabelInstanceType])
			}
		}
	}
	return out
}

// movers are a candidate's reschedulable pods, whole: from the snapshot,
// or read again (Snapshot.PodsOn) when some were kept compact (Node.Add).
// Read once per pass.
func (c *consolidator) movers(cd *candidate) ([]*corev1.Pod, error) {
	if cd.read {
		return cd.moved, cd.readErr
	}
	cd.read = true
	all := cd.n.Pods
	if cd.n.moving.pods > 0 {
		if c.s.PodsOn == nil {
			cd.readErr = fmt.Errorf("its pods were not kept whole and cannot be read again")
			return nil, cd.readErr
		}
		var err error
		if all, err = c.s.PodsOn(cd.name()); err != nil {
			cd.readErr = fmt.Errorf("its pods cannot be read: %w", err)
			return nil, cd.readErr
		}
	}
	for _, p := range all {
		if pods.Reschedulable(p) {
			cd.moved = append(cd.moved, p)
		}
	}
	return cd.moved, nil
}

// replacement prices the one new node a command needs: the instance
// types whose every usable offering (in the node's zones and capacity
// types) costs less than the nodes retired, so whichever offering the
// launch gets, the command saves money. Spot to spot needs at least
// MinSpotToSpotOptions such types for a single node, and is refused with
// Snapshot.NoSpotToSpot; on-demand nodes may be replaced by spot when the
// pool allows spot (the replacement is then priced as spot, as Karpenter
// pins it).
func (c *consolidator) replacement(cmd command, nn scheduling.NewNode, sum float64) (command, string) {
	allSpot := true
	for _, cd := range cmd.nodes {
		allSpot = allSpot && cd.capacityType == model.CapacityTypeSpot
	}
	cts := nn.CapacityTypes
	if hasString(cts, model.CapacityTypeSpot) && (allSpot || hasString(cts, model.CapacityTypeOnDemand)) {
		cts = []string{model.CapacityTypeSpot}
	}
	spotToSpot := allSpot && len(cts) == 1 && cts[0] == model.CapacityTypeSpot
	if spotToSpot && c.s.NoSpotToSpot {
		return cmd, "spot to spot consolidation is off (SpotToSpotConsolidation=false)"
	}
	maxPrice := sum
	if len(cmd.nodes) > 1 {
		// Replacing several nodes by one of a type among them must beat
		// keeping that node and deleting the others (Karpenter's
		// filterOutSameInstanceType).
		for _, o := range nn.InstanceTypeOptions {
			for _, cd := range cmd.nodes {
				if cd.instanceType == o.Name && cd.price < maxPrice {
					maxPrice = cd.price
				}
			}
		}
	}
	type option struct {
		name              string
		cheapest, dearest float64
	}
	var opts []option
	for _, o := range nn.InstanceTypeOptions {
		it := c.typeIn(nn.Pool, o.Name)
		if it == nil {
			continue
		}
		cheapest, dearest := math.Inf(1), 0.0
		for _, off := range it.Offerings {
			if !hasString(nn.Zones, off.Zone) || !hasString(cts, off.CapacityType) || c.unavailable(o.Name, off.Zone, off.CapacityType) {
				continue
			}
			cheapest, dearest = math.Min(cheapest, off.Price), math.Max(dearest, off.Price)
		}
		if dearest > 0 && dearest < maxPrice {
			opts = append(opts, option{o.Name, cheapest, dearest})
		}
	}
	if len(opts) == 0 {
		return cmd, fmt.Sprintf("no replacement is cheaper than $%.4f/h", maxPrice)
	}
	sort.SliceStable(opts, func(i, j int) bool { return opts[i].cheapest < opts[j].cheapest })
	if spotToSpot && len(cmd.nodes) == 1 {
		if len(opts) < MinSpotToSpotOptions {
			return cmd, fmt.Sprintf("spot to spot needs %d cheaper instance types, found %d", MinSpotToSpotOptions, len(opts))
		}
		opts = opts[:MinSpotToSpotOptions]
	}
	cmd.replace = true
	cmd.price = opts[0].cheapest
	for _, o := range opts {
		cmd.options = append(cmd.options, o.name)
	}
	cmd.savings = sum - cmd.price
	return cmd, ""
}

func hasString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// multiNode is Karpenter's multi-node consolidation: a binary search for
// the longest prefix (at most MaxMultiNodeCandidates, at least two) of
// the sorted candidates that can be retired at once, deleted or replaced
// by one cheaper node.
func (c *consolidator) multiNode(cands []*candidate) (command, bool) {
	if len(cands) < 2 {
		return command{}, false
	}
	hi := min(len(cands), MaxMultiNodeCandidates) - 1
	lo := 1
	var best command
	found := false
	for lo <= hi && !c.outOfTime() {
		mid := (lo + hi) / 2
		cmd, why := c.simulate(cands[:mid+1])
		if why == "" && !c.approve(cmd) {
			why = "refused by its Balanced score"
		}
		if why == "" {
			best, found = cmd, true
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	return best, found
}

// singleNode is Karpenter's single-node consolidation: the first
// candidate, in order, that can be deleted or replaced by one cheaper
// node. Candidates that can be neither deleted (their pods do not fit in
// the room the other nodes have) nor replaced (no type that could hold
// their pods is cheaper) are skipped without simulating.
func (c *consolidator) singleNode(cands []*candidate) (command, bool) {
	room := c.freeRoom()
	tried := 0
	for _, cd := range cands {
		if tried == MaxSingleNodeSimulations || c.outOfTime() {
			break
		}
		cpu, mem := cd.cpu, cd.mem
		fitsRoom := cpu <= room[0]-c.free(cd.name())[0] && mem <= room[1]-c.free(cd.name())[1]
		if !fitsRoom && !(cd.price > 0 && c.cheapestFit(cpu, mem) < cd.price) {
			continue
		}
		// Not even deleting it would pass its pool's Balanced score.
		if !c.canPassBalanced(cd) {
			continue
		}
		tried++
		if cmd, why := c.simulate([]*candidate{cd}); why == "" && c.approve(cmd) {
			return cmd, true
		}
	}
	return command{}, false
}

// requests is the cpu (milli) and memory (bytes) the pods on a node
// request, whole or compact, sized as the simulator sizes them
// (scheduling.Requests: a compacted pod keeps its requests as overhead).
func requests(n *scheduling.Node) (cpu, mem int64) {
	for _, p := range n.Pods {
		c, m := podCPUMem(p)
		cpu, mem = cpu+c, mem+m
	}
	for i := range n.Bound {
		c, m := cpuMem(n.Bound[i].Requests)
		cpu, mem = cpu+c, mem+m
	}
	return cpu, mem
}

// free is a node's allocatable cpu and memory less its pods' requests.
func (c *consolidator) free(name string) [2]int64 {
	for _, n := range c.nodes {
		if n.Name == name {
			cpu, mem := requests(n)
			return [2]int64{n.Allocatable.Cpu().MilliValue() - cpu, n.Allocatable.Memory().Value() - mem}
		}
	}
	return [2]int64{}
}

// freeRoom is the free cpu and memory of all nodes together, and of the
// reserved room (Snapshot.Reserved): a node whose pods need more than
// that cannot be retired without a new node.
func (c *consolidator) freeRoom() [2]int64 {
	var r [2]int64
	for _, n := range slices.Concat(c.nodes, c.reserved) {
		cpu, mem := requests(n)
		r[0] += max(0, n.Allocatable.Cpu().MilliValue()-cpu)
		r[1] += max(0, n.Allocatable.Memory().Value()-mem)
	}
	return r
}

// cheapestFit is a lower bound on the $/h of one node holding cpu and
// mem: the cheapest usable offering of any type with that much
// allocatable (DaemonSets, pools and pod constraints only raise it).
func (c *consolidator) cheapestFit(cpu, mem int64) float64 {
	key := [2]int64{cpu, mem}
	if p, ok := c.minFit[key]; ok {
		return p
	}
	best := math.Inf(1)
	lists := [][]*scheduling.InstanceType{c.s.Simulation.InstanceTypes}
	for _, l := range c.s.Simulation.PoolInstanceTypes {
		lists = append(lists, l)
	}
	for _, l := range lists {
		for _, it := range l {
			if it.Allocatable.Cpu().MilliValue() < cpu || it.Allocatable.Memory().Value() < mem {
				continue
			}
			for _, o := range it.Offerings {
				if !c.unavailable(it.Name, o.Zone, o.CapacityType) && o.Price < best {
					best = o.Price
				}
			}
		}
	}
	c.minFit[key] = best
	return best
}

// waitFor is how long a command must hold before it is acted on: the
// validation delay, or the longest consolidateAfter of its nodes' pools.
func waitFor(cands []*candidate) time.Duration {
	wait := ValidationDelay
	for _, cd := range cands {
		if a := cd.pool.Disruption.ConsolidateAfter; a != nil && *a > wait {
			wait = *a
		}
	}
	return wait
}
