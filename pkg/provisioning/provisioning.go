// Package provisioning is the provisioner's reconcile: it reads the truth
// (pending pods, nodes, the cluster's EC2 instances, the specs), decides
// what to launch, launches it and records on each pod which instance it
// waits for. Events only wake it; it never trusts what they name.
package provisioning

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/joist-dev/joist/pkg/binding"
	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/garbage"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/fromcatalog"
)

// SpecReader reads the cluster's valid pools and node classes. It reports
// bad objects itself and skips them; an error means the source could not
// be read at all (specstore.Read is one).
type SpecReader func(ctx context.Context) (*model.Spec, error)

// Launcher is the EC2 side.
type Launcher interface {
	Instances(ctx context.Context) ([]launch.Instance, error)
	Launch(ctx context.Context, req launch.Request) (*launch.Instance, error)
	// Reservations are the active capacity reservations a node class
	// selects (none, without a call, when it selects none).
	Reservations(ctx context.Context, nc *model.NodeClass) ([]launch.Reservation, error)
}

// Locker is the cluster's one-decider lock (a *kube.Lease).
type Locker interface {
	Acquire(ctx context.Context) (*kube.Held, error)
}

// AnnotationUnavailable is the Lease annotation that keeps the offerings
// recently out of capacity across cold starts.
const AnnotationUnavailable = "joist.sh/unavailable-offerings"

// DefaultRegistrationTimeout is how long an instance may run without its
// node registering before its pods are planned again (the reaper
// terminates it: pkg/garbage).
const DefaultRegistrationTimeout = garbage.DefaultRegistrationTimeout

// Provisioner reconciles pending pods into launched instances.
type Provisioner struct {
	Cluster  string
	Kube     *kube.Client
	Specs    SpecReader
	Catalog  *catalog.Catalog
	Launcher Launcher
	Log      *slog.Logger
	// Clock is the clock (nil: the real one; tests pass a
	// k8s.io/utils/clock/testing clock).
	Clock clock.PassiveClock
	// Unavailable holds offerings that recently ran out of capacity.
	Unavailable *catalog.Unavailable
	// Lock, when set, is taken before deciding and released after.
	Lock Locker
	// RegistrationTimeout overrides DefaultRegistrationTimeout.
	RegistrationTimeout time.Duration
	// Metrics records the pass's metrics (flushed by the function).
	Metrics *metrics.Recorder
	// Policy is Karpenter's preference and minValues policies
	// (scheduling.PolicyOptions; the zero value is Respect and Strict).
	Policy scheduling.Options
	// SchedulerConfig is Karpenter's --scheduler-config: its default
	// topology spread constraints are given to the pods to plan that
	// declare none (SpreadDefaults); nil for none.
	SchedulerConfig *scheduling.SchedulerConfig
	// NodeClasses, when set, resolves the pools' node classes before
	// planning (ReadyPools): a pool whose class cannot launch is left
	// out, the others are planned in their subnets' zones only.
	NodeClasses NodeClassResolver

	// retiring is set by Replace for the length of its pass.
	retiring *Retiring
}

// Retiring names nodes that are going away (an interruption) and the
// offerings their replacements must avoid.
type Retiring struct {
	Nodes       []string
	Unavailable []catalog.OfferingKey
}

// Replace runs one pass for nodes that are going away, before they go:
// once the Lease is held the offerings are marked unavailable (and kept on
// the Lease), the nodes are left out of the simulation, and their
// reschedulable pods are planned with the pending ones: onto capacity
// that exists or is coming, or onto instances launched now. Each such pod
// is nominated to its replacement while still running on the old node; a
// later Replace of the same node (a duplicate message) finds them planned
// onto the live replacement and launches nothing again. The pods' move
// itself is the drain's, after this returns.
func (p *Provisioner) Replace(ctx context.Context, r Retiring) (*Result, error) {
	p.retiring = &r
	defer func() { p.retiring = nil }()
	return p.Reconcile(ctx)
}

