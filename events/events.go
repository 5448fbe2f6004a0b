// Package events holds Joist's event contracts: the detail types the
// forwarder puts on the cluster's EventBridge bus, the patterns the bus
// rules use to route them, and parsing of what arrives in a function
// (an SQS body wrapping an EventBridge event, or the event itself).
//
// Events are hints. A function that receives one reconciles from the
// Kubernetes API and EC2; it never trusts the pods or nodes an event names.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Source is the EventBridge source of every event the forwarder puts.
const Source = "joist.forwarder"

// Detail types.
const (
	DetailTypePendingPods = "Pending Pods"
	DetailTypeNodeReady   = "Node Ready"
	// DetailTypeNodesDeleting wakes the reaper: Joist nodes started
	// deleting (kubectl delete node), so their drain should begin now,
	// not at the next scheduled run.
	DetailTypeNodesDeleting = "Nodes Deleting"
	// DetailTypeNodesEmptied wakes the reaper too: the last pod that
	// needed a Joist node left it, so its emptiness clock should start
	// now, not at the next scheduled run.
	DetailTypeNodesEmptied = "Nodes Emptied"
)

// ReaperWakeDetailTypes are the detail types routed to the reaper, which
// takes them as a wake-up only: it reconciles every node from the
// Kubernetes API, whatever the event names.
var ReaperWakeDetailTypes = []string{DetailTypeNodesDeleting, DetailTypeNodesEmptied}

// MaxEntriesPerPut is EventBridge's limit of entries in one PutEvents call.
const MaxEntriesPerPut = 10

// MaxPodsPerEvent bounds one pending-pods event well under EventBridge's
// 256 KiB entry limit (a pod reference is under 200 bytes).
const MaxPodsPerEvent = 500

// PodRef names a pod. The UID lets a function tell a recreated pod of the
// same name from the one the event saw.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// PendingPods says that pods were seen unschedulable (PodScheduled=False,
// reason Unschedulable, no node).
type PendingPods struct {
	Cluster    string    `json:"cluster"`
	Pods       []PodRef  `json:"pods"`
	ObservedAt time.Time `json:"observedAt"`
}

// NodeReady says that a node turned Ready.
type NodeReady struct {
	Cluster    string    `json:"cluster"`
	Node       string    `json:"node"`
	ProviderID string    `json:"providerID,omitempty"`
	ObservedAt time.Time `json:"observedAt"`
}

// NodesDeleting names Joist nodes (held by the termination finalizer)
// seen starting to delete.
type NodesDeleting struct {
	Cluster    string    `json:"cluster"`
	Nodes      []string  `json:"nodes"`
	ObservedAt time.Time `json:"observedAt"`
}

// NodesEmptied names Joist nodes whose last reschedulable pod (not a
// DaemonSet's, static or finished) was seen leaving.
type NodesEmptied struct {
	Cluster    string    `json:"cluster"`
	Nodes      []string  `json:"nodes"`
	ObservedAt time.Time `json:"observedAt"`
}

// Envelope is the EventBridge event as delivered to targets (SQS bodies
// and Lambda invocations carry the same JSON).
type Envelope struct {
	Version    string          `json:"version,omitempty"`
	ID         string          `json:"id,omitempty"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account,omitempty"`
	Time       time.Time       `json:"time,omitempty"`
	Region     string          `json:"region,omitempty"`
	Resources  []string        `json:"resources,omitempty"`
	Detail     json.RawMessage `json:"detail"`
}

// ErrNotJoist marks input that is not a Joist event at all. Callers drop
// it (log and delete) rather than retry: it can never succeed.
var ErrNotJoist = errors.New("not a Joist event")

// Event is one Joist event: a *PendingPods, a *NodeReady, a
// *NodesDeleting or a *NodesEmptied. Only this package's types implement
// it (its method is unexported), so a switch over them is the whole list.
type Event interface{ joistEvent() }

func (*PendingPods) joistEvent()   {}
func (*NodeReady) joistEvent()     {}
func (*NodesDeleting) joistEvent() {}
func (*NodesEmptied) joistEvent()  {}

// Parse reads an EventBridge event carrying a Joist detail (an Event).
// Anything else is an error wrapping ErrNotJoist.
func Parse(body []byte) (Event, error) {
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJoist, err)
	}
	if env.Source != Source {
		return nil, fmt.Errorf("%w: source %q", ErrNotJoist, env.Source)
	}
	if len(env.Detail) == 0 {
		return nil, fmt.Errorf("%w: %s event without detail", ErrNotJoist, env.DetailType)
	}
	switch env.DetailType {
	case DetailTypePendingPods:
		var d PendingPods
		if err := json.Unmarshal(env.Detail, &d); err != nil {
			return nil, fmt.Errorf("%w: %s detail: %v", ErrNotJoist, env.DetailType, err)
		}
		return &d, nil
	case DetailTypeNodeReady:
		var d NodeReady
		if err := json.Unmarshal(env.Detail, &d); err != nil {
			return nil, fmt.Errorf("%w: %s detail: %v", ErrNotJoist, env.DetailType, err)
		}
		if d.Node == "" {
			return nil, fmt.Errorf("%w: %s detail without node", ErrNotJoist, env.DetailType)
		}
		if err := nodeName(env.DetailType, d.Node); err != nil {
			return nil, err
		}
		return &d, nil
	case DetailTypeNodesDeleting:
		var d NodesDeleting
		if err := json.Unmarshal(env.Detail, &d); err != nil {
			return nil, fmt.Errorf("%w: %s detail: %v", ErrNotJoist, env.DetailType, err)
		}
		if err := nodeNames(env.DetailType, d.Nodes); err != nil {
			return nil, err
		}
		return &d, nil
	case DetailTypeNodesEmptied:
		var d NodesEmptied
		if err := json.Unmarshal(env.Detail, &d); err != nil {
			return nil, fmt.Errorf("%w: %s detail: %v", ErrNotJoist, env.DetailType, err)
		}
		if err := nodeNames(env.DetailType, d.Nodes); err != nil {
			return nil, err
		}
		return &d, nil
	default:
		return nil, fmt.Errorf("%w: detail-type %q", ErrNotJoist, env.DetailType)
	}
}

func nodeNames(detailType string, nodes []string) error {
	if len(nodes) == 0 {
		return fmt.Errorf("%w: %s detail without nodes", ErrNotJoist, detailType)
	}
	for _, n := range nodes {
		if err := nodeName(detailType, n); err != nil {
			return err
		}
	}
	return nil
}

func nodeName(detailType, node string) error {
	if errs := validation.IsDNS1123Subdomain(node); len(errs) > 0 {
		return fmt.Errorf("%w: %s detail: node %q is not a node name: %s", ErrNotJoist, detailType, node, strings.Join(errs, "; "))
	}
	return nil
}

// Pattern returns the EventBridge rule pattern that matches Joist events
// of the given detail types. The CDK stack and the test ground both use
// it, so the routing tested locally is the routing deployed.
func Pattern(detailTypes ...string) string {
	b, _ := json.Marshal(map[string][]string{
		"source":      {Source},
		"detail-type": detailTypes,
	})
	return string(b)
}
