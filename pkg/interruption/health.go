package interruption

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The health check's kinds, as Karpenter names them (its instance status
// controller's message kinds): EC2's status checks and scheduled events,
// read once a minute with DescribeInstanceStatus rather than received.
const (
	// KindInstanceStatus: the instance status check (the OS and its
	// network, as EC2 sees them) is impaired.
	KindInstanceStatus Kind = "instance_status"
	// KindSystemStatus: the system status check (the host: power,
	// network, hardware) is impaired.
	KindSystemStatus Kind = "system_status"
	// KindScheduledEvent: EC2 scheduled an event for the instance
	// (instance-retirement, instance-stop, system-reboot, ...).
	KindScheduledEvent Kind = "event_status"
)

// Status values of an instance's status checks (DescribeInstanceStatus's
// SummaryStatus).
const (
	StatusOK       = "ok"
	StatusImpaired = "impaired"
)

// Status is what DescribeInstanceStatus says about one instance.
type Status struct {
	ID    string
	State string
	// InstanceStatus and SystemStatus are the checks' summaries: ok,
	// impaired, insufficient-data, not-applicable or initializing.
	InstanceStatus, SystemStatus string
	Events                       []ScheduledEvent
}

// ScheduledEvent is an event EC2 scheduled for an instance.
type ScheduledEvent struct {
	// Code: instance-reboot, system-reboot, system-maintenance,
	// instance-retirement or instance-stop.
	Code        string
	Description string
	NotBefore   time.Time
}

// done reports whether EC2 marked the event as over: it keeps completed
// and canceled events for a while, their descriptions prefixed so.
func (e ScheduledEvent) done() bool {
	return strings.HasPrefix(e.Description, "[Completed]") || strings.HasPrefix(e.Description, "[Canceled]")
}

// Finding is an instance the health check found unhealthy, and why.
type Finding struct {
	ID     string
	Kind   Kind
	Reason string
}

// CheckHealth says which running instances are unhealthy: an impaired
// system or instance status check, or a scheduled event that is not over.
// One finding per instance, the host's fault first. Pending, stopping and
// stopped instances are left to their state changes. Pure; the order is
// the instances' ids.
func CheckHealth(statuses []Status) []Finding {
	var out []Finding
	for _, s := range statuses {
		if s.State != "running" {
			continue
		}
		switch {
		case s.SystemStatus == StatusImpaired:
			out = append(out, Finding{ID: s.ID, Kind: KindSystemStatus, Reason: "system status check impaired"})
		case s.InstanceStatus == StatusImpaired:
			out = append(out, Finding{ID: s.ID, Kind: KindInstanceStatus, Reason: "instance status check impaired"})
		default:
			for _, e := range s.Events {
				if e.done() {
					continue
				}
				reason := "scheduled event " + e.Code
				if !e.NotBefore.IsZero() {
					reason += " not before " + e.NotBefore.UTC().Format(time.RFC3339)
				}
				out = append(out, Finding{ID: s.ID, Kind: KindScheduledEvent, Reason: reason})
				break
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// HealthMessage is a finding as a message, so the health check goes
// through the very path the queue's messages take (Decide, then Replace
// and Retire).
func HealthMessage(f Finding) *Message {
	return &Message{Kind: f.Kind, Instances: []string{f.ID}, Detail: &f}
}

func healthReason(m *Message) string {
	if f, ok := m.Detail.(*Finding); ok {
		return f.Reason
	}
	return fmt.Sprintf("health check (%s)", m.Kind)
}
