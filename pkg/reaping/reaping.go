// Package reaping is the reaper's disruption loop: it reads the truth
// (nodes, pods, specs), asks pkg/disruption what to retire, and retires it
// through the termination engine (pkg/termination), continuing every
// retirement already under way, whoever began it (a disruption decision,
// an interruption, kubectl delete node).
//
// A drain must advance at least every 10 s, but the reaper is scheduled
// once a minute and a Lambda cannot sleep through a minute cheaply. The
// reaper therefore loops inside its invocation: one pass, then another
// every Interval (5 s) while there is work in progress (a node being
// retired, or a rule due within the loop: an empty node's TTL, an expiry,
// a consolidation's validation), for at most
// Loop (50 s, leaving the 120 s timeout room for a slow pass). The next
// scheduled invocation picks up where it stopped, from the node. This
// needs no new infrastructure, permission or message contract (a delayed
// SQS message to itself would need a queue, sqs:SendMessage and
// duplicate handling), and costs nothing when nothing is being retired,
// which is most minutes.
package reaping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/provisioning"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/termination"
)

// Defaults of the loop.
const (
	DefaultInterval = 5 * time.Second
	DefaultLoop     = 50 * time.Second
)

// Locker takes the cluster's decider lease.
type Locker interface {
	Acquire(ctx context.Context) (*kube.Held, error)
}

// Reaper runs disruption passes.
type Reaper struct {
	Kube       *kube.Client
	Specs      func(context.Context) (*model.Spec, error)
	Terminator *termination.Terminator
	// Lock, when set, is taken around each decision (not around drain
	// steps, which continue decisions already made).
	Lock Locker
	Log  *slog.Logger
	// Clock is the clock (nil: the real one; tests pass a
	// k8s.io/utils/clock/testing clock).
	Clock clock.PassiveClock
	// Metrics, when set, counts decisions.
	Metrics *metrics.Recorder
	// Interval between passes and the Loop's length (defaults above).
	Interval, Loop time.Duration
	// Catalog prices nodes and their replacements for consolidation
	// (snapshot.go); nil: consolidation only deletes.
	Catalog func(context.Context) (*catalog.Catalog, error)
	// Policy is Karpenter's preference and minValues policies, which
	// consolidation plans under as the provisioner does.
	Policy scheduling.Options
	// SchedulerConfig is Karpenter's --scheduler-config, whose default
	// topology spread constraints consolidation gives the pods it would
	// move, as the provisioner does (nil: none).
	SchedulerConfig *scheduling.SchedulerConfig
	// Replace runs a provisioning pass for nodes going away, without
	// taking the Lease (the reaper holds it around each decision):
	// provisioning.Provisioner.Replace with no Lock. It launches the
	// replacements of decisions that need new capacity (expiry, drift,
	// replace-consolidation); nil retires such nodes at once, as
	// Karpenter v1 does on expiry.
	Replace func(ctx context.Context, r provisioning.Retiring) (*provisioning.Result, error)
	// Cloud lists the cluster's instances: which nodes are Joist's
	// (termination.Owned; without it none is) and the drift rule's EC2
	// facts.
	Cloud Cloud
	// Cluster is the cluster's name, as its instances are tagged.
	Cluster string
	// NodeRepair turns node repair on (Karpenter's NodeRepair feature
	// gate: disruption.Snapshot.NodeRepair).
	NodeRepair bool
	// NoSpotToSpot refuses spot-to-spot consolidation (Karpenter's
	// SpotToSpotConsolidation=false: disruption.Snapshot.NoSpotToSpot).
	NoSpotToSpot bool
	// ReplacementTimeout bounds the wait for replacements to turn Ready
	// (default termination.DefaultReplacementTimeout).
	ReplacementTimeout time.Duration
}

// Result is what a pass (or a loop of them) did.
type Result struct {
	Passes   int
	Stamped  []string
	Retired  []disruption.Decision
	Blocked  []disruption.Blocked
	Finished []string // nodes whose retirement completed
	// InProgress are nodes still being retired after the last pass,
	// replacement-first ones waiting for their replacements included.
	InProgress []string
	// Replacing are nodes waiting for their replacements to turn Ready.
	Replacing []string
	// NextDue is the soonest a rule fires for a node (an empty node's
	// TTL, an expiry, a consolidation's validation; zero: none).
	NextDue time.Time
}

