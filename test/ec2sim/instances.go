package ec2sim

import (
	"regexp"
	"strconv"
	"time"
)

// Instance states, and the codes EC2 pairs with them.
const (
	statePending      = "pending"
	stateRunning      = "running"
	stateShuttingDown = "shutting-down"
	stateTerminated   = "terminated"
)

var stateCodes = map[string]int{
	statePending: 0, stateRunning: 16, stateShuttingDown: 32, stateTerminated: 48, "stopping": 64, "stopped": 80,
}

type stateReason struct{ code, message string }

type blockDevice struct {
	deviceName          string
	volumeID            string
	deleteOnTermination bool
}

// instance is one simulated EC2 instance. Its state is not driven by
// timers: advance() moves it along whenever someone looks, from the clock,
// so a stepped fake clock gives fully deterministic transitions.
type instance struct {
	id, reservationID, instanceType string
	zone, zoneID, subnetID, vpcID   string
	imageID, arch                   string
	capacityType                    string // OnDemand, Spot or CapacityBlock
	spotRequestID                   string
	// capacityReservationID is the reservation the instance runs in;
	// reservationPreference is its template's preference ("" is open).
	capacityReservationID, reservationPreference string
	// placementGroupID and placementGroupName are the placement group it
	// is in, partitionNumber its partition (0: none).
	placementGroupID, placementGroupName string
	partitionNumber                      int

	state            string
	stateSince       time.Time
	launchTime       time.Time
	reason           *stateReason
	transitionReason string
	stuck            bool

	privateIP, privateDNS string
	tags, volumeTags      map[string]string

	launchTemplateID, launchTemplateName, launchTemplateVersion string
	fleetID, clientToken                                        string

	securityGroups []string
	iamProfileArn  string
	keyName        string
	userData       string
	metadata       metadataOptions
	blockDevices   []blockDevice
	amiLaunchIndex int

	// health (status.go): when the instance and system status checks
	// began failing (zero: passing), and EC2's scheduled events.
	instanceImpaired, systemImpaired time.Time
	events                           []scheduledEvent
}

// advance applies every transition that is due: pending to running after
// BootDelay (unless stuck), shutting-down to terminated after
// ShutdownDelay, which also frees the instance's address.
func (s *Sim) advance(in *instance) {
	now := s.now()
	if in.state == statePending && !in.stuck {
		if at := in.launchTime.Add(s.opts.BootDelay); !now.Before(at) {
			in.state, in.stateSince = stateRunning, at
		}
	}
	if in.state == stateShuttingDown {
		if at := in.stateSince.Add(s.opts.ShutdownDelay); !now.Before(at) {
			in.state, in.stateSince = stateTerminated, at
			if sn, ok := s.subnets[in.subnetID]; ok && in.privateIP != "" {
				sn.release(in.privateIP)
			}
		}
	}
}

// advanceAll advances every instance and forgets the ones terminated longer
// ago than TerminatedRetention, as EC2 stops showing them after about an
// hour.
func (s *Sim) advanceAll() {
	now := s.now()
	kept := s.instanceOrder[:0]
	for _, id := range s.instanceOrder {
		in := s.instances[id]
		s.advance(in)
		if in.state == stateTerminated && !now.Before(in.stateSince.Add(s.opts.TerminatedRetention)) {
			delete(s.instances, id)
			continue
		}
		kept = append(kept, id)
	}
	s.instanceOrder = kept
}

// visible reports whether EC2 would admit the instance exists: not yet
// forgotten, and old enough to have reached the describe path
// (VisibilityLag models EC2's eventual consistency).
func (s *Sim) visible(in *instance) bool {
	now := s.now()
	if now.Before(in.launchTime.Add(s.opts.VisibilityLag)) {
		return false
	}
	return !(in.state == stateTerminated && !now.Before(in.stateSince.Add(s.opts.TerminatedRetention)))
}

// beginShutdown moves a live instance to shutting-down; for one already on
// its way out it does nothing, which is what makes termination idempotent.
func (s *Sim) beginShutdown(in *instance, reason stateReason, who string) {
	if in.state == stateShuttingDown || in.state == stateTerminated {
		return
	}
	now := s.now()
	in.state, in.stateSince = stateShuttingDown, now
	in.reason = &reason
	in.transitionReason = who + " (" + now.Format("2006-01-02 15:04:05") + " GMT)"
	in.stuck = false
}