// Result is what one reconcile did.
type Result struct {
	Pending       int
	AlreadyServed int
	Launched      []launch.Instance
	Nominated     int
	Unschedulable map[string]string // pod → reason
	// GivenUp are instances whose node never registered: their pods were
	// planned again (the reaper terminates them).
	GivenUp []string
	// Skipped is set when another decider held the lock.
	Skipped bool
	// NotReady are the pools left out of planning because their node
	// class cannot launch a node, with why (ReadyPools).
	NotReady map[string]string
	// Static is how many of Launched are static pools' nodes (static.go).
	Static int
}

func (p *Provisioner) now() time.Time {
	if p.Clock != nil {
		return p.Clock.Now()
	}
	return time.Now()
}

// Reconcile runs one pass: read the truth, plan the pods no live instance
// waits for, launch the new nodes, and record each pod's instance. An
// offering out of capacity is marked unavailable and the plan is redone
// in the same pass without it.
func (p *Provisioner) Reconcile(ctx context.Context) (*Result, error) {
	p.setDefaults()
	res := &Result{Unschedulable: map[string]string{}}
	if p.Lock != nil {
		release, skipped, err := p.takeLease(ctx)
		if err != nil {
			return nil, err
		}
		if skipped {
			res.Skipped = true
			return res, nil
		}
		defer release()
	}
	p.markRetiringUnavailable()
	c, err := p.read(ctx)
	if err != nil {
		return nil, err
	}
	p.giveUpUnregistered(c, res)
	p.countPending(c, res)
	if err := p.scaleStatic(ctx, c, res); err != nil {
		return res, err
	}
	if len(c.todo) == 0 {
		return res, nil
	}
	if err := p.readForPlanning(ctx, c); err != nil {
		return nil, err
	}
	// Before the lists: overlays may select offerings by zone ID.
	c.objects.ZoneIDs = p.zoneIDs(ctx, c)
	base := fromcatalog.Input(p.Catalog, c.objects)
	for _, err := range fromcatalog.OverlayConflicts(p.Catalog, c.objects) {
		p.Log.Warn("node overlay not applied", "error", err.Error())
	}
	base.Options = p.Policy
	if r := p.readiness(ctx, c); r != nil && len(r.NotReady) > 0 {
		base.NotReady, res.NotReady = r.NotReady, r.NotReady
	}
	todo, err := NewSpreadDefaults(p.Kube, p.SchedulerConfig).Apply(ctx, c.todo)
	if err != nil {
		return nil, err
	}
	// Pods that cannot be served are told so after every launch of the
	// pass, and only so many of them: Events cost API requests, and
	// hundreds of pods nobody can serve must not delay the one that can.
	var failed []failure
	defer func() { p.reportFailures(ctx, failed) }()
	for attempt := 0; attempt < maxPlanAttempts && len(todo) > 0; attempt++ {
		todo, err = p.planAndLaunch(ctx, c, base, todo, res, &failed)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// setDefaults fills the fields a Provisioner built without them needs, so
// that a zero-valued one (as tests build it) still runs a pass.
func (p *Provisioner) setDefaults() {
	if p.Unavailable == nil {
		p.Unavailable = catalog.NewUnavailable(0)
	}
	if p.Metrics == nil {
		p.Metrics = metrics.New(p.Cluster, p.Clock)
	}
}

// takeLease takes the decider lease so that two passes never decide at
// once, and merges the unavailable offerings the previous holder kept on
// it (a cold function would otherwise forget them and launch into the
// same shortage again). skipped is true when another decider holds it:
// the pass is left to that one. release prunes the offerings, writes them
// back onto the Lease and lets it go; the caller defers it.
func (p *Provisioner) takeLease(ctx context.Context) (release func(), skipped bool, err error) {
	held, err := p.Lock.Acquire(ctx)
	if errors.Is(err, kube.ErrLeaseHeld) {
		p.Log.Info("another decider holds the lease; leaving this pass to it", "error", err.Error())
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("take the decider lease: %w", err)
	}
	if enc := held.Annotations()[AnnotationUnavailable]; enc != "" {
		if u, err := catalog.DecodeUnavailable(enc); err == nil {
			p.Unavailable.Merge(u)
		} else {
			p.Log.Warn("ignoring unreadable unavailable-offerings annotation", "error", err.Error())
		}
	}
	return func() {
		p.Unavailable.Prune(p.now())
		enc := p.Unavailable.Encode()
		if err := held.Release(context.WithoutCancel(ctx), map[string]*string{AnnotationUnavailable: &enc}); err != nil {
			p.Log.Warn("release the decider lease", "error", err.Error())
		}
	}, false, nil
}

// markRetiringUnavailable marks the offerings a Replace pass must avoid
// (the interrupted nodes' own), once the Lease is held, so that the plan
// does not put the replacements where the capacity is going away.
func (p *Provisioner) markRetiringUnavailable() {
	if p.retiring == nil {
		return
	}
	now := p.now()
	for _, o := range p.retiring.Unavailable {
		p.Unavailable.Mark(now, o.InstanceType, o.Zone, o.CapacityType)
	}
}

// solveUnavailable is what the simulator is told of offerings out of
// capacity: nil while none is marked, so a warm function's solves reuse
// the pool types and option lists kept with the prepared catalog (a
// solve told of any offering prepares its own), else unavailable.
func (p *Provisioner) solveUnavailable(now time.Time, unavailable func(t, z, ct string) bool) func(t, z, ct string) bool {
	if p.Unavailable == nil || len(p.Unavailable.Keys(now)) == 0 {
		return nil
	}
	return unavailable
}

// countPending records how many pods are pending and how many of them an
// instance already waits for: the pass's result and its pending-pods
// metric say so even when there is nothing to plan.
func (p *Provisioner) countPending(c *cluster, res *Result) {
	res.Pending = len(c.pending)
	p.Metrics.Gauge(metrics.PendingPods, float64(len(c.pending)), nil)
	for _, pl := range c.planned {
		res.AlreadyServed += len(pl)
	}
}

// planAndLaunch is one planning attempt: it solves for todo against the
// offerings available now, nominates the pods placed on existing or
// coming capacity, and launches the new nodes. It returns the pods whose
// launch ran out of capacity, to be planned again without those
// offerings.
func (p *Provisioner) planAndLaunch(ctx context.Context, c *cluster, base scheduling.Input, todo []*corev1.Pod, res *Result, failed *[]failure) ([]*corev1.Pod, error) {
	now := p.now()
	unavailable := func(t, z, ct string) bool { return p.Unavailable.IsUnavailable(now, t, z, ct) }
	in := base
	in.Pods, in.Nodes, in.Unavailable = todo, p.simulatorNodes(c), p.solveUnavailable(now, unavailable)
	reserved, slots := p.reservedNodes(c, in.Nodes, len(todo), unavailable)
	in.Nodes = append(in.Nodes, reserved...)
	start := time.Now()
	plan := scheduling.Solve(in)
	existing, intoReservations := reservedLaunches(plan.Existing, slots)
	p.Log.Info("planned", "pods", len(todo), "newNodes", len(plan.NewNodes), "unschedulable", len(plan.Unschedulable),
		"pricePerHour", plan.TotalPricePerHour, "lowerBoundPricePerHour", plan.LowerBoundPricePerHour, "seconds", time.Since(start).Seconds())
	p.Metrics.Observe(metrics.SchedulingDuration, time.Since(start).Seconds(), nil)
	p.Metrics.Gauge(metrics.PodsUnschedulable, float64(len(plan.Unschedulable)), nil)
	for _, f := range plan.Unschedulable {
		res.Unschedulable[pods.Key(f.Pod)] = f.Reason
		*failed = append(*failed, failure{f.Pod, f.Reason})
	}
	if err := p.placeOnExisting(ctx, c, existing, now, res); err != nil {
		return nil, err
	}
	return p.launchNew(ctx, c, append(intoReservations, plan.NewNodes...), now, unavailable, res, failed)
}

// placeOnExisting handles the pods the simulator put on capacity that
// exists or is coming: they wait for that instance; on a node already
// Ready they are bound now (no node-ready event will come for it).
func (p *Provisioner) placeOnExisting(ctx context.Context, c *cluster, placements []scheduling.Placement, now time.Time, res *Result) error {
	for _, pl := range placements {
		id, node := pl.Node, (*corev1.Node)(nil)
		if !pl.InFlight {
			node = c.node(pl.Node)
			if node == nil || pods.InstanceID(node.Spec.ProviderID) == "" {
				continue // not an EC2 node Joist can plan onto: kube-scheduler's
			}
			id = pods.InstanceID(node.Spec.ProviderID)
		}
		if err := p.nominateAll(ctx, c, pl.Pods, c.describe(id), now, res); err != nil {
			return err
		}
		if node != nil && pods.NodeReady(node) {
			b := &binding.Binder{Kube: p.Kube, Log: p.Log, Metrics: p.Metrics}
			if _, err := b.BindNode(ctx, node.Name); err != nil {
				p.Log.Warn("bind onto a Ready node", "node", node.Name, "error", err.Error())
			}
		}
	}
	return nil
}

// launchNew launches the plan's new nodes and nominates their pods. A
// capacity failure marks its offerings unavailable and returns the node's
// pods for a replan in this pass; any other failure makes them
// unschedulable for this pass. Each launched instance joins the in-flight
// ones so a replan sees it.
func (p *Provisioner) launchNew(ctx context.Context, c *cluster, newNodes []scheduling.NewNode, now time.Time, unavailable func(t, z, ct string) bool, res *Result, failed *[]failure) ([]*corev1.Pod, error) {
	// The launches go out launchConcurrency at a time (an instant
	// CreateFleet takes from hundreds of milliseconds to seconds; one
	// after another, the last node's pods waited for every launch before
	// theirs); what they return is then handled in the plan's order, as
	// before. A capacity error is therefore known to the next attempt's
	// plan, not to the launches sent beside it: those may meet the same
	// shortage and are planned again with it (maxPlanAttempts), as
	// Karpenter's parallel launches are.
	type outcome struct {
		inst *launch.Instance
		err  error
	}
	outcomes := make([]outcome, len(newNodes))
	var g errgroup.Group
	g.SetLimit(launchConcurrency)
	for i, n := range newNodes {
		g.Go(func() error {
			outcomes[i].inst, outcomes[i].err = p.launch(ctx, c, n, unavailable)
			return nil
		})
	}
	_ = g.Wait()
	var retry []*corev1.Pod
	for i, n := range newNodes {
		inst, err := outcomes[i].inst, outcomes[i].err
		var ce *launch.CapacityError
		if errors.As(err, &ce) {
			for _, code := range ce.Codes {
				p.Metrics.Count(metrics.InstanceLaunchFailures, 1, map[string]string{metrics.DimPool: n.Pool, metrics.DimReason: code})
			}
			for _, o := range ce.Offerings {
				p.Unavailable.Mark(now, o.InstanceType, o.Zone, o.CapacityType)
			}
			p.Log.Warn("offerings out of capacity; planning again without them", "pool", n.Pool, "codes", strings.Join(ce.Codes, ","), "offerings", len(ce.Offerings))
			retry = append(retry, n.Pods...)
			continue
		}
		if o := n.InstanceTypeOptions; err != nil && n.Labels[model.LabelReservationID] != "" {
			// A reservation that cannot be launched into, for whatever
			// reason (reclaimed, refused, not permitted), must not hold its
			// pods: it is passed over for a while and they are planned again.
			p.Log.Error("launch into a capacity reservation failed; planning again without it", "pool", n.Pool,
				"reservation", n.Labels[model.LabelReservationID], "error", err.Error())
			p.Metrics.Count(metrics.InstanceLaunchFailures, 1, map[string]string{metrics.DimPool: n.Pool, metrics.DimReason: "Error"})
			p.Unavailable.Mark(now, o[0].Name, o[0].Zone, model.CapacityTypeReserved)
			retry = append(retry, n.Pods...)
			continue
		}
		if err != nil {
			p.Log.Error("launch failed", "pool", n.Pool, "error", err.Error())
			p.Metrics.Count(metrics.InstanceLaunchFailures, 1, map[string]string{metrics.DimPool: n.Pool, metrics.DimReason: "Error"})
			for _, pod := range n.Pods {
				res.Unschedulable[pods.Key(pod)] = err.Error()
				*failed = append(*failed, failure{pod, err.Error()})
			}
			continue
		}
		res.Launched = append(res.Launched, *inst)
		for _, o := range inst.Unavailable {
			p.Unavailable.Mark(now, o.InstanceType, o.Zone, o.CapacityType)
		}
		if inst.ReservationID != "" {
			if c.reservedUsed == nil {
				c.reservedUsed = map[string]int{}
			}
			c.reservedUsed[inst.ReservationID]++
		}
		p.recordLaunch(ctx, c, n, inst, now)
		p.Log.Info("launched", "pool", n.Pool, "instance", inst.ID, "instanceType", inst.InstanceType, "zone", inst.Zone, "capacityType", inst.CapacityType, "pods", len(n.Pods))
		// The new instance holds these pods now; a replan in this pass
		// must see it as in flight.
		c.instances = append(c.instances, *inst)
		if err := p.nominateAll(ctx, c, n.Pods, *inst, now, res); err != nil {
			return nil, err
		}
		c.planned[inst.ID] = append(c.planned[inst.ID], n.Pods...)
	}
	return retry, nil
}

// MaxFailureEventsPerPass bounds the FailedProvisioning Events one pass
// records; the rest are logged (and counted in Result.Unschedulable). An
// unservable pod is reported again by the next pass that sees it.
const MaxFailureEventsPerPass = 25

type failure struct {
	pod    *corev1.Pod
	reason string
}

func (p *Provisioner) reportFailures(ctx context.Context, failed []failure) {
	if len(failed) == 0 {
		return
	}
	// Passes in different minutes start at different pods, so every pod
	// is told in time even when more than the cap stay unservable.
	start := int(p.now().Unix()/60) * MaxFailureEventsPerPass % len(failed)
	for i := 0; i < len(failed); i++ {
		f := failed[(start+i)%len(failed)]
		if i == MaxFailureEventsPerPass {
			p.Log.Warn("more pods cannot be served; their Events are left for later passes",
				"pods", len(failed)-i, "reason", f.reason)
			return
		}
		p.event(ctx, kube.PodTarget(f.pod), corev1.EventTypeWarning, kube.ReasonFailedProvisioning, f.reason)
	}
}

// giveUpUnregistered forgets instances that have run longer than the
// registration timeout without their node registering: the pods planned
// onto them are planned again in this pass. It terminates nothing: the
// provisioner's role may not, and only the reaper's garbage collection
// decides that an instance is Joist's to end.
func (p *Provisioner) giveUpUnregistered(c *cluster, res *Result) {
	registered := c.registered()
	now := p.now()
	var keep []launch.Instance
	for _, inst := range c.instances {
		if registered[inst.ID] || !garbage.Expired(inst.LaunchTime, now, p.RegistrationTimeout) {
			keep = append(keep, inst)
			continue
		}
		p.Log.Warn("instance never registered; planning its pods again", "instance", inst.ID, "pool", inst.Pool, "launched", inst.LaunchTime)
		res.GivenUp = append(res.GivenUp, inst.ID)
		c.todo = append(c.todo, c.planned[inst.ID]...)
		delete(c.planned, inst.ID)
	}
	c.instances = keep
	c.byID, c.indexed = nil, 0
}

// maxPlanAttempts bounds the replans after capacity errors in one pass;
// what is still unplaced waits for the next event or the safety net.
const maxPlanAttempts = 4

// launchConcurrency is how many launches one pass sends at once.
const launchConcurrency = 8

// nominateConcurrency is how many nominations (and their Events) one
// pass sends at once: each is a write of its own, and a pass placing 20
// pods onto coming capacity spent a third of a second on them in turn
// (docs/scale.md). Well within the client's burst (wiring.KubeBurst).
const nominateConcurrency = 8

// nominateAll nominates the pods onto inst, nominateConcurrency at a
// time; the first error stops those not yet sent and is returned.
func (p *Provisioner) nominateAll(ctx context.Context, c *cluster, list []*corev1.Pod, inst launch.Instance, now time.Time, res *Result) error {
	if len(list) == 1 {
		return p.nominate(ctx, c, list[0], inst, now, res)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(nominateConcurrency)
	var mu sync.Mutex
	for _, pod := range list {
		g.Go(func() error {
			var one Result
			if err := p.nominate(gctx, c, pod, inst, now, &one); err != nil {
				return err
			}
			mu.Lock()
			res.Nominated += one.Nominated
			mu.Unlock()
			return nil
		})
	}
	return g.Wait()
}

// nominate records on a pending pod the instance it was planned onto
// (the binder binds it there once the node is Ready), and an Event.
func (p *Provisioner) nominate(ctx context.Context, c *cluster, pod *corev1.Pod, inst launch.Instance, now time.Time, res *Result) error {
	instance := inst.ID
	nominate := p.Kube.Nominate
	if c.moving[pod.UID] {
		// Still running on a node going away: the plan is its
		// replacement, which every pass counts (pods.AnnotationReplacement).
		nominate = func(ctx context.Context, pod *corev1.Pod, instance string, _ time.Time, _ map[string]string) error {
			return p.Kube.NominateReplacement(ctx, pod, instance)
		}
	}
	// The binder labels the node with what the pod selects on, as this
	// catalog gives it (it may know types the embedded one does not).
	var labels map[string]string
	if it, ok := p.Catalog.Lookup(inst.InstanceType); ok {
		labels = pods.InstanceLabelsFor(pod, it.LabelsFor(c.instanceClass(inst)))
	}
	if err := nominate(ctx, pod, instance, now, labels); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // changed since read; the next pass sees the truth
		}
		return err
	}
	res.Nominated++
	p.event(ctx, kube.PodTarget(pod), corev1.EventTypeNormal, kube.ReasonNominated, kube.NominatedMessage(instance, inst.InstanceType, inst.Zone, inst.CapacityType))
	return nil
}

// poolPrices are the prices the cluster's overlays set on a pool's
// offerings (fromcatalog.PoolPrices): what the launch prioritizes by and
// the launched node's price.
func (p *Provisioner) poolPrices(ctx context.Context, c *cluster, pool string) map[string]float64 {
	spec := c.spec
	return fromcatalog.PoolPrices(p.Catalog, fromcatalog.Cluster{Pools: spec.Pools, NodeClasses: spec.NodeClasses, Overlays: spec.Overlays, ZoneIDs: p.zoneIDs(ctx, c)}, pool)
}

// recordLaunch tells Kubernetes and CloudWatch about a launched node, at
// its offering's price as its pool plans it (fromcatalog.OfferingPrice).
func (p *Provisioner) recordLaunch(ctx context.Context, c *cluster, n scheduling.NewNode, inst *launch.Instance, now time.Time) {
	price := fromcatalog.OfferingPrice(p.Catalog, p.poolPrices(ctx, c, n.Pool), inst.InstanceType, inst.Zone, inst.CapacityType)
	p.Metrics.Count(metrics.NodesCreated, 1, map[string]string{
		metrics.DimPool: n.Pool, metrics.DimCapacityType: inst.CapacityType, metrics.DimInstanceType: inst.InstanceType,
	})
	p.Metrics.Count(metrics.LaunchedPricePerHour, price, map[string]string{metrics.DimPool: n.Pool})
	for _, pod := range n.Pods {
		p.Metrics.Observe(metrics.PodsCreationToLaunch, now.Sub(pod.CreationTimestamp.Time).Seconds(), map[string]string{metrics.DimPool: n.Pool})
	}
	node := inst.PrivateDNS
	if node == "" {
		node = inst.ID
	}
	p.event(ctx, kube.NodeTarget(node), corev1.EventTypeNormal, kube.ReasonLaunched,
		fmt.Sprintf("Launched instance %s (%s, %s, %s) for pool %q with %d pods at $%.4f/h", inst.ID, inst.InstanceType, inst.Zone, inst.CapacityType, n.Pool, len(n.Pods), price))
}

// event records a Kubernetes Event; failing to is logged, never fatal.
func (p *Provisioner) event(ctx context.Context, target kube.EventTarget, typ, reason, msg string) {
	if err := p.Kube.Event(ctx, target, typ, reason, msg); err != nil {
		p.Log.Warn("record event", "reason", reason, "object", target.String(), "error", err.Error())
	}
}

func (p *Provisioner) launch(ctx context.Context, c *cluster, n scheduling.NewNode, unavailable func(t, z, ct string) bool) (*launch.Instance, error) {
	spec := c.spec
	var pool *model.Pool
	for _, pl := range spec.Pools {
		if pl.Name == n.Pool {
			pool = pl
		}
	}
	if pool == nil {
		return nil, fmt.Errorf("pool %q not found", n.Pool)
	}
	nc, ok := spec.NodeClasses[pool.NodeClass]
	if !ok {
		return nil, fmt.Errorf("pool %q: node class %q not found", pool.Name, pool.NodeClass)
	}
	opts := launchOptions(p.Catalog, n, pool, nc, p.poolPrices(ctx, c, pool.Name), unavailable)
	if len(opts) == 0 {
		return nil, fmt.Errorf("pool %q: no launchable offering left for the planned node", pool.Name)
	}
	// The token covers the pods (with the instance each was planned onto
	// before, if any) and the options: a retry of the same plan (a crashed
	// invocation, a duplicate event) gets the same instance back from
	// CreateFleet, while a plan changed by a capacity error, or made again
	// because the instance it chose died or never registered, is a new
	// request.
	uids := make([]string, len(n.Pods))
	for i, pod := range n.Pods {
		uids[i] = string(pod.UID) + "@" + pods.PlannedInstance(pod)
	}
	sort.Strings(uids)
	parts := append([]string{p.Cluster, pool.Name}, uids...)
	for _, o := range opts {
		parts = append(parts, o.InstanceType+"/"+o.Zone+"/"+o.CapacityType+o.ReservationID)
	}
	return p.Launcher.Launch(ctx, launch.Request{Pool: pool, Class: nc, Options: opts, Labels: nodeLabels(n.Labels), Token: launch.Token(parts...)})
}

// nodeLabels are the labels a node is told to register with: the plan's,
// less those the kubelet and the cloud set themselves (and kubelet refuses
// to take from --node-labels).
func nodeLabels(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		switch k {
		case model.LabelInstanceType, model.LabelZone, model.LabelRegion, model.LabelArch, model.LabelOS, model.LabelHostname:
			continue
		}
		out[k] = v
	}
	return out
}
