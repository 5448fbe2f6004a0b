// Package termination retires one node the way Karpenter's termination
// controller does. It is Joist's one termination engine: disruption
// (emptiness, expiry, ...), interruption and `kubectl delete node` all end a
// node through it.
//
// A node is retired in two moves:
//
//   - Begin marks it (finalizer karpenter.sh/termination, taint
//     karpenter.sh/disrupted:NoSchedule, the reason) and deletes it; the
//     finalizer keeps the Node object until the engine is done. A node
//     Joist launched already carries the finalizer (EnsureFinalizer), so a
//     plain `kubectl delete node` starts the same retirement.
//   - Step advances a deleting node by one non-blocking step and reports
//     whether it is done: taint and exclude it from load balancers; evict
//     its pods through the Eviction API in Karpenter's tiers (PDBs are
//     honoured: a 429 is retried at the next Step); force-delete pods at
//     the terminationGracePeriod deadline; wait for its VolumeAttachments;
//     terminate its instance (tag-checked by the EC2 side); remove the
//     finalizer, which lets the API server delete the Node.
//
// All progress lives on the node (deletionTimestamp, taint, deadline
// annotation) and on its pods, so any later invocation of any function
// continues a retirement another one began. Step never sleeps: the caller
// decides how often to call it.
package termination

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/pods"
)

// Names Karpenter users know, read and written on nodes and pods.
const (
	// Finalizer holds a Joist node's object until its instance is ended.
	Finalizer = "karpenter.sh/termination"
	// TaintDisrupted keeps new pods off a node being retired.
	TaintDisrupted = pods.TaintDisrupted
	// LabelExcludeLB takes a retiring node out of external load balancers.
	LabelExcludeLB = "node.kubernetes.io/exclude-from-external-load-balancers"
	// AnnotationDoNotDisrupt (v1) on a pod: not evicted while it protects
	// the pod ("true", or a duration from the pod's start:
	// pods.DoNotDisruptUntil), which blocks the drain until then or the
	// termination deadline. On a node it blocks voluntary disruption
	// (pkg/disruption).
	AnnotationDoNotDisrupt = pods.AnnotationDoNotDisrupt
	// AnnotationDoNotEvict is v0.20's pod annotation ("true" alone).
	AnnotationDoNotEvict = pods.AnnotationDoNotEvict
	// AnnotationDeadline is when the drain stops waiting (RFC 3339): the
	// deletion time plus the pool's terminationGracePeriod. Karpenter's
	// name for it.
	AnnotationDeadline = "karpenter.sh/nodeclaim-termination-timestamp"
	// AnnotationReason is why Joist retires the node (Empty, Expired,
	// Interrupted, ...); absent when someone else deleted it.
	AnnotationReason = "joist.sh/disruption-reason"
)

// Event reasons on nodes and pods.
const (
	ReasonTerminating       = "Terminating"
	ReasonEvicted           = "Evicted"
	ReasonDisruptionBlocked = "DisruptionBlocked"
	// ReasonInvalidDoNotDisrupt: a pod's do-not-disrupt value is neither
	// "true" nor a positive duration, so it protects nothing (Karpenter's
	// event reason).
	ReasonInvalidDoNotDisrupt = "InvalidDoNotDisruptAnnotation"
)

// EC2 ends instances. Implementations must refuse an instance that is not
// tagged joist.sh/cluster=<cluster> and treat one already gone as done
// (launch.Launcher.Terminate does both).
type EC2 interface {
	Terminate(ctx context.Context, ids ...string) error
	// Gone reports whether the instance no longer runs (unknown,
	// stopping, stopped, shutting down or terminated).
	Gone(ctx context.Context, id string) (bool, error)
}

// Terminator retires nodes.
type Terminator struct {
	Kube *kube.Client
	EC2  EC2
	Log  *slog.Logger
	// Clock is the clock (nil: the real one; tests pass a
	// k8s.io/utils/clock/testing clock).
	Clock clock.PassiveClock
	// GracePeriod returns the terminationGracePeriod of the node's pool
	// (nil: wait for PDBs and do-not-disrupt pods forever). Unset: none.
	GracePeriod func(*corev1.Node) *time.Duration
	// Metrics, when set, counts evictions and terminations.
	Metrics *metrics.Recorder
}