func (r *Reaper) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

// Run loops passes while work is in progress, within Loop and ctx's
// deadline (keeping 15 s of it spare).
func (r *Reaper) Run(ctx context.Context) (Result, error) {
	interval, loop := r.Interval, r.Loop
	if interval <= 0 {
		interval = DefaultInterval
	}
	if loop <= 0 {
		loop = DefaultLoop
	}
	end := time.Now().Add(loop)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-15*time.Second).Before(end) {
		end = dl.Add(-15 * time.Second)
	}
	var total Result
	var errs []error
	for {
		res, err := r.Pass(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		total.Passes++
		total.Stamped = append(total.Stamped, res.Stamped...)
		total.Retired = append(total.Retired, res.Retired...)
		total.Finished = append(total.Finished, res.Finished...)
		total.Blocked = res.Blocked
		total.InProgress, total.NextDue = res.InProgress, res.NextDue
		next := time.Now().Add(interval)
		busy := len(res.InProgress) > 0 || (!res.NextDue.IsZero() && res.NextDue.Before(end))
		if !busy || next.After(end) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
		}
	}
	return total, errors.Join(errs...)
}

// Pass is one round: finalizers on Joist's nodes, one decision under the
// lease, then one step of every retirement in progress.
func (r *Reaper) Pass(ctx context.Context) (Result, error) {
	var res Result
	spec, err := r.Specs(ctx)
	if err != nil {
		return res, fmt.Errorf("reaper: specs: %w", err)
	}
	nodes, err := r.Kube.Nodes(ctx)
	if err != nil {
		return res, err
	}
	snap := disruption.Snapshot{Now: r.now(), Pools: spec.Pools, Planned: map[string]int{}, NodeRepair: r.NodeRepair, NoSpotToSpot: r.NoSpotToSpot,
		Declared: spec.Declared, SpecPartial: spec.Partial,
		PodsOn: func(node string) ([]*corev1.Pod, error) { return r.podsOn(ctx, node) }}
	// Which nodes are Joist's is read from EC2 (termination.Ownership),
	// after the nodes (a node listed has its instance listed, whatever
	// its state) and while the pods are read: neither read waits for the
	// other.
	var tagged []launch.Instance
	var terr error
	taggedDone := make(chan struct{})
	go func() {
		defer close(taggedDone)
		tagged, terr = r.tagged(ctx)
	}()
	onNode, err := r.readPods(ctx, nodes, snap.Planned)
	<-taggedDone
	if err != nil {
		return res, err
	}
	log := r.Log
	var errs []error

	// The termination engine needs each node's terminationGracePeriod:
	// its pool's, and a node retired for repair is drained within its
	// repair policy's too.
	r.Terminator.GracePeriod = func(n *corev1.Node) *time.Duration {
		var grace *time.Duration
		if p := disruption.PoolOf(n, spec.Pools); p != nil {
			grace = p.Disruption.TerminationGracePeriod
		}
		if n.Annotations[termination.AnnotationReason] == disruption.ReasonUnhealthy {
			grace = disruption.RepairGracePeriod(n, grace, r.now())
		}
		return grace
	}

	// Without the instances' listing no node is Joist's, so nothing is
	// decided or stepped this pass.
	if terr != nil {
		errs = append(errs, terr)
	}
	owned := termination.Owned(r.Cluster, tagged)
	for _, n := range nodes {
		if !owned.Node(n) {
			// Room and topology for consolidation's simulation alone.
			if nd := onNode[n.Name]; nd != nil {
				nd.Node = n
				snap.Others = append(snap.Others, *nd)
			} else {
				snap.Others = append(snap.Others, disruption.Node{Node: n})
			}
			continue
		}
		if err := r.Terminator.EnsureFinalizer(ctx, n); err != nil {
			errs = append(errs, err)
		}
		nd := onNode[n.Name]
		if nd == nil {
			nd = &disruption.Node{}
		}
		nd.Node = n
		snap.Nodes = append(snap.Nodes, *nd)
	}

	// The catalog, read once for the pass (nil without one configured):
	// consolidation prices with it, drift asks which types it still
	// offers, and the pools' cost is priced from it.
	var cat *catalog.Catalog
	var catErr error
	if r.Catalog != nil {
		if cat, catErr = r.Catalog(ctx); catErr != nil {
			cat = nil
		}
	}
	reads := &reservationReads{cloud: r.Cloud}
	if err := r.consolidationInputs(ctx, spec, cat, catErr, reads, &snap); err != nil {
		errs = append(errs, err)
	}
	r.recordCost(cat, spec, snap.Nodes)
	// The budgets the graceful rules ask about the pods they would evict;
	// unread, those rules leave alone every node with a pod to evict.
	pdbs, err := r.pdbs(ctx)
	if err != nil {
		errs = append(errs, err)
		snap.PDBsUnread = pdbs == nil
	}
	snap.PDBs = pdbs
	if terr == nil {
		r.driftFacts(ctx, spec, cat, catErr, tagged, reads, &snap)
	}

	// Decide under the lease; a lease held elsewhere only skips the
	// decision, never the drains in progress.
	if err := r.decide(ctx, snap, nodes, &res); err != nil {
		if errors.Is(err, kube.ErrLeaseHeld) {
			log.Info("decider lease held elsewhere; no disruption decision this pass", "holder", err.Error())
		} else {
			errs = append(errs, err)
		}
	}

	// Step every retirement in progress.
	retiring := map[string]bool{}
	for _, n := range nodes {
		if n.DeletionTimestamp != nil && owned.Node(n) {
			retiring[n.Name] = true
		}
	}
	for _, d := range res.Retired {
		retiring[d.Node] = true
	}
	names := make([]string, 0, len(retiring))
	for n := range retiring {
		names = append(names, n)
	}
	sort.Strings(names)
	res.InProgress = append(res.InProgress, res.Replacing...)
	for _, name := range names {
		st, err := r.Terminator.Step(ctx, name)
		if err != nil {
			errs = append(errs, err)
			res.InProgress = append(res.InProgress, name)
			continue
		}
		switch {
		case st.Done:
			res.Finished = append(res.Finished, name)
		case st.Phase != termination.PhaseNotDeleting:
			res.InProgress = append(res.InProgress, name)
		}
	}
	return res, errors.Join(errs...)
}

