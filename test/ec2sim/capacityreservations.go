package ec2sim

import (
	"fmt"
	"regexp"
	"time"
)

// Capacity reservations: on-demand capacity reservations (ODCRs, type
// "default") and capacity blocks ("capacity-block"). A test adds them with
// AddCapacityReservation; DescribeCapacityReservations lists them with
// EC2's filters and pagination; CreateFleet launches into one when a
// launch template targets it (CapacityReservationSpecification.
// CapacityReservationTarget), and an untargeted on-demand launch whose
// template leaves the preference open is absorbed by a matching open
// reservation of the account with room, as on AWS. A reservation's room
// is derived from the instances in it, so terminating one gives the room
// back once it is terminated (not while it shuts down), as on AWS.

// Reservation types and instance match criteria, as EC2 spells them.
const (
	ReservationDefault       = "default"
	ReservationCapacityBlock = "capacity-block"
	MatchOpen                = "open"
	MatchTargeted            = "targeted"
)

// CapacityReservation is what a test says about a reservation it adds.
type CapacityReservation struct {
	// ID is the reservation's cr- id; empty: the simulator makes one.
	ID           string
	InstanceType string
	Zone         string
	// OwnerID is the account that owns it (another account's is shared
	// with this one); empty: the simulator's account.
	OwnerID string
	// Type is ReservationDefault (the default) or ReservationCapacityBlock.
	Type string
	// MatchCriteria is MatchOpen (the default, as on AWS) or
	// MatchTargeted.
	MatchCriteria string
	// Total is how many instances it holds.
	Total int
	// State is active (the default), expired, cancelled, pending,
	// failed, scheduled, payment-pending, payment-failed, assessing,
	// delayed or unsupported. Only an active one takes instances.
	State   string
	StartAt time.Time
	// EndAt is when it ends (zero: unlimited).
	EndAt time.Time
	Tags  map[string]string
}

type capacityReservation struct {
	CapacityReservation
	created time.Time
}

var reservationStates = []string{"active", "expired", "cancelled", "pending", "failed", "scheduled", "payment-pending", "payment-failed", "assessing", "delayed", "unsupported"}

var reservationIDPattern = regexp.MustCompile(`^cr-([0-9a-f]{8}|[0-9a-f]{17})$`)

// AddCapacityReservation adds a reservation and returns its id. Like the
// other seeding helpers it panics on input that is a bug in the test: an
// unknown zone or instance type, a bad id, type, match criteria or state.
func (s *Sim) AddCapacityReservation(r CapacityReservation) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.ID == "" {
		r.ID = s.newID("cr")
	}
	if !reservationIDPattern.MatchString(r.ID) {
		panic(fmt.Sprintf("ec2sim: AddCapacityReservation: %q is not a capacity reservation id (cr- and 8 or 17 hex digits)", r.ID))
	}
	if _, dup := s.reservations[r.ID]; dup {
		panic(fmt.Sprintf("ec2sim: AddCapacityReservation: %s already exists", r.ID))
	}
	if _, ok := s.zoneByName(r.Zone); !ok {
		panic(fmt.Sprintf("ec2sim: AddCapacityReservation: zone %q is not one of %v", r.Zone, s.opts.Zones))
	}
	if _, ok := s.types[r.InstanceType]; !ok {
		panic(fmt.Sprintf("ec2sim: AddCapacityReservation: unknown instance type %q", r.InstanceType))
	}
	if r.OwnerID == "" {
		r.OwnerID = s.opts.AccountID
	}
	if r.Type == "" {
		r.Type = ReservationDefault
	}
	if r.MatchCriteria == "" {
		r.MatchCriteria = MatchOpen
	}
	if r.State == "" {
		r.State = "active"
	}
	if !contains([]string{ReservationDefault, ReservationCapacityBlock}, r.Type) ||
		!contains([]string{MatchOpen, MatchTargeted}, r.MatchCriteria) || !contains(reservationStates, r.State) || r.Total < 0 {
		panic(fmt.Sprintf("ec2sim: AddCapacityReservation: bad type %q, match criteria %q, state %q or total %d", r.Type, r.MatchCriteria, r.State, r.Total))
	}
	if r.StartAt.IsZero() {
		r.StartAt = s.now()
	}
	r.Tags = copyTags(r.Tags)
	s.reservations[r.ID] = &capacityReservation{CapacityReservation: r, created: s.now()}
	s.reservationOrder = append(s.reservationOrder, r.ID)
	return r.ID
}

