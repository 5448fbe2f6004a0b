package ec2sim

import (
	"strings"
	"time"
)

// FleetOverride is one LaunchTemplateConfigs.N.Overrides.M as sent.
type FleetOverride struct {
	InstanceType     string
	SubnetID         string
	AvailabilityZone string
	ImageID          string
	MaxPrice         string
	Priority         *float64
	WeightedCapacity *float64
}

// FleetLaunchTemplateConfig is one LaunchTemplateConfigs.N as sent.
type FleetLaunchTemplateConfig struct {
	LaunchTemplateID   string
	LaunchTemplateName string
	Version            string
	Overrides          []FleetOverride
}

// FleetError is one entry of CreateFleet's Errors: an override EC2 tried and
// could not launch.
type FleetError struct {
	Code, Message                         string
	Lifecycle                             string // OnDemand or Spot
	InstanceType, Zone, SubnetID, ImageID string
}

// CreateFleetRecord is one CreateFleet request as the simulator parsed it,
// with its outcome, for tests to assert on what Joist asked for.
type CreateFleetRecord struct {
	At                         time.Time
	Type                       string
	ClientToken                string
	Context                    string
	TotalTargetCapacity        int
	OnDemandTargetCapacity     *int
	SpotTargetCapacity         *int
	DefaultTargetCapacityType  string
	SpotAllocationStrategy     string
	OnDemandAllocationStrategy string
	LaunchTemplateConfigs      []FleetLaunchTemplateConfig
	TagSpecifications          []TagSpecification

	// FleetID, InstanceIDs and Errors are the response; ErrorCode is set
	// instead when the whole call failed. Replayed means the client token
	// matched an earlier request and nothing new was launched.
	FleetID     string
	InstanceIDs []string
	Errors      []FleetError
	ErrorCode   string
	Replayed    bool

	// Invocation is the SDK's id for the operation the request was an
	// attempt of: an SDK retry (a throttled attempt, a response lost, a
	// connection the transport closed under the request) shares it.
	Invocation string
}

type fleet struct {
	id          string
	tags        map[string]string
	clientToken string
	response    *createFleetResponse
}

// maxClientTokenLen is EC2's limit on idempotency tokens.
const maxClientTokenLen = 64

var (
	spotStrategies     = []string{"lowest-price", "diversified", "capacity-optimized", "capacity-optimized-prioritized", "price-capacity-optimized"}
	onDemandStrategies = []string{"lowest-price", "prioritized"}
	fleetTagResources  = []string{"instance", "volume", "fleet", "network-interface", "spot-instances-request"}
)

type createFleetRequest struct {
	rec       CreateFleetRecord
	canonical string
}

