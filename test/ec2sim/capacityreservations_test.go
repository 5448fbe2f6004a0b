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

// seedReservations adds a few reservations that differ in every field the
// filters read.
func seedReservations(f *fixture) map[string]string {
	end := f.sim.now().Add(48 * time.Hour)
	return map[string]string{
		"odcr-a": f.sim.AddCapacityReservation(CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 2, MatchCriteria: MatchTargeted,
			Tags: map[string]string{"team": "ml", "env": "prod"}}),
		"odcr-b": f.sim.AddCapacityReservation(CapacityReservation{InstanceType: "m5.large", Zone: zoneB, Total: 1,
			Tags: map[string]string{"team": "ml"}}),
		"block": f.sim.AddCapacityReservation(CapacityReservation{InstanceType: "g5.xlarge", Zone: zoneA, Total: 1, Type: ReservationCapacityBlock,
			MatchCriteria: MatchTargeted, EndAt: end, Tags: map[string]string{"team": "research"}}),
		"shared": f.sim.AddCapacityReservation(CapacityReservation{InstanceType: "t3.large", Zone: zoneC, Total: 3, OwnerID: "111122223333"}),
		"expired": f.sim.AddCapacityReservation(CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 1, State: "expired",
			Tags: map[string]string{"team": "ml"}}),
	}
}

