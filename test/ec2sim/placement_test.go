package ec2sim

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/iampolicy"
)

// placedTemplate is a launch template putting its instances in a
// placement group, the way Karpenter makes one (GroupId, and a partition
// when the node claim asks for one).
func (f *fixture) placedTemplate(t *testing.T, name string, placement *types.LaunchTemplatePlacementRequest) {
	t.Helper()
	f.createTemplate(t, name, testAMI, func(d *types.RequestLaunchTemplateData) { d.Placement = placement })
}

// launchN launches n on-demand instances from the template over the
// overrides (tried in order: the types' prices decide, ties keep it).
func (f *fixture) launchN(t *testing.T, lt string, n int32, overrides []types.FleetLaunchTemplateOverridesRequest) *ec2.CreateFleetOutput {
	t.Helper()
	in := fleetInput(lt, OnDemand, overrides)
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(n)
	out, err := f.ec2.CreateFleet(f.ctx, in)
	mustNil(t, err)
	return out
}

// fleetErrors renders a fleet's errors as "zone type code" for comparing.
func fleetErrors(out *ec2.CreateFleetOutput) []string {
	var got []string
	for _, e := range out.Errors {
		o := e.LaunchTemplateAndOverrides.Overrides
		got = append(got, aws.ToString(o.AvailabilityZone)+" "+string(o.InstanceType)+" "+aws.ToString(e.ErrorCode))
	}
	return got
}

func (f *fixture) partitions(t *testing.T, ids []string) []int {
	t.Helper()
	var out []int
	for _, id := range ids {
		in, ok := f.sim.Instance(id)
		if !ok {
			t.Fatalf("no instance %s", id)
		}
		out = append(out, in.PartitionNumber)
	}
	return out
}

func TestCreateFleetIntoPartitionGroup(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))
	f := newFixture(t, Options{Clock: clock, ShutdownDelay: time.Minute})
	pg := f.sim.AddPlacementGroup(PlacementGroup{Name: "kafka", Strategy: PlacementPartition, PartitionCount: 3})
	f.placedTemplate(t, "auto", &types.LaunchTemplatePlacementRequest{GroupName: aws.String("kafka")})
	f.placedTemplate(t, "partition-2", &types.LaunchTemplatePlacementRequest{GroupId: aws.String(pg), PartitionNumber: aws.Int32(2)})
	inA := f.overrides(testAMI, []string{"m5.large"}, zoneA)

	// The partition asked for, then EC2's choice: the least loaded
	// partition of the zone, the lowest on a tie.
	first := launched(f.launchN(t, "partition-2", 1, inA))
	if got := f.partitions(t, first); !reflect.DeepEqual(got, []int{2}) {
		t.Fatalf("asked for partition 2, got %v", got)
	}
	auto := launched(f.launchN(t, "auto", 4, inA))
	if got := f.partitions(t, auto); !reflect.DeepEqual(got, []int{1, 3, 1, 2}) {
		t.Errorf("EC2's choice with partition 2 holding one: %v, want [1 3 1 2]", got)
	}
	// Each zone has its own partitions.
	inB := launched(f.launchN(t, "auto", 1, f.overrides(testAMI, []string{"m5.large"}, zoneB)))
	if got := f.partitions(t, inB); !reflect.DeepEqual(got, []int{1}) {
		t.Errorf("first instance in %s: partition %v, want 1", zoneB, got)
	}

	// DescribeInstances reports the placement and filters on it.
	desc, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{Filters: filtersOf(map[string][]string{
		"placement-group-name": {"kafka"}, "placement-partition-number": {"1"}, "availability-zone": {zoneA}})})
	mustNil(t, err)
	var ones []string
	for _, r := range desc.Reservations {
		for _, inst := range r.Instances {
			ones = append(ones, aws.ToString(inst.InstanceId))
			if p := inst.Placement; aws.ToString(p.GroupName) != "kafka" || aws.ToString(p.GroupId) != pg || aws.ToInt32(p.PartitionNumber) != 1 {
				t.Errorf("placement of %s = %+v", aws.ToString(inst.InstanceId), p)
			}
		}
	}
	if want := []string{auto[0], auto[2]}; !reflect.DeepEqual(ones, want) {
		t.Errorf("partition 1 in %s: %v, want %v", zoneA, ones, want)
	}

	// A shutting-down instance still holds its partition: with one of
	// partition 1's terminating, partition 3 is still the least loaded.
	_, err = f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{auto[0]}})
	mustNil(t, err)
	if got := f.partitions(t, launched(f.launchN(t, "auto", 1, inA))); !reflect.DeepEqual(got, []int{3}) {
		t.Errorf("with an instance of partition 1 shutting down: %v, want [3]", got)
	}
	clock.Step(time.Minute)
	if got := f.partitions(t, launched(f.launchN(t, "auto", 1, inA))); !reflect.DeepEqual(got, []int{1}) {
		t.Errorf("with it terminated: %v, want [1]", got)
	}
}

func TestCreateFleetPlacementRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		group     PlacementGroup
		placement func(id, name string) *types.LaunchTemplatePlacementRequest
		typ       string
		code      string // the override's error; "" launches
		message   string // in the error's message
	}{
		{name: "unknown name", group: PlacementGroup{Name: "kafka", Strategy: PlacementSpread}, typ: "m5.large",
			placement: func(string, string) *types.LaunchTemplatePlacementRequest {
				return &types.LaunchTemplatePlacementRequest{GroupName: aws.String("nope")}
			}, code: "InvalidPlacementGroup.Unknown", message: "The Placement Group 'nope' is unknown."},
		{name: "unknown id", group: PlacementGroup{Name: "kafka", Strategy: PlacementSpread}, typ: "m5.large",
			placement: func(string, string) *types.LaunchTemplatePlacementRequest {
				return &types.LaunchTemplatePlacementRequest{GroupId: aws.String("pg-0123456789abcdef0")}
			}, code: "InvalidPlacementGroup.Unknown", message: "'pg-0123456789abcdef0'"},
		{name: "pending group", group: PlacementGroup{Name: "kafka", Strategy: PlacementSpread, State: "pending"}, typ: "m5.large",
			placement: byID, code: "InvalidPlacementGroup.Unknown"},
		{name: "deleted group", group: PlacementGroup{Name: "kafka", Strategy: PlacementSpread, State: "deleted"}, typ: "m5.large",
			placement: byName, code: "InvalidPlacementGroup.Unknown"},
		{name: "partition beyond the count", group: PlacementGroup{Name: "kafka", Strategy: PlacementPartition, PartitionCount: 3}, typ: "m5.large",
			placement: func(id, _ string) *types.LaunchTemplatePlacementRequest {
				return &types.LaunchTemplatePlacementRequest{GroupId: aws.String(id), PartitionNumber: aws.Int32(4)}
			}, code: "InvalidParameterValue"},
		{name: "the last partition", group: PlacementGroup{Name: "kafka", Strategy: PlacementPartition, PartitionCount: 3}, typ: "m5.large",
			placement: func(id, _ string) *types.LaunchTemplatePlacementRequest {
				return &types.LaunchTemplatePlacementRequest{GroupId: aws.String(id), PartitionNumber: aws.Int32(3)}
			}},
		{name: "partition in a spread group", group: PlacementGroup{Name: "kafka", Strategy: PlacementSpread}, typ: "m5.large",
			placement: func(id, _ string) *types.LaunchTemplatePlacementRequest {
				return &types.LaunchTemplatePlacementRequest{GroupId: aws.String(id), PartitionNumber: aws.Int32(1)}
			}, code: "InvalidParameterCombination"},
		{name: "burstable type in a cluster group", group: PlacementGroup{Name: "hpc", Strategy: PlacementCluster}, typ: "t3.large",
			placement: byID, code: "InvalidParameterCombination", message: "'t3.large'"},
		{name: "other type in a cluster group", group: PlacementGroup{Name: "hpc", Strategy: PlacementCluster}, typ: "m5.large", placement: byID},
		{name: "burstable type in a spread group", group: PlacementGroup{Name: "etcd", Strategy: PlacementSpread}, typ: "t3.large", placement: byName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			id := f.sim.AddPlacementGroup(tc.group)
			f.placedTemplate(t, "placed", tc.placement(id, tc.group.Name))
			out := f.launchN(t, "placed", 1, f.overrides(testAMI, []string{tc.typ}, zoneA))
			if tc.code == "" {
				if len(launched(out)) != 1 || len(out.Errors) != 0 {
					t.Fatalf("instances %v, errors %+v", launched(out), out.Errors)
				}
				return
			}
			if len(launched(out)) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != tc.code {
				t.Fatalf("instances %v, errors %v; want only %s", launched(out), fleetErrors(out), tc.code)
			}
			if msg := aws.ToString(out.Errors[0].ErrorMessage); !strings.Contains(msg, tc.message) {
				t.Errorf("message %q does not say %q", msg, tc.message)
			}
		})
	}
}