var instanceIDPattern = regexp.MustCompile(`^i-([0-9a-f]{8}|[0-9a-f]{17})$`)

// lookupInstances resolves explicit IDs all or nothing, as EC2 does: one
// malformed or unknown ID fails the whole call.
func (s *Sim) lookupInstances(ids []string) ([]*instance, error) {
	var out []*instance
	var missing []string
	for _, id := range ids {
		if !instanceIDPattern.MatchString(id) {
			return nil, clientErr("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
		in, ok := s.instances[id]
		if !ok || !s.visible(in) {
			missing = append(missing, id)
			continue
		}
		out = append(out, in)
	}
	if len(missing) == 1 {
		return nil, notFound("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", missing[0])
	}
	if len(missing) > 1 {
		return nil, notFound("InvalidInstanceID.NotFound", "The instance IDs %s do not exist", quotedIDs(missing))
	}
	return out, nil
}

// ---- DescribeInstances ----

type describeInstancesRequest struct {
	ids     []string
	filters []filter
	page    pageRequest
}

func parseDescribeInstances(p *params) (describeInstancesRequest, error) {
	var r describeInstancesRequest
	var err error
	r.ids = p.strList("InstanceId")
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	if _, sent := p.v["MaxResults"]; sent && len(r.ids) > 0 {
		return r, clientErr("InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	}
	r.page, err = readPage(p, "DescribeInstances", pageLimits{min: 5, max: 1000})
	return r, err
}

var instanceFilters = filterSpec[*instance]{
	fields: map[string]func(*instance) []string{
		"instance-id":                  func(in *instance) []string { return one(in.id) },
		"instance-type":                func(in *instance) []string { return one(in.instanceType) },
		"instance-state-name":          func(in *instance) []string { return one(in.state) },
		"instance-state-code":          func(in *instance) []string { return one(strconv.Itoa(stateCodes[in.state])) },
		"availability-zone":            func(in *instance) []string { return one(in.zone) },
		"availability-zone-id":         func(in *instance) []string { return one(in.zoneID) },
		"subnet-id":                    func(in *instance) []string { return one(liveField(in, in.subnetID)) },
		"vpc-id":                       func(in *instance) []string { return one(liveField(in, in.vpcID)) },
		"image-id":                     func(in *instance) []string { return one(in.imageID) },
		"architecture":                 func(in *instance) []string { return one(in.arch) },
		"hypervisor":                   func(*instance) []string { return one("xen") },
		"private-dns-name":             func(in *instance) []string { return one(liveField(in, in.privateDNS)) },
		"private-ip-address":           func(in *instance) []string { return one(liveField(in, in.privateIP)) },
		"instance-lifecycle":           func(in *instance) []string { return one(lifecycleField(in)) },
		"spot-instance-request-id":     func(in *instance) []string { return one(in.spotRequestID) },
		"reservation-id":               func(in *instance) []string { return one(in.reservationID) },
		"client-token":                 func(in *instance) []string { return one(in.clientToken) },
		"key-name":                     func(in *instance) []string { return one(in.keyName) },
		"iam-instance-profile.arn":     func(in *instance) []string { return one(in.iamProfileArn) },
		"instance.group-id":            func(in *instance) []string { return in.securityGroups },
		"launch-time":                  func(in *instance) []string { return one(ec2Time(in.launchTime)) },
		"state-reason-code":            func(in *instance) []string { return one(reasonCode(in)) },
		"placement-group-name":         func(in *instance) []string { return one(in.placementGroupName) },
		"placement-partition-number":   func(in *instance) []string { return one(partitionField(in)) },
		"metadata-options.http-tokens": func(in *instance) []string { return one(in.metadata.httpTokens) },
		"capacity-reservation-id":      func(in *instance) []string { return one(in.capacityReservationID) },
	},
	tags: func(in *instance) map[string]string { return in.tags },
}

// liveField hides network facts of terminated instances, which EC2 drops
// once the instance's interface is gone.
func liveField(in *instance, v string) string {
	if in.state == stateTerminated {
		return ""
	}
	return v
}

// lifecycleField is EC2's instanceLifecycle: "spot" for spot instances,
// "capacity-block" for capacity block ones, and absent for on-demand ones
// (there is no "on-demand" value).
func lifecycleField(in *instance) string {
	if in.capacityType == Spot || in.capacityType == CapacityBlock {
		return in.capacityType
	}
	return ""
}

// partitionField is the instance's partition as EC2 reports it: only for
// an instance in a partition group.
func partitionField(in *instance) string {
	if in.partitionNumber == 0 {
		return ""
	}
	return strconv.Itoa(in.partitionNumber)
}

func reasonCode(in *instance) string {
	if in.reason == nil {
		return ""
	}
	return in.reason.code
}

type instanceStateXML struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

func stateXML(state string) instanceStateXML {
	return instanceStateXML{Code: stateCodes[state], Name: state}
}

type groupXML struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName"`
}

type instanceBlockDeviceXML struct {
	DeviceName string `xml:"deviceName"`
	Ebs        struct {
		VolumeID            string `xml:"volumeId"`
		Status              string `xml:"status"`
		AttachTime          string `xml:"attachTime"`
		DeleteOnTermination bool   `xml:"deleteOnTermination"`
	} `xml:"ebs"`
}

type instanceXML struct {
	InstanceID     string             `xml:"instanceId"`
	ImageID        string             `xml:"imageId"`
	InstanceState  instanceStateXML   `xml:"instanceState"`
	PrivateDNSName string             `xml:"privateDnsName"`
	DNSName        string             `xml:"dnsName"`
	Reason         string             `xml:"reason"`
	KeyName        string             `xml:"keyName,omitempty"`
	AmiLaunchIndex int                `xml:"amiLaunchIndex"`
	ProductCodes   itemList[struct{}] `xml:"productCodes"`
	InstanceType   string             `xml:"instanceType"`
	LaunchTime     string             `xml:"launchTime"`
	Placement      struct {
		AvailabilityZone   string `xml:"availabilityZone"`
		AvailabilityZoneID string `xml:"availabilityZoneId"`
		GroupName          string `xml:"groupName"`
		GroupID            string `xml:"groupId,omitempty"`
		PartitionNumber    int    `xml:"partitionNumber,omitempty"`
		Tenancy            string `xml:"tenancy"`
	} `xml:"placement"`
	Monitoring struct {
		State string `xml:"state"`
	} `xml:"monitoring"`
	SubnetID         string             `xml:"subnetId,omitempty"`
	VpcID            string             `xml:"vpcId,omitempty"`
	PrivateIPAddress string             `xml:"privateIpAddress,omitempty"`
	SourceDestCheck  bool               `xml:"sourceDestCheck"`
	GroupSet         itemList[groupXML] `xml:"groupSet"`
	StateReason      *struct {
		Code    string `xml:"code"`
		Message string `xml:"message"`
	} `xml:"stateReason,omitempty"`
	Architecture          string                           `xml:"architecture"`
	RootDeviceType        string                           `xml:"rootDeviceType"`
	RootDeviceName        string                           `xml:"rootDeviceName"`
	BlockDeviceMapping    itemList[instanceBlockDeviceXML] `xml:"blockDeviceMapping"`
	InstanceLifecycle     string                           `xml:"instanceLifecycle,omitempty"`
	SpotInstanceRequestID string                           `xml:"spotInstanceRequestId,omitempty"`
	VirtualizationType    string                           `xml:"virtualizationType"`
	ClientToken           string                           `xml:"clientToken"`
	TagSet                *itemList[tagXML]                `xml:"tagSet,omitempty"`
	Hypervisor            string                           `xml:"hypervisor"`
	IamInstanceProfile    *struct {
		Arn string `xml:"arn"`
		ID  string `xml:"id"`
	} `xml:"iamInstanceProfile,omitempty"`
	EbsOptimized    bool `xml:"ebsOptimized"`
	EnaSupport      bool `xml:"enaSupport"`
	MetadataOptions struct {
		State                   string `xml:"state"`
		HTTPTokens              string `xml:"httpTokens"`
		HTTPPutResponseHopLimit int    `xml:"httpPutResponseHopLimit"`
		HTTPEndpoint            string `xml:"httpEndpoint"`
		HTTPProtocolIpv6        string `xml:"httpProtocolIpv6"`
		InstanceMetadataTags    string `xml:"instanceMetadataTags"`
	} `xml:"metadataOptions"`
	PrivateDNSNameOptions struct {
		HostnameType                    string `xml:"hostnameType"`
		EnableResourceNameDNSARecord    bool   `xml:"enableResourceNameDnsARecord"`
		EnableResourceNameDNSAAAARecord bool   `xml:"enableResourceNameDnsAAAARecord"`
	} `xml:"privateDnsNameOptions"`
	PlatformDetails                  string `xml:"platformDetails"`
	UsageOperation                   string `xml:"usageOperation"`
	CapacityReservationID            string `xml:"capacityReservationId,omitempty"`
	CapacityReservationSpecification struct {
		CapacityReservationPreference string `xml:"capacityReservationPreference"`
		CapacityReservationTarget     *struct {
			CapacityReservationID string `xml:"capacityReservationId"`
		} `xml:"capacityReservationTarget,omitempty"`
	} `xml:"capacityReservationSpecification"`
}

func (s *Sim) instanceToXML(in *instance) instanceXML {
	x := instanceXML{
		InstanceID: in.id, ImageID: in.imageID, InstanceState: stateXML(in.state),
		PrivateDNSName: liveField(in, in.privateDNS), Reason: in.transitionReason, KeyName: in.keyName,
		AmiLaunchIndex: in.amiLaunchIndex, InstanceType: in.instanceType, LaunchTime: ec2Time(in.launchTime),
		SubnetID: liveField(in, in.subnetID), VpcID: liveField(in, in.vpcID), PrivateIPAddress: liveField(in, in.privateIP),
		SourceDestCheck: true, Architecture: in.arch, RootDeviceType: "ebs", RootDeviceName: "/dev/xvda",
		InstanceLifecycle: lifecycleField(in), SpotInstanceRequestID: in.spotRequestID, VirtualizationType: "hvm",
		ClientToken: in.clientToken, TagSet: optItems(tagsXML(in.tags)),
		EnaSupport: true, PlatformDetails: "Linux/UNIX", UsageOperation: "RunInstances",
	}
	// EC2 reports "xen" for every instance, Nitro ones included: the
	// instance's hypervisor enum has only ovm and xen. The instance type's
	// hypervisor (DescribeInstanceTypes) is where nitro shows.
	x.Hypervisor = "xen"
	x.Placement.AvailabilityZone, x.Placement.AvailabilityZoneID, x.Placement.Tenancy = in.zone, in.zoneID, "default"
	x.Placement.GroupName, x.Placement.GroupID, x.Placement.PartitionNumber = in.placementGroupName, in.placementGroupID, in.partitionNumber
	x.Monitoring.State = "disabled"
	if in.state != stateTerminated {
		var groups []groupXML
		for _, id := range in.securityGroups {
			name := ""
			if g, ok := s.groups[id]; ok {
				name = g.name
			}
			groups = append(groups, groupXML{GroupID: id, GroupName: name})
		}
		x.GroupSet = items(groups)
		var bdms []instanceBlockDeviceXML
		for _, bd := range in.blockDevices {
			var b instanceBlockDeviceXML
			b.DeviceName = bd.deviceName
			b.Ebs.VolumeID, b.Ebs.Status, b.Ebs.AttachTime, b.Ebs.DeleteOnTermination = bd.volumeID, "attached", ec2Time(in.launchTime), bd.deleteOnTermination
			bdms = append(bdms, b)
		}
		x.BlockDeviceMapping = items(bdms)
	}
	if in.reason != nil {
		x.StateReason = &struct {
			Code    string `xml:"code"`
			Message string `xml:"message"`
		}{in.reason.code, in.reason.message}
	}
	if in.iamProfileArn != "" {
		x.IamInstanceProfile = &struct {
			Arn string `xml:"arn"`
			ID  string `xml:"id"`
		}{in.iamProfileArn, "AIPA" + in.id[2:]}
	}
	m := &x.MetadataOptions
	m.State = "applied"
	if in.state == statePending {
		m.State = "pending"
	}
	m.HTTPTokens, m.HTTPPutResponseHopLimit, m.HTTPEndpoint = in.metadata.httpTokens, in.metadata.hopLimit, in.metadata.httpEndpoint
	m.HTTPProtocolIpv6, m.InstanceMetadataTags = in.metadata.httpProtocolIpv6, in.metadata.instanceMetadataTags
	x.PrivateDNSNameOptions.HostnameType = "ip-name"
	// EC2 reports the reservation the instance runs in, and its
	// preference as launched (open unless the template said otherwise;
	// a targeted launch names its target).
	x.CapacityReservationID = in.capacityReservationID
	crs := &x.CapacityReservationSpecification
	crs.CapacityReservationPreference = in.reservationPreference
	if crs.CapacityReservationPreference == "" {
		crs.CapacityReservationPreference = "open"
	}
	if in.reservationPreference == "capacity-reservations-only" && in.capacityReservationID != "" {
		crs.CapacityReservationTarget = &struct {
			CapacityReservationID string `xml:"capacityReservationId"`
		}{in.capacityReservationID}
	}
	return x
}

type reservationXML struct {
	ReservationID string                `xml:"reservationId"`
	OwnerID       string                `xml:"ownerId"`
	GroupSet      itemList[groupXML]    `xml:"groupSet"`
	Instances     itemList[instanceXML] `xml:"instancesSet"`
}

type describeInstancesResponse struct {
	responseMeta
	Reservations itemList[reservationXML] `xml:"reservationSet"`
	NextToken    string                   `xml:"nextToken,omitempty"`
}

// candidates are the instances a Describe call considers: the ids named
// (all or nothing), else every visible instance in launch order.
func (s *Sim) candidates(ids []string) ([]*instance, error) {
	if len(ids) > 0 {
		return s.lookupInstances(ids)
	}
	var out []*instance
	for _, id := range s.instanceOrder {
		if in := s.instances[id]; s.visible(in) {
			out = append(out, in)
		}
	}
	return out, nil
}

func (s *Sim) describeInstances(r describeInstancesRequest) (response, error) {
	match, err := instanceFilters.compile(r.filters)
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
		if match(in) {
			matched = append(matched, in)
		}
	}
	page, next := paginate(matched, r.page)
	// Instances are paged one by one and regrouped into their reservations
	// page by page, so a reservation cut by a page boundary shows up on both
	// pages with its instances split, which callers must (and do) tolerate.
	var reservations []reservationXML
	for _, in := range page {
		if n := len(reservations); n > 0 && reservations[n-1].ReservationID == in.reservationID {
			reservations[n-1].Instances.Items = append(reservations[n-1].Instances.Items, s.instanceToXML(in))
			continue
		}
		reservations = append(reservations, reservationXML{
			ReservationID: in.reservationID, OwnerID: s.opts.AccountID,
			Instances: items([]instanceXML{s.instanceToXML(in)}),
		})
	}
	return &describeInstancesResponse{Reservations: items(reservations), NextToken: next}, nil
}

// ---- TerminateInstances ----

type terminateInstancesRequest struct{ ids []string }

func parseTerminateInstances(p *params) (terminateInstancesRequest, error) {
	r := terminateInstancesRequest{ids: p.strList("InstanceId")}
	if len(r.ids) == 0 {
		return r, missingParam("InstanceId.1")
	}
	if _, err := p.boolean("Force"); err != nil {
		return r, err
	}
	if _, err := p.boolean("SkipOsShutdown"); err != nil {
		return r, err
	}
	return r, nil
}

type instanceStateChangeXML struct {
	InstanceID    string           `xml:"instanceId"`
	CurrentState  instanceStateXML `xml:"currentState"`
	PreviousState instanceStateXML `xml:"previousState"`
}

type terminateInstancesResponse struct {
	responseMeta
	Instances itemList[instanceStateChangeXML] `xml:"instancesSet"`
}

// terminateInstances is idempotent as on AWS: terminating an instance that
// is shutting down or terminated (but still visible) succeeds and reports
// its state; an ID EC2 no longer knows fails the whole call with
// InvalidInstanceID.NotFound.
func (s *Sim) terminateInstances(r terminateInstancesRequest) (response, error) {
	s.advanceAll()
	targets, err := s.lookupInstances(r.ids)
	if err != nil {
		return nil, err
	}
	var out []instanceStateChangeXML
	for _, in := range targets {
		prev := in.state
		s.beginShutdown(in, stateReason{"Client.UserInitiatedShutdown", "Client.UserInitiatedShutdown: User initiated shutdown"}, "User initiated")
		out = append(out, instanceStateChangeXML{InstanceID: in.id, CurrentState: stateXML(in.state), PreviousState: stateXML(prev)})
	}
	return &terminateInstancesResponse{Instances: items(out)}, nil
}