func TestDescribeCapacityReservationsFilters(t *testing.T) {
	f := newFixture(t, Options{})
	ids := seedReservations(f)
	filter := func(name string, values ...string) types.Filter {
		return types.Filter{Name: aws.String(name), Values: values}
	}
	for _, tc := range []struct {
		name    string
		ids     []string
		filters []types.Filter
		want    []string
		code    string
	}{
		{name: "everything", want: []string{"odcr-a", "odcr-b", "block", "shared", "expired"}},
		{name: "by id", ids: []string{ids["odcr-b"]}, want: []string{"odcr-b"}},
		{name: "by id, filtered out by state", ids: []string{ids["expired"]}, filters: []types.Filter{filter("state", "active")}},
		{name: "tag value", filters: []types.Filter{filter("tag:team", "ml")}, want: []string{"odcr-a", "odcr-b", "expired"}},
		{name: "tags are AND'ed across filters", filters: []types.Filter{filter("tag:team", "ml"), filter("tag:env", "prod")}, want: []string{"odcr-a"}},
		{name: "tag-key", filters: []types.Filter{filter("tag-key", "env")}, want: []string{"odcr-a"}},
		{name: "tag wildcard", filters: []types.Filter{filter("tag:team", "re*")}, want: []string{"block"}},
		{name: "instance type", filters: []types.Filter{filter("instance-type", "t3.large")}, want: []string{"odcr-a", "shared", "expired"}},
		{name: "zone", filters: []types.Filter{filter("availability-zone", zoneB)}, want: []string{"odcr-b"}},
		{name: "owner", filters: []types.Filter{filter("owner-id", "111122223333")}, want: []string{"shared"}},
		{name: "match criteria", filters: []types.Filter{filter("instance-match-criteria", "targeted")}, want: []string{"odcr-a", "block"}},
		{name: "state", filters: []types.Filter{filter("state", "active")}, want: []string{"odcr-a", "odcr-b", "block", "shared"}},
		{name: "reservation type", filters: []types.Filter{filter("reservation-type", "capacity-block")}, want: []string{"block"}},
		{name: "unknown filter", filters: []types.Filter{filter("colour", "blue")}, code: "InvalidParameterValue"},
		{name: "unknown id", ids: []string{"cr-0123456789abcdef0"}, code: "InvalidCapacityReservationId.NotFound"},
		{name: "malformed id", ids: []string{"sg-12345678"}, code: "InvalidCapacityReservationId.Malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribeCapacityReservations(f.ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: tc.ids, Filters: tc.filters})
			if tc.code != "" {
				wantCode(t, err, tc.code)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, cr := range out.CapacityReservations {
				gotIDs = append(gotIDs, aws.ToString(cr.CapacityReservationId))
			}
			if got := namesOf(ids, gotIDs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDescribeCapacityReservationsFields(t *testing.T) {
	f := newFixture(t, Options{Clock: clocktesting.NewFakeClock(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))})
	ids := seedReservations(f)
	out, err := f.ec2.DescribeCapacityReservations(f.ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{ids["block"]}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.CapacityReservations) != 1 {
		t.Fatalf("got %d reservations", len(out.CapacityReservations))
	}
	cr := out.CapacityReservations[0]
	if cr.ReservationType != types.CapacityReservationTypeCapacityBlock || cr.InstanceMatchCriteria != types.InstanceMatchCriteriaTargeted ||
		cr.State != types.CapacityReservationStateActive || aws.ToString(cr.InstanceType) != "g5.xlarge" || aws.ToString(cr.AvailabilityZone) != zoneA ||
		aws.ToInt32(cr.TotalInstanceCount) != 1 || aws.ToInt32(cr.AvailableInstanceCount) != 1 || aws.ToString(cr.OwnerId) != DefaultAccountID ||
		!aws.ToTime(cr.EndDate).Equal(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)) || cr.EndDateType != types.EndDateTypeLimited ||
		aws.ToString(cr.CapacityReservationArn) != "arn:aws:ec2:ap-northeast-2:000000000000:capacity-reservation/"+ids["block"] ||
		tagMapOf(cr.Tags)["team"] != "research" {
		t.Errorf("reservation = %+v", cr)
	}
}

func TestDescribeCapacityReservationsPages(t *testing.T) {
	f := newFixture(t, Options{})
	var want []string
	for i := 0; i < 7; i++ {
		want = append(want, f.sim.AddCapacityReservation(CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 1}))
	}
	p := ec2.NewDescribeCapacityReservationsPaginator(f.ec2, &ec2.DescribeCapacityReservationsInput{MaxResults: aws.Int32(3)})
	var got []string
	pages := 0
	for p.HasMorePages() {
		page, err := p.NextPage(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, cr := range page.CapacityReservations {
			got = append(got, aws.ToString(cr.CapacityReservationId))
		}
	}
	if pages != 3 || !reflect.DeepEqual(got, want) {
		t.Errorf("%d pages of %v, want 3 pages of %v", pages, got, want)
	}
	_, err := f.ec2.DescribeCapacityReservations(f.ctx, &ec2.DescribeCapacityReservationsInput{MaxResults: aws.Int32(1001)})
	wantCode(t, err, "InvalidParameterValue")
}

// reservedTemplate is a launch template targeting a reservation, the way
// Karpenter (and Joist) make one.
func (f *fixture) reservedTemplate(t *testing.T, name, imageID, crID string, block bool) {
	t.Helper()
	f.createTemplate(t, name, imageID, func(d *types.RequestLaunchTemplateData) {
		d.CapacityReservationSpecification = &types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget:     &types.CapacityReservationTarget{CapacityReservationId: aws.String(crID)},
		}
		if block {
			d.InstanceMarketOptions = &types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: types.MarketTypeCapacityBlock}
		}
	})
}

func (f *fixture) available(t *testing.T, id string) int {
	t.Helper()
	out, err := f.ec2.DescribeCapacityReservations(f.ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	return int(aws.ToInt32(out.CapacityReservations[0].AvailableInstanceCount))
}

func TestCreateFleetIntoReservationTakesAndGivesBackRoom(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))
	f := newFixture(t, Options{Clock: clock, ShutdownDelay: time.Minute})
	const ami = "ami-0123456789abcdef0"
	cr := f.sim.AddCapacityReservation(CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 1, MatchCriteria: MatchTargeted})
	f.reservedTemplate(t, "odcr", ami, cr, false)
	launch := func() *ec2.CreateFleetOutput {
		out, err := f.ec2.CreateFleet(f.ctx, fleetInput("odcr", OnDemand, f.overrides(ami, []string{"t3.large"}, zoneA)))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := launch()
	ids := launched(out)
	if len(ids) != 1 || len(out.Errors) != 0 {
		t.Fatalf("launched %v, errors %+v", ids, out.Errors)
	}
	if got := f.available(t, cr); got != 0 {
		t.Errorf("available after the launch = %d, want 0", got)
	}
	desc, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	inst := desc.Reservations[0].Instances[0]
	if aws.ToString(inst.CapacityReservationId) != cr || inst.CapacityReservationSpecification.CapacityReservationPreference != types.CapacityReservationPreferenceCapacityReservationsOnly ||
		aws.ToString(inst.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId) != cr || inst.InstanceLifecycle != "" {
		t.Errorf("instance reservation = %s, spec %+v, lifecycle %q", aws.ToString(inst.CapacityReservationId), inst.CapacityReservationSpecification, inst.InstanceLifecycle)
	}

	// Full: the override fails with EC2's code and nothing launches.
	out = launch()
	if len(launched(out)) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "ReservationCapacityExceeded" {
		t.Fatalf("second launch: instances %v, errors %+v", launched(out), out.Errors)
	}

	// The room comes back once the instance is terminated, not while it
	// shuts down.
	if _, err := f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: ids}); err != nil {
		t.Fatal(err)
	}
	if got := f.available(t, cr); got != 0 {
		t.Errorf("available while shutting down = %d, want 0", got)
	}
	clock.Step(time.Minute)
	if got := f.available(t, cr); got != 1 {
		t.Errorf("available after termination = %d, want 1", got)
	}
	if ids := launched(launch()); len(ids) != 1 {
		t.Errorf("launch after the room came back: %v", ids)
	}
}