func byID(id, _ string) *types.LaunchTemplatePlacementRequest {
	return &types.LaunchTemplatePlacementRequest{GroupId: aws.String(id)}
}

func byName(_, name string) *types.LaunchTemplatePlacementRequest {
	return &types.LaunchTemplatePlacementRequest{GroupName: aws.String(name)}
}

func TestCreateFleetIntoClusterGroup(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))
	f := newFixture(t, Options{Clock: clock, ShutdownDelay: time.Minute})
	f.sim.AddPlacementGroup(PlacementGroup{Name: "hpc", Strategy: PlacementCluster})
	f.placedTemplate(t, "hpc", &types.LaunchTemplatePlacementRequest{GroupName: aws.String("hpc")})
	m5 := []string{"m5.large"}

	first := launched(f.launchN(t, "hpc", 1, f.overrides(testAMI, m5, zoneA)))
	if len(first) != 1 {
		t.Fatalf("first launch: %v", first)
	}
	// The group is in zone a now: an override in b fails, and the
	// fleet falls back to the next override, in a.
	out := f.launchN(t, "hpc", 1, f.overrides(testAMI, m5, zoneB, zoneA))
	if got, want := fleetErrors(out), []string{zoneB + " m5.large InvalidPlacementGroup.InUse"}; !reflect.DeepEqual(got, want) || len(launched(out)) != 1 {
		t.Fatalf("errors %v, instances %v; want %v and one instance", got, launched(out), want)
	}
	if msg := aws.ToString(out.Errors[0].ErrorMessage); msg != "The placement group 'hpc' is in use in another availability zone: "+zoneA {
		t.Errorf("message %q", msg)
	}
	second := launched(out)
	if in, _ := f.sim.Instance(second[0]); in.Zone != zoneA || in.PlacementGroupName != "hpc" || in.PartitionNumber != 0 {
		t.Errorf("fallback instance: %+v", in)
	}

	// Until every instance of the group is terminated (not while they
	// shut down), the zone stays locked.
	_, err := f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: append(first, second...)})
	mustNil(t, err)
	if out := f.launchN(t, "hpc", 1, f.overrides(testAMI, m5, zoneB)); len(launched(out)) != 0 {
		t.Errorf("launched in %s while the group's instances shut down in %s", zoneB, zoneA)
	}
	clock.Step(time.Minute)
	if out := f.launchN(t, "hpc", 1, f.overrides(testAMI, m5, zoneB)); len(launched(out)) != 1 {
		t.Errorf("empty group: launch in %s failed: %v", zoneB, fleetErrors(out))
	}

	// DescribeInstanceTypes agrees: burstable types support no cluster
	// group.
	its, err := f.ec2.DescribeInstanceTypes(f.ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"t3.large", "m5.large"}})
	mustNil(t, err)
	got := map[string][]string{}
	for _, it := range its.InstanceTypes {
		for _, s := range it.PlacementGroupInfo.SupportedStrategies {
			got[string(it.InstanceType)] = append(got[string(it.InstanceType)], string(s))
		}
	}
	if want := map[string][]string{"t3.large": {"partition", "spread"}, "m5.large": {"cluster", "partition", "spread"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("supported strategies %v, want %v", got, want)
	}
	its, err = f.ec2.DescribeInstanceTypes(f.ctx, &ec2.DescribeInstanceTypesInput{
		Filters: filtersOf(map[string][]string{"placement-group-info.supported-strategy": {"cluster"}})})
	mustNil(t, err)
	var clusterable []string
	for _, it := range its.InstanceTypes {
		clusterable = append(clusterable, string(it.InstanceType))
	}
	if want := []string{"c6g.large", "g5.xlarge", "m5.large", "x1.metal"}; !reflect.DeepEqual(clusterable, want) {
		t.Errorf("types supporting cluster groups: %v, want %v", clusterable, want)
	}
}