func (t *Terminator) count(name string, dims map[string]string) {
	if t.Metrics != nil {
		t.Metrics.Count(name, 1, dims)
	}
}

// PoolName is the pool label of a Joist node.
func PoolName(n *corev1.Node) string {
	if v := n.Labels["karpenter.sh/nodepool"]; v != "" {
		return v
	}
	return n.Labels["karpenter.sh/provisioner-name"]
}

// Phase is where a retirement stands.
type Phase string

// Phases, in order.
const (
	PhaseNotDeleting Phase = "NotDeleting" // the node is not being deleted: nothing to do
	PhaseDraining    Phase = "Draining"    // pods are still on it
	PhaseVolumes     Phase = "Volumes"     // waiting for VolumeAttachments to go
	PhaseGone        Phase = "Gone"        // instance terminated and node released (or already gone)
)

// Status is what one Step saw and did.
type Status struct {
	Phase Phase
	// Done: the node object is released (or was already gone).
	Done bool
	// Remaining pods the drain waits for.
	Remaining int
	Evicted   []string
	// Blocked are pods whose eviction a PodDisruptionBudget refused (429)
	// or that carry do-not-disrupt; retried at the next Step.
	Blocked      []string
	ForceDeleted []string
	Instance     string
}

func (t *Terminator) now() time.Time {
	if t.Clock != nil {
		return t.Clock.Now()
	}
	return time.Now()
}

func (t *Terminator) log() *slog.Logger {
	if t.Log == nil {
		return slog.Default()
	}
	return t.Log
}

// Begin starts retiring a node for reason: it adds the finalizer, the
// taint and the reason, then deletes the Node; Step does the rest.
// Calling it again on a node already retiring changes nothing.
func (t *Terminator) Begin(ctx context.Context, name, reason string) error {
	node, err := t.mutate(ctx, name, func(n *corev1.Node) bool {
		changed := addFinalizer(n)
		changed = addTaint(n) || changed
		if reason != "" && n.Annotations[AnnotationReason] == "" {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[AnnotationReason] = reason
			changed = true
		}
		return changed
	})
	if err != nil || node == nil {
		return err
	}
	if node.DeletionTimestamp != nil {
		return nil
	}
	if err := t.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	t.event(ctx, kube.NodeTarget(name), corev1.EventTypeNormal, ReasonTerminating, "Retiring node: "+reason)
	t.log().Info("retiring node", "node", name, "reason", reason)
	return nil
}

// EnsureFinalizer adds the termination finalizer to a node that lacks it,
// so deleting the node (kubectl delete node) drains it and ends its
// instance. A node being deleted is left alone (finalizers cannot be added
// then).
func (t *Terminator) EnsureFinalizer(ctx context.Context, node *corev1.Node) error {
	return EnsureFinalizer(ctx, t.Kube, node)
}

// EnsureFinalizer is Terminator.EnsureFinalizer for callers without a
// Terminator (the binder, when a node turns Ready).
func EnsureFinalizer(ctx context.Context, c *kube.Client, node *corev1.Node) error {
	// A merge patch conditional on the resourceVersion read (the list of
	// finalizers is replaced whole), so the only verb is patch; a conflict
	// rereads.
	for attempt := 0; attempt < 5; attempt++ {
		if node.DeletionTimestamp != nil || slices.Contains(node.Finalizers, Finalizer) {
			return nil
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": node.ResourceVersion,
			"finalizers":      append(slices.Clone(node.Finalizers), Finalizer),
		}})
		_, err := c.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("add finalizer to node %s: %w", node.Name, err)
		}
		name := node.Name
		if node, err = c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("get node %s: %w", name, err)
		}
	}
	return fmt.Errorf("add finalizer to node %s: kept conflicting", node.Name)
}

// Release removes a node without draining it, for a node whose instance
// is already gone: the finalizer goes and the Node is deleted.
func (t *Terminator) Release(ctx context.Context, name string) error {
	if _, err := t.mutate(ctx, name, func(n *corev1.Node) bool {
		i := slices.Index(n.Finalizers, Finalizer)
		if i < 0 {
			return false
		}
		n.Finalizers = slices.Delete(n.Finalizers, i, i+1)
		return true
	}); err != nil {
		return err
	}
	if err := t.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	return nil
}