func TestCreateFleetIntoReservationRefusals(t *testing.T) {
	const ami = "ami-0123456789abcdef0"
	for _, tc := range []struct {
		name         string
		cr           CapacityReservation
		block        bool // template market type capacity-block
		capacityType string
		types        []string
		zone         string
		overrideErr  string // per-override error, nothing launched
		callErr      string // the whole call fails
	}{
		{name: "other instance type", cr: CapacityReservation{InstanceType: "t3.xlarge", Zone: zoneA, Total: 1}, capacityType: OnDemand, types: []string{"t3.large"}, zone: zoneA, overrideErr: "ReservationCapacityExceeded"},
		{name: "other zone", cr: CapacityReservation{InstanceType: "t3.large", Zone: zoneB, Total: 1}, capacityType: OnDemand, types: []string{"t3.large"}, zone: zoneA, overrideErr: "ReservationCapacityExceeded"},
		{name: "not active", cr: CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 1, State: "expired"}, capacityType: OnDemand, types: []string{"t3.large"}, zone: zoneA, overrideErr: "ReservationCapacityExceeded"},
		{name: "empty", cr: CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 0}, capacityType: OnDemand, types: []string{"t3.large"}, zone: zoneA, overrideErr: "ReservationCapacityExceeded"},
		{name: "full capacity block", cr: CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 0, Type: ReservationCapacityBlock}, block: true, capacityType: CapacityBlock, types: []string{"t3.large"}, zone: zoneA, overrideErr: "InsufficientInstanceCapacity"},
		{name: "spot into an ODCR", cr: CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 1}, capacityType: Spot, types: []string{"t3.large"}, zone: zoneA, callErr: "InvalidParameterCombination"},
		{name: "capacity block without its target capacity type", cr: CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 1, Type: ReservationCapacityBlock}, block: true, capacityType: OnDemand, types: []string{"t3.large"}, zone: zoneA, callErr: "InvalidParameterCombination"},
		{name: "capacity block without its market type", cr: CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 1, Type: ReservationCapacityBlock}, capacityType: CapacityBlock, types: []string{"t3.large"}, zone: zoneA, callErr: "InvalidParameterCombination"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			cr := f.sim.AddCapacityReservation(tc.cr)
			f.reservedTemplate(t, "res", ami, cr, tc.block)
			in := fleetInput("res", tc.capacityType, f.overrides(ami, tc.types, tc.zone))
			if tc.capacityType == CapacityBlock {
				in.OnDemandOptions = nil
			}
			out, err := f.ec2.CreateFleet(f.ctx, in)
			if tc.callErr != "" {
				wantCode(t, err, tc.callErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(launched(out)) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != tc.overrideErr {
				t.Fatalf("instances %v, errors %+v; want only %s", launched(out), out.Errors, tc.overrideErr)
			}
		})
	}
}

func TestCreateFleetIntoCapacityBlock(t *testing.T) {
	f := newFixture(t, Options{})
	const ami = "ami-0123456789abcdef0"
	cr := f.sim.AddCapacityReservation(CapacityReservation{InstanceType: "g5.xlarge", Zone: zoneA, Total: 1, Type: ReservationCapacityBlock, MatchCriteria: MatchTargeted})
	f.reservedTemplate(t, "block", ami, cr, true)
	in := fleetInput("block", CapacityBlock, f.overrides(ami, []string{"g5.xlarge"}, zoneA))
	in.OnDemandOptions = nil
	out, err := f.ec2.CreateFleet(f.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	ids := launched(out)
	if len(ids) != 1 {
		t.Fatalf("launched %v, errors %+v", ids, out.Errors)
	}
	desc, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	inst := desc.Reservations[0].Instances[0]
	if inst.InstanceLifecycle != types.InstanceLifecycleTypeCapacityBlock || aws.ToString(inst.CapacityReservationId) != cr {
		t.Errorf("lifecycle %q, reservation %s; want capacity-block in %s", inst.InstanceLifecycle, aws.ToString(inst.CapacityReservationId), cr)
	}
}

// TestOpenReservationAbsorbsUntargetedOnDemand: as on AWS, an on-demand
// launch whose template leaves the preference open runs in a matching open
// ODCR with room; preference none, targeted reservations and spot do not.
func TestOpenReservationAbsorbsUntargetedOnDemand(t *testing.T) {
	f := newFixture(t, Options{})
	const ami = "ami-0123456789abcdef0"
	open := f.sim.AddCapacityReservation(CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 1})
	f.sim.AddCapacityReservation(CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 5, MatchCriteria: MatchTargeted})
	f.createTemplate(t, "plain", ami, nil)
	f.createTemplate(t, "none", ami, func(d *types.RequestLaunchTemplateData) {
		d.CapacityReservationSpecification = &types.LaunchTemplateCapacityReservationSpecificationRequest{CapacityReservationPreference: types.CapacityReservationPreferenceNone}
	})
	runIn := func(lt, capacityType string) string {
		out, err := f.ec2.CreateFleet(f.ctx, fleetInput(lt, capacityType, f.overrides(ami, []string{"t3.large"}, zoneA)))
		if err != nil || len(launched(out)) != 1 {
			t.Fatalf("launch from %s: %v %+v", lt, err, out)
		}
		inst, _ := f.sim.Instance(launched(out)[0])
		return inst.CapacityReservationID
	}
	if got := runIn("none", OnDemand); got != "" {
		t.Errorf("preference none ran in %s", got)
	}
	if got := runIn("plain", Spot); got != "" {
		t.Errorf("spot ran in %s", got)
	}
	if got := runIn("plain", OnDemand); got != open {
		t.Errorf("open on-demand ran in %q, want the open reservation %s", got, open)
	}
	if got := runIn("plain", OnDemand); got != "" {
		t.Errorf("with the open reservation full, ran in %q", got)
	}
}

