package ec2sim

import (
	"math"
	"sort"
	"strings"
)

// fill launches up to target instances of one capacity type, trying the
// candidates in the order the allocation strategy gives them. An override
// that cannot launch, or runs out part-way, becomes an error and the next
// one is tried, as instant fleets do.
func (s *Sim) fill(resp *createFleetResponse, f *fleet, rec *CreateFleetRecord, cands []candidate, capType string, target int) {
	strategy := rec.OnDemandAllocationStrategy
	if capType == Spot {
		strategy = rec.SpotAllocationStrategy
	}
	if strategy == "" {
		strategy = "lowest-price"
	}
	ordered := s.order(cands, capType, strategy)
	groups := map[int]int{} // candidate order -> index in resp.Instances
	failed := map[int]bool{}
	remaining := target
	for remaining > 0 {
		progress := false
		for _, c := range ordered {
			if remaining == 0 {
				break
			}
			if failed[c.order] {
				continue
			}
			want := remaining
			if strategy == "diversified" {
				want = 1 // one per pool per round spreads the fleet
			}
			ids, fe := s.launch(c, f, rec, capType, want)
			if len(ids) > 0 {
				progress = true
				remaining -= len(ids)
				gi, ok := groups[c.order]
				if !ok {
					gi = len(resp.Instances.Items)
					groups[c.order] = gi
					resp.Instances.Items = append(resp.Instances.Items, fleetInstanceXML{
						LaunchTemplateAndOverrides: ltAndOverrides(c), Lifecycle: capType, InstanceType: c.it.Name,
					})
				}
				resp.Instances.Items[gi].InstanceIDs.Items = append(resp.Instances.Items[gi].InstanceIDs.Items, ids...)
			}
			if fe != nil {
				failed[c.order] = true
				resp.Errors.Items = append(resp.Errors.Items, fleetErrorXML{
					LaunchTemplateAndOverrides: ltAndOverrides(c), Lifecycle: capType, ErrorCode: fe.Code, ErrorMessage: fe.Message,
				})
			}
		}
		if strategy != "diversified" || !progress {
			return
		}
	}
}

