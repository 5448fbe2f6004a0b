package ec2sim

import (
	"fmt"
	"time"
)

// Event is an EventBridge event EC2 emits about an instance, in AWS's
// format: the sink (the test ground) puts it on the default bus, from
// which the stack's rules route it to the interruption queue.
type Event struct {
	Source     string
	DetailType string
	Resources  []string
	Detail     map[string]any
}

// SetEventSink sets where the simulator's EventBridge events go (nil:
// nowhere). Only the interruption helpers emit events.
func (s *Sim) SetEventSink(f func(Event)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sink = f
}

func (s *Sim) emit(e Event) {
	s.mu.Lock()
	f := s.sink
	s.mu.Unlock()
	if f != nil {
		f(e)
	}
}

func (s *Sim) instanceARN(id string) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", s.opts.Region, s.opts.AccountID, id)
}

func (s *Sim) liveInstance(id string) (*instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.instances[id]
	if !ok {
		return nil, fmt.Errorf("ec2sim: no such instance %s", id)
	}
	s.advance(in)
	return in, nil
}

// InterruptSpot does what EC2 does to a reclaimed spot instance: the
// "EC2 Spot Instance Interruption Warning" (instance-action terminate)
// now, then, after notice, the termination itself with its state-change
// notifications (shutting-down, then terminated after ShutdownDelay).
// It returns once the warning is emitted; done is closed once the
// instance is shutting down.
func (s *Sim) InterruptSpot(id string, notice time.Duration) (done <-chan struct{}, err error) {
	in, err := s.liveInstance(id)
	if err != nil {
		return nil, err
	}
	if in.capacityType != Spot {
		return nil, fmt.Errorf("ec2sim: InterruptSpot %s: a %s instance", id, in.capacityType)
	}
	// The spot warning's resource ARN names the zone, not the region and
	// account (AWS documents this quirk).
	s.emit(Event{Source: "aws.ec2", DetailType: "EC2 Spot Instance Interruption Warning",
		Resources: []string{fmt.Sprintf("arn:aws:ec2:%s:instance/%s", in.zone, id)},
		Detail:    map[string]any{"instance-id": id, "instance-action": "terminate"}})
	ch := make(chan struct{})
	time.AfterFunc(notice, func() {
		defer close(ch)
		if err := s.TerminateExternally(id); err != nil {
			return
		}
		s.EmitStateChange(id, stateShuttingDown)
		time.AfterFunc(s.opts.ShutdownDelay, func() { s.EmitStateChange(id, stateTerminated) })
	})
	return ch, nil
}

// RecommendRebalance emits "EC2 Instance Rebalance Recommendation" for a
// spot instance; nothing else happens to it.
func (s *Sim) RecommendRebalance(id string) error {
	in, err := s.liveInstance(id)
	if err != nil {
		return err
	}
	if in.capacityType != Spot {
		return fmt.Errorf("ec2sim: RecommendRebalance %s: a %s instance", id, in.capacityType)
	}
	s.emit(Event{Source: "aws.ec2", DetailType: "EC2 Instance Rebalance Recommendation",
		Resources: []string{s.instanceARN(id)}, Detail: map[string]any{"instance-id": id}})
	return nil
}

// EmitStateChange emits "EC2 Instance State-change Notification" for the
// instance with the state given (it does not change the instance: see
// TerminateExternally).
func (s *Sim) EmitStateChange(id, state string) {
	s.emit(Event{Source: "aws.ec2", DetailType: "EC2 Instance State-change Notification",
		Resources: []string{s.instanceARN(id)}, Detail: map[string]any{"instance-id": id, "state": state}})
}

// AddRunningInstance adds a running spot instance with the tags given,
// launched by someone else (another cluster's, say): no template, no fleet.
func (s *Sim) AddRunningInstance(instanceType, zoneName string, tags map[string]string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zoneByName(zoneName)
	if !ok {
		return "", fmt.Errorf("ec2sim: no zone %s", zoneName)
	}
	now := s.now()
	in := &instance{
		id: s.newID("i"), reservationID: s.newID("r"), instanceType: instanceType,
		zone: z.name, zoneID: z.id, capacityType: Spot, state: stateRunning, stateSince: now, launchTime: now,
		tags: copyTags(tags), volumeTags: map[string]string{},
	}
	s.instances[in.id] = in
	s.instanceOrder = append(s.instanceOrder, in.id)
	return in.id, nil
}

// ScheduleRetirement emits the "AWS Health Event" of an EC2 scheduled
// change (AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED) for the instance, as
// AWS Health does when the host's hardware is to be retired, and, as EC2
// does, schedules the instance-retirement event that
// DescribeInstanceStatus shows from now on. Nothing else happens to the
// instance.
func (s *Sim) ScheduleRetirement(id string, at time.Time) error {
	if _, err := s.liveInstance(id); err != nil {
		return err
	}
	if err := s.scheduleEvent(id, "instance-retirement", "The instance is running on degraded hardware", at); err != nil {
		return err
	}
	const code = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
	s.emit(Event{Source: "aws.health", DetailType: "AWS Health Event", Resources: []string{id}, Detail: map[string]any{
		"eventArn":          fmt.Sprintf("arn:aws:health:%s::event/EC2/%s/%s_%s", s.opts.Region, code, code, id),
		"service":           "EC2",
		"eventScopeCode":    "ACCOUNT_SPECIFIC",
		"statusCode":        "upcoming",
		"eventRegion":       s.opts.Region,
		"eventTypeCode":     code,
		"eventTypeCategory": "scheduledChange",
		"startTime":         at.UTC().Format(time.RFC1123),
		"eventDescription": []map[string]string{{
			"language":          "en_US",
			"latestDescription": "EC2 has detected degradation of the underlying hardware hosting your Amazon EC2 instance.",
		}},
		"affectedEntities": []map[string]string{{"entityValue": id}},
	}})
	return nil
}