// SetCapacityReservationState changes a reservation's state (a test
// expiring or cancelling one).
func (s *Sim) SetCapacityReservationState(id, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cr, ok := s.reservations[id]
	if !ok {
		return fmt.Errorf("ec2sim: SetCapacityReservationState: no capacity reservation %s", id)
	}
	if !contains(reservationStates, state) {
		return fmt.Errorf("ec2sim: SetCapacityReservationState: %q is not a capacity reservation state", state)
	}
	cr.State = state
	return nil
}

// CapacityReservationAvailable is how many more instances the reservation
// takes now (AvailableInstanceCount), and whether it exists.
func (s *Sim) CapacityReservationAvailable(id string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cr, ok := s.reservations[id]
	if !ok {
		return 0, false
	}
	s.advanceAll()
	return s.available(cr), true
}

// available is the reservation's room: its total less the instances in
// it that have not terminated. The caller holds s.mu and has advanced the
// instances.
func (s *Sim) available(cr *capacityReservation) int {
	used := 0
	for _, id := range s.instanceOrder {
		if in := s.instances[id]; in.capacityReservationID == cr.ID && in.state != stateTerminated {
			used++
		}
	}
	return max(cr.Total-used, 0)
}

// reservationARN is the reservation's ARN, in its owner's account.
func (s *Sim) reservationARN(cr *capacityReservation) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:capacity-reservation/%s", s.opts.Region, cr.OwnerID, cr.ID)
}

// absorbingReservation is the open, active reservation of this account an
// untargeted on-demand launch of the type in the zone runs in, if any has
// room (EC2 uses open reservations first when the instance's preference is
// open, the default).
func (s *Sim) absorbingReservation(instanceType, zone string) *capacityReservation {
	for _, id := range s.reservationOrder {
		cr := s.reservations[id]
		if cr.MatchCriteria == MatchOpen && cr.Type == ReservationDefault && cr.State == "active" && cr.OwnerID == s.opts.AccountID &&
			cr.InstanceType == instanceType && cr.Zone == zone && s.available(cr) > 0 {
			return cr
		}
	}
	return nil
}

// ---- DescribeCapacityReservations ----

type describeCapacityReservationsRequest struct {
	ids     []string
	filters []filter
	page    pageRequest
}

func parseDescribeCapacityReservations(p *params) (describeCapacityReservationsRequest, error) {
	var r describeCapacityReservationsRequest
	var err error
	r.ids = p.strList("CapacityReservationId")
	for _, id := range r.ids {
		if !reservationIDPattern.MatchString(id) {
			return r, clientErr("InvalidCapacityReservationId.Malformed", "Invalid id: \"%s\"", id)
		}
	}
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	r.page, err = readPage(p, "DescribeCapacityReservations", pageLimits{min: 1, max: 1000})
	return r, err
}