func parseCreateFleet(p *params) (createFleetRequest, error) {
	r := createFleetRequest{canonical: p.canonical()}
	rec := &r.rec
	var err error
	rec.Type = p.str("Type")
	if rec.Type == "" {
		rec.Type = "maintain"
	}
	rec.ClientToken = p.str("ClientToken")
	rec.Invocation = p.invocation
	if len(rec.ClientToken) > maxClientTokenLen {
		return r, invalidParam("Value (%s) for parameter clientToken is invalid. Length exceeds maximum of %d characters", rec.ClientToken, maxClientTokenLen)
	}
	rec.Context = p.str("Context")
	// These shape maintain and request fleets only; an instant fleet is done
	// when the call returns.
	p.ignore("ExcessCapacityTerminationPolicy", "ReplaceUnhealthyInstances", "TerminateInstancesWithExpiration", "ValidFrom", "ValidUntil",
		"SpotOptions.InstanceInterruptionBehavior")

	const tcs = "TargetCapacitySpecification."
	total, err := p.optInt(tcs + "TotalTargetCapacity")
	if err != nil {
		return r, err
	}
	if total == nil {
		return r, missingParam(tcs + "TotalTargetCapacity")
	}
	if *total < 1 {
		return r, invalidParam("Value (%d) for parameter TotalTargetCapacity is invalid. It must be at least 1.", *total)
	}
	rec.TotalTargetCapacity = *total
	if rec.OnDemandTargetCapacity, err = p.optInt(tcs + "OnDemandTargetCapacity"); err != nil {
		return r, err
	}
	if rec.SpotTargetCapacity, err = p.optInt(tcs + "SpotTargetCapacity"); err != nil {
		return r, err
	}
	rec.DefaultTargetCapacityType = p.str(tcs + "DefaultTargetCapacityType")
	switch rec.DefaultTargetCapacityType {
	case "":
		rec.DefaultTargetCapacityType = OnDemand
	case OnDemand, Spot, CapacityBlock:
	default:
		return r, invalidParam("Value (%s) for parameter DefaultTargetCapacityType is invalid. ec2sim simulates spot, on-demand and capacity-block.", rec.DefaultTargetCapacityType)
	}
	if rec.SpotAllocationStrategy, err = oneOf(p, "SpotOptions.AllocationStrategy", spotStrategies); err != nil {
		return r, err
	}
	if rec.OnDemandAllocationStrategy, err = oneOf(p, "OnDemandOptions.AllocationStrategy", onDemandStrategies); err != nil {
		return r, err
	}

	idx := p.indices("LaunchTemplateConfigs")
	if len(idx) == 0 {
		return r, missingParam("LaunchTemplateConfigs")
	}
	if len(idx) > 50 {
		return r, invalidParam("The maximum number of launch template configurations is 50; %d were given.", len(idx))
	}
	for _, n := range idx {
		c := key("LaunchTemplateConfigs", n, "")
		spec := c + ".LaunchTemplateSpecification."
		cfg := FleetLaunchTemplateConfig{
			LaunchTemplateID:   p.str(spec + "LaunchTemplateId"),
			LaunchTemplateName: p.str(spec + "LaunchTemplateName"),
			Version:            p.str(spec + "Version"),
		}
		if cfg.LaunchTemplateID == "" && cfg.LaunchTemplateName == "" {
			return r, missingParam(spec + "LaunchTemplateId or " + spec + "LaunchTemplateName")
		}
		if cfg.Version == "" {
			return r, missingParam(spec + "Version")
		}
		for _, m := range p.indices(c + ".Overrides") {
			o := key(c+".Overrides", m, "")
			ov := FleetOverride{
				InstanceType:     p.str(o + ".InstanceType"),
				SubnetID:         p.str(o + ".SubnetId"),
				AvailabilityZone: p.str(o + ".AvailabilityZone"),
				ImageID:          p.str(o + ".ImageId"),
				MaxPrice:         p.str(o + ".MaxPrice"),
			}
			if ov.Priority, err = p.optFloat(o + ".Priority"); err != nil {
				return r, err
			}
			if ov.WeightedCapacity, err = p.optFloat(o + ".WeightedCapacity"); err != nil {
				return r, err
			}
			cfg.Overrides = append(cfg.Overrides, ov)
		}
		rec.LaunchTemplateConfigs = append(rec.LaunchTemplateConfigs, cfg)
	}
	if rec.TagSpecifications, err = p.tagSpecs("TagSpecification"); err != nil {
		return r, err
	}
	for _, ts := range rec.TagSpecifications {
		if !contains(fleetTagResources, ts.ResourceType) {
			return r, invalidParam("'%s' is not a valid taggable resource type for this operation.", ts.ResourceType)
		}
	}
	if rec.Type != "instant" {
		return r, clientErr("UnsupportedOperation", "ec2sim simulates only instant fleets, not type %s", rec.Type)
	}
	return r, nil
}

