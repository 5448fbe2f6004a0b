package termination

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/pods"
)

// AnnotationReplacingSince is when a replacement-first retirement began
// (RFC 3339): the node is tainted so nothing new lands on it, its pods
// are nominated to their replacements (pods.AnnotationReplacement), and
// it is deleted only once every replacement is Ready. Karpenter keeps the
// same state on its in-memory command; Joist keeps it on the node so any
// later invocation carries on.
const AnnotationReplacingSince = "joist.sh/replacing-since"

// DefaultReplacementTimeout is how long a replacement-first retirement
// waits for its replacements to turn Ready before it is given up (graceful
// reasons: the node is untainted) or goes on without them (forceful ones).
const DefaultReplacementTimeout = 10 * time.Minute

// Prepare marks a node for a replacement-first retirement for reason:
// the finalizer, the disrupted taint, the reason and AnnotationReplacingSince.
// The node keeps running its pods. Calling it again changes nothing.
func (t *Terminator) Prepare(ctx context.Context, name, reason string) error {
	stamp := t.now().UTC().Format(time.RFC3339)
	node, err := t.mutate(ctx, name, func(n *corev1.Node) bool {
		if n.DeletionTimestamp != nil {
			return false
		}
		changed := addFinalizer(n)
		changed = addTaint(n) || changed
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		if reason != "" && n.Annotations[AnnotationReason] == "" {
			n.Annotations[AnnotationReason] = reason
			changed = true
		}
		if n.Annotations[AnnotationReplacingSince] == "" {
			n.Annotations[AnnotationReplacingSince] = stamp
			changed = true
		}
		return changed
	})
	if err != nil || node == nil {
		return err
	}
	t.log().Info("replacing node before retiring it", "node", name, "reason", reason)
	return nil
}

// Abandon undoes Prepare on a node that is not deleting: the taint, the
// reason and the stamp go, and the node takes pods again. why is told in a
// DisruptionBlocked event.
func (t *Terminator) Abandon(ctx context.Context, name, why string) error {
	node, err := t.mutate(ctx, name, func(n *corev1.Node) bool {
		if n.DeletionTimestamp != nil {
			return false
		}
		changed := false
		if _, ok := n.Annotations[AnnotationReplacingSince]; ok {
			delete(n.Annotations, AnnotationReplacingSince)
			delete(n.Annotations, AnnotationReason)
			changed = true
		}
		if hasTaint(n) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintDisrupted })
			changed = true
		}
		return changed
	})
	if err != nil || node == nil {
		return err
	}
	t.event(ctx, kube.NodeTarget(name), corev1.EventTypeNormal, ReasonDisruptionBlocked, why)
	t.log().Info("replacement-first retirement given up", "node", name, "why", why)
	return nil
}

// ReplacingSince is the node's AnnotationReplacingSince, zero when absent
// or unreadable.
func ReplacingSince(n *corev1.Node) time.Time {
	s, err := time.Parse(time.RFC3339, n.Annotations[AnnotationReplacingSince])
	if err != nil {
		return time.Time{}
	}
	return s
}

// Replacements is where a preparing node's pods stand.
type Replacements struct {
	// Unplanned are reschedulable pods with no replacement instance yet.
	Unplanned []string
	// Waiting are replacement instances whose node is not Ready yet.
	Waiting []string
}

// Ready reports whether every pod's replacement is Ready.
func (r Replacements) Ready() bool { return len(r.Unplanned) == 0 && len(r.Waiting) == 0 }

// ReplacementsOf says, for the reschedulable pods on node (onNode), which
// have no replacement and which replacement instances are not Ready yet.
// nodes are all the cluster's nodes. A replacement is Ready when its node
// is Ready and not itself retiring (deleting or tainted disrupted). A pod
// nominated to its own node counts as unplanned.
func ReplacementsOf(node *corev1.Node, onNode []*corev1.Pod, nodes []*corev1.Node, reschedulable func(*corev1.Pod) bool) Replacements {
	byInstance := map[string]*corev1.Node{}
	for _, n := range nodes {
		if id := pods.InstanceID(n.Spec.ProviderID); id != "" {
			byInstance[id] = n
		}
	}
	own := pods.InstanceID(node.Spec.ProviderID)
	var r Replacements
	seen := map[string]bool{}
	for _, p := range onNode {
		if !reschedulable(p) {
			continue
		}
		id := pods.ReplacementInstance(p)
		if id == "" || id == own {
			r.Unplanned = append(r.Unplanned, pods.Key(p))
			continue
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		n := byInstance[id]
		if n == nil || !pods.NodeReady(n) || n.DeletionTimestamp != nil || hasTaint(n) {
			r.Waiting = append(r.Waiting, id)
		}
	}
	return r
}
