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
	l.placements.put(key, pg, now.Add(l.ttl()))
	return pg, nil
}

// Requirements are what a node of a class that launches into pg must
// meet, for planning to add to its pools' (provisioning.ReadyPools):
// the group's id, for a partition group one of its partitions (a pod may
// select one or spread over them, and a node is planned into one, as
// Karpenter's offerings per partition), and for a cluster group the
// families EC2 launches into one (catalog.SupportsPlacement).
func (pg *PlacementGroup) Requirements() []model.Requirement {
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
	return out
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