// readPods reads every pod of the cluster, page by page, and keeps of each
// what the decisions read (disruption.Node.Add: most bound pods as a
// ~100-byte scheduling.BoundPod), by node; pending pods count, in
// planned, onto the instance they are planned for, and are kept as its
// node's incoming pods (disruption.Node.AddIncoming) once it has one, as
// are running pods waiting for their replacement. Finished pods are
// left out. Every pod of a node waiting for its replacements is kept
// whole (advanceReplacing reads them all). A large read is split by
// namespace, each list of its own revision (kube.EachPod): a pod bound
// to a node during the read may be missed, as with a read a moment
// older, and no decision rests on one read (an empty node is retired
// after consolidateAfter, a consolidation command is checked again
// before it is carried out, and a node is drained, its pods evicted,
// before it goes).
func (r *Reaper) readPods(ctx context.Context, nodes []*corev1.Node, planned map[string]int) (map[string]*disruption.Node, error) {
	replacing := map[string]bool{}
	for _, n := range nodes {
		if !termination.ReplacingSince(n).IsZero() {
			replacing[n.Name] = true
		}
	}
	onNode := map[string]*disruption.Node{}
	// The nodes by instance id, for the pods on their way to one
	// (disruption.Node.Incoming).
	byInstance := map[string]string{}
	for _, n := range nodes {
		if id := pods.InstanceID(n.Spec.ProviderID); id != "" {
			byInstance[id] = n.Name
		}
	}
	in := kube.NewInterner()
	// Finished pods neither need a node nor take room on one: the API
	// server leaves them out (a cluster's completed Jobs' pods are not
	// sent), and the check below keeps a reader that ignores field
	// selectors (a fake) right. A finished pod planned onto an instance
	// will never run there, so it does not keep the instance's node from
	// being empty.
	nodeOf := func(node string) *disruption.Node {
		n := onNode[node]
		if n == nil {
			n = &disruption.Node{}
			onNode[node] = n
		}
		return n
	}
	// Most bound pods are built as a BoundPod straight from the wire
	// (kube.EachBoundPod: the BoundPod NewBoundPod gives for the pod
	// reduced), those meeting disruption.Node.AddBound's conditions; the
	// rest are handed over whole.
	read := kube.BoundRead{
		Annotations: disruption.WholeAnnotations,
		WholeNode:   func(node string) bool { return replacing[node] },
		Bound:       func(node string, b scheduling.BoundPod) { nodeOf(node).AddBound(b) },
	}
	err := r.Kube.EachBoundPod(ctx, unfinishedSelector, in, read, func(p *corev1.Pod) {
		if pods.Finished(p) {
			return
		}
		node := p.Spec.NodeName
		if node == "" {
			if id := pods.PlannedInstance(p); id != "" {
				planned[id]++
				if to, ok := byInstance[id]; ok {
					nodeOf(to).AddIncoming(p, in.ResourceList)
				}
			}
			return
		}
		// A running pod waiting to move to its node's replacement keeps
		// that replacement from looking empty, and its room there.
		if id := pods.ReplacementInstance(p); id != "" && pods.Reschedulable(p) {
			planned[id]++
			if to, ok := byInstance[id]; ok && to != node {
				nodeOf(to).AddIncoming(p, in.ResourceList)
			}
		}
		n := nodeOf(node)
		if replacing[node] {
			n.AddWhole(p, in.ResourceList)
		} else {
			n.Add(p, in.ResourceList)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	return onNode, nil
}

// unfinishedSelector selects the pods that are not finished.
var unfinishedSelector = fields.AndSelectors(
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
).String()

// podsOn reads the pods bound to a node again, whole (compacted):
// consolidation moves them in its simulation (disruption.Snapshot.PodsOn).
func (r *Reaper) podsOn(ctx context.Context, node string) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	in := kube.NewInterner()
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	err := r.Kube.EachPodBorrowed(ctx, sel, in, func(p *corev1.Pod) {
		if p.Spec.NodeName != node {
			return
		}
		whole := *p
		scheduling.Compact(&whole, in.ResourceList)
		out = append(out, &whole)
	})
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	return out, nil
}

func (r *Reaper) decide(ctx context.Context, snap disruption.Snapshot, nodes []*corev1.Node, res *Result) error {
	if r.Lock != nil {
		held, err := r.Lock.Acquire(ctx)
		if err != nil {
			return err
		}
		defer func() {
			if err := held.Release(ctx, nil); err != nil {
				r.Log.Warn("release lease", "error", err.Error())
			}
		}()
		snap.Unavailable = unavailableOn(held.Annotations()[provisioning.AnnotationUnavailable], snap.Now, r.Log)
	}
	plan := disruption.Decide(snap)
	var errs []error
	stamp := snap.Now.UTC().Format(time.RFC3339)
	for _, n := range plan.Stamp {
		if err := r.annotate(ctx, n, map[string]*string{disruption.AnnotationEmptinessTimestamp: &stamp}); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Stamped = append(res.Stamped, n)
		r.Log.Info("node is empty", "node", n, "since", stamp)
	}
	for _, n := range plan.Unstamp {
		if err := r.annotate(ctx, n, map[string]*string{disruption.AnnotationEmptinessTimestamp: nil, disruption.AnnotationConsolidatableAt: nil, disruption.AnnotationConsolidationCommand: nil}); err != nil {
			errs = append(errs, err)
		}
	}
	for _, n := range plan.StampConsolidation {
		if err := r.annotate(ctx, n, map[string]*string{disruption.AnnotationConsolidatableAt: &stamp, disruption.AnnotationConsolidationCommand: &plan.ConsolidationCommand}); err != nil {
			errs = append(errs, err)
			continue
		}
		r.Log.Info("consolidation command found; acting once it holds", "node", n, "command", plan.ConsolidationCommand, "since", stamp)
	}
	// Replacement-first retirements already under way: begin those whose
	// replacements are Ready, give up (or, forceful, go on) past the
	// timeout, and re-run the replacement pass for the rest (idempotent:
	// pods whose live replacement exists are not planned again).
	errs = append(errs, r.advanceReplacing(ctx, snap, nodes, res))
	commands := map[string][]string{}
	var order []string
	for _, d := range plan.Retire {
		replace := d.Replace && r.Replace != nil
		var err error
		if replace {
			err = r.Terminator.Prepare(ctx, d.Node, d.Reason)
		} else {
			err = r.Terminator.Begin(ctx, d.Node, d.Reason)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if replace {
			key := d.Command
			if key == "" {
				key = "node/" + d.Node
			}
			if _, ok := commands[key]; !ok {
				order = append(order, key)
			}
			commands[key] = append(commands[key], d.Node)
			res.Replacing = append(res.Replacing, d.Node)
		}
		res.Retired = append(res.Retired, d)
		r.Log.Info("disrupting node", "node", d.Node, "pool", d.Pool, "reason", d.Reason, "detail", d.Detail, "replacementFirst", replace, "command", d.Command, "savingsPerHour", d.SavingsPerHour)
		if r.Metrics != nil {
			r.Metrics.Count(metrics.NodesDisrupted, 1, map[string]string{metrics.DimPool: d.Pool, metrics.DimReason: d.Reason})
			r.Metrics.Count(metrics.DisruptionDecisions, 1, map[string]string{metrics.DimReason: d.Reason})
			if d.SavingsPerHour > 0 {
				r.Metrics.ObserveAmount(metrics.DisruptionSavings, d.SavingsPerHour, map[string]string{metrics.DimPool: d.Pool, metrics.DimReason: d.Reason})
			}
		}
	}
	for _, key := range order {
		if err := r.replace(ctx, commands[key]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, m := range plan.Moves {
		decision := "rejected"
		if m.Approved {
			decision = "approved"
		}
		r.Log.Info("consolidation score", "pool", m.Pool, "score", m.Score, "threshold", 1.0/disruption.BalancedK, "decision", decision)
		if r.Metrics != nil {
			r.Metrics.Count(metrics.ConsolidationMoves, 1, map[string]string{metrics.DimPool: m.Pool, metrics.DimDecision: decision})
		}
	}
	for _, b := range plan.Blocked {
		r.Log.Info("disruption blocked", "node", b.Node, "reason", b.Reason, "why", b.Why)
		if err := r.Kube.Event(ctx, kube.NodeTarget(b.Node), corev1.EventTypeNormal, termination.ReasonDisruptionBlocked, b.Reason+": "+b.Why); err != nil {
			r.Log.Warn("record event", "node", b.Node, "error", err.Error())
		}
	}
	res.Blocked = plan.Blocked
	res.NextDue = nextDue(snap, plan)
	return errors.Join(errs...)
}

// advanceReplacing moves every node waiting for its replacements on.
func (r *Reaper) advanceReplacing(ctx context.Context, snap disruption.Snapshot, nodes []*corev1.Node, res *Result) error {
	timeout := r.ReplacementTimeout
	if timeout <= 0 {
		timeout = termination.DefaultReplacementTimeout
	}
	var errs []error
	var again []string
	for _, n := range snap.Nodes {
		since := termination.ReplacingSince(n.Node)
		if since.IsZero() || n.Node.DeletionTimestamp != nil {
			continue
		}
		name, reason := n.Node.Name, n.Node.Annotations[termination.AnnotationReason]
		st := termination.ReplacementsOf(n.Node, n.Pods, nodes, pods.Reschedulable)
		switch {
		case st.Ready():
			if err := r.Terminator.Begin(ctx, name, reason); err != nil {
				errs = append(errs, err)
				continue
			}
			r.Log.Info("replacements ready; draining node", "node", name, "reason", reason, "waited", snap.Now.Sub(since).String())
		case snap.Now.Sub(since) >= timeout && disruption.Forceful(reason):
			if err := r.Terminator.Begin(ctx, name, reason); err != nil {
				errs = append(errs, err)
				continue
			}
			r.Log.Warn("replacements not ready in time; draining node anyway (forceful)", "node", name, "reason", reason, "unplanned", st.Unplanned, "waiting", st.Waiting)
		case snap.Now.Sub(since) >= timeout || r.Replace == nil:
			why := fmt.Sprintf("%s: replacements not ready within %s (unplanned pods %v, waiting for %v)", reason, timeout, st.Unplanned, st.Waiting)
			if err := r.Terminator.Abandon(ctx, name, why); err != nil {
				errs = append(errs, err)
			}
		default:
			res.Replacing = append(res.Replacing, name)
			again = append(again, name)
		}
	}
	if len(again) > 0 {
		errs = append(errs, r.replace(ctx, again))
	}
	return errors.Join(errs...)
}

// replace runs the replacement pass for nodes about to be retired.
func (r *Reaper) replace(ctx context.Context, nodes []string) error {
	res, err := r.Replace(ctx, provisioning.Retiring{Nodes: nodes})
	if err != nil {
		return fmt.Errorf("replace %v: %w", nodes, err)
	}
	var launched []string
	for _, i := range res.Launched {
		launched = append(launched, i.ID)
	}
	if len(launched) > 0 || res.Nominated > 0 || len(res.Unschedulable) > 0 {
		r.Log.Info("replacement pass", "nodes", nodes, "launched", launched, "nominated", res.Nominated, "unschedulable", len(res.Unschedulable))
	}
	return nil
}

// nextDue is the soonest time a rule will fire for a node not retired by
// this plan: an empty node's TTL, an expiry, a consolidation's validation.
func nextDue(snap disruption.Snapshot, plan disruption.Plan) time.Time {
	stamped := map[string]bool{}
	for _, n := range plan.Stamp {
		stamped[n] = true
	}
	unstamped := map[string]bool{}
	for _, n := range plan.Unstamp {
		unstamped[n] = true
	}
	var due time.Time
	soonest := func(t time.Time) {
		if t.After(snap.Now) && (due.IsZero() || t.Before(due)) {
			due = t
		}
	}
	// A node that expires soon.
	for _, n := range snap.Nodes {
		if p := disruption.PoolOf(n.Node, snap.Pools); p != nil && p.Disruption.ExpireAfter != nil && !disruption.Retiring(n.Node) {
			soonest(n.Node.CreationTimestamp.Add(*p.Disruption.ExpireAfter))
		}
	}
	// A consolidation waiting out its validation delay.
	for _, name := range plan.StampConsolidation {
		for _, n := range snap.Nodes {
			if p := disruption.PoolOf(n.Node, snap.Pools); n.Node.Name == name && p != nil && p.Disruption.ConsolidateAfter != nil {
				soonest(snap.Now.Add(max(disruption.ValidationDelay, *p.Disruption.ConsolidateAfter)))
			}
		}
	}
	for _, n := range snap.Nodes {
		p := disruption.PoolOf(n.Node, snap.Pools)
		if at := disruption.ConsolidatableAt(n.Node); p != nil && p.Disruption.ConsolidateAfter != nil && !at.IsZero() && !unstamped[n.Node.Name] {
			soonest(at.Add(max(disruption.ValidationDelay, *p.Disruption.ConsolidateAfter)))
		}
	}
	for _, n := range snap.Nodes {
		p := disruption.PoolOf(n.Node, snap.Pools)
		if p == nil || p.Disruption.ConsolidateAfter == nil || unstamped[n.Node.Name] || disruption.Retiring(n.Node) {
			continue
		}
		since := disruption.EmptySince(n.Node)
		if stamped[n.Node.Name] {
			since = snap.Now
		}
		if since.IsZero() {
			continue
		}
		t := since.Add(*p.Disruption.ConsolidateAfter)
		if !t.After(snap.Now) {
			continue // due now: decided (or blocked) this pass
		}
		if due.IsZero() || t.Before(due) {
			due = t
		}
	}
	return due
}

// annotate sets annotations on a node (a nil value removes the key).
func (r *Reaper) annotate(ctx context.Context, node string, values map[string]*string) error {
	ann := map[string]any{}
	for k, v := range values {
		if v == nil {
			ann[k] = nil
		} else {
			ann[k] = *v
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	_, err := r.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("annotate node %s: %w", node, err)
	}
	return nil
}
