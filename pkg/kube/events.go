package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EventComponent is the source component of Joist's Events, the "From"
// column of kubectl describe.
const EventComponent = "joist"

// Reasons of the Events the functions record.
const (
	// ReasonNominated (pod, Normal): the pod is planned onto an instance
	// that is coming; see NominatedMessage.
	ReasonNominated = "Nominated"
	// ReasonFailedProvisioning (pod, Warning): the simulator found no way
	// to run the pod; the message is its reason.
	ReasonFailedProvisioning = "FailedProvisioning"
	// ReasonLaunched (node, Normal): Joist launched the instance that will
	// register as this node.
	ReasonLaunched = "Launched"
	// ReasonBound (pod, Normal): the binder bound the pod to its node.
	ReasonBound = "Bound"
	// Interruption (node, Warning), Karpenter's reasons: what AWS said
	// about the node's instance, and what Joist does about it.
	ReasonSpotInterrupted                = "SpotInterrupted"
	ReasonSpotRebalanceRecommendation    = "SpotRebalanceRecommendation"
	ReasonInstanceStopping               = "InstanceStopping"
	ReasonInstanceTerminating            = "InstanceTerminating"
	ReasonInstanceUnhealthy              = "InstanceUnhealthy"
	ReasonCapacityReservationInterrupted = "CapacityReservationInterrupted"
)

// NominatedMessage is the message of a ReasonNominated event, e.g.
// "Pod should schedule on instance i-0abc (t3.large, ap-northeast-2a,
// on-demand)". Building it in one place keeps repeats identical, so they
// fold into one Event.
func NominatedMessage(instance, instanceType, zone, capacityType string) string {
	return fmt.Sprintf("Pod should schedule on instance %s (%s, %s, %s)", instance, instanceType, zone, capacityType)
}

// EventTarget is the object an Event is about.
type EventTarget struct {
	Kind      string // "Pod" or "Node"
	Namespace string // empty for a Node
	Name      string
	UID       types.UID
}

// PodTarget is a pod as an Event's object. The UID matters: kubectl
// describe pod selects the pod's events by it, so events of an earlier
// pod of the same name do not show.
func PodTarget(p *corev1.Pod) EventTarget {
	return EventTarget{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// NodeTarget is a node as an Event's object, by name alone, since Joist
// speaks of a node before it exists (Launched). The UID is the node's
// name, as the kubelet does for its own node events: kubectl describe
// node looks for events with either the node's UID or its name there, so
// these show once the node exists.
func NodeTarget(name string) EventTarget {
	return EventTarget{Kind: "Node", Name: name, UID: types.UID(name)}
}

// maxEventMessage is the longest message Joist writes; the API server
// rejects longer notes on events.k8s.io and kubectl's table would not
// show them anyway.
const maxEventMessage = 1024

// Event records a core/v1 Event about obj, from EventComponent.
//
// Identical events (same object, type, reason and message) are one
// object: its name is derived from them, so a repeat finds the existing
// Event and increments its count and lastTimestamp, as kubectl describe
// shows with "(x3 over 5m)". The functions run in fresh containers, so no
// in-memory correlator (client-go's) could do that for them. The API
// server deletes an Event one --event-ttl (1h by default) after its last
// write, which makes that the window: a repeat after an hour of quiet
// starts a new series.
//
// Only the verbs Joist's ClusterRole grants on events are used: create,
// and patch, which also reads the current count (an empty patch returns
// the object). The count increment is a merge patch conditional on the
// resourceVersion read; a Conflict (another function counting the same
// event) or a vanished Event is retried a few times.
//
// Events explain, they decide nothing: callers log the error and carry
// on, never fail or retry an invocation over it.
func (c *Client) Event(ctx context.Context, obj EventTarget, eventType, reason, message string) error {
	if obj.Kind == "" || obj.Name == "" {
		return fmt.Errorf("event %s: object has no kind or name", reason)
	}
	if eventType != corev1.EventTypeNormal && eventType != corev1.EventTypeWarning {
		return fmt.Errorf("event %s on %s: type %q is neither Normal nor Warning", reason, obj, eventType)
	}
	message = truncate(message, maxEventMessage)
	namespace := obj.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault // where cluster-scoped objects' events live
	}
	name := eventName(obj, eventType, reason, message)
	events := c.CoreV1().Events(namespace)

	var err error
	for attempt := 0; attempt < 4; attempt++ {
		now := metav1.NewTime(time.Now())
		ev := &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			InvolvedObject: corev1.ObjectReference{
				APIVersion: "v1", Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID,
			},
			Reason:              reason,
			Message:             message,
			Type:                eventType,
			Source:              corev1.EventSource{Component: EventComponent},
			ReportingController: EventComponent,
			FirstTimestamp:      now,
			LastTimestamp:       now,
			Count:               1,
		}
		if _, err = events.Create(ctx, ev, metav1.CreateOptions{}); err == nil || !apierrors.IsAlreadyExists(err) {
			break
		}
		// A repeat: read the count through an empty patch, then increment.
		var cur *corev1.Event
		cur, err = events.Patch(ctx, name, types.MergePatchType, []byte("{}"), metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			continue // expired since the create: create again
		}
		if err != nil {
			break
		}
		patch, _ := json.Marshal(map[string]any{
			"metadata":      map[string]any{"resourceVersion": cur.ResourceVersion},
			"count":         max(cur.Count, 1) + 1,
			"lastTimestamp": now,
		})
		_, err = events.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil || !(apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("event %s on %s: %w", reason, obj, err)
	}
	return nil
}

// String is kind namespace/name, for errors and logs.
func (t EventTarget) String() string {
	if t.Namespace == "" {
		return t.Kind + " " + t.Name
	}
	return t.Kind + " " + t.Namespace + "/" + t.Name
}

// eventName is "<object>.<hash>": deterministic, so a repeat is the same
// object; prefixed with the object's name, as the kubelet's and
// client-go's are, so kubectl get events reads naturally. The hash covers
// the UID, so a new pod of the same name starts its own events.
func eventName(obj EventTarget, eventType, reason, message string) string {
	h := sha256.New()
	for _, s := range []string{obj.Kind, obj.Namespace, obj.Name, string(obj.UID), eventType, reason, message} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	suffix := "." + hex.EncodeToString(h.Sum(nil)[:8])
	// An event's name is a DNS subdomain of at most 253 characters, and
	// so is the object's: cut the object's and keep the cut alphanumeric
	// at its end.
	prefix := obj.Name
	if len(prefix) > 253-len(suffix) {
		prefix = strings.TrimRight(prefix[:253-len(suffix)], ".-")
	}
	return prefix + suffix
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "..."
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
