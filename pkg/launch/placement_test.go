package launch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/kubeletsim"
)

// TestPlacementGroupRequirements: what planning adds to a pool whose
// class has a placement group: the group's id always; a partition
// group's partitions; a cluster group's unplaceable families.
func TestPlacementGroupRequirements(t *testing.T) {
	var none *PlacementGroup
	if got := none.Requirements(nil); got != nil {
		t.Errorf("no group: %v, want nothing", got)
	}
	byKey := func(pg *PlacementGroup) map[string]model.Requirement {
		out := map[string]model.Requirement{}
		for _, r := range pg.Requirements([]string{"us-east-1b", "us-east-1c"}) {
			out[r.Key] = r
		}
		return out
	}
	part := byKey(&PlacementGroup{ID: "pg-1", Strategy: catalog.PlacementPartition, Partitions: 3})
	if r := part[model.LabelPlacementGroupID]; r.Operator != "In" || !slices.Equal(r.Values, []string{"pg-1"}) {
		t.Errorf("partition group id requirement %v", r)
	}
	if r := part[model.LabelPlacementGroupPartition]; r.Operator != "In" || !slices.Equal(r.Values, []string{"1", "2", "3"}) {
		t.Errorf("partition requirement %v, want In 1 2 3", r)
	}
	if _, ok := part[catalog.LabelInstanceFamily]; ok {
		t.Error("a partition group leaves out families")
	}
	cluster := byKey(&PlacementGroup{ID: "pg-2", Strategy: catalog.PlacementCluster})
	if r := cluster[catalog.LabelInstanceFamily]; r.Operator != "NotIn" || !slices.Contains(r.Values, "t3") {
		t.Errorf("cluster family requirement %v, want NotIn with t3", r)
	}
	if _, ok := cluster[model.LabelPlacementGroupPartition]; ok {
		t.Error("a cluster group has partitions")
	}
	// A cluster group is in one zone: its instances', else the first of
	// the class's.
	if r := cluster[corev1.LabelTopologyZone]; r.Operator != "In" || !slices.Equal(r.Values, []string{"us-east-1b"}) {
		t.Errorf("empty cluster group zone requirement %v, want In us-east-1b", r)
	}
	placed := byKey(&PlacementGroup{ID: "pg-4", Strategy: catalog.PlacementCluster, Zone: "us-east-1c"})
	if r := placed[corev1.LabelTopologyZone]; r.Operator != "In" || !slices.Equal(r.Values, []string{"us-east-1c"}) {
		t.Errorf("cluster group in 1c: zone requirement %v, want In us-east-1c", r)
	}
	if _, ok := part[corev1.LabelTopologyZone]; ok {
		t.Error("a partition group is held to one zone")
	}
	if spread := byKey(&PlacementGroup{ID: "pg-3", Strategy: catalog.PlacementSpread}); len(spread) != 1 {
		t.Errorf("spread group requirements %v, want the id only", spread)
	}
}

// TestPlacementGroupPartition: a node launches into the partition its
// plan labelled it with, else the lowest (Karpenter's choice); a label
// out of range is not trusted; other groups have no partition.
func TestPlacementGroupPartition(t *testing.T) {
	part := &PlacementGroup{ID: "pg-1", Strategy: catalog.PlacementPartition, Partitions: 3}
	for _, tc := range []struct {
		pg    *PlacementGroup
		label string
		want  int32
	}{
		{part, "2", 2},
		{part, "3", 3},
		{part, "", 1},
		{part, "4", 1},
		{part, "x", 1},
		{&PlacementGroup{ID: "pg-2", Strategy: catalog.PlacementCluster}, "2", 0},
		{nil, "2", 0},
	} {
		labels := map[string]string{}
		if tc.label != "" {
			labels[model.LabelPlacementGroupPartition] = tc.label
		}
		if got := tc.pg.partition(labels); got != tc.want {
			t.Errorf("%s with label %q: partition %d, want %d", fmt.Sprint(tc.pg), tc.label, got, tc.want)
		}
	}
}

// placedRequest is an on-demand m5.large of the batch pool whose class
// names a placement group, with the plan's labels.
func placedRequest(t *testing.T, token string, sel model.PlacementGroup, labels map[string]string) Request {
	t.Helper()
	req := batchRequest(t, token, "m5.large")
	req.Options = options(t, []string{"m5.large"}, []string{zoneA}, []string{model.CapacityTypeOnDemand})
	nc := *req.Class
	nc.PlacementGroup = &sel
	req.Class = &nc
	for k, v := range labels {
		req.Labels[k] = v
	}
	return req
}