// Ownership is the one rule for which nodes are Joist's: a node is when its
// EC2 instance carries Joist's cluster tag (launch.TagCluster) for this
// cluster, the truth EC2 keeps about who launched it. Labels are no
// evidence: a node Karpenter launched, during a migration with both
// running, carries the same karpenter.sh labels, and Joist must never hold
// it with its finalizer, empty, expire or retire it. Nor is the finalizer:
// Karpenter's has the same name.
//
// Build it from launch.Launcher.Tagged, which lists terminated instances
// too (for about an hour), so a node whose instance Joist just ended is
// still Joist's to release.
type Ownership map[string]bool

// Owned is the rule read from EC2: the instances tagged for cluster.
func Owned(cluster string, insts []launch.Instance) Ownership {
	o := make(Ownership, len(insts))
	for _, i := range insts {
		if i.Tags[launch.TagCluster] == cluster {
			o[i.ID] = true
		}
	}
	return o
}

// Node reports whether Joist launched the node's instance.
func (o Ownership) Node(n *corev1.Node) bool {
	id := pods.InstanceID(n.Spec.ProviderID)
	return id != "" && o[id]
}

// Step advances the retirement of the named node by one non-blocking step.
// A node that is gone is Done; a node that is not being deleted is left
// alone (PhaseNotDeleting).
func (t *Terminator) Step(ctx context.Context, name string) (Status, error) {
	node, err := t.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Status{Phase: PhaseGone, Done: true}, nil
	}
	if err != nil {
		return Status{}, fmt.Errorf("get node %s: %w", name, err)
	}
	if node.DeletionTimestamp == nil {
		return Status{Phase: PhaseNotDeleting}, nil
	}
	if !slices.Contains(node.Finalizers, Finalizer) {
		// Not held by Joist: the API server removes it by itself.
		return Status{Phase: PhaseGone, Done: true}, nil
	}
	log := t.log().With("node", name)
	now := t.now()

	// 1. Mark: taint, out of load balancers, the drain's deadline.
	node, err = t.mark(ctx, node)
	if err != nil || node == nil {
		return Status{Phase: PhaseGone, Done: node == nil}, err
	}
	deadline := Deadline(node)

	// An instance already gone has nothing left to drain: release the
	// node at once (Karpenter deletes such a node without draining).
	if id := pods.InstanceID(node.Spec.ProviderID); id != "" {
		gone, err := t.EC2.Gone(ctx, id)
		if err != nil {
			return Status{Phase: PhaseDraining}, err
		}
		if gone {
			log.Info("instance already gone; releasing the node without draining", "instance", id)
			if err := t.Release(ctx, name); err != nil {
				return Status{Phase: PhaseDraining}, err
			}
			return Status{Phase: PhaseGone, Done: true, Instance: id}, nil
		}
	}

	// 2. Drain.
	st, ignored, err := t.drain(ctx, node, now, deadline, log)
	if err != nil || st.Remaining > 0 {
		return st, err
	}

	// 3. VolumeAttachments of drained pods (not waited on past the deadline).
	if deadline.IsZero() || now.Before(deadline) {
		n, err := t.attachments(ctx, node.Name, ignored)
		if err != nil {
			return st, err
		}
		if n > 0 {
			st.Phase = PhaseVolumes
			log.Info("drained; waiting for volume attachments", "attachments", n)
			return st, nil
		}
	}

	// 4. The instance.
	st.Instance = pods.InstanceID(node.Spec.ProviderID)
	if st.Instance != "" {
		if err := t.EC2.Terminate(ctx, st.Instance); err != nil {
			return st, fmt.Errorf("terminate instance %s of node %s: %w", st.Instance, name, err)
		}
		t.event(ctx, kube.NodeTarget(name), corev1.EventTypeNormal, ReasonTerminating, "Terminated instance "+st.Instance)
	}

	// 5. Release the node.
	if _, err := t.mutate(ctx, name, func(n *corev1.Node) bool {
		i := slices.Index(n.Finalizers, Finalizer)
		if i < 0 {
			return false
		}
		n.Finalizers = slices.Delete(n.Finalizers, i, i+1)
		return true
	}); err != nil {
		return st, err
	}
	log.Info("node retired", "instance", st.Instance, "reason", node.Annotations[AnnotationReason])
	if pool := PoolName(node); pool != "" {
		t.count(metrics.NodesTerminated, map[string]string{metrics.DimPool: pool})
	}
	st.Phase, st.Done = PhaseGone, true
	return st, nil
}