func TestCapacityReservationIAM(t *testing.T) {
	const ami = "ami-0123456789abcdef0"
	params := iampolicy.Params{Partition: "aws", Region: testRegion, Account: DefaultAccountID, Cluster: testCluster,
		NodeRoleARN: "arn:aws:iam::000000000000:role/node", EventBusARN: "arn:aws:events:ap-northeast-2:000000000000:event-bus/joist"}
	full := iampolicy.MustFor(iampolicy.Provisioner, params)
	// withoutReservations is the policy as it was before reservations:
	// no DescribeCapacityReservations, no capacity-reservation/* resource.
	withoutReservations := policyWithout(full,
		func(a string) bool { return a == "ec2:DescribeCapacityReservations" },
		func(r string) bool { return strings.Contains(r, ":capacity-reservation/") })
	for _, tc := range []struct {
		name     string
		policy   iampolicy.Policy
		describe string // error code of DescribeCapacityReservations
		launch   string // error code of CreateFleet into the reservation
	}{
		{name: "the provisioner's policy", policy: full},
		{name: "without the reservation grants", policy: withoutReservations, describe: "UnauthorizedOperation", launch: "UnauthorizedOperation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			cr := f.sim.AddCapacityReservation(CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 1, MatchCriteria: MatchTargeted})
			// The harness (no principal yet) makes the cluster's template
			// as Joist would: tagged for the cluster, targeting the
			// reservation.
			clusterTags := []types.Tag{{Key: aws.String(iampolicy.ClusterTag), Value: aws.String(testCluster)}}
			_, err := f.ec2.CreateLaunchTemplate(f.ctx, &ec2.CreateLaunchTemplateInput{
				LaunchTemplateName: aws.String("res"),
				LaunchTemplateData: &types.RequestLaunchTemplateData{
					ImageId: aws.String(ami), SecurityGroupIds: []string{f.seeded.SecurityGroupID},
					CapacityReservationSpecification: &types.LaunchTemplateCapacityReservationSpecificationRequest{
						CapacityReservationPreference: types.CapacityReservationPreferenceCapacityReservationsOnly,
						CapacityReservationTarget:     &types.CapacityReservationTarget{CapacityReservationId: aws.String(cr)},
					},
				},
				TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeLaunchTemplate, Tags: clusterTags}},
			})
			if err != nil {
				t.Fatal(err)
			}
			f.sim.SetPrincipal("AKIDEXAMPLE", &tc.policy)
			f.sim.EnforceIAM()
			_, err = f.ec2.DescribeCapacityReservations(f.ctx, &ec2.DescribeCapacityReservationsInput{})
			wantCode(t, err, tc.describe)
			in := fleetInput("res", OnDemand, f.overrides(ami, []string{"t3.large"}, zoneA))
			for _, rt := range []types.ResourceType{types.ResourceTypeInstance, types.ResourceTypeVolume, types.ResourceTypeFleet, types.ResourceTypeNetworkInterface} {
				in.TagSpecifications = append(in.TagSpecifications, types.TagSpecification{ResourceType: rt, Tags: clusterTags})
			}
			out, err := f.ec2.CreateFleet(f.ctx, in)
			wantCode(t, err, tc.launch)
			if tc.launch == "" {
				if len(launched(out)) != 1 {
					t.Errorf("launched %v, errors %+v", launched(out), out.Errors)
				}
				return
			}
			if !strings.Contains(err.Error(), "capacity-reservation/"+cr) {
				t.Errorf("refusal does not name the reservation: %v", err)
			}
		})
	}
}
