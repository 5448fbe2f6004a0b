package ec2sim

import (
	"fmt"
	"regexp"
)

// Placement groups: a test adds them with AddPlacementGroup (EC2's
// CreatePlacementGroup is not a call Joist makes: a node class names an
// existing group, as Karpenter's placementGroupSelector does);
// DescribePlacementGroups finds them by name, ID and EC2's filters; a
// launch template puts its instances in one (Placement.GroupId or
// GroupName, and PartitionNumber), and CreateFleet enforces each
// strategy's rules per override (placement.go).

// Placement group strategies and spread levels, as EC2 spells them.
const (
	PlacementCluster   = "cluster"
	PlacementPartition = "partition"
	PlacementSpread    = "spread"
	SpreadLevelRack    = "rack"
)

// PlacementGroup is what a test says about a placement group it adds.
type PlacementGroup struct {
	// Name is unique in the account among the groups that are not
	// deleted; the group's ARN is by name.
	Name string
	// Strategy is PlacementCluster, PlacementPartition or
	// PlacementSpread.
	Strategy string
	// PartitionCount is how many partitions a partition group has, 1 to
	// 7 (EC2's limit per zone); the other strategies have none.
	PartitionCount int32
	// SpreadLevel is a spread group's level: SpreadLevelRack, the
	// default. EC2's other level, host, exists only on Outposts, which
	// the simulator does not have.
	SpreadLevel string
	// State is available (the default), pending, deleting or deleted.
	// Only an available group takes instances.
	State string
	Tags  map[string]string
}

type placementGroup struct {
	PlacementGroup
	id, arn string
}

var placementGroupStates = []string{"pending", "available", "deleting", "deleted"}

var placementGroupIDPattern = regexp.MustCompile(`^pg-([0-9a-f]{8}|[0-9a-f]{17})$`)

// maxPartitions is EC2's limit of partitions per zone in a partition
// placement group.
const maxPartitions = 7

// AddPlacementGroup adds a placement group and returns its ID. Like the
// other seeding helpers it panics on input that is a bug in the test: a
// missing or duplicate name, an unknown strategy, spread level or state, a
// partition count outside 1..7 for a partition group, or one on another
// strategy.
func (s *Sim) AddPlacementGroup(pg PlacementGroup) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pg.Name == "" || len(pg.Name) > 255 {
		panic(fmt.Sprintf("ec2sim: AddPlacementGroup: the name %q is not 1 to 255 characters", pg.Name))
	}
	if other := s.placementGroupByName(pg.Name); other != nil && other.State != "deleted" {
		panic(fmt.Sprintf("ec2sim: AddPlacementGroup: %q already exists (%s)", pg.Name, other.id))
	}
	if pg.State == "" {
		pg.State = "available"
	}
	if !contains(placementGroupStates, pg.State) {
		panic(fmt.Sprintf("ec2sim: AddPlacementGroup: %q is not a placement group state", pg.State))
	}
	switch pg.Strategy {
	case PlacementPartition:
		if pg.PartitionCount < 1 || pg.PartitionCount > maxPartitions {
			panic(fmt.Sprintf("ec2sim: AddPlacementGroup: a partition group has 1 to %d partitions, not %d", maxPartitions, pg.PartitionCount))
		}
	case PlacementCluster, PlacementSpread:
		if pg.PartitionCount != 0 {
			panic(fmt.Sprintf("ec2sim: AddPlacementGroup: only a partition group has partitions (%s group %q has %d)", pg.Strategy, pg.Name, pg.PartitionCount))
		}
	default:
		panic(fmt.Sprintf("ec2sim: AddPlacementGroup: %q is not cluster, partition or spread", pg.Strategy))
	}
	switch {
	case pg.Strategy == PlacementSpread && pg.SpreadLevel == "":
		pg.SpreadLevel = SpreadLevelRack
	case pg.Strategy == PlacementSpread && pg.SpreadLevel != SpreadLevelRack:
		panic(fmt.Sprintf("ec2sim: AddPlacementGroup: spread level %q: the simulator has no Outposts, so only rack", pg.SpreadLevel))
	case pg.Strategy != PlacementSpread && pg.SpreadLevel != "":
		panic(fmt.Sprintf("ec2sim: AddPlacementGroup: only a spread group has a spread level (%s group %q)", pg.Strategy, pg.Name))
	}
	pg.Tags = copyTags(pg.Tags)
	g := &placementGroup{PlacementGroup: pg, id: s.newID("pg")}
	// EC2 builds a placement group's ARN from its name, not its ID.
	g.arn = s.arn("placement-group", g.Name)
	s.placementGroups[g.id] = g
	s.placementGroupOrder = append(s.placementGroupOrder, g.id)
	return g.id
}

