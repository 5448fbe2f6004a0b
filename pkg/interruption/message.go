// Package interruption is what Joist makes of the events AWS sends about
// an instance's life: spot interruption warnings, rebalance
// recommendations, state changes, capacity-reservation interruption
// warnings and AWS Health scheduled changes. This file parses them as AWS
// documents them (pure: standard library and aws-lambda-go's event types
// only); decide.go says what each means for a node; handler.go acts.
package interruption

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Sources and detail types, exactly as EventBridge delivers them.
const (
	SourceEC2    = "aws.ec2"
	SourceHealth = "aws.health"

	DetailTypeSpotInterruption    = "EC2 Spot Instance Interruption Warning"
	DetailTypeRebalance           = "EC2 Instance Rebalance Recommendation"
	DetailTypeStateChange         = "EC2 Instance State-change Notification"
	DetailTypeCapacityReservation = "EC2 Capacity Reservation Instance Interruption Warning"
	DetailTypeHealth              = "AWS Health Event"
)

// Kind is what a message means, named as Karpenter names it (the metric
// dimension of karpenter_interruption_received_messages_total).
type Kind string

const (
	KindSpotInterruption    Kind = "spot_interrupted"
	KindRebalance           Kind = "rebalance_recommendation"
	KindScheduledChange     Kind = "scheduled_change"
	KindInstanceStopped     Kind = "instance_stopped"
	KindInstanceTerminated  Kind = "instance_terminated"
	KindCapacityReservation Kind = "capacity_reservation_interrupted"
	// KindNoop is a well-formed AWS event Joist has nothing to do for (a
	// state change to pending or running, a Health event that is not an
	// EC2 scheduled change).
	KindNoop Kind = "noop"
)

// Envelope is the EventBridge event. It is aws-lambda-go's envelope with
// one difference: the time is kept as written. AWS's own documented
// samples carry placeholders there ("yyyy-mm-ddThh:mm:ssZ"), and a bad
// timestamp must cost only the queue-duration metric, never the message.
type Envelope struct {
	events.EventBridgeEvent
	Time string `json:"time"`
}

// InstanceDetail is the detail of the spot interruption warning, the
// rebalance recommendation and the capacity-reservation interruption
// warning (aws.ec2 schemas EC2SpotInstanceInterruptionWarning,
// EC2InstanceRebalanceRecommendation,
// EC2CapacityReservationInstanceInterruptionWarning).
type InstanceDetail struct {
	InstanceID     string `json:"instance-id"`
	InstanceAction string `json:"instance-action,omitempty"`
}

// StateChangeDetail is the detail of "EC2 Instance State-change
// Notification".
type StateChangeDetail struct {
	InstanceID string `json:"instance-id"`
	State      string `json:"state"`
}

// HealthDetail is the detail of an "AWS Health Event" (aws.health schema
// AWSHealthEvent); Joist reads the EC2 scheduled changes.
type HealthDetail struct {
	EventArn          string                   `json:"eventArn"`
	Service           string                   `json:"service"`
	EventScopeCode    string                   `json:"eventScopeCode,omitempty"`
	CommunicationID   string                   `json:"communicationId,omitempty"`
	LastUpdatedTime   string                   `json:"lastUpdatedTime,omitempty"`
	StatusCode        string                   `json:"statusCode,omitempty"`
	EventRegion       string                   `json:"eventRegion,omitempty"`
	EventTypeCode     string                   `json:"eventTypeCode"`
	EventTypeCategory string                   `json:"eventTypeCategory"`
	StartTime         string                   `json:"startTime,omitempty"`
	EndTime           string                   `json:"endTime,omitempty"`
	EventDescription  []HealthEventDescription `json:"eventDescription,omitempty"`
	AffectedEntities  []HealthAffectedEntity   `json:"affectedEntities"`
}

// HealthEventDescription is one language's description.
type HealthEventDescription struct {
	Language          string `json:"language"`
	LatestDescription string `json:"latestDescription"`
}

