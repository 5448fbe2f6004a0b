package interruption

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/catalog"
)

// TagCluster is the tag that makes an instance the cluster's
// (launch.TagCluster; repeated here to keep this file pure).
const TagCluster = "joist.sh/cluster"

// RetireReason is the reason a node interrupted by AWS is retired with
// (the termination engine's reason annotation, Karpenter's disruption
// reason for the same case).
const RetireReason = "Interrupted"

// AnnotationRebalance on a Provisioner or NodePool opts its nodes into
// replacement on a rebalance recommendation (value RebalanceReplace).
const (
	AnnotationRebalance = "joist.sh/rebalance"
	RebalanceReplace    = "replace"
)

// Action is what Joist does about one instance of a message.
type Action string

const (
	// ActionNone: nothing to do (foreign or unknown instance, no node, an
	// event that changes nothing). Logged.
	ActionNone Action = "None"
	// ActionNotify: record an Event and a metric, change nothing.
	ActionNotify Action = "Notify"
	// ActionReplace: launch the node's replacement first, then retire it.
	ActionReplace Action = "Replace"
	// ActionDelete: the instance is gone; delete its Node now.
	ActionDelete Action = "Delete"
)

// Instance is EC2's truth about the instance a message names.
type Instance struct {
	ID           string
	InstanceType string
	Zone         string
	CapacityType string
	State        string
	Tags         map[string]string
}

// Facts are what Decide needs beside the message: EC2's instance (nil
// when EC2 does not know it), its node (nil when none has its providerID)
// and whether the node's pool opted into rebalance replacement.
type Facts struct {
	Cluster  string
	Instance *Instance
	Node     *corev1.Node
	// RebalanceReplace: the node's pool carries joist.sh/rebalance=replace.
	RebalanceReplace bool
}

// Decision is what Decide says.
type Decision struct {
	Action Action
	// Unavailable is the offering to avoid in the replacement's plan (the
	// spot pool that is being reclaimed, the reservation being taken back).
	Unavailable *catalog.OfferingKey
	// Reason says why, for logs and Events.
	Reason string
}

// Decide says what a message means for one of its instances. It is pure:
// the handler reads the facts and acts on the decision.
func Decide(m *Message, f Facts) Decision {
	if m.Kind == KindNoop {
		return Decision{Action: ActionNone, Reason: "event needs no action"}
	}
	if f.Instance == nil {
		return Decision{Action: ActionNone, Reason: "EC2 does not know the instance"}
	}
	if got := f.Instance.Tags[TagCluster]; got != f.Cluster {
		return Decision{Action: ActionNone, Reason: fmt.Sprintf("instance is not the cluster's (tag %s=%q)", TagCluster, got)}
	}
	if (m.Kind == KindInstanceTerminated || m.Kind == KindInstanceStopped) && (f.Instance.State == "pending" || f.Instance.State == "running") {
		// Events are hints: EC2 says the instance runs (a stale or
		// forged state change), so its node stays.
		return Decision{Action: ActionNone, Reason: "state change to " + m.State + ", but EC2 says the instance is " + f.Instance.State}
	}
	var d Decision
	switch m.Kind {
	case KindInstanceTerminated:
		d = Decision{Action: ActionDelete, Reason: "instance " + m.State}
	case KindSpotInterruption:
		d = Decision{Action: ActionReplace, Reason: "spot interruption warning (" + m.Action + ")",
			Unavailable: &catalog.OfferingKey{InstanceType: f.Instance.InstanceType, Zone: f.Instance.Zone, CapacityType: "spot"}}
	case KindCapacityReservation:
		d = Decision{Action: ActionReplace, Reason: "capacity reservation interruption warning (" + m.Action + ")",
			Unavailable: &catalog.OfferingKey{InstanceType: f.Instance.InstanceType, Zone: f.Instance.Zone, CapacityType: f.Instance.CapacityType}}
	case KindScheduledChange:
		d = Decision{Action: ActionReplace, Reason: "scheduled change " + healthCode(m)}
	case KindInstanceStopped:
		d = Decision{Action: ActionReplace, Reason: "instance " + m.State}
	case KindInstanceStatus, KindSystemStatus, KindScheduledEvent:
		// The health check runs every minute and an impaired instance
		// stays impaired: once its node is on its way out (its
		// retirement begun), there is nothing more to do.
		if f.Instance.State != "running" {
			return Decision{Action: ActionNone, Reason: healthReason(m) + ", but EC2 says the instance is " + f.Instance.State}
		}
		if f.Node != nil && f.Node.DeletionTimestamp != nil {
			return Decision{Action: ActionNone, Reason: healthReason(m) + "; the node is already being retired"}
		}
		d = Decision{Action: ActionReplace, Reason: healthReason(m)}
	case KindRebalance:
		if !f.RebalanceReplace {
			return Decision{Action: ActionNotify, Reason: "rebalance recommendation (the pool does not opt in with " + AnnotationRebalance + "=" + RebalanceReplace + ")"}
		}
		d = Decision{Action: ActionReplace, Reason: "rebalance recommendation (the pool opts in)"}
	default:
		return Decision{Action: ActionNone, Reason: "unknown kind " + string(m.Kind)}
	}
	if f.Node == nil {
		// An instance that never registered: nothing runs there. The
		// offering is still avoided; the provisioner replans its pods
		// once the instance is gone.
		d.Action, d.Reason = ActionNone, d.Reason+"; no node has the instance"
	}
	return d
}

func healthCode(m *Message) string {
	if d, ok := m.Detail.(*HealthDetail); ok {
		return d.EventTypeCode
	}
	return ""
}
