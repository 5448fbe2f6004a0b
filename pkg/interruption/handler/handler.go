// Package handler is the interruption function's orchestration: it reads
// a batch of the interruption queue, asks EC2 and Kubernetes for the
// truth about each named instance, decides with pkg/interruption and
// acts: the replacement first (pkg/provisioning's Replace), then the
// retirement of the node through the termination engine's hook; a node
// whose instance is gone is deleted at once.
package handler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/interruption"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/provisioning"
)

// Instances reads EC2's instances by id, whatever their tags
// (*launch.Launcher).
type Instances interface {
	Describe(ctx context.Context, ids ...string) ([]launch.Instance, error)
}

// Handler handles batches of the interruption queue.
type Handler struct {
	Cluster   string
	Kube      *kube.Client
	Instances Instances
	// Health reads the cluster's instances' status checks and scheduled
	// events for the once-a-minute health check (CheckHealth).
	Health Health
	// Specs reads the pools (for the rebalance opt-in annotation).
	Specs func(ctx context.Context) (*model.Spec, error)
	// Replace runs a provisioning pass with nodes going away
	// (provisioning.Provisioner.Replace).
	Replace func(ctx context.Context, r provisioning.Retiring) (*provisioning.Result, error)
	// Retire starts the node's retirement through the termination engine:
	// taint, drain through the Eviction API, terminate, delete. It must be
	// idempotent (a duplicate message calls it again) and return once the
	// drain is started. Nil until the engine is wired: the node is then
	// left to the reclaim (its pods move once their node is deleted).
	Retire func(ctx context.Context, node *corev1.Node) error
	// Release removes the node of an instance that is gone, without a
	// drain (its finalizer dropped, the Node deleted). Nil: a plain delete
	// (preconditioned on the node's UID).
	Release func(ctx context.Context, node *corev1.Node) error
	Log     *slog.Logger
	Metrics *metrics.Recorder
	// Clock is the clock (nil: the real one; tests pass a
	// k8s.io/utils/clock/testing clock).
	Clock clock.PassiveClock
}

func (h *Handler) now() time.Time {
	if h.Clock != nil {
		return h.Clock.Now()
	}
	return time.Now()
}

// HandleSQS handles one batch, message by message. A malformed message is
// logged and deleted (it can never succeed); a message whose handling
// failed for a reason that may pass (the API server, EC2, the Lease held
// by another decider) alone is reported in batchItemFailures, so SQS
// delivers it again and, after the queue's maxReceiveCount, moves it to
// the DLQ.
func (h *Handler) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, r := range ev.Records {
		log := h.Log.With("messageId", r.MessageId)
		m, err := interruption.Parse([]byte(r.Body))
		if err != nil {
			log.Warn("dropping a malformed interruption message", "error", err.Error())
			h.Metrics.Count(metrics.InterruptionReceivedMessages, 1, map[string]string{metrics.DimMessageType: "malformed"})
			h.Metrics.Count(metrics.InterruptionDeletedMessages, 1, nil)
			continue
		}
		h.Metrics.Count(metrics.InterruptionReceivedMessages, 1, map[string]string{metrics.DimMessageType: string(m.Kind)})
		received := receivedAt(r, m)
		if !received.IsZero() {
			h.Metrics.Observe(metrics.InterruptionMessageQueueDuration, h.now().Sub(received).Seconds(), nil)
		}
		log = log.With("kind", string(m.Kind), "detailType", m.Envelope.DetailType, "instances", m.Instances)
		if err := h.handle(ctx, log, m, received); err != nil {
			log.Error("interruption message failed; it will be delivered again", "error", err.Error())
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			continue
		}
		h.Metrics.Count(metrics.InterruptionDeletedMessages, 1, nil)
	}
	return resp, nil
}

// receivedAt is when the event was sent: the envelope's time, or, when
// AWS's placeholder is there, when SQS received it.
func receivedAt(r events.SQSMessage, m *interruption.Message) time.Time {
	if t, ok := m.SentAt(); ok {
		return t
	}
	if ms, err := strconv.ParseInt(r.Attributes["SentTimestamp"], 10, 64); err == nil {
		return time.UnixMilli(ms)
	}
	return time.Time{}
}