var reservationFilters = filterSpec[*capacityReservation]{
	fields: map[string]func(*capacityReservation) []string{
		"capacity-reservation-id": func(cr *capacityReservation) []string { return one(cr.ID) },
		"instance-type":           func(cr *capacityReservation) []string { return one(cr.InstanceType) },
		"owner-id":                func(cr *capacityReservation) []string { return one(cr.OwnerID) },
		"availability-zone":       func(cr *capacityReservation) []string { return one(cr.Zone) },
		"instance-platform":       func(*capacityReservation) []string { return one("Linux/UNIX") },
		"tenancy":                 func(*capacityReservation) []string { return one("default") },
		"state":                   func(cr *capacityReservation) []string { return one(cr.State) },
		"instance-match-criteria": func(cr *capacityReservation) []string { return one(cr.MatchCriteria) },
		"reservation-type":        func(cr *capacityReservation) []string { return one(cr.Type) },
		"end-date-type":           func(cr *capacityReservation) []string { return one(endDateType(cr)) },
	},
	tags: func(cr *capacityReservation) map[string]string { return cr.Tags },
}

func endDateType(cr *capacityReservation) string {
	if cr.EndAt.IsZero() {
		return "unlimited"
	}
	return "limited"
}

type capacityReservationXML struct {
	CapacityReservationID  string            `xml:"capacityReservationId"`
	OwnerID                string            `xml:"ownerId"`
	CapacityReservationArn string            `xml:"capacityReservationArn"`
	AvailabilityZoneID     string            `xml:"availabilityZoneId"`
	InstanceType           string            `xml:"instanceType"`
	InstancePlatform       string            `xml:"instancePlatform"`
	AvailabilityZone       string            `xml:"availabilityZone"`
	Tenancy                string            `xml:"tenancy"`
	TotalInstanceCount     int               `xml:"totalInstanceCount"`
	AvailableInstanceCount int               `xml:"availableInstanceCount"`
	EbsOptimized           bool              `xml:"ebsOptimized"`
	EphemeralStorage       bool              `xml:"ephemeralStorage"`
	State                  string            `xml:"state"`
	StartDate              string            `xml:"startDate"`
	EndDate                string            `xml:"endDate,omitempty"`
	EndDateType            string            `xml:"endDateType"`
	InstanceMatchCriteria  string            `xml:"instanceMatchCriteria"`
	CreateDate             string            `xml:"createDate"`
	ReservationType        string            `xml:"reservationType"`
	TagSet                 *itemList[tagXML] `xml:"tagSet,omitempty"`
}

type describeCapacityReservationsResponse struct {
	responseMeta
	CapacityReservations itemList[capacityReservationXML] `xml:"capacityReservationSet"`
	NextToken            string                           `xml:"nextToken,omitempty"`
}

