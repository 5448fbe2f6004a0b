package ec2sim

import (
	"fmt"
	"strings"
)

// Launching into a placement group. A launch template's Placement names
// the group; CreateFleet checks, per override as EC2 reports them in the
// fleet's errors:
//
//   - the group exists and is available (InvalidPlacementGroup.Unknown);
//   - a partition number only with a partition group
//     (InvalidParameterCombination), within its partitions
//     (InvalidParameterValue);
//   - cluster: the type supports it (burstable and Mac types do not:
//     InvalidParameterCombination), and the group's instances are all in
//     one zone, the first instance's (InvalidPlacementGroup.InUse);
//   - spread: at most seven instances per zone, each on its own rack
//     (InsufficientInstanceCapacity with EC2's message, the one
//     Karpenter's IsSpreadPlacementGroupLimitError looks for).
//
// An instance holds its place in the group until it is terminated, not
// while it shuts down (it is still on its hardware), as a reservation's
// room comes back only then.

// maxSpreadPerZone is EC2's limit of instances per zone in a rack-level
// spread group.
const maxSpreadPerZone = 7

// placementStrategies are the strategies an instance type supports
// (DescribeInstanceTypes' PlacementGroupInfo): burstable and Mac types
// cannot be in a cluster group.
func placementStrategies(typeName string) []string {
	if burstable(typeName) || strings.HasPrefix(typeName, "mac") {
		return []string{PlacementPartition, PlacementSpread}
	}
	return []string{PlacementCluster, PlacementPartition, PlacementSpread}
}

// placementGroupOf is the group a template names, whatever its state; nil
// when it names none or one the simulator does not know.
func (s *Sim) placementGroupOf(ps placementSpec) *placementGroup {
	switch {
	case ps.groupID != "":
		return s.placementGroups[ps.groupID]
	case ps.groupName != "":
		return s.placementGroupByName(ps.groupName)
	}
	return nil
}

// holds reports whether the instance has a place in the group.
func holds(in *instance, g *placementGroup) bool {
	return in.placementGroupID == g.id && in.state != stateTerminated
}

// placementRoom checks the candidate's placement group and says how many
// of want instances it takes in the candidate's zone, with the override's
// error when that is fewer. g is nil when the template names no group.
// The caller holds s.mu and has advanced the instances.
func (s *Sim) placementRoom(c candidate, want int) (g *placementGroup, n int, e *apiError) {
	ps := c.ver.data.placement
	if ps == (placementSpec{}) {
		return nil, want, nil
	}
	g = s.placementGroupOf(ps)
	if g == nil {
		return nil, 0, unknownPlacementGroup(ps.ref())
	}
	if g.State != "available" {
		e := unknownPlacementGroup(ps.ref())
		e.Message += fmt.Sprintf(" (ec2sim: it is %s)", g.State)
		return nil, 0, e
	}
	if pn := ps.partitionNumber; pn != nil {
		if g.Strategy != PlacementPartition {
			return nil, 0, clientErr("InvalidParameterCombination", "A partition number can be specified only for a partition placement group; '%s' is a %s placement group.", g.Name, g.Strategy)
		}
		if *pn > int(g.PartitionCount) {
			return nil, 0, invalidParam("Value (%d) for parameter partitionNumber is invalid. The placement group '%s' has %d partitions.", *pn, g.Name, g.PartitionCount)
		}
	}
	zone := c.subnet.zone
	switch g.Strategy {
	case PlacementCluster:
		if !contains(placementStrategies(c.it.Name), PlacementCluster) {
			return nil, 0, clientErr("InvalidParameterCombination", "Cluster placement groups are not supported by the '%s' instance type. Specify a supported instance type or change the placement group strategy, and try again.", c.it.Name)
		}
		for _, id := range s.instanceOrder {
			if in := s.instances[id]; holds(in, g) && in.zone != zone {
				return nil, 0, clientErr("InvalidPlacementGroup.InUse", "The placement group '%s' is in use in another availability zone: %s", g.Name, in.zone)
			}
		}
	case PlacementSpread:
		used := 0
		for _, id := range s.instanceOrder {
			if in := s.instances[id]; holds(in, g) && in.zone == zone {
				used++
			}
		}
		if room := maxSpreadPerZone - used; room < want {
			return g, max(room, 0), clientErr("InsufficientInstanceCapacity",
				"You've reached the limit of instances in this spread placement group. A spread placement group can have up to seven instances per Availability Zone. (ec2sim: '%s' has %d in %s)", g.Name, used, zone)
		}
	}
	return g, want, nil
}

// partitionFor is the partition a new instance of a partition group goes
// to in zone: the one the template asks for, else the one holding the
// fewest of the group's instances in that zone (the lowest on a tie), as
// EC2 spreads instances evenly over the partitions when not told. A
// partition group has up to seven partitions in each zone it spans, so
// the balance is per zone.
func (s *Sim) partitionFor(g *placementGroup, zone string, asked *int) int {
	if g.Strategy != PlacementPartition {
		return 0
	}
	if asked != nil {
		return *asked
	}
	load := make([]int, g.PartitionCount+1)
	for _, id := range s.instanceOrder {
		if in := s.instances[id]; holds(in, g) && in.zone == zone {
			load[in.partitionNumber]++
		}
	}
	best := 1
	for p := 2; p <= int(g.PartitionCount); p++ {
		if load[p] < load[best] {
			best = p
		}
	}
	return best
}
