package ec2sim

import (
	"fmt"
	"strconv"
	"time"
)

// Instance health, as DescribeInstanceStatus reports it: the instance
// and system status checks (each "ok" while it passes, "impaired" once
// the simulator is told it fails, "not-applicable" when the instance does
// not run) and the events EC2 scheduled for the instance.

// maxStatusInstanceIDs is how many ids DescribeInstanceStatus takes.
const maxStatusInstanceIDs = 100

type scheduledEvent struct {
	id, code, description string
	notBefore, notAfter   time.Time
}

// Impair makes the instance's status check fail (its OS unreachable, as
// EC2 sees it); the instance keeps running.
func (s *Sim) Impair(id string) error {
	return s.impair(id, false)
}

// ImpairSystem makes the instance's system status check fail (the host's
// power, network or hardware); the instance keeps running.
func (s *Sim) ImpairSystem(id string) error {
	return s.impair(id, true)
}

func (s *Sim) impair(id string, system bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.instances[id]
	if !ok {
		return fmt.Errorf("ec2sim: no such instance %s", id)
	}
	s.advance(in)
	if in.state != stateRunning {
		return fmt.Errorf("ec2sim: impair %s: the instance is %s, not running", id, in.state)
	}
	if system {
		in.systemImpaired = s.now()
	} else {
		in.instanceImpaired = s.now()
	}
	return nil
}

// scheduleEvent adds an event EC2 scheduled for the instance (it shows in
// DescribeInstanceStatus's eventsSet from now on).
func (s *Sim) scheduleEvent(id, code, description string, notBefore time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.instances[id]
	if !ok {
		return fmt.Errorf("ec2sim: no such instance %s", id)
	}
	in.events = append(in.events, scheduledEvent{
		id: s.newID("instance-event"), code: code, description: description,
		notBefore: notBefore.UTC().Truncate(time.Second), notAfter: notBefore.UTC().Truncate(time.Second).Add(2 * time.Hour),
	})
	return nil
}

// ---- DescribeInstanceStatus ----

type describeInstanceStatusRequest struct {
	ids        []string
	filters    []filter
	includeAll bool
	page       pageRequest
}