// Deadline is the node's termination deadline, zero when it has none.
func Deadline(node *corev1.Node) time.Time {
	v := node.Annotations[AnnotationDeadline]
	if v == "" {
		return time.Time{}
	}
	d, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}
	}
	return d
}

// mark taints the node, labels it out of load balancers and stamps the
// deadline, once. It returns nil when the node is gone.
func (t *Terminator) mark(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	var grace *time.Duration
	if t.GracePeriod != nil {
		grace = t.GracePeriod(node)
	}
	needs := func(n *corev1.Node) bool {
		return !hasTaint(n) || n.Labels[LabelExcludeLB] != "true" || (grace != nil && n.Annotations[AnnotationDeadline] == "")
	}
	if !needs(node) {
		return node, nil
	}
	return t.mutate(ctx, node.Name, func(n *corev1.Node) bool {
		if !needs(n) {
			return false
		}
		addTaint(n)
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[LabelExcludeLB] = "true"
		if grace != nil && n.Annotations[AnnotationDeadline] == "" && n.DeletionTimestamp != nil {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[AnnotationDeadline] = n.DeletionTimestamp.Add(*grace).UTC().Format(time.RFC3339)
		}
		return true
	})
}

// drain does one round of the drain. It returns the pods the drain
// ignores (for the volume wait).
func (t *Terminator) drain(ctx context.Context, node *corev1.Node, now, deadline time.Time, log *slog.Logger) (Status, []*corev1.Pod, error) {
	st := Status{Phase: PhaseDraining}
	onNode, err := t.Kube.PodsOnNode(ctx, node.Name)
	if err != nil {
		return st, nil, err
	}
	var ignored []*corev1.Pod
	tiers := map[Tier][]*corev1.Pod{}
	first := Tier(-1)
	var errs []error
	for _, p := range onNode {
		d := Classify(p, now, deadline)
		switch d {
		case Ignore:
			ignored = append(ignored, p)
			continue
		case ForceDelete:
			st.Remaining++
			if err := t.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &p.UID},
			}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("force-delete pod %s: %w", pods.Key(p), err))
				continue
			}
			st.ForceDeleted = append(st.ForceDeleted, pods.Key(p))
			log.Warn("termination deadline reached; deleting pod", "pod", pods.Key(p), "deadline", deadline)
			t.event(ctx, kube.PodTarget(p), corev1.EventTypeWarning, ReasonEvicted, "Deleted at node "+node.Name+"'s termination deadline")
			continue
		}
		st.Remaining++
		tier := TierOf(p)
		if first < 0 || tier < first {
			first = tier
		}
		until, _, invalid := pods.DoNotDisruptUntil(p)
		if d == Block {
			st.Blocked = append(st.Blocked, pods.Key(p))
			msg := fmt.Sprintf("Pod %s has %s; the drain waits", pods.Key(p), AnnotationDoNotDisrupt)
			if !until.IsZero() {
				msg = fmt.Sprintf("Pod %s has %s until %s; the drain waits", pods.Key(p), AnnotationDoNotDisrupt, until.UTC().Format(time.RFC3339))
			}
			t.event(ctx, kube.NodeTarget(node.Name), corev1.EventTypeNormal, ReasonDisruptionBlocked, msg)
			continue
		}
		if d == Evict {
			if invalid != nil {
				// Karpenter's InvalidDoNotDisruptAnnotation: the pod's
				// owner learns why it was evicted anyway.
				t.event(ctx, kube.PodTarget(p), corev1.EventTypeWarning, ReasonInvalidDoNotDisrupt, invalid.Error())
			}
			tiers[tier] = append(tiers[tier], p)
		}
	}
	// Only the first tier that still has pods is evicted.
	for _, p := range tiers[first] {
		blocked, err := t.evict(ctx, p)
		switch {
		case err != nil:
			errs = append(errs, err)
		case blocked:
			st.Blocked = append(st.Blocked, pods.Key(p))
			t.count(metrics.PodsEvictionRequests, map[string]string{metrics.DimReason: "Blocked"})
		default:
			t.count(metrics.PodsEvictionRequests, map[string]string{metrics.DimReason: "Evicted"})
			st.Evicted = append(st.Evicted, pods.Key(p))
			t.event(ctx, kube.PodTarget(p), corev1.EventTypeNormal, ReasonEvicted, "Evicted from node "+node.Name+" being retired")
		}
	}
	if st.Remaining > 0 {
		log.Info("draining", "remaining", st.Remaining, "tier", first.String(), "evicted", len(st.Evicted), "blocked", st.Blocked, "forceDeleted", len(st.ForceDeleted))
	}
	return st, ignored, errors.Join(errs...)
}

