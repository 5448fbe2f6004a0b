package ec2sim

import (
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// seedPlacementGroups adds groups that differ in every field the filters
// read, and one deleted group whose name a live one took again.
func seedPlacementGroups(f *fixture) map[string]string {
	ids := map[string]string{
		"old-cluster": f.sim.AddPlacementGroup(PlacementGroup{Name: "hpc", Strategy: PlacementCluster, State: "deleted"}),
		"cluster":     f.sim.AddPlacementGroup(PlacementGroup{Name: "hpc", Strategy: PlacementCluster, Tags: map[string]string{"team": "ml"}}),
		"partition": f.sim.AddPlacementGroup(PlacementGroup{Name: "kafka", Strategy: PlacementPartition, PartitionCount: 3,
			Tags: map[string]string{"team": "data", "env": "prod"}}),
		"spread":  f.sim.AddPlacementGroup(PlacementGroup{Name: "etcd", Strategy: PlacementSpread}),
		"pending": f.sim.AddPlacementGroup(PlacementGroup{Name: "soon", Strategy: PlacementSpread, State: "pending", Tags: map[string]string{"team": "ml"}}),
	}
	return ids
}

func TestDescribePlacementGroups(t *testing.T) {
	f := newFixture(t, Options{})
	ids := seedPlacementGroups(f)
	filter := func(name string, values ...string) types.Filter {
		return types.Filter{Name: aws.String(name), Values: values}
	}
	for _, tc := range []struct {
		name    string
		names   []string
		ids     []string
		filters []types.Filter
		want    []string
		code    string
		message string
	}{
		{name: "everything", want: []string{"old-cluster", "cluster", "partition", "spread", "pending"}},
		{name: "by name: the group not deleted", names: []string{"hpc"}, want: []string{"cluster"}},
		{name: "by names", names: []string{"etcd", "kafka"}, want: []string{"spread", "partition"}},
		{name: "by id", ids: []string{ids["partition"]}, want: []string{"partition"}},
		{name: "by id, a deleted group", ids: []string{ids["old-cluster"]}, want: []string{"old-cluster"}},
		{name: "by name and id, once each", names: []string{"kafka"}, ids: []string{ids["partition"], ids["spread"]}, want: []string{"partition", "spread"}},
		// Karpenter's query: by id or name, available only.
		{name: "by name, available only", names: []string{"soon"}, filters: []types.Filter{filter("state", "available")}},
		{name: "state", filters: []types.Filter{filter("state", "available")}, want: []string{"cluster", "partition", "spread"}},
		{name: "states", filters: []types.Filter{filter("state", "pending", "deleted")}, want: []string{"old-cluster", "pending"}},
		{name: "strategy", filters: []types.Filter{filter("strategy", "spread")}, want: []string{"spread", "pending"}},
		{name: "spread level", filters: []types.Filter{filter("spread-level", "rack")}, want: []string{"spread", "pending"}},
		{name: "group name wildcard", filters: []types.Filter{filter("group-name", "e*", "k*")}, want: []string{"partition", "spread"}},
		{name: "group arn", filters: []types.Filter{filter("group-arn", "arn:aws:ec2:ap-northeast-2:000000000000:placement-group/kafka")}, want: []string{"partition"}},
		{name: "tag", filters: []types.Filter{filter("tag:team", "ml")}, want: []string{"cluster", "pending"}},
		{name: "tag-key", filters: []types.Filter{filter("tag-key", "env")}, want: []string{"partition"}},
		{name: "filters are AND'ed", filters: []types.Filter{filter("tag:team", "ml"), filter("state", "available")}, want: []string{"cluster"}},
		{name: "no group-id filter on EC2", filters: []types.Filter{filter("group-id", ids["spread"])}, code: "InvalidParameterValue"},
		{name: "unknown name", names: []string{"nope"}, code: "InvalidPlacementGroup.Unknown", message: "The Placement Group 'nope' is unknown."},
		{name: "one unknown name fails the call", names: []string{"kafka", "nope"}, code: "InvalidPlacementGroup.Unknown"},
		{name: "unknown id", ids: []string{"pg-0123456789abcdef0"}, code: "InvalidPlacementGroup.Unknown", message: "The Placement Group 'pg-0123456789abcdef0' is unknown."},
		{name: "malformed id", ids: []string{"kafka"}, code: "InvalidPlacementGroupId.Malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribePlacementGroups(f.ctx, &ec2.DescribePlacementGroupsInput{GroupNames: tc.names, GroupIds: tc.ids, Filters: tc.filters})
			if tc.code != "" {
				wantCode(t, err, tc.code)
				var ae smithy.APIError
				if tc.message != "" && (!errors.As(err, &ae) || ae.ErrorMessage() != tc.message) {
					t.Errorf("message = %v, want %q", err, tc.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, pg := range out.PlacementGroups {
				gotIDs = append(gotIDs, aws.ToString(pg.GroupId))
			}
			if got := namesOf(ids, gotIDs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDescribePlacementGroupsFields(t *testing.T) {
	f := newFixture(t, Options{})
	ids := seedPlacementGroups(f)
	out, err := f.ec2.DescribePlacementGroups(f.ctx, &ec2.DescribePlacementGroupsInput{GroupIds: []string{ids["partition"], ids["spread"], ids["cluster"]}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.PlacementGroups) != 3 {
		t.Fatalf("got %d groups", len(out.PlacementGroups))
	}
	want := []types.PlacementGroup{
		{GroupId: aws.String(ids["partition"]), GroupName: aws.String("kafka"), Strategy: types.PlacementStrategyPartition, PartitionCount: aws.Int32(3),
			State: types.PlacementGroupStateAvailable, GroupArn: aws.String("arn:aws:ec2:ap-northeast-2:000000000000:placement-group/kafka"),
			Tags: []types.Tag{{Key: aws.String("env"), Value: aws.String("prod")}, {Key: aws.String("team"), Value: aws.String("data")}}},
		{GroupId: aws.String(ids["spread"]), GroupName: aws.String("etcd"), Strategy: types.PlacementStrategySpread, SpreadLevel: types.SpreadLevelRack,
			State: types.PlacementGroupStateAvailable, GroupArn: aws.String("arn:aws:ec2:ap-northeast-2:000000000000:placement-group/etcd")},
		{GroupId: aws.String(ids["cluster"]), GroupName: aws.String("hpc"), Strategy: types.PlacementStrategyCluster,
			State: types.PlacementGroupStateAvailable, GroupArn: aws.String("arn:aws:ec2:ap-northeast-2:000000000000:placement-group/hpc"),
			Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("ml")}}},
	}
	for i, pg := range out.PlacementGroups {
		if !reflect.DeepEqual(placementGroupFields(pg), placementGroupFields(want[i])) {
			t.Errorf("group %d = %+v, want %+v", i, placementGroupFields(pg), placementGroupFields(want[i]))
		}
	}
}

// placementGroupFields is the comparable part of a described group.
func placementGroupFields(pg types.PlacementGroup) map[string]any {
	return map[string]any{
		"id": aws.ToString(pg.GroupId), "name": aws.ToString(pg.GroupName), "strategy": pg.Strategy, "partitions": aws.ToInt32(pg.PartitionCount),
		"spread": pg.SpreadLevel, "state": pg.State, "arn": aws.ToString(pg.GroupArn), "tags": tagMapOf(pg.Tags),
	}
}

func TestDescribePlacementGroupsDryRun(t *testing.T) {
	f := newFixture(t, Options{})
	seedPlacementGroups(f)
	_, err := f.ec2.DescribePlacementGroups(f.ctx, &ec2.DescribePlacementGroupsInput{DryRun: aws.Bool(true)})
	wantCode(t, err, "DryRunOperation")
}

func TestSetPlacementGroupState(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.sim.AddPlacementGroup(PlacementGroup{Name: "etcd", Strategy: PlacementSpread})
	if err := f.sim.SetPlacementGroupState(id, "deleting"); err != nil {
		t.Fatal(err)
	}
	out, err := f.ec2.DescribePlacementGroups(f.ctx, &ec2.DescribePlacementGroupsInput{GroupIds: []string{id}})
	if err != nil || len(out.PlacementGroups) != 1 || out.PlacementGroups[0].State != types.PlacementGroupStateDeleting {
		t.Errorf("after SetPlacementGroupState: %+v, %v", out, err)
	}
	if err := f.sim.SetPlacementGroupState(id, "gone"); err == nil {
		t.Error("an unknown state was accepted")
	}
	if err := f.sim.SetPlacementGroupState("pg-0123456789abcdef0", "deleted"); err == nil {
		t.Error("an unknown group was accepted")
	}
	// A deleted group's name can be taken again, and then the deleted
	// group cannot come back.
	if err := f.sim.SetPlacementGroupState(id, "deleted"); err != nil {
		t.Fatal(err)
	}
	f.sim.AddPlacementGroup(PlacementGroup{Name: "etcd", Strategy: PlacementCluster})
	if err := f.sim.SetPlacementGroupState(id, "available"); err == nil {
		t.Error("two groups named etcd")
	}
}

func TestAddPlacementGroupRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		pg   PlacementGroup
	}{
		{"no name", PlacementGroup{Strategy: PlacementCluster}},
		{"no strategy", PlacementGroup{Name: "x"}},
		{"partition without partitions", PlacementGroup{Name: "x", Strategy: PlacementPartition}},
		{"eight partitions", PlacementGroup{Name: "x", Strategy: PlacementPartition, PartitionCount: 8}},
		{"partitions on a cluster group", PlacementGroup{Name: "x", Strategy: PlacementCluster, PartitionCount: 2}},
		{"host spread level", PlacementGroup{Name: "x", Strategy: PlacementSpread, SpreadLevel: "host"}},
		{"spread level on a partition group", PlacementGroup{Name: "x", Strategy: PlacementPartition, PartitionCount: 2, SpreadLevel: SpreadLevelRack}},
		{"unknown state", PlacementGroup{Name: "x", Strategy: PlacementCluster, State: "gone"}},
		{"duplicate name", PlacementGroup{Name: "taken", Strategy: PlacementCluster}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := New(Options{})
			sim.AddPlacementGroup(PlacementGroup{Name: "taken", Strategy: PlacementSpread})
			defer func() {
				if recover() == nil {
					t.Errorf("AddPlacementGroup(%+v) did not panic", tc.pg)
				}
			}()
			sim.AddPlacementGroup(tc.pg)
		})
	}
}

func TestLaunchTemplatePlacement(t *testing.T) {
	const groupID = "pg-0123456789abcdef0"
	for _, tc := range []struct {
		name      string
		placement *types.LaunchTemplatePlacementRequest
		want      *types.LaunchTemplatePlacement // nil: refused with code
		code      string
	}{
		{name: "group id and partition", placement: &types.LaunchTemplatePlacementRequest{GroupId: aws.String(groupID), PartitionNumber: aws.Int32(2)},
			want: &types.LaunchTemplatePlacement{GroupId: aws.String(groupID), PartitionNumber: aws.Int32(2)}},
		// A template may name a group that does not exist (yet): the
		// launch finds out.
		{name: "group name", placement: &types.LaunchTemplatePlacementRequest{GroupName: aws.String("not-yet")},
			want: &types.LaunchTemplatePlacement{GroupName: aws.String("not-yet")}},
		{name: "malformed group id", placement: &types.LaunchTemplatePlacementRequest{GroupId: aws.String("kafka")}, code: "InvalidPlacementGroupId.Malformed"},
		{name: "id and name", placement: &types.LaunchTemplatePlacementRequest{GroupId: aws.String(groupID), GroupName: aws.String("kafka")}, code: "InvalidParameterCombination"},
		{name: "partition without a group", placement: &types.LaunchTemplatePlacementRequest{PartitionNumber: aws.Int32(1)}, code: "InvalidParameterCombination"},
		{name: "partition 0", placement: &types.LaunchTemplatePlacementRequest{GroupId: aws.String(groupID), PartitionNumber: aws.Int32(0)}, code: "InvalidParameterValue"},
		// The rest of Placement is not simulated and stays refused.
		{name: "zone", placement: &types.LaunchTemplatePlacementRequest{GroupId: aws.String(groupID), AvailabilityZone: aws.String(zoneA)}, code: "UnknownParameter"},
		{name: "tenancy", placement: &types.LaunchTemplatePlacementRequest{Tenancy: types.TenancyDedicated}, code: "UnknownParameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			_, err := f.ec2.CreateLaunchTemplate(f.ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("placed"),
				LaunchTemplateData: &types.RequestLaunchTemplateData{ImageId: aws.String(testAMI), Placement: tc.placement}})
			if tc.code != "" {
				wantCode(t, err, tc.code)
				return
			}
			mustNil(t, err)
			vers, err := f.ec2.DescribeLaunchTemplateVersions(f.ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String("placed")})
			mustNil(t, err)
			got := vers.LaunchTemplateVersions[0].LaunchTemplateData.Placement
			if got == nil || aws.ToString(got.GroupId) != aws.ToString(tc.want.GroupId) || aws.ToString(got.GroupName) != aws.ToString(tc.want.GroupName) ||
				aws.ToInt32(got.PartitionNumber) != aws.ToInt32(tc.want.PartitionNumber) || (got.PartitionNumber == nil) != (tc.want.PartitionNumber == nil) {
				t.Errorf("placement = %+v, want %+v", got, tc.want)
			}
		})
	}
}