func (h *Handler) handle(ctx context.Context, log *slog.Logger, m *interruption.Message, received time.Time) error {
	if m.Kind == interruption.KindNoop {
		log.Info("interruption message needs no action")
		return nil
	}
	insts, err := h.Instances.Describe(ctx, m.Instances...)
	if err != nil {
		return fmt.Errorf("describe %v: %w", m.Instances, err)
	}
	byID := map[string]*launch.Instance{}
	for i := range insts {
		byID[insts[i].ID] = &insts[i]
	}
	nodes, err := h.Kube.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	nodeOf := map[string]*corev1.Node{}
	for _, n := range nodes {
		if id := pods.InstanceID(n.Spec.ProviderID); id != "" {
			nodeOf[id] = n
		}
	}
	var errs []error
	for _, id := range m.Instances {
		facts := interruption.Facts{Cluster: h.Cluster, Node: nodeOf[id]}
		if i := byID[id]; i != nil {
			facts.Instance = &interruption.Instance{ID: i.ID, InstanceType: i.InstanceType, Zone: i.Zone, CapacityType: i.CapacityType, State: i.State, Tags: i.Tags}
		}
		if m.Kind == interruption.KindRebalance && facts.Node != nil {
			if facts.RebalanceReplace, err = h.rebalanceOptIn(ctx, facts.Node); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		d := interruption.Decide(m, facts)
		l := log.With("instance", id, "action", string(d.Action), "reason", d.Reason)
		if facts.Node != nil {
			l = l.With("node", facts.Node.Name)
		}
		if err := h.act(ctx, l, m, facts, d, received); err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func (h *Handler) act(ctx context.Context, log *slog.Logger, m *interruption.Message, f interruption.Facts, d interruption.Decision, received time.Time) error {
	var unavailable []catalog.OfferingKey
	if d.Unavailable != nil {
		unavailable = append(unavailable, *d.Unavailable)
	}
	switch d.Action {
	case interruption.ActionNone:
		log.Info("interruption: no action")
		if len(unavailable) > 0 {
			// No node, but the offering is still one to avoid.
			if _, err := h.replace(ctx, provisioning.Retiring{Unavailable: unavailable}); err != nil {
				return err
			}
		}
		return nil
	case interruption.ActionNotify:
		log.Info("interruption: recorded, nothing changed")
		h.event(ctx, log, f.Node, m, d)
	case interruption.ActionDelete:
		h.event(ctx, log, f.Node, m, d)
		if h.Release != nil {
			if err := h.Release(ctx, f.Node); err != nil {
				return fmt.Errorf("release node %s: %w", f.Node.Name, err)
			}
		} else {
			uid := f.Node.UID
			err := h.Kube.CoreV1().Nodes().Delete(ctx, f.Node.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("delete node %s: %w", f.Node.Name, err)
			}
		}
		log.Info("interruption: instance gone; node deleted")
	case interruption.ActionReplace:
		h.event(ctx, log, f.Node, m, d)
		res, err := h.replace(ctx, provisioning.Retiring{Nodes: []string{f.Node.Name}, Unavailable: unavailable})
		if err != nil {
			return err
		}
		if len(res.Launched) > 0 && !received.IsZero() {
			h.Metrics.Observe(metrics.InterruptionReplacementSeconds, h.now().Sub(received).Seconds(), nil)
		}
		var launched []string
		for _, i := range res.Launched {
			launched = append(launched, i.ID)
		}
		log.Info("interruption: replacement planned", "launched", launched, "nominated", res.Nominated, "unschedulable", len(res.Unschedulable))
		if h.Retire == nil {
			log.Warn("interruption: no termination engine wired; the node is left to the reclaim")
		} else if err := h.Retire(ctx, f.Node); err != nil {
			return fmt.Errorf("retire node %s: %w", f.Node.Name, err)
		}
	}
	h.Metrics.Count(metrics.InterruptionActionsPerformed, 1, map[string]string{metrics.DimReason: string(d.Action)})
	return nil
}

// leaseAttempts is how many times a message's replacement pass tries for
// the decider Lease (each try waits up to the Lease's own 5 s) before the
// message is left for redelivery: a provisioner pass holds it for a few
// seconds, and a redelivery costs the queue's visibility timeout, a large
// part of a two-minute warning.
const leaseAttempts = 3

// replace runs the provisioning pass; a Lease held by another decider for
// longer than leaseAttempts tries is a failure that passes, so the message
// is delivered again.
func (h *Handler) replace(ctx context.Context, r provisioning.Retiring) (*provisioning.Result, error) {
	for attempt := 1; ; attempt++ {
		res, err := h.Replace(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("replacement pass: %w", err)
		}
		if !res.Skipped {
			return res, nil
		}
		if attempt == leaseAttempts || ctx.Err() != nil {
			return nil, fmt.Errorf("replacement pass: another decider held the lease %d times", attempt)
		}
	}
}

// rebalanceOptIn says whether the node's pool carries
// joist.sh/rebalance=replace.
func (h *Handler) rebalanceOptIn(ctx context.Context, n *corev1.Node) (bool, error) {
	pool := n.Labels[model.LabelNodePool]
	if pool == "" {
		pool = n.Labels[model.LabelProvisionerName]
	}
	if pool == "" || h.Specs == nil {
		return false, nil
	}
	spec, err := h.Specs(ctx)
	if err != nil {
		return false, fmt.Errorf("read specs: %w", err)
	}
	for _, p := range spec.Pools {
		if p.Name == pool {
			return p.ObjectAnnotations[interruption.AnnotationRebalance] == interruption.RebalanceReplace, nil
		}
	}
	return false, nil
}

// event tells the node's Events what AWS said and what Joist does.
func (h *Handler) event(ctx context.Context, log *slog.Logger, n *corev1.Node, m *interruption.Message, d interruption.Decision) {
	if n == nil {
		return
	}
	reason := map[interruption.Kind]string{
		interruption.KindSpotInterruption:    kube.ReasonSpotInterrupted,
		interruption.KindRebalance:           kube.ReasonSpotRebalanceRecommendation,
		interruption.KindScheduledChange:     kube.ReasonInstanceUnhealthy,
		interruption.KindInstanceStopped:     kube.ReasonInstanceStopping,
		interruption.KindInstanceTerminated:  kube.ReasonInstanceTerminating,
		interruption.KindCapacityReservation: kube.ReasonCapacityReservationInterrupted,
		interruption.KindInstanceStatus:      kube.ReasonInstanceUnhealthy,
		interruption.KindSystemStatus:        kube.ReasonInstanceUnhealthy,
		interruption.KindScheduledEvent:      kube.ReasonInstanceUnhealthy,
	}[m.Kind]
	if reason == "" {
		return
	}
	msg := fmt.Sprintf("%s: %s", d.Reason, map[interruption.Action]string{
		interruption.ActionReplace: "launching the replacement first, then retiring the node",
		interruption.ActionDelete:  "deleting the node",
		interruption.ActionNotify:  "no action",
	}[d.Action])
	if err := h.Kube.Event(ctx, kube.NodeTarget(n.Name), corev1.EventTypeWarning, reason, msg); err != nil {
		log.Warn("record event", "reason", reason, "error", err.Error())
	}
}
