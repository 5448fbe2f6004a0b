package ec2sim

import (
	"fmt"
	"net/http"
	"sync"
)

// Capacity types, as EC2 spells them in DefaultTargetCapacityType and in
// CreateFleet's lifecycle fields.
const (
	OnDemand = "on-demand"
	Spot     = "spot"
	// CapacityBlock is the DefaultTargetCapacityType, launch template
	// market type and instance lifecycle of a capacity block launch.
	CapacityBlock = "capacity-block"
)

// faults holds everything a test injects. It has its own lock so tests can
// inject while requests are in flight; the simulator takes it only briefly,
// possibly while holding Sim.mu (never the other way round).
type faults struct {
	mu       sync.Mutex
	failures []injectedFailure
	drops    map[string]int
	ice      map[poolSelector]bool
	capacity map[poolSelector]int
	stick    int
}

type injectedFailure struct {
	action    string // "" matches every action
	err       *apiError
	remaining int
}

// poolSelector names capacity pools; an empty field matches anything.
type poolSelector struct{ instanceType, zone, capacityType string }

func (sel poolSelector) matches(instanceType, zone, capacityType string) bool {
	return (sel.instanceType == "" || sel.instanceType == instanceType) &&
		(sel.zone == "" || sel.zone == zone) &&
		(sel.capacityType == "" || sel.capacityType == capacityType)
}

func newFaults() *faults {
	return &faults{drops: map[string]int{}, ice: map[poolSelector]bool{}, capacity: map[poolSelector]int{}}
}

// FailNext makes the next n requests for action ("" for any action) fail
// with the given error code and HTTP status before they do anything, e.g.
// ("CreateFleet", "RequestLimitExceeded", 503, 2) for throttling, which the
// SDK's retryer retries, or ("DescribeInstances", "InternalError", 500, 1).
// Failures queue in the order they were injected.
func (s *Sim) FailNext(action, code string, httpStatus, n int) {
	if httpStatus == 0 {
		httpStatus = http.StatusBadRequest
	}
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.failures = append(s.faults.failures, injectedFailure{
		action:    action,
		err:       errorf(httpStatus, code, "ec2sim injected %s for %s", code, orAny(action)),
		remaining: n,
	})
}

// DropNextResponses makes the next n requests for action ("" for any) take effect and
// then answer 500 InternalError, as when EC2 launched the instances but the
// response was lost. The SDK retries with the same client token, which is
// what CreateFleet idempotency is for.
func (s *Sim) DropNextResponses(action string, n int) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.drops[action] += n
}

// SetInsufficientCapacity turns insufficient capacity on or off for a pool.
// An empty instanceType, zone or capacityType matches all of them, so
// ("", "ap-northeast-2a", "spot", true) takes every spot pool in a zone out.
// CreateFleet reports InsufficientInstanceCapacity for an override whose
// pool is out and moves on to the next override, as instant fleets do.
func (s *Sim) SetInsufficientCapacity(instanceType, zone, capacityType string, on bool) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	sel := poolSelector{instanceType, zone, capacityType}
	if on {
		s.faults.ice[sel] = true
	} else {
		delete(s.faults.ice, sel)
	}
}

// SetPoolCapacity limits how many more instances a pool can launch; n < 0
// removes the limit. Empty fields match anything, as in
// SetInsufficientCapacity. With it a fleet can be partly fulfilled: the
// pool fills up mid-request and the rest goes to the next override.
func (s *Sim) SetPoolCapacity(instanceType, zone, capacityType string, n int) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	sel := poolSelector{instanceType, zone, capacityType}
	if n < 0 {
		delete(s.faults.capacity, sel)
	} else {
		s.faults.capacity[sel] = n
	}
}

// StickNextLaunches makes the next n launched instances stay pending for
// ever (until terminated), as an instance that never boots.
func (s *Sim) StickNextLaunches(n int) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.stick += n
}

// StickPending keeps a still-pending instance pending for ever. It fails if
// the instance is unknown or already past pending; with BootDelay 0 use
// StickNextLaunches instead.
func (s *Sim) StickPending(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.instances[id]
	if !ok {
		return fmt.Errorf("ec2sim: StickPending %s: no such instance", id)
	}
	s.advance(in)
	if in.state != statePending {
		return fmt.Errorf("ec2sim: StickPending %s: instance is already %s", id, in.state)
	}
	in.stuck = true
	return nil
}

// TerminateExternally terminates an instance as if AWS had done it: a spot
// interruption for spot instances (Server.SpotInstanceTermination), an
// internal failure for on-demand ones. It is idempotent, like
// TerminateInstances.
func (s *Sim) TerminateExternally(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.instances[id]
	if !ok {
		return fmt.Errorf("ec2sim: TerminateExternally %s: no such instance", id)
	}
	s.advance(in)
	reason := stateReason{"Server.InternalError", "Server.InternalError: Internal error on launch"}
	if in.capacityType == Spot {
		reason = stateReason{"Server.SpotInstanceTermination", "Server.SpotInstanceTermination: Spot instance termination"}
	}
	s.beginShutdown(in, reason, "Service initiated")
	return nil
}

func orAny(action string) string {
	if action == "" {
		return "any action"
	}
	return action
}

func (f *faults) takeFailure(action string) *apiError {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.failures {
		fl := &f.failures[i]
		if fl.remaining > 0 && (fl.action == "" || fl.action == action) {
			fl.remaining--
			e := *fl.err
			if fl.remaining == 0 {
				f.failures = append(f.failures[:i], f.failures[i+1:]...)
			}
			return &e
		}
	}
	return nil
}

func (f *faults) takeDrop(action string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range []string{action, ""} {
		if f.drops[a] > 0 {
			f.drops[a]--
			return true
		}
	}
	return false
}

func (f *faults) insufficient(instanceType, zone, capacityType string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for sel := range f.ice {
		if sel.matches(instanceType, zone, capacityType) {
			return true
		}
	}
	return false
}

// room is how many instances the pool can still launch; -1 is unlimited.
// With several matching limits the tightest wins.
func (f *faults) room(instanceType, zone, capacityType string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	room := -1
	for sel, n := range f.capacity {
		if sel.matches(instanceType, zone, capacityType) && (room < 0 || n < room) {
			room = n
		}
	}
	return room
}

// consume charges n launches to every limit that matches the pool.
func (f *faults) consume(instanceType, zone, capacityType string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for sel, left := range f.capacity {
		if sel.matches(instanceType, zone, capacityType) {
			f.capacity[sel] = max(0, left-n)
		}
	}
}

// takeStick reports whether the next launched instance should stick.
func (f *faults) takeStick() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stick > 0 {
		f.stick--
		return true
	}
	return false
}

// AfterAction runs f after each call of action has taken effect and before
// its response is written (nil removes it). Tests use it to kill a caller
// at the worst moment: after CreateFleet launched, before the caller heard.
func (s *Sim) AfterAction(action string, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hooks == nil {
		s.hooks = map[string]func(){}
	}
	if f == nil {
		delete(s.hooks, action)
		return
	}
	s.hooks[action] = f
}

func (s *Sim) afterHook(action string) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hooks[action]
}