// SetPlacementGroupState changes a group's state (a test deleting one, or
// making it pending).
func (s *Sim) SetPlacementGroupState(id, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.placementGroups[id]
	if !ok {
		return fmt.Errorf("ec2sim: SetPlacementGroupState: no placement group %s", id)
	}
	if !contains(placementGroupStates, state) {
		return fmt.Errorf("ec2sim: SetPlacementGroupState: %q is not a placement group state", state)
	}
	if other := s.placementGroupByName(g.Name); state != "deleted" && other != g && other.State != "deleted" {
		return fmt.Errorf("ec2sim: SetPlacementGroupState: the name %q is %s's now", g.Name, other.id)
	}
	g.State = state
	return nil
}

// placementGroupByName is the group of that name: the one not deleted if
// there is one (a deleted group's name can be used again), else the
// latest deleted one, which EC2 still describes for a while.
func (s *Sim) placementGroupByName(name string) *placementGroup {
	var found *placementGroup
	for _, id := range s.placementGroupOrder {
		g := s.placementGroups[id]
		if g.Name != name {
			continue
		}
		if g.State != "deleted" {
			return g
		}
		found = g
	}
	return found
}

// ---- DescribePlacementGroups ----

type describePlacementGroupsRequest struct {
	names, ids []string
	filters    []filter
}

func parseDescribePlacementGroups(p *params) (describePlacementGroupsRequest, error) {
	var r describePlacementGroupsRequest
	var err error
	r.names = p.strList("GroupName")
	r.ids = p.strList("GroupId")
	for _, id := range r.ids {
		if !placementGroupIDPattern.MatchString(id) {
			return r, clientErr("InvalidPlacementGroupId.Malformed", "Invalid id: \"%s\" (expecting \"pg-...\")", id)
		}
	}
	r.filters, err = p.filters()
	return r, err
}

// placementGroupFilters are exactly the filters EC2 documents for
// DescribePlacementGroups: there is no group-id filter (GroupId.N names
// groups by ID) and no partition-count one.
var placementGroupFilters = filterSpec[*placementGroup]{
	fields: map[string]func(*placementGroup) []string{
		"group-name":   func(g *placementGroup) []string { return one(g.Name) },
		"group-arn":    func(g *placementGroup) []string { return one(g.arn) },
		"state":        func(g *placementGroup) []string { return one(g.State) },
		"strategy":     func(g *placementGroup) []string { return one(g.Strategy) },
		"spread-level": func(g *placementGroup) []string { return one(g.SpreadLevel) },
	},
	tags: func(g *placementGroup) map[string]string { return g.Tags },
}

type placementGroupXML struct {
	GroupName      string            `xml:"groupName"`
	State          string            `xml:"state"`
	Strategy       string            `xml:"strategy"`
	PartitionCount int32             `xml:"partitionCount,omitempty"`
	GroupID        string            `xml:"groupId"`
	TagSet         *itemList[tagXML] `xml:"tagSet,omitempty"`
	GroupArn       string            `xml:"groupArn"`
	SpreadLevel    string            `xml:"spreadLevel,omitempty"`
}

type describePlacementGroupsResponse struct {
	responseMeta
	PlacementGroups itemList[placementGroupXML] `xml:"placementGroupSet"`
}

// describePlacementGroups lists the named groups (by name, then by ID;
// one unknown fails the whole call, as EC2 does) or all of them,
// filtered, in the order they were added. The call has no pagination on
// EC2 either.
func (s *Sim) describePlacementGroups(r describePlacementGroupsRequest) (response, error) {
	match, err := placementGroupFilters.compile(r.filters)
	if err != nil {
		return nil, err
	}
	var cands []*placementGroup
	if len(r.names) == 0 && len(r.ids) == 0 {
		for _, id := range s.placementGroupOrder {
			cands = append(cands, s.placementGroups[id])
		}
	}
	seen := map[string]bool{}
	add := func(g *placementGroup) {
		if !seen[g.id] {
			seen[g.id] = true
			cands = append(cands, g)
		}
	}
	for _, name := range r.names {
		g := s.placementGroupByName(name)
		if g == nil {
			return nil, unknownPlacementGroup(name)
		}
		add(g)
	}
	for _, id := range r.ids {
		g, ok := s.placementGroups[id]
		if !ok {
			return nil, unknownPlacementGroup(id)
		}
		add(g)
	}
	var out []placementGroupXML
	for _, g := range cands {
		if !match(g) {
			continue
		}
		out = append(out, placementGroupXML{
			GroupName: g.Name, State: g.State, Strategy: g.Strategy, PartitionCount: g.PartitionCount, GroupID: g.id,
			TagSet: optItems(tagsXML(g.Tags)), GroupArn: g.arn, SpreadLevel: g.SpreadLevel,
		})
	}
	return &describePlacementGroupsResponse{PlacementGroups: items(out)}, nil
}

// unknownPlacementGroup is EC2's error for a group it does not know, by
// name or by ID alike.
func unknownPlacementGroup(ref string) *apiError {
	return notFound("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", ref)
}