func parseDescribeInstanceStatus(p *params) (describeInstanceStatusRequest, error) {
	var r describeInstanceStatusRequest
	var err error
	r.ids = p.strList("InstanceId")
	if len(r.ids) > maxStatusInstanceIDs {
		return r, invalidParam("The maximum number of instance IDs is %d; %d were given", maxStatusInstanceIDs, len(r.ids))
	}
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	if r.includeAll, err = p.boolean("IncludeAllInstances"); err != nil {
		return r, err
	}
	if _, err = p.boolean("IncludeManagedResources"); err != nil {
		return r, err
	}
	if _, sent := p.v["MaxResults"]; sent && len(r.ids) > 0 {
		return r, clientErr("InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	}
	r.page, err = readPage(p, "DescribeInstanceStatus", pageLimits{min: 5, max: 1000})
	return r, err
}

// checkStatus is one status check's summary: not-applicable unless the
// instance runs, impaired from the moment it failed.
func checkStatus(in *instance, impairedSince time.Time) string {
	switch {
	case in.state != stateRunning:
		return "not-applicable"
	case !impairedSince.IsZero():
		return "impaired"
	}
	return "ok"
}

func reachability(in *instance, impairedSince time.Time) string {
	switch checkStatus(in, impairedSince) {
	case "impaired":
		return "failed"
	case "ok":
		return "passed"
	}
	return ""
}

var instanceStatusFilters = filterSpec[*instance]{
	fields: map[string]func(*instance) []string{
		"instance-id":                  func(in *instance) []string { return one(in.id) },
		"instance-state-name":          func(in *instance) []string { return one(in.state) },
		"instance-state-code":          func(in *instance) []string { return one(strconv.Itoa(stateCodes[in.state])) },
		"availability-zone":            func(in *instance) []string { return one(in.zone) },
		"availability-zone-id":         func(in *instance) []string { return one(in.zoneID) },
		"instance-status.status":       func(in *instance) []string { return one(checkStatus(in, in.instanceImpaired)) },
		"instance-status.reachability": func(in *instance) []string { return one(reachability(in, in.instanceImpaired)) },
		"system-status.status":         func(in *instance) []string { return one(checkStatus(in, in.systemImpaired)) },
		"system-status.reachability":   func(in *instance) []string { return one(reachability(in, in.systemImpaired)) },
		"event.code": func(in *instance) []string {
			var out []string
			for _, e := range in.events {
				out = append(out, e.code)
			}
			return out
		},
	},
}

type statusDetailXML struct {
	Name          string `xml:"name"`
	Status        string `xml:"status"`
	ImpairedSince string `xml:"impairedSince,omitempty"`
}

type statusSummaryXML struct {
	Status  string                     `xml:"status"`
	Details *itemList[statusDetailXML] `xml:"details,omitempty"`
}

type instanceStatusEventXML struct {
	InstanceEventID string `xml:"instanceEventId"`
	Code            string `xml:"code"`
	Description     string `xml:"description"`
	NotBefore       string `xml:"notBefore"`
	NotAfter        string `xml:"notAfter"`
}

type instanceStatusXML struct {
	InstanceID         string                            `xml:"instanceId"`
	AvailabilityZone   string                            `xml:"availabilityZone"`
	AvailabilityZoneID string                            `xml:"availabilityZoneId"`
	Events             *itemList[instanceStatusEventXML] `xml:"eventsSet,omitempty"`
	InstanceState      instanceStateXML                  `xml:"instanceState"`
	SystemStatus       statusSummaryXML                  `xml:"systemStatus"`
	InstanceStatus     statusSummaryXML                  `xml:"instanceStatus"`
}

type describeInstanceStatusResponse struct {
	responseMeta
	InstanceStatuses itemList[instanceStatusXML] `xml:"instanceStatusSet"`
	NextToken        string                      `xml:"nextToken,omitempty"`
}

func summaryXML(in *instance, impairedSince time.Time) statusSummaryXML {
	x := statusSummaryXML{Status: checkStatus(in, impairedSince)}
	if r := reachability(in, impairedSince); r != "" {
		d := statusDetailXML{Name: "reachability", Status: r}
		if r == "failed" {
			d.ImpairedSince = ec2Time(impairedSince)
		}
		x.Details = &itemList[statusDetailXML]{Items: []statusDetailXML{d}}
	}
	return x
}

func (s *Sim) instanceStatusToXML(in *instance) instanceStatusXML {
	x := instanceStatusXML{
		InstanceID: in.id, AvailabilityZone: in.zone, AvailabilityZoneID: in.zoneID, InstanceState: stateXML(in.state),
		SystemStatus: summaryXML(in, in.systemImpaired), InstanceStatus: summaryXML(in, in.instanceImpaired),
	}
	var evs []instanceStatusEventXML
	for _, e := range in.events {
		evs = append(evs, instanceStatusEventXML{InstanceEventID: e.id, Code: e.code, Description: e.description,
			NotBefore: ec2Time(e.notBefore), NotAfter: ec2Time(e.notAfter)})
	}
	x.Events = optItems(evs)
	return x
}

// describeInstanceStatus answers as EC2 does: explicit ids all or nothing
// (InvalidInstanceID.NotFound), running instances only unless
// IncludeAllInstances, paged by MaxResults (never with ids).
func (s *Sim) describeInstanceStatus(r describeInstanceStatusRequest) (response, error) {
	match, err := instanceStatusFilters.compile(r.filters)
	if err != nil {
		return nil, err
	}
	s.advanceAll()
	candidates, err := s.candidates(r.ids)
	if err != nil {
		return nil, err
	}
	var matched []*instance
	for _, in := range candidates {
		if (r.includeAll || in.state == stateRunning) && match(in) {
			matched = append(matched, in)
		}
	}
	page, next := paginate(matched, r.page)
	out := &describeInstanceStatusResponse{NextToken: next}
	for _, in := range page {
		out.InstanceStatuses.Items = append(out.InstanceStatuses.Items, s.instanceStatusToXML(in))
	}
	return out, nil
}
