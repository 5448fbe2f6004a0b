package termination

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/pods"
)

// Tier is a drain tier. Karpenter drains in this order, each tier only
// once the one before it is empty, so DaemonSet pods (logging, networking)
// outlive the workloads they serve and critical pods go last.
type Tier int

// The tiers, in drain order.
const (
	TierNonCritical Tier = iota
	TierNonCriticalDaemon
	TierCritical
	TierCriticalDaemon
)

func (t Tier) String() string {
	if t < TierNonCritical || t > TierCriticalDaemon {
		return "none"
	}
	return [...]string{"non-critical", "non-critical DaemonSet", "critical", "critical DaemonSet"}[t]
}

// TierOf is the pod's drain tier: critical means priority class
// system-cluster-critical or system-node-critical.
func TierOf(p *corev1.Pod) Tier {
	critical := p.Spec.PriorityClassName == "system-cluster-critical" || p.Spec.PriorityClassName == "system-node-critical"
	ds := ownedBy(p, "DaemonSet")
	switch {
	case critical && ds:
		return TierCriticalDaemon
	case critical:
		return TierCritical
	case ds:
		return TierNonCriticalDaemon
	default:
		return TierNonCritical
	}
}

func ownedBy(p *corev1.Pod, kind string) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == kind {
			return true
		}
	}
	return false
}

// Disposition is what the drain does with one pod.
type Disposition int

// Dispositions.
const (
	// Ignore: not waited on (mirror pod, tolerates the disrupted taint,
	// finished, or stuck terminating past its grace period).
	Ignore Disposition = iota
	// Wait: already terminating within its grace period.
	Wait
	// Evict through the Eviction API (PDBs honoured).
	Evict
	// Block: do-not-disrupt protects it now (pods.DoNotDisrupt); not
	// evicted, holds the drain until the protection ends or the deadline.
	Block
	// ForceDelete: the termination deadline is near enough that the pod's
	// own grace period would end past it; delete, bypassing PDBs and
	// do-not-disrupt.
	ForceDelete
)

func (d Disposition) String() string {
	return [...]string{"ignore", "wait", "evict", "block", "force-delete"}[d]
}

// Classify decides what the drain does with p at now, given the node's
// termination deadline (zero: none).
func Classify(p *corev1.Pod, now, deadline time.Time) Disposition {
	if pods.Finished(p) {
		return Ignore
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror || ownedBy(p, "Node") {
		return Ignore
	}
	if pods.ToleratesDisrupted(p) {
		return Ignore
	}
	if p.DeletionTimestamp != nil {
		// The deletionTimestamp is when the pod's grace period ends: a
		// pod still there after it is stuck, and not waited on.
		if now.After(p.DeletionTimestamp.Time) {
			return Ignore
		}
		return Wait
	}
	if !deadline.IsZero() && !now.Before(deadline.Add(-podGrace(p))) {
		return ForceDelete
	}
	if pods.DoNotDisrupt(p, now) {
		return Block
	}
	return Evict
}

func podGrace(p *corev1.Pod) time.Duration {
	if p.Spec.TerminationGracePeriodSeconds == nil {
		return 30 * time.Second
	}
	return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
}

// DisruptedTaint is karpenter.sh/disrupted:NoSchedule.
func DisruptedTaint() corev1.Taint {
	return corev1.Taint{Key: TaintDisrupted, Effect: corev1.TaintEffectNoSchedule}
}