// TestLaunchIntoPlacementGroup: over the wire, a class's placement group
// (by name or id) is resolved once, its launch template places the
// instance in the group (and, in a partition group, in the partition the
// plan chose, else the lowest), the node registers with the group's id
// and its partition, and EC2 reports the instance there.
func TestLaunchIntoPlacementGroup(t *testing.T) {
	for _, tc := range []struct {
		name      string
		strategy  string
		byID      bool
		labels    map[string]string
		partition int32
	}{
		{name: "partition by name, the plan's partition", strategy: "partition", labels: map[string]string{model.LabelPlacementGroupPartition: "2"}, partition: 2},
		{name: "partition by id, no partition planned", strategy: "partition", byID: true, partition: 1},
		{name: "cluster", strategy: "cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "1.32")
			parts := int32(0)
			if tc.strategy == "partition" {
				parts = 3
			}
			id := e.sim.AddPlacementGroup(ec2sim.PlacementGroup{Name: "racks", Strategy: tc.strategy, PartitionCount: parts})
			sel := model.PlacementGroup{Name: "racks"}
			if tc.byID {
				sel = model.PlacementGroup{ID: id}
			}
			for i, token := range []string{"pg-1", "pg-2"} {
				inst, err := e.l.Launch(e.ctx, placedRequest(t, token, sel, tc.labels))
				if err != nil {
					t.Fatalf("launch %d: %v", i, err)
				}
				c := e.sim.CreateFleetCalls()[i]
				d := e.templateData(c.LaunchTemplateConfigs[0].LaunchTemplateName)
				if d.Placement == nil || aws.ToString(d.Placement.GroupId) != id || aws.ToInt32(d.Placement.PartitionNumber) != tc.partition {
					t.Errorf("template placement %+v, want group %s partition %d", d.Placement, id, tc.partition)
				}
				simInst, _ := e.sim.Instance(inst.ID)
				reg, err := kubeletsim.ParseUserData(simInst.UserData)
				if err != nil {
					t.Fatal(err)
				}
				wantPart := ""
				if tc.partition > 0 {
					wantPart = fmt.Sprint(tc.partition)
				}
				if reg.Labels[model.LabelPlacementGroupID] != id || reg.Labels[model.LabelPlacementGroupPartition] != wantPart {
					t.Errorf("node registers with %v, want group %s partition %q", reg.Labels, id, wantPart)
				}
				out, err := e.ec2.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID}})
				if err != nil {
					t.Fatal(err)
				}
				p := out.Reservations[0].Instances[0].Placement
				if aws.ToString(p.GroupId) != id || aws.ToInt32(p.PartitionNumber) != tc.partition {
					t.Errorf("EC2 has the instance in group %q partition %d, want %s partition %d", aws.ToString(p.GroupId), aws.ToInt32(p.PartitionNumber), id, tc.partition)
				}
			}
			if n := e.sim.Invocations("DescribePlacementGroups"); n != 1 {
				t.Errorf("DescribePlacementGroups called %d times for two launches, want 1 (cached)", n)
			}
		})
	}
}

// TestLaunchIntoUnknownPlacementGroupNamesTheField: a group EC2 does not
// know (or not available) fails the launch before CreateFleet, naming
// the node class and field, as the class's own error (not an AWS call's:
// its pools are not ready, provisioning.ReadyPools).
func TestLaunchIntoUnknownPlacementGroupNamesTheField(t *testing.T) {
	e := newEnv(t, "1.32")
	e.sim.AddPlacementGroup(ec2sim.PlacementGroup{Name: "going", Strategy: "spread", State: "deleting"})
	for _, tc := range []struct {
		sel  model.PlacementGroup
		want string
	}{
		{model.PlacementGroup{Name: "nope"}, `spec.placementGroupSelector.name: placement group "nope" not found`},
		{model.PlacementGroup{ID: "pg-0123456789abcdef0"}, `spec.placementGroupSelector.id: placement group "pg-0123456789abcdef0" not found`},
		{model.PlacementGroup{Name: "going"}, `spec.placementGroupSelector.name: placement group "going" is not available`},
	} {
		_, err := e.l.Launch(e.ctx, placedRequest(t, "bad-"+tc.sel.Name, tc.sel, nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `node class "batch"`) {
			t.Errorf("err = %v, want ...node class \"batch\"...%s", err, tc.want)
		}
		var op *smithy.OperationError
		if errors.As(err, &op) {
			t.Errorf("err = %v wraps the AWS call's error: the class would count as unresolved, not unready", err)
		}
	}
	if n := len(e.sim.CreateFleetCalls()); n != 0 {
		t.Errorf("%d CreateFleet calls, want none", n)
	}
}

// TestClusterPlacementGroupZone: a cluster group's zone is its live
// instances' (EC2 keeps it in one), read with the group and cached as
// long: none while it is empty; after a launch into zone a, zone a once
// the cache expires.
func TestClusterPlacementGroupZone(t *testing.T) {
	e := newEnv(t, "1.32")
	e.sim.AddPlacementGroup(ec2sim.PlacementGroup{Name: "tight", Strategy: "cluster"})
	nc := &model.NodeClass{Name: "hpc", PlacementGroup: &model.PlacementGroup{Name: "tight"}}
	pg, err := e.l.PlacementGroup(e.ctx, nc)
	if err != nil || pg.Zone != "" {
		t.Fatalf("empty group: zone %q, %v; want none", pg.Zone, err)
	}
	if _, err := e.l.Launch(e.ctx, placedRequest(t, "first", model.PlacementGroup{Name: "tight"}, nil)); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(2 * DefaultCacheTTL)
	if pg, err = e.l.PlacementGroup(e.ctx, nc); err != nil || pg.Zone != zoneA {
		t.Errorf("after a launch into %s: zone %q, %v", zoneA, pg.Zone, err)
	}
}