// order sorts candidates for an allocation strategy. The simulator has no
// real capacity model, so "capacity" means: the pool is not marked
// insufficient and (with SetPoolCapacity) has room left. Strategies that
// weigh capacity try such pools first and the starved ones last; the
// price-only strategies try the cheapest first and report the starved
// ones they hit. Unknown prices sort after known ones; ties keep the
// request's order.
func (s *Sim) order(cands []candidate, capType, strategy string) []candidate {
	out := append([]candidate(nil), cands...)
	price := func(c candidate) float64 {
		p := c.it.OnDemandPrice
		if capType == Spot {
			p = s.spotPrice(c.it.Name, c.subnet.zone)
		}
		if p <= 0 {
			return math.Inf(1)
		}
		return p
	}
	priority := func(c candidate) float64 {
		if c.asked.Priority == nil {
			return math.Inf(1)
		}
		return *c.asked.Priority
	}
	room := func(c candidate) float64 {
		if s.faults.insufficient(c.it.Name, c.subnet.zone, capType) {
			return 0
		}
		if n := s.faults.room(c.it.Name, c.subnet.zone, capType); n >= 0 {
			return float64(n)
		}
		return math.Inf(1)
	}
	var less func(a, b candidate) bool
	switch strategy {
	case "prioritized":
		less = func(a, b candidate) bool { return priority(a) < priority(b) }
	case "capacity-optimized":
		less = func(a, b candidate) bool {
			if room(a) != room(b) {
				return room(a) > room(b)
			}
			return price(a) < price(b)
		}
	case "capacity-optimized-prioritized":
		less = func(a, b candidate) bool {
			if (room(a) > 0) != (room(b) > 0) {
				return room(a) > 0
			}
			return priority(a) < priority(b)
		}
	case "price-capacity-optimized":
		less = func(a, b candidate) bool {
			if (room(a) > 0) != (room(b) > 0) {
				return room(a) > 0
			}
			return price(a) < price(b)
		}
	default: // lowest-price, diversified
		less = func(a, b candidate) bool { return price(a) < price(b) }
	}
	sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

// launch starts up to want instances from one candidate. It returns the
// IDs launched and, if it could not launch all of them, why, as the
// per-override error EC2 would report.
func (s *Sim) launch(c candidate, f *fleet, rec *CreateFleetRecord, capType string, want int) ([]string, *apiError) {
	it, zone := c.it, c.subnet.zone
	if !s.offeredIn(it, zone) {
		return nil, clientErr("Unsupported", "Your requested instance type (%s) is not supported in your requested Availability Zone (%s). Please retry your request by not specifying an Availability Zone or choosing %s.",
			it.Name, zone, strings.Join(s.offeredZones(it), ", "))
	}
	if capType == Spot && !it.SpotSupported {
		return nil, clientErr("Unsupported", "The requested instance type (%s) does not support Spot Instances.", it.Name)
	}
	if e := s.checkImage(c); e != nil {
		return nil, e
	}
	groups, e := s.securityGroupsFor(c)
	if e != nil {
		return nil, e
	}
	if capType == Spot && c.asked.MaxPrice != "" {
		if e := s.checkMaxPrice(c); e != nil {
			return nil, e
		}
	}
	// The group refuses an override whatever the pool holds; its room
	// (a spread group's seven per zone) caps what the pool gives.
	pg, placeRoom, placeErr := s.placementRoom(c, want)
	if placeRoom == 0 {
		return nil, placeErr
	}
	n := want
	var short *apiError
	reservation := c.reservation
	if reservation != nil {
		// A reservation's capacity is held for it: the pool's faults do
		// not touch it, its own room does.
		n, short = s.reservationRoom(c, want)
	} else {
		ice := s.insufficientCapacity(it.Name, zone, capType)
		if s.faults.insufficient(it.Name, zone, capType) {
			return nil, ice
		}
		if room := s.faults.room(it.Name, zone, capType); room >= 0 && room < n {
			n, short = room, ice
		}
	}
	if placeRoom < n {
		n, short = placeRoom, placeErr
	}
	if free := c.subnet.available(); free < n {
		n = free
		short = clientErr("InsufficientFreeAddressesInSubnet", "There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", c.subnet.id)
	}
	if n == 0 {
		return nil, short
	}
	if reservation == nil {
		s.faults.consume(it.Name, zone, capType, n)
	}
	group := s.newID("r")
	var ids []string
	for i := 0; i < n; i++ {
		in := s.startInstance(c, f, rec, capType, group, i, groups)
		switch {
		case reservation != nil:
			in.capacityReservationID = reservation.ID
		case capType == OnDemand && (c.ver.data.reservationPreference == "" || c.ver.data.reservationPreference == "open"):
			if cr := s.absorbingReservation(it.Name, zone); cr != nil {
				in.capacityReservationID = cr.ID
			}
		}
		if pg != nil {
			in.partitionNumber = s.partitionFor(pg, zone, c.ver.data.placement.partitionNumber)
			in.placementGroupID, in.placementGroupName = pg.id, pg.Name
		}
		ids = append(ids, in.id)
	}
	return ids, short
}

func (s *Sim) insufficientCapacity(instanceType, zone, capType string) *apiError {
	if capType == Spot {
		return clientErr("InsufficientInstanceCapacity", "There is no Spot capacity available that matches your request.")
	}
	var others []string
	for _, z := range s.opts.Zones {
		if z != zone {
			others = append(others, z)
		}
	}
	return clientErr("InsufficientInstanceCapacity",
		"We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity. You can currently get %s capacity by not specifying an Availability Zone in your request or choosing %s.",
		instanceType, zone, instanceType, strings.Join(others, ", "))
}

// checkImage fails an override whose AMI is unknown (when the simulator
// knows its images) or built for the other architecture.
func (s *Sim) checkImage(c candidate) *apiError {
	im, ok := s.images[c.imageID]
	if !ok {
		if s.opts.RequireKnownImages {
			return clientErr("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", c.imageID)
		}
		return nil
	}
	if im.state != "available" {
		return clientErr("InvalidAMIID.Unavailable", "The image '%s' is %s", im.id, im.state)
	}
	if im.arch != c.it.Arch {
		return invalidParam("The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI. Specify an instance type and an AMI that have matching architectures, and try again. You can use 'describe-instance-types' or 'describe-images' to discover the architecture of the instance type or AMI.",
			c.it.Arch, im.arch)
	}
	return nil
}

// securityGroupsFor resolves the template's groups (IDs, names, or the
// primary interface's) in the launch subnet's VPC; none means the VPC's
// default group, as on AWS.
func (s *Sim) securityGroupsFor(c candidate) ([]string, *apiError) {
	d := c.ver.data
	ids := append([]string(nil), d.securityGroupIDs...)
	for _, ni := range d.networkInterfaces {
		if ni.deviceIndex == nil || *ni.deviceIndex == 0 {
			ids = append(ids, ni.groups...)
		}
	}
	vpcID := c.subnet.vpcID
	for _, id := range ids {
		g, ok := s.groups[id]
		if !ok || g.vpcID != vpcID {
			return nil, notFound("InvalidGroup.NotFound", "The security group '%s' does not exist in VPC '%s'", id, vpcID)
		}
	}
	for _, name := range d.securityGroupNames {
		g := s.groupByName(vpcID, name)
		if g == nil {
			return nil, notFound("InvalidGroup.NotFound", "The security group '%s' does not exist in VPC '%s'", name, vpcID)
		}
		ids = append(ids, g.id)
	}
	if len(ids) == 0 {
		if v, ok := s.vpcs[vpcID]; ok && v.defaultSG != "" {
			ids = []string{v.defaultSG}
		}
	}
	return dedupe(ids), nil
}

func (s *Sim) checkMaxPrice(c candidate) *apiError {
	maxPrice, err := parseFloat(c.asked.MaxPrice)
	if err != nil {
		return invalidParam("Value (%s) for parameter MaxPrice is invalid.", c.asked.MaxPrice)
	}
	if spot := s.spotPrice(c.it.Name, c.subnet.zone); spot > 0 && maxPrice < spot {
		return clientErr("SpotMaxPriceTooLow", "Your Spot request price of %s is lower than the minimum required Spot request fulfillment price of %s.",
			c.asked.MaxPrice, fmtFloat(spot))
	}
	return nil
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