// evict asks the Eviction API to evict p. blocked reports a refusal by a
// PodDisruptionBudget (429), retried at the next Step. The request is made
// once: client-go would otherwise wait out a Retry-After for up to ~100 s.
func (t *Terminator) evict(ctx context.Context, p *corev1.Pod) (blocked bool, err error) {
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}},
	}
	err = t.Kube.CoreV1().RESTClient().Post().Namespace(p.Namespace).Resource("pods").Name(p.Name).
		SubResource("eviction").Body(ev).MaxRetries(0).Do(ctx).Error()
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsTooManyRequests(err):
		t.log().Info("eviction refused by a PodDisruptionBudget; retrying later", "pod", pods.Key(p), "reason", err.Error())
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone, or replaced by a pod of the same name.
		return false, nil
	case apierrors.IsInternalError(err):
		// More than one PDB selects the pod: the API refuses to choose.
		t.event(ctx, kube.PodTarget(p), corev1.EventTypeWarning, ReasonDisruptionBlocked, "Eviction failed: "+err.Error())
		return true, nil
	default:
		return false, fmt.Errorf("evict pod %s: %w", pods.Key(p), err)
	}
}

// attachments counts the VolumeAttachments on the node other than those
// of the pods the drain ignores.
func (t *Terminator) attachments(ctx context.Context, node string, ignored []*corev1.Pod) (int, error) {
	list, err := t.Kube.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list volume attachments: %w", err)
	}
	claims := map[string]bool{}
	for _, p := range ignored {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claims[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName] = true
			}
		}
	}
	n := 0
	for _, va := range list.Items {
		if va.Spec.NodeName != node {
			continue
		}
		if pv := va.Spec.Source.PersistentVolumeName; pv != nil && len(claims) > 0 {
			vol, err := t.Kube.CoreV1().PersistentVolumes().Get(ctx, *pv, metav1.GetOptions{})
			if err == nil && vol.Spec.ClaimRef != nil && claims[vol.Spec.ClaimRef.Namespace+"/"+vol.Spec.ClaimRef.Name] {
				continue
			}
		}
		n++
	}
	return n, nil
}

// mutate reads the node, applies f and updates it when f reports a
// change, retrying conflicts. It returns the node as stored, or nil when
// the node is gone.
func (t *Terminator) mutate(ctx context.Context, name string, f func(*corev1.Node) bool) (*corev1.Node, error) {
	var out *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := t.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !f(n) {
			out = n
			return nil
		}
		out, err = t.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("update node %s: %w", name, err)
	}
	return out, nil
}

func (t *Terminator) event(ctx context.Context, target kube.EventTarget, typ, reason, msg string) {
	if err := t.Kube.Event(ctx, target, typ, reason, msg); err != nil {
		t.log().Warn("record event", "object", target.String(), "reason", reason, "error", err.Error())
	}
}

func addFinalizer(n *corev1.Node) bool {
	if slices.Contains(n.Finalizers, Finalizer) {
		return false
	}
	n.Finalizers = append(n.Finalizers, Finalizer)
	return true
}

func hasTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == TaintDisrupted && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

func addTaint(n *corev1.Node) bool {
	if hasTaint(n) {
		return false
	}
	n.Spec.Taints = append(n.Spec.Taints, DisruptedTaint())
	return true
}
