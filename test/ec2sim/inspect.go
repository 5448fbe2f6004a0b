package ec2sim

import (
	"sort"
	"time"
)

// Instance is a snapshot of a simulated instance, for tests and for the
// kubelet simulator that turns instances into nodes.
type Instance struct {
	ID           string
	InstanceType string
	Zone         string
	ZoneID       string
	SubnetID     string
	VPCID        string
	ImageID      string
	Architecture string
	// CapacityType is OnDemand, Spot or CapacityBlock.
	CapacityType string
	// CapacityReservationID is the reservation it runs in, if any.
	CapacityReservationID string
	// PlacementGroupID and PlacementGroupName are the placement group it
	// is in, if any; PartitionNumber its partition in a partition group
	// (0 otherwise).
	PlacementGroupID   string
	PlacementGroupName string
	PartitionNumber    int
	// State is pending, running, shutting-down or terminated.
	State string
	// StateReason is the code of why the instance stopped, e.g.
	// Client.UserInitiatedShutdown or Server.SpotInstanceTermination.
	StateReason    string
	PrivateIP      string
	PrivateDNSName string
	LaunchTime     time.Time
	// LaunchTemplateID, LaunchTemplateName and LaunchTemplateVersion name the
	// template (and resolved version) the instance was launched from.
	LaunchTemplateID      string
	LaunchTemplateName    string
	LaunchTemplateVersion string
	FleetID               string
	ClientToken           string
	SecurityGroupIDs      []string
	IAMInstanceProfileARN string
	// UserData is base64, as it was given in the launch template.
	UserData string
	// Tags include EC2's own aws: tags; VolumeTags are what the launch put
	// on the instance's volumes.
	Tags       map[string]string
	VolumeTags map[string]string
}

// Instances returns every instance EC2 still knows (terminated ones until
// TerminatedRetention), in launch order, with states brought up to date.
// Instances hidden by VisibilityLag are included: this is the truth, not
// the API's view of it.
func (s *Sim) Instances() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceAll()
	out := make([]Instance, 0, len(s.instanceOrder))
	for _, id := range s.instanceOrder {
		in := s.instances[id]
		snap := Instance{
			ID: in.id, InstanceType: in.instanceType, Zone: in.zone, ZoneID: in.zoneID, SubnetID: in.subnetID, VPCID: in.vpcID,
			ImageID: in.imageID, Architecture: in.arch, CapacityType: in.capacityType, State: in.state,
			StateReason: reasonCode(in), PrivateIP: in.privateIP, PrivateDNSName: in.privateDNS, LaunchTime: in.launchTime,
			LaunchTemplateID: in.launchTemplateID, LaunchTemplateName: in.launchTemplateName,
			LaunchTemplateVersion: in.launchTemplateVersion, FleetID: in.fleetID, ClientToken: in.clientToken,
			SecurityGroupIDs: append([]string(nil), in.securityGroups...), IAMInstanceProfileARN: in.iamProfileArn,
			UserData: in.userData, Tags: copyTags(in.tags), VolumeTags: copyTags(in.volumeTags),
			CapacityReservationID: in.capacityReservationID,
			PlacementGroupID:      in.placementGroupID, PlacementGroupName: in.placementGroupName, PartitionNumber: in.partitionNumber,
		}
		out = append(out, snap)
	}
	return out
}

// Instance returns one instance's snapshot.
func (s *Sim) Instance(id string) (Instance, bool) {
	for _, in := range s.Instances() {
		if in.ID == id {
			return in, true
		}
	}
	return Instance{}, false
}

// CreateFleetCalls returns every CreateFleet request the simulator parsed,
// in arrival order, with its outcome. Requests refused before parsing
// completed (malformed, unknown parameters, injected failures) are not
// included; Calls counts those.
func (s *Sim) CreateFleetCalls() []CreateFleetRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CreateFleetRecord(nil), s.fleetCalls...)
}

// CreateFleetOperations is CreateFleetCalls with the SDK's retries of one
// operation folded into its last attempt: what the caller asked, however
// many requests the transport took. Tests that count launches count these.
func (s *Sim) CreateFleetOperations() []CreateFleetRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]CreateFleetRecord, 0, len(s.fleetCalls))
	at := map[string]int{}
	for _, c := range s.fleetCalls {
		if i, ok := at[c.Invocation]; ok && c.Invocation != "" {
			out[i] = c
			continue
		}
		at[c.Invocation] = len(out)
		out = append(out, c)
	}
	return out
}

// Calls returns how many requests for action reached the simulator,
// whatever their outcome (injected failures and SDK retries included).
func (s *Sim) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[action]
}

// Invocations returns how many operations for action a client started: SDK
// retries of one operation (the same call resent after throttling, a 5xx or
// a connection the transport closed under it) count once. Tests of caches
// count these, since a transport retry is not the code asking again.
func (s *Sim) Invocations(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.invocations[action]
}

// CallCounts returns the number of requests per action.
func (s *Sim) CallCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// Subnet is a snapshot of a simulated subnet.
type Subnet struct {
	ID, VPCID, Zone, ZoneID, CIDR string
	AvailableIPs                  int
	Tags                          map[string]string
}

// Subnets returns every subnet in creation order.
func (s *Sim) Subnets() []Subnet {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceAll()
	var out []Subnet
	for _, id := range s.subnetOrder {
		sn := s.subnets[id]
		out = append(out, Subnet{ID: sn.id, VPCID: sn.vpcID, Zone: sn.zone, ZoneID: sn.zoneID, CIDR: sn.cidr, AvailableIPs: sn.available(), Tags: copyTags(sn.tags)})
	}
	return out
}

// LaunchTemplateNames returns the names of the existing launch templates,
// sorted.
func (s *Sim) LaunchTemplateNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.templateByName))
	for n := range s.templateByName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