func oneOf(p *params, k string, allowed []string) (string, error) {
	v, ok := p.get(k)
	if !ok {
		return "", nil
	}
	if !contains(allowed, v) {
		return "", invalidParam("Value (%s) for parameter %s is invalid. Expecting one of %s.", v, k, strings.Join(allowed, ", "))
	}
	return v, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// candidate is one override resolved against its launch template: the
// instance type, subnet, zone and image a launch would use.
type candidate struct {
	order   int // position in the request, the final tie-break
	lt      *launchTemplate
	ver     *ltVersion
	asked   FleetOverride // echoed back as EC2 does, exactly as sent
	it      InstanceTypeInfo
	subnet  *subnet
	imageID string
	// reservation is the capacity reservation the template targets.
	reservation *capacityReservation
}

func (s *Sim) createFleet(r createFleetRequest) (response, error) {
	rec := r.rec
	rec.At = s.now()
	resp, err := s.runFleet(&rec, r.canonical)
	if err != nil {
		if e, ok := err.(*apiError); ok {
			rec.ErrorCode = e.Code
		}
		s.fleetCalls = append(s.fleetCalls, rec)
		return nil, err
	}
	rec.FleetID = resp.FleetID
	for _, fi := range resp.Instances.Items {
		rec.InstanceIDs = append(rec.InstanceIDs, fi.InstanceIDs.Items...)
	}
	for _, fe := range resp.Errors.Items {
		o := fe.LaunchTemplateAndOverrides.Overrides
		rec.Errors = append(rec.Errors, FleetError{Code: fe.ErrorCode, Message: fe.ErrorMessage, Lifecycle: fe.Lifecycle,
			InstanceType: o.InstanceType, Zone: o.AvailabilityZone, SubnetID: o.SubnetID, ImageID: o.ImageID})
	}
	s.fleetCalls = append(s.fleetCalls, rec)
	out := *resp
	return &out, nil
}

// runFleet launches an instant fleet. Idempotency first: the same client
// token with the same parameters returns the first call's response (same
// fleet, same instances, same errors, even if that was a failure to
// launch anything), never launching twice; with other parameters it is
// IdempotentParameterMismatch.
func (s *Sim) runFleet(rec *CreateFleetRecord, canonical string) (*createFleetResponse, error) {
	if rec.ClientToken != "" {
		if prev, ok := s.fleetTokens[rec.ClientToken]; ok {
			if prev.paramsHash != canonical {
				return nil, clientErr("IdempotentParameterMismatch", "Arguments on this idempotent request are inconsistent with arguments used in previous request(s).")
			}
			rec.Replayed = true
			return s.fleets[prev.resourceID].response, nil
		}
	}
	cands, err := s.resolveCandidates(rec.LaunchTemplateConfigs)
	if err != nil {
		return nil, err
	}
	if err := checkReservationFleet(rec, cands); err != nil {
		return nil, err
	}
	f := &fleet{id: "fleet-" + s.newUUIDLike("fleet"), clientToken: rec.ClientToken}
	for _, ts := range rec.TagSpecifications {
		if ts.ResourceType == "fleet" {
			f.tags = mergeTags(f.tags, ts.Tags)
		}
	}
	targets := splitTargets(rec)
	resp := &createFleetResponse{FleetID: f.id}
	s.advanceAll() // addresses of terminated instances are free again
	for _, ct := range []string{OnDemand, Spot, CapacityBlock} {
		if targets[ct] > 0 {
			s.fill(resp, f, rec, cands, ct, targets[ct])
		}
	}
	f.response = resp
	s.fleets[f.id] = f
	if rec.ClientToken != "" {
		s.fleetTokens[rec.ClientToken] = idempotent{paramsHash: canonical, resourceID: f.id}
	}
	return resp, nil
}

// splitTargets divides the total between on-demand and spot: explicit
// per-type targets first, the rest to the default capacity type.
func splitTargets(rec *CreateFleetRecord) map[string]int {
	t := map[string]int{}
	rest := rec.TotalTargetCapacity
	if rec.OnDemandTargetCapacity != nil {
		t[OnDemand] = min(*rec.OnDemandTargetCapacity, rest)
		rest -= t[OnDemand]
	}
	if rec.SpotTargetCapacity != nil {
		t[Spot] = min(*rec.SpotTargetCapacity, rest)
		rest -= t[Spot]
	}
	t[rec.DefaultTargetCapacityType] += rest
	return t
}

// resolveCandidates checks everything that makes the request itself
// invalid (as opposed to one override unlaunchable), which EC2 answers
// with an error for the whole call: unknown launch templates, versions,
// instance types and subnets, a missing image.
func (s *Sim) resolveCandidates(cfgs []FleetLaunchTemplateConfig) ([]candidate, error) {
	var out []candidate
	for _, cfg := range cfgs {
		lt, err := s.templateByRef(cfg.LaunchTemplateID, cfg.LaunchTemplateName)
		if err != nil {
			return nil, err
		}
		ver, err := lt.resolveVersion(cfg.Version)
		if err != nil {
			return nil, err
		}
		overrides := cfg.Overrides
		if len(overrides) == 0 {
			overrides = []FleetOverride{{}} // the template alone
		}
		for _, ov := range overrides {
			c := candidate{order: len(out), lt: lt, ver: ver, asked: ov}
			typeName := ov.InstanceType
			if typeName == "" {
				typeName = ver.data.instanceType
			}
			if typeName == "" {
				return nil, missingParam("InstanceType (in an override or the launch template)")
			}
			it, ok := s.types[typeName]
			if !ok {
				return nil, invalidParam("The instance type '%s' does not exist (ec2sim knows %d instance types)", typeName, len(s.types))
			}
			c.it = it
			if c.subnet, err = s.subnetFor(ov, ver.data); err != nil {
				return nil, err
			}
			c.imageID = ov.ImageID
			if c.imageID == "" {
				c.imageID = ver.data.imageID
			}
			if c.imageID == "" {
				return nil, missingParam("ImageId (in an override or the launch template)")
			}
			if c.reservation, err = s.reservationTargetOf(ver.data); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// subnetFor picks the override's subnet, the template's, or (given only a
// zone) the subnet in that zone with the most free addresses.
func (s *Sim) subnetFor(ov FleetOverride, d launchTemplateData) (*subnet, error) {
	id := ov.SubnetID
	if id == "" {
		for _, ni := range d.networkInterfaces {
			if ni.subnetID != "" {
				id = ni.subnetID
				break
			}
		}
	}
	if id != "" {
		sn, ok := s.subnets[id]
		if !ok {
			return nil, notFound("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
		if ov.AvailabilityZone != "" && ov.AvailabilityZone != sn.zone {
			return nil, invalidParam("The subnet '%s' is in %s, not in the requested Availability Zone %s", id, sn.zone, ov.AvailabilityZone)
		}
		return sn, nil
	}
	var best *subnet
	for _, sid := range s.subnetOrder {
		sn := s.subnets[sid]
		if (ov.AvailabilityZone == "" || sn.zone == ov.AvailabilityZone) && (best == nil || sn.available() > best.available()) {
			best = sn
		}
	}
	if best == nil {
		return nil, invalidParam("No subnet in Availability Zone '%s' to launch into (ec2sim has no default subnets)", ov.AvailabilityZone)
	}
	return best, nil
}

// ---- response ----

type overridesXML struct {
	InstanceType     string `xml:"instanceType,omitempty"`
	MaxPrice         string `xml:"maxPrice,omitempty"`
	SubnetID         string `xml:"subnetId,omitempty"`
	AvailabilityZone string `xml:"availabilityZone,omitempty"`
	WeightedCapacity string `xml:"weightedCapacity,omitempty"`
	Priority         string `xml:"priority,omitempty"`
	ImageID          string `xml:"imageId,omitempty"`
}

// ltAndOverridesXML echoes the override as sent and names the template by
// ID with its resolved version number, as EC2 answers even when the
// request named the template and asked for $Latest.
type ltAndOverridesXML struct {
	LaunchTemplateSpecification struct {
		LaunchTemplateID string `xml:"launchTemplateId"`
		Version          string `xml:"version"`
	} `xml:"launchTemplateSpecification"`
	Overrides overridesXML `xml:"overrides"`
}

func ltAndOverrides(c candidate) ltAndOverridesXML {
	var x ltAndOverridesXML
	x.LaunchTemplateSpecification.LaunchTemplateID = c.lt.id
	x.LaunchTemplateSpecification.Version = itoa(c.ver.number)
	o := c.asked
	x.Overrides = overridesXML{InstanceType: o.InstanceType, MaxPrice: o.MaxPrice, SubnetID: o.SubnetID,
		AvailabilityZone: o.AvailabilityZone, ImageID: o.ImageID}
	if o.WeightedCapacity != nil {
		x.Overrides.WeightedCapacity = fmtFloat(*o.WeightedCapacity)
	}
	if o.Priority != nil {
		x.Overrides.Priority = fmtFloat(*o.Priority)
	}
	return x
}

type fleetErrorXML struct {
	LaunchTemplateAndOverrides ltAndOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string            `xml:"lifecycle"`
	ErrorCode                  string            `xml:"errorCode"`
	ErrorMessage               string            `xml:"errorMessage"`
}

type fleetInstanceXML struct {
	LaunchTemplateAndOverrides ltAndOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string            `xml:"lifecycle"`
	InstanceIDs                itemList[string]  `xml:"instanceIds"`
	InstanceType               string            `xml:"instanceType"`
}

type createFleetResponse struct {
	responseMeta
	FleetID   string                     `xml:"fleetId"`
	Errors    itemList[fleetErrorXML]    `xml:"errorSet"`
	Instances itemList[fleetInstanceXML] `xml:"fleetInstanceSet"`
}