// HealthAffectedEntity names an affected resource (an instance id for EC2).
type HealthAffectedEntity struct {
	EntityValue string `json:"entityValue"`
}

// Message is one parsed interruption message.
type Message struct {
	Kind     Kind
	Envelope Envelope
	// Instances are the EC2 instances the message is about (one, except
	// for a Health event, which may name several).
	Instances []string
	// State is the new state of a state change; Action the
	// instance-action of a warning (terminate, stop, hibernate).
	State  string
	Action string
	// Detail is the typed detail (*InstanceDetail, *StateChangeDetail or
	// *HealthDetail).
	Detail any
}

// SentAt is when AWS emitted the event; ok is false when the envelope's
// time is not an RFC 3339 timestamp.
func (m *Message) SentAt() (t time.Time, ok bool) {
	t, err := time.Parse(time.RFC3339, m.Envelope.Time)
	return t, err == nil
}

// ErrMalformed marks a message that can never be handled: not JSON, not
// an event Joist reads, or missing what its kind needs. The handler logs
// and deletes it; retrying could only fail again.
var ErrMalformed = errors.New("malformed interruption message")

var instanceID = regexp.MustCompile(`^i-[0-9a-f]{8,17}$`)

// Parse reads an SQS body carrying an EventBridge event.
func Parse(body []byte) (*Message, error) {
	var m Message
	if err := json.Unmarshal(body, &m.Envelope); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	env := &m.Envelope
	if len(env.Detail) == 0 || string(env.Detail) == "null" {
		return nil, fmt.Errorf("%w: %q event from %q without detail", ErrMalformed, env.DetailType, env.Source)
	}
	malformed := func(err error) (*Message, error) {
		return nil, fmt.Errorf("%w: %q detail: %v", ErrMalformed, env.DetailType, err)
	}
	switch {
	case env.Source == SourceEC2 && (env.DetailType == DetailTypeSpotInterruption || env.DetailType == DetailTypeRebalance || env.DetailType == DetailTypeCapacityReservation):
		var d InstanceDetail
		if err := json.Unmarshal(env.Detail, &d); err != nil {
			return malformed(err)
		}
		m.Detail, m.Instances, m.Action = &d, []string{d.InstanceID}, d.InstanceAction
		switch env.DetailType {
		case DetailTypeSpotInterruption:
			m.Kind = KindSpotInterruption
		case DetailTypeRebalance:
			m.Kind = KindRebalance
		default:
			m.Kind = KindCapacityReservation
		}
	case env.Source == SourceEC2 && env.DetailType == DetailTypeStateChange:
		var d StateChangeDetail
		if err := json.Unmarshal(env.Detail, &d); err != nil {
			return malformed(err)
		}
		m.Detail, m.Instances, m.State = &d, []string{d.InstanceID}, d.State
		switch d.State {
		case "stopping", "stopped":
			m.Kind = KindInstanceStopped
		case "shutting-down", "terminated":
			m.Kind = KindInstanceTerminated
		case "pending", "running":
			m.Kind = KindNoop
		default:
			return malformed(fmt.Errorf("unknown state %q", d.State))
		}
	case env.Source == SourceHealth && env.DetailType == DetailTypeHealth:
		var d HealthDetail
		if err := json.Unmarshal(env.Detail, &d); err != nil {
			return malformed(err)
		}
		m.Detail = &d
		if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
			// Other services' and categories' Health events are routed to
			// the same queue by a broad rule; they concern no instance.
			m.Kind = KindNoop
			return &m, nil
		}
		m.Kind = KindScheduledChange
		for _, e := range d.AffectedEntities {
			m.Instances = append(m.Instances, e.EntityValue)
		}
		if len(m.Instances) == 0 {
			return malformed(errors.New("no affected entities"))
		}
	default:
		return nil, fmt.Errorf("%w: %q from %q is not an interruption event", ErrMalformed, env.DetailType, env.Source)
	}
	for _, id := range m.Instances {
		if !instanceID.MatchString(id) {
			return malformed(fmt.Errorf("%q is not an instance id", id))
		}
	}
	return &m, nil
}