// TestCreateFleetClusterGroupOneZoneInOneCall: within one fleet the first
// instance places the group, and the overrides in other zones fail.
func TestCreateFleetClusterGroupOneZoneInOneCall(t *testing.T) {
	f := newFixture(t, Options{})
	f.sim.AddPlacementGroup(PlacementGroup{Name: "hpc", Strategy: PlacementCluster})
	f.placedTemplate(t, "hpc", &types.LaunchTemplatePlacementRequest{GroupName: aws.String("hpc")})
	in := fleetInput("hpc", Spot, f.overrides(testAMI, []string{"m5.large"}, zoneA, zoneB))
	in.SpotOptions.AllocationStrategy = types.SpotAllocationStrategyDiversified
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(3)
	out, err := f.ec2.CreateFleet(f.ctx, in)
	mustNil(t, err)
	var zones []string
	for _, id := range launched(out) {
		in, _ := f.sim.Instance(id)
		zones = append(zones, in.Zone)
	}
	if want := []string{zoneA, zoneA, zoneA}; !reflect.DeepEqual(zones, want) || !reflect.DeepEqual(fleetErrors(out), []string{zoneB + " m5.large InvalidPlacementGroup.InUse"}) {
		t.Errorf("zones %v, errors %v; want %v and %s refused", zones, fleetErrors(out), want, zoneB)
	}
}

func TestCreateFleetIntoSpreadGroup(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))
	f := newFixture(t, Options{Clock: clock, ShutdownDelay: time.Minute})
	f.sim.AddPlacementGroup(PlacementGroup{Name: "etcd", Strategy: PlacementSpread})
	f.placedTemplate(t, "etcd", &types.LaunchTemplatePlacementRequest{GroupName: aws.String("etcd")})
	m5 := []string{"m5.large"}

	// Seven per zone: a fleet for nine gets seven and the limit error
	// Karpenter recognises by its message.
	out := f.launchN(t, "etcd", 9, f.overrides(testAMI, m5, zoneA))
	inA := launched(out)
	if len(inA) != 7 || !reflect.DeepEqual(fleetErrors(out), []string{zoneA + " m5.large InsufficientInstanceCapacity"}) {
		t.Fatalf("launched %d, errors %v; want 7 and the spread limit", len(inA), fleetErrors(out))
	}
	if msg := aws.ToString(out.Errors[0].ErrorMessage); !strings.Contains(msg, "limit of instances in this spread placement group") {
		t.Errorf("message %q is not EC2's", msg)
	}
	// Zone a is full; b has its own seven.
	out = f.launchN(t, "etcd", 2, f.overrides(testAMI, m5, zoneA, zoneB))
	var zones []string
	for _, id := range launched(out) {
		in, _ := f.sim.Instance(id)
		zones = append(zones, in.Zone)
	}
	if !reflect.DeepEqual(zones, []string{zoneB, zoneB}) || !reflect.DeepEqual(fleetErrors(out), []string{zoneA + " m5.large InsufficientInstanceCapacity"}) {
		t.Errorf("zones %v, errors %v; want two in %s and %s full", zones, fleetErrors(out), zoneB, zoneA)
	}

	// A place comes back when an instance is terminated, not while it
	// shuts down.
	_, err := f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: inA[:1]})
	mustNil(t, err)
	if out := f.launchN(t, "etcd", 1, f.overrides(testAMI, m5, zoneA)); len(launched(out)) != 0 {
		t.Error("an eighth instance in zone a while the seventh shuts down")
	}
	clock.Step(time.Minute)
	if out := f.launchN(t, "etcd", 1, f.overrides(testAMI, m5, zoneA)); len(launched(out)) != 1 {
		t.Errorf("no place after the termination: %v", fleetErrors(out))
	}
}

