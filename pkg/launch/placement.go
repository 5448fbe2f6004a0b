package launch

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
)

// PlacementGroup is the placement group a node class's
// placementGroupSelector names, as EC2 describes it.
type PlacementGroup struct {
	ID   string
	Name string
	// Strategy is cluster, partition or spread (catalog.Placement*).
	Strategy string
	// Partitions is a partition group's partition count.
	Partitions int32
	// Zone is the zone of a cluster group's live instances ("" while it
	// has none): EC2 keeps a cluster group in one zone, the first
	// instance's, and refuses launches into it elsewhere.
	Zone string
}

// PlacementGroup resolves the node class's placementGroupSelector (nil,
// nil when it has none) to an available placement group, cached for
// CacheTTL like subnets. A group EC2 does not know, or one not available
// (being created or deleted), is an error naming the field, not an AWS
// failure: the class cannot launch a node (its pools are not ready), as
// Karpenter's PlacementGroupReady condition is false.
func (l *Launcher) PlacementGroup(ctx context.Context, nc *model.NodeClass) (*PlacementGroup, error) {
	if nc == nil || nc.PlacementGroup == nil {
		return nil, nil
	}
	sel := *nc.PlacementGroup
	in := &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{{
		Name: aws.String("state"), Values: []string{string(ec2types.PlacementGroupStateAvailable)},
	}}}
	field, what := "spec.placementGroupSelector.name", sel.Name
	if sel.ID != "" {
		field, what = "spec.placementGroupSelector.id", sel.ID
		in.GroupIds = []string{sel.ID}
	} else {
		in.GroupNames = []string{sel.Name}
	}
	key := "placement/" + sel.ID + "/" + sel.Name
	now := l.now()
	if got, ok := l.placements.get(key, now); ok {
		return got, nil
	}
	out, err := l.EC2.DescribePlacementGroups(ctx, in)
	var ae smithy.APIError
	switch {
	case err != nil && errors.As(err, &ae) && (ae.ErrorCode() == "InvalidPlacementGroup.Unknown" || ae.ErrorCode() == "InvalidPlacementGroupId.Malformed"):
		return nil, fmt.Errorf("node class %q: %s: placement group %q not found", nc.Name, field, what)
	case err != nil:
		return nil, fmt.Errorf("node class %q: %s: describe placement groups: %w", nc.Name, field, err)
	case len(out.PlacementGroups) == 0:
		return nil, fmt.Errorf("node class %q: %s: placement group %q is not available", nc.Name, field, what)
	}
	g := out.PlacementGroups[0]
	pg := &PlacementGroup{
		ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName),
		Strategy: string(g.Strategy), Partitions: aws.ToInt32(g.PartitionCount),
	}
	if pg.Strategy == catalog.PlacementCluster {
		if pg.Zone, err = l.placementZone(ctx, pg.Name); err != nil {
			return nil, fmt.Errorf("node class %q: %s: %w", nc.Name, field, err)
		}
	}
	l.placements.put(key, pg, now.Add(l.ttl()))
	return pg, nil
}

// placementZone is the zone of the cluster placement group's live
// instances, anyone's ("" when it has none): one page is enough, as they
// are all in one zone.
func (l *Launcher) placementZone(ctx context.Context, group string) (string, error) {
	out, err := l.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("placement-group-name"), Values: []string{group}},
			{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
		},
		MaxResults: aws.Int32(5),
	})
	if err != nil {
		return "", fmt.Errorf("describe the placement group's instances: %w", err)
	}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			if in.Placement != nil && aws.ToString(in.Placement.AvailabilityZone) != "" {
				return aws.ToString(in.Placement.AvailabilityZone), nil
			}
		}
	}
	return "", nil
}

// Requirements are what a node of a class that launches into pg must
// meet, for planning to add to its pools' (provisioning.ReadyPools):
// the group's id, for a partition group one of its partitions (a pod may
// select one or spread over them, and a node is planned into one, as
// Karpenter's offerings per partition), and for a cluster group the
// families EC2 launches into one (catalog.SupportsPlacement) and its one
// zone: its instances', else the first of zones (the class's subnets'),
// so that no node is planned where EC2 would refuse it (Karpenter plans
// in every zone and lets such launches fail).
func (pg *PlacementGroup) Requirements(zones []string) []model.Requirement {
	if pg == nil {
		return nil
	}
	in := string(corev1.NodeSelectorOpIn)
	out := []model.Requirement{{Key: model.LabelPlacementGroupID, Operator: in, Values: []string{pg.ID}}}
	if pg.Strategy == catalog.PlacementPartition && pg.Partitions > 0 {
		parts := make([]string, pg.Partitions)
		for i := range parts {
			parts[i] = strconv.Itoa(i + 1)
		}
		out = append(out, model.Requirement{Key: model.LabelPlacementGroupPartition, Operator: in, Values: parts})
	}
	if fams := catalog.FamiliesNotPlaceable(pg.Strategy); len(fams) > 0 {
		out = append(out, model.Requirement{Key: catalog.LabelInstanceFamily, Operator: string(corev1.NodeSelectorOpNotIn), Values: fams})
	}
	if pg.Strategy == catalog.PlacementCluster {
		zone := pg.Zone
		if zone == "" && len(zones) > 0 {
			zone = zones[0]
		}
		if zone != "" {
			out = append(out, model.Requirement{Key: corev1.LabelTopologyZone, Operator: in, Values: []string{zone}})
		}
	}
	return out
}

// id is pg's id ("" without a group).
func (pg *PlacementGroup) id() string {
	if pg == nil {
		return ""
	}
	return pg.ID
}

// partition is the partition a node of pg with labels launches into: the
// one its plan put it in (the partition label), else the lowest, as
// Karpenter picks the lowest its node claim allows; 0 (EC2 picks, or not
// a partition group) otherwise.
func (pg *PlacementGroup) partition(labels map[string]string) int32 {
	if pg == nil || pg.Strategy != catalog.PlacementPartition || pg.Partitions <= 0 {
		return 0
	}
	if n, err := strconv.ParseInt(labels[model.LabelPlacementGroupPartition], 10, 32); err == nil && n >= 1 && n <= int64(pg.Partitions) {
		return int32(n)
	}
	return 1
}