// describeCapacityReservations lists the named reservations (an unknown
// id fails the whole call, as EC2 does) or all of them, filtered, in the
// order they were added.
func (s *Sim) describeCapacityReservations(r describeCapacityReservationsRequest) (response, error) {
	match, err := reservationFilters.compile(r.filters)
	if err != nil {
		return nil, err
	}
	var cands []*capacityReservation
	if len(r.ids) == 0 {
		for _, id := range s.reservationOrder {
			cands = append(cands, s.reservations[id])
		}
	}
	for _, id := range r.ids {
		cr, ok := s.reservations[id]
		if !ok {
			return nil, notFound("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
		}
		cands = append(cands, cr)
	}
	s.advanceAll() // terminated instances give their room back
	var out []capacityReservationXML
	for _, cr := range cands {
		if !match(cr) {
			continue
		}
		z, _ := s.zoneByName(cr.Zone)
		x := capacityReservationXML{
			CapacityReservationID: cr.ID, OwnerID: cr.OwnerID, CapacityReservationArn: s.reservationARN(cr),
			AvailabilityZoneID: z.id, InstanceType: cr.InstanceType, InstancePlatform: "Linux/UNIX", AvailabilityZone: cr.Zone,
			Tenancy: "default", TotalInstanceCount: cr.Total, AvailableInstanceCount: s.available(cr), State: cr.State,
			StartDate: ec2Time(cr.StartAt), EndDateType: endDateType(cr), InstanceMatchCriteria: cr.MatchCriteria,
			CreateDate: ec2Time(cr.created), ReservationType: cr.Type, TagSet: optItems(tagsXML(cr.Tags)),
		}
		if !cr.EndAt.IsZero() {
			x.EndDate = ec2Time(cr.EndAt)
		}
		out = append(out, x)
	}
	page, next := paginate(out, r.page)
	return &describeCapacityReservationsResponse{CapacityReservations: items(page), NextToken: next}, nil
}

// ---- launching into a reservation ----

// reservationTargetOf resolves the reservation a template targets; nil
// when it targets none. An unknown id fails the whole CreateFleet.
func (s *Sim) reservationTargetOf(d launchTemplateData) (*capacityReservation, error) {
	id := d.reservationTarget
	if id == "" {
		return nil, nil
	}
	cr, ok := s.reservations[id]
	if !ok {
		return nil, notFound("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
	}
	return cr, nil
}

// checkReservationFleet refuses, for the whole call, a fleet whose
// capacity type does not fit the reservations its templates target: a
// capacity block launches only with DefaultTargetCapacityType
// capacity-block and the template's market type capacity-block, an ODCR
// only on-demand, and a capacity-block fleet needs a targeted capacity
// block in every template.
func checkReservationFleet(rec *CreateFleetRecord, cands []candidate) error {
	ct := rec.DefaultTargetCapacityType
	for _, c := range cands {
		market := c.ver.data.marketType
		switch {
		case c.reservation == nil && ct == CapacityBlock:
			return clientErr("InvalidParameterCombination", "A fleet with DefaultTargetCapacityType capacity-block must target a Capacity Block in its launch template %s", c.lt.id)
		case c.reservation == nil:
			continue
		case c.reservation.Type == ReservationCapacityBlock && (ct != CapacityBlock || market != CapacityBlock):
			return clientErr("InvalidParameterCombination", "Capacity Block %s needs DefaultTargetCapacityType capacity-block (got %s) and market type capacity-block in the launch template (got %q)", c.reservation.ID, ct, market)
		case c.reservation.Type == ReservationDefault && (ct != OnDemand || market != ""):
			return clientErr("InvalidParameterCombination", "Capacity Reservation %s takes on-demand instances only (DefaultTargetCapacityType %s, market type %q)", c.reservation.ID, ct, market)
		}
		if rec.OnDemandTargetCapacity != nil || rec.SpotTargetCapacity != nil {
			return clientErr("InvalidParameterCombination", "A fleet targeting a capacity reservation takes no OnDemandTargetCapacity or SpotTargetCapacity")
		}
	}
	return nil
}

// reservationRoom is how many of want instances the candidate's targeted
// reservation takes, and the error of the override when it cannot take
// them all: for an ODCR, ReservationCapacityExceeded when it is full, not
// active, or of another instance type or zone (EC2's message speaks of
// "compatible and available capacity"; it launches only into matching
// attributes); for a capacity block, InsufficientInstanceCapacity, as the
// EC2 Fleet guide for capacity blocks says.
func (s *Sim) reservationRoom(c candidate, want int) (int, *apiError) {
	cr := c.reservation
	exceeded := clientErr("ReservationCapacityExceeded", "The requested reservation does not have sufficient compatible and available capacity for this request. (ec2sim: %s is %s, %s in %s with %d of %d available; the override asked for %s in %s)",
		cr.ID, cr.State, cr.InstanceType, cr.Zone, s.available(cr), cr.Total, c.it.Name, c.subnet.zone)
	if cr.Type == ReservationCapacityBlock {
		// EC2 Fleet's capacity-block guide: a request beyond the block's
		// room, or before it starts, gets insufficient capacity.
		exceeded = clientErr("InsufficientInstanceCapacity", "There is not enough capacity in Capacity Block %s for this request (%d of %d available).", cr.ID, s.available(cr), cr.Total)
	}
	if cr.State != "active" || cr.InstanceType != c.it.Name || cr.Zone != c.subnet.zone {
		return 0, exceeded
	}
	if room := s.available(cr); room < want {
		return room, exceeded
	}
	return want, nil
}