// TestPlacementGroupIAM: Joist's provisioner policy (pkg/iampolicy) reads
// placement groups and launches into them; without either grant, the call
// is refused as on AWS.
func TestPlacementGroupIAM(t *testing.T) {
	params := iampolicy.Params{Partition: "aws", Region: testRegion, Account: DefaultAccountID, Cluster: testCluster,
		NodeRoleARN: "arn:aws:iam::000000000000:role/node", EventBusARN: "arn:aws:events:ap-northeast-2:000000000000:event-bus/joist"}
	full := iampolicy.MustFor(iampolicy.Provisioner, params)
	// without is Joist's provisioner policy less an action, or less a
	// resource, wherever a statement names it.
	without := func(action, resource string) iampolicy.Policy {
		return policyWithout(full, func(a string) bool { return a == action }, func(r string) bool { return r == resource })
	}
	for _, tc := range []struct {
		name     string
		policy   iampolicy.Policy
		describe string // error code of DescribePlacementGroups
		launch   string // error code of CreateFleet into the group
	}{
		{name: "Joist's policy", policy: full},
		{name: "without DescribePlacementGroups", policy: without("ec2:DescribePlacementGroups", ""), describe: "UnauthorizedOperation"},
		{name: "without the placement group's ARN", policy: without("", "arn:aws:ec2:"+testRegion+":*:placement-group/*"), launch: "UnauthorizedOperation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			pg := f.sim.AddPlacementGroup(PlacementGroup{Name: "kafka", Strategy: PlacementPartition, PartitionCount: 2})
			// The harness (no principal yet) makes the cluster's template
			// as Joist would: tagged for the cluster, in the group.
			clusterTags := []types.Tag{{Key: aws.String(iampolicy.ClusterTag), Value: aws.String(testCluster)}}
			_, err := f.ec2.CreateLaunchTemplate(f.ctx, &ec2.CreateLaunchTemplateInput{
				LaunchTemplateName: aws.String("placed"),
				LaunchTemplateData: &types.RequestLaunchTemplateData{
					ImageId: aws.String(testAMI), SecurityGroupIds: []string{f.seeded.SecurityGroupID},
					Placement: &types.LaunchTemplatePlacementRequest{GroupId: aws.String(pg), PartitionNumber: aws.Int32(1)},
				},
				TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeLaunchTemplate, Tags: clusterTags}},
			})
			mustNil(t, err)
			f.sim.SetPrincipal("AKIDEXAMPLE", &tc.policy)
			f.sim.EnforceIAM()
			_, err = f.ec2.DescribePlacementGroups(f.ctx, &ec2.DescribePlacementGroupsInput{GroupIds: []string{pg}})
			wantCode(t, err, tc.describe)
			in := fleetInput("placed", OnDemand, f.overrides(testAMI, []string{"m5.large"}, zoneA))
			for _, rt := range []types.ResourceType{types.ResourceTypeInstance, types.ResourceTypeVolume, types.ResourceTypeFleet, types.ResourceTypeNetworkInterface} {
				in.TagSpecifications = append(in.TagSpecifications, types.TagSpecification{ResourceType: rt, Tags: clusterTags})
			}
			out, err := f.ec2.CreateFleet(f.ctx, in)
			wantCode(t, err, tc.launch)
			if tc.launch == "" {
				if len(launched(out)) != 1 {
					t.Errorf("launched %v, errors %v", launched(out), fleetErrors(out))
				}
				return
			}
			if !strings.Contains(err.Error(), "placement-group/kafka") {
				t.Errorf("refusal does not name the group's ARN: %v", err)
			}
			if ids := f.sim.Instances(); len(ids) != 0 {
				t.Errorf("refused launch left instances %v", ids)
			}
		})
	}
}
