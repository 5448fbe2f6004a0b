package ec2sim

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestCreateFleetLaunchesTaggedInstance(t *testing.T) {
	f := newFixture(t, Options{})
	ltID := f.createTemplate(t, "joist/default", "ami-0123456789abcdef0", nil)
	in := fleetInput("joist/default", OnDemand, f.overrides("ami-0123456789abcdef0", []string{"t3.large", "t3.xlarge"}, zoneA, zoneC))
	in.ClientToken = aws.String("plan-1")
	in.Context = aws.String("ctx-1")
	reqTags := []types.Tag{{Key: aws.String("joist.sh/cluster"), Value: aws.String(testCluster)}, {Key: aws.String("shared"), Value: aws.String("request")}}
	in.TagSpecifications = []types.TagSpecification{
		{ResourceType: types.ResourceTypeInstance, Tags: reqTags},
		{ResourceType: types.ResourceTypeVolume, Tags: reqTags},
		{ResourceType: types.ResourceTypeFleet, Tags: reqTags},
	}
	out, err := f.ec2.CreateFleet(f.ctx, in)
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	if !regexp.MustCompile(`^fleet-[0-9a-f-]{36}$`).MatchString(aws.ToString(out.FleetId)) {
		t.Errorf("FleetId = %q, want fleet-<uuid>", aws.ToString(out.FleetId))
	}
	if len(out.Errors) != 0 || len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("want one instance and no errors, got instances %+v errors %+v", out.Instances, out.Errors)
	}
	fi := out.Instances[0]
	if fi.InstanceType != "t3.large" || fi.Lifecycle != types.InstanceLifecycleOnDemand {
		t.Errorf("instance %s %s, want t3.large on-demand (cheapest)", fi.InstanceType, fi.Lifecycle)
	}
	spec := fi.LaunchTemplateAndOverrides.LaunchTemplateSpecification
	if aws.ToString(spec.LaunchTemplateId) != ltID || aws.ToString(spec.Version) != "1" {
		t.Errorf("launch template echoed as %s v%s, want %s v1 ($Latest resolved)", aws.ToString(spec.LaunchTemplateId), aws.ToString(spec.Version), ltID)
	}
	if ov := fi.LaunchTemplateAndOverrides.Overrides; aws.ToString(ov.AvailabilityZone) != zoneA || aws.ToString(ov.SubnetId) != f.seeded.SubnetIDs[zoneA] {
		t.Errorf("override echoed as %s/%s, want %s/%s", aws.ToString(ov.AvailabilityZone), aws.ToString(ov.SubnetId), zoneA, f.seeded.SubnetIDs[zoneA])
	}

	id := fi.InstanceIds[0]
	desc, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatalf("DescribeInstances: %v", err)
	}
	if len(desc.Reservations) != 1 || len(desc.Reservations[0].Instances) != 1 {
		t.Fatalf("DescribeInstances returned %+v", desc.Reservations)
	}
	inst := desc.Reservations[0].Instances[0]
	tags := tagMapOf(inst.Tags)
	wantTags := map[string]string{
		"joist.sh/cluster": testCluster, "from-template": "yes", "shared": "request",
		TagFleetID: aws.ToString(out.FleetId), TagLaunchTemplateID: ltID, TagLaunchTemplateVersion: "1",
	}
	for k, v := range wantTags {
		if tags[k] != v {
			t.Errorf("tag %s = %q, want %q (all tags %v)", k, tags[k], v, tags)
		}
	}
	checks := []struct{ name, got, want string }{
		{"state", string(inst.State.Name), "running"},
		{"zone", aws.ToString(inst.Placement.AvailabilityZone), zoneA},
		{"subnet", aws.ToString(inst.SubnetId), f.seeded.SubnetIDs[zoneA]},
		{"vpc", aws.ToString(inst.VpcId), f.seeded.VPCID},
		{"image", aws.ToString(inst.ImageId), "ami-0123456789abcdef0"},
		{"type", string(inst.InstanceType), "t3.large"},
		{"lifecycle", string(inst.InstanceLifecycle), ""},
		{"architecture", string(inst.Architecture), "x86_64"},
		{"security group", aws.ToString(inst.SecurityGroups[0].GroupId), f.seeded.SecurityGroupID},
		{"client token", aws.ToString(inst.ClientToken), "plan-1"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if aws.ToInt32(inst.State.Code) != 16 {
		t.Errorf("state code = %d, want 16", aws.ToInt32(inst.State.Code))
	}
	if !regexp.MustCompile(`^ip-10-0-\d+-\d+\.ap-northeast-2\.compute\.internal$`).MatchString(aws.ToString(inst.PrivateDnsName)) {
		t.Errorf("private DNS name %q", aws.ToString(inst.PrivateDnsName))
	}
	if inst.LaunchTime == nil || inst.LaunchTime.IsZero() {
		t.Error("no launch time")
	}

	snap, ok := f.sim.Instance(id)
	if !ok || snap.VolumeTags["joist.sh/cluster"] != testCluster || snap.LaunchTemplateName != "joist/default" || snap.UserData != "IyEvYmluL2Jhc2gK" {
		t.Errorf("snapshot %+v", snap)
	}
	calls := f.sim.CreateFleetCalls()
	if len(calls) != 1 || calls[0].Context != "ctx-1" || calls[0].ClientToken != "plan-1" || len(calls[0].LaunchTemplateConfigs[0].Overrides) != 4 ||
		calls[0].OnDemandAllocationStrategy != "lowest-price" || calls[0].TagSpecifications[2].ResourceType != "fleet" {
		t.Errorf("recorded calls %+v", calls)
	}
}

func TestCreateFleetAllocationStrategies(t *testing.T) {
	const ami = "ami-0123456789abcdef0"
	cases := []struct {
		name      string
		capType   string
		types     []string
		setup     func(f *fixture)
		edit      func(in *ec2.CreateFleetInput)
		wantType  string
		wantZone  string
		wantError int
	}{
		{name: "on-demand lowest-price takes the cheapest on-demand price",
			capType: OnDemand, types: []string{"t3.large", "m5.large", "t3.xlarge"}, wantType: "m5.large", wantZone: zoneA},
		{name: "spot price-capacity-optimized takes the cheapest spot price",
			capType: Spot, types: []string{"m5.large", "t3.large"}, wantType: "t3.large", wantZone: zoneA},
		{name: "spot uses the zone's own price",
			capType: Spot, types: []string{"t3.large"},
			setup:    func(f *fixture) { mustNil(t, f.sim.SetSpotPrice("t3.large", zoneA, 0.09)) },
			wantType: "t3.large", wantZone: zoneC},
		{name: "price-capacity-optimized avoids a starved pool without reporting it",
			capType: Spot, types: []string{"t3.large", "m5.large"},
			setup:    func(f *fixture) { f.sim.SetInsufficientCapacity("t3.large", "", Spot, true) },
			wantType: "m5.large", wantZone: zoneA},
		{name: "spot lowest-price tries the starved cheapest pool and reports it",
			capType: Spot, types: []string{"t3.large", "m5.large"},
			setup: func(f *fixture) { f.sim.SetInsufficientCapacity("t3.large", zoneA, Spot, true) },
			edit: func(in *ec2.CreateFleetInput) {
				in.SpotOptions.AllocationStrategy = types.SpotAllocationStrategyLowestPrice
			},
			wantType: "t3.large", wantZone: zoneC, wantError: 1},
		{name: "on-demand prioritized follows Priority, lowest first",
			capType: OnDemand, types: []string{"t3.large", "t3.xlarge"},
			edit: func(in *ec2.CreateFleetInput) {
				in.OnDemandOptions.AllocationStrategy = types.FleetOnDemandAllocationStrategyPrioritized
				for i := range in.LaunchTemplateConfigs[0].Overrides {
					o := &in.LaunchTemplateConfigs[0].Overrides[i]
					o.Priority = aws.Float64(float64(10 - i)) // the last override has the best priority
				}
			},
			wantType: "t3.xlarge", wantZone: zoneC},
		{name: "capacity-optimized-prioritized skips starved pools then follows Priority",
			capType: Spot, types: []string{"t3.large", "t3.xlarge"},
			setup: func(f *fixture) { f.sim.SetInsufficientCapacity("t3.xlarge", zoneC, Spot, true) },
			edit: func(in *ec2.CreateFleetInput) {
				in.SpotOptions.AllocationStrategy = types.SpotAllocationStrategyCapacityOptimizedPrioritized
				for i := range in.LaunchTemplateConfigs[0].Overrides {
					in.LaunchTemplateConfigs[0].Overrides[i].Priority = aws.Float64(float64(10 - i))
				}
			},
			wantType: "t3.xlarge", wantZone: zoneA},
		{name: "capacity-optimized prefers the pool with the most room",
			capType: Spot, types: []string{"t3.large", "m5.large"},
			setup: func(f *fixture) { f.sim.SetPoolCapacity("t3.large", "", Spot, 2) },
			edit: func(in *ec2.CreateFleetInput) {
				in.SpotOptions.AllocationStrategy = types.SpotAllocationStrategyCapacityOptimized
			},
			wantType: "m5.large", wantZone: zoneA},
		{name: "an unknown price sorts after every known one",
			capType: OnDemand, types: []string{"g5.xlarge", "x1.metal"},
			setup: func(f *fixture) {},
			edit: func(in *ec2.CreateFleetInput) {
				in.LaunchTemplateConfigs[0].Overrides = in.LaunchTemplateConfigs[0].Overrides[:1]
			},
			wantType: "g5.xlarge", wantZone: zoneA},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.createTemplate(t, "joist-lt", ami, nil)
			if tc.setup != nil {
				tc.setup(f)
			}
			in := fleetInput("joist-lt", tc.capType, f.overrides(ami, tc.types, zoneA, zoneC))
			if tc.edit != nil {
				tc.edit(in)
			}
			out, err := f.ec2.CreateFleet(f.ctx, in)
			if err != nil {
				t.Fatalf("CreateFleet: %v", err)
			}
			if len(out.Instances) != 1 {
				t.Fatalf("instances %+v, errors %+v", out.Instances, out.Errors)
			}
			got := out.Instances[0]
			if string(got.InstanceType) != tc.wantType || aws.ToString(got.LaunchTemplateAndOverrides.Overrides.AvailabilityZone) != tc.wantZone {
				t.Errorf("launched %s in %s, want %s in %s", got.InstanceType, aws.ToString(got.LaunchTemplateAndOverrides.Overrides.AvailabilityZone), tc.wantType, tc.wantZone)
			}
			if string(got.Lifecycle) != tc.capType {
				t.Errorf("lifecycle %s, want %s", got.Lifecycle, tc.capType)
			}
			if len(out.Errors) != tc.wantError {
				t.Errorf("errors %+v, want %d", out.Errors, tc.wantError)
			}
			snap, _ := f.sim.Instance(got.InstanceIds[0])
			if snap.CapacityType != tc.capType {
				t.Errorf("instance capacity type %s, want %s", snap.CapacityType, tc.capType)
			}
		})
	}
}

func TestCreateFleetInsufficientCapacity(t *testing.T) {
	const ami = "ami-0123456789abcdef0"
	cases := []struct {
		name       string
		ice        [][3]string // type, zone, capacity type
		capType    string
		wantType   string
		wantZone   string
		wantErrors []string // "type zone" of the reported overrides, in order
	}{
		{name: "the cheapest override is out: the next one launches and the first is reported",
			ice: [][3]string{{"m5.large", zoneA, OnDemand}}, capType: OnDemand,
			wantType: "m5.large", wantZone: zoneC, wantErrors: []string{"m5.large " + zoneA}},
		{name: "a whole type out in every zone falls over to the next type",
			ice: [][3]string{{"m5.large", "", OnDemand}}, capType: OnDemand,
			wantType: "t3.large", wantZone: zoneA, wantErrors: []string{"m5.large " + zoneA, "m5.large " + zoneC}},
		{name: "every override out: no instances, one error each",
			ice: [][3]string{{"", "", OnDemand}}, capType: OnDemand,
			wantErrors: []string{"m5.large " + zoneA, "m5.large " + zoneC, "t3.large " + zoneA, "t3.large " + zoneC}},
		{name: "on-demand starvation leaves spot alone",
			ice: [][3]string{{"", "", OnDemand}}, capType: Spot, wantType: "t3.large", wantZone: zoneA},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.createTemplate(t, "joist-lt", ami, nil)
			for _, p := range tc.ice {
				f.sim.SetInsufficientCapacity(p[0], p[1], p[2], true)
			}
			in := fleetInput("joist-lt", tc.capType, f.overrides(ami, []string{"t3.large", "m5.large"}, zoneA, zoneC))
			in.OnDemandOptions = &types.OnDemandOptionsRequest{AllocationStrategy: types.FleetOnDemandAllocationStrategyLowestPrice}
			out, err := f.ec2.CreateFleet(f.ctx, in)
			if err != nil {
				t.Fatalf("CreateFleet: %v", err)
			}
			var gotErrs []string
			for _, e := range out.Errors {
				if aws.ToString(e.ErrorCode) != "InsufficientInstanceCapacity" || string(e.Lifecycle) != tc.capType || aws.ToString(e.ErrorMessage) == "" {
					t.Errorf("error %s (%s) lifecycle %s", aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage), e.Lifecycle)
				}
				ov := e.LaunchTemplateAndOverrides.Overrides
				gotErrs = append(gotErrs, string(ov.InstanceType)+" "+aws.ToString(ov.AvailabilityZone))
			}
			if !equalStrings(gotErrs, tc.wantErrors) {
				t.Errorf("errors for %v, want %v", gotErrs, tc.wantErrors)
			}
			if tc.wantType == "" {
				if len(out.Instances) != 0 || len(f.sim.Instances()) != 0 {
					t.Fatalf("launched %+v, want nothing", out.Instances)
				}
				if out.FleetId == nil {
					t.Error("a fleet with no instances still has an ID")
				}
				return
			}
			if len(out.Instances) != 1 || string(out.Instances[0].InstanceType) != tc.wantType ||
				aws.ToString(out.Instances[0].LaunchTemplateAndOverrides.Overrides.AvailabilityZone) != tc.wantZone {
				t.Fatalf("instances %+v, want %s in %s", out.Instances, tc.wantType, tc.wantZone)
			}
		})
	}
}

func TestCreateFleetPartialFulfillmentAndDiversified(t *testing.T) {
	const ami = "ami-0123456789abcdef0"
	f := newFixture(t, Options{})
	f.createTemplate(t, "joist-lt", ami, nil)

	// One m5.large left in zone a: a fleet of three takes it, reports the
	// pool as out, and fills up from the next override.
	f.sim.SetPoolCapacity("m5.large", zoneA, OnDemand, 1)
	in := fleetInput("joist-lt", OnDemand, f.overrides(ami, []string{"m5.large", "t3.large"}, zoneA))
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(3)
	out, err := f.ec2.CreateFleet(f.ctx, in)
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	if len(out.Instances) != 2 || len(out.Instances[0].InstanceIds) != 1 || out.Instances[0].InstanceType != "m5.large" ||
		len(out.Instances[1].InstanceIds) != 2 || out.Instances[1].InstanceType != "t3.large" {
		t.Fatalf("instances %+v", out.Instances)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" {
		t.Fatalf("errors %+v", out.Errors)
	}

	// Diversified spreads four spot instances over the two pools.
	in = fleetInput("joist-lt", Spot, f.overrides(ami, []string{"t3.large"}, zoneA, zoneC))
	in.SpotOptions.AllocationStrategy = types.SpotAllocationStrategyDiversified
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(4)
	out, err = f.ec2.CreateFleet(f.ctx, in)
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	if len(out.Instances) != 2 || len(out.Instances[0].InstanceIds) != 2 || len(out.Instances[1].InstanceIds) != 2 {
		t.Fatalf("diversified instances %+v", out.Instances)
	}

	// Mixed targets: one on-demand, the rest spot.
	in = fleetInput("joist-lt", Spot, f.overrides(ami, []string{"t3.large"}, zoneC))
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(3)
	in.TargetCapacitySpecification.OnDemandTargetCapacity = aws.Int32(1)
	out, err = f.ec2.CreateFleet(f.ctx, in)
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	if len(out.Instances) != 2 || out.Instances[0].Lifecycle != types.InstanceLifecycleOnDemand || len(out.Instances[0].InstanceIds) != 1 ||
		out.Instances[1].Lifecycle != types.InstanceLifecycleSpot || len(out.Instances[1].InstanceIds) != 2 {
		t.Fatalf("mixed instances %+v", out.Instances)
	}
}

func TestCreateFleetClientTokenIdempotency(t *testing.T) {
	const ami = "ami-0123456789abcdef0"
	f := newFixture(t, Options{})
	f.createTemplate(t, "joist-lt", ami, nil)
	in := fleetInput("joist-lt", OnDemand, f.overrides(ami, []string{"t3.large"}, zoneA))
	in.ClientToken = aws.String("plan-abc")
	first, err := f.ec2.CreateFleet(f.ctx, in)
	if err != nil {
		t.Fatalf("first CreateFleet: %v", err)
	}
	second, err := f.ec2.CreateFleet(f.ctx, in)
	if err != nil {
		t.Fatalf("second CreateFleet: %v", err)
	}
	if aws.ToString(first.FleetId) != aws.ToString(second.FleetId) || !equalStrings(launched(first), launched(second)) {
		t.Errorf("replay differs: %s %v vs %s %v", aws.ToString(first.FleetId), launched(first), aws.ToString(second.FleetId), launched(second))
	}
	if n := len(f.sim.Instances()); n != 1 {
		t.Errorf("%d instances exist, want 1", n)
	}
	if calls := f.sim.CreateFleetCalls(); len(calls) != 2 || calls[0].Replayed || !calls[1].Replayed {
		t.Errorf("calls %+v, want the second marked replayed", calls)
	}

	// The same token with other parameters is refused.
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(2)
	_, err = f.ec2.CreateFleet(f.ctx, in)
	wantCode(t, err, "IdempotentParameterMismatch")

	// A token remembers a failure too: once capacity is back, the same
	// token still answers "nothing launched", so a new plan needs a new
	// token.
	f.sim.SetInsufficientCapacity("", "", OnDemand, true)
	in = fleetInput("joist-lt", OnDemand, f.overrides(ami, []string{"t3.large"}, zoneA))
	in.ClientToken = aws.String("plan-ice")
	out, err := f.ec2.CreateFleet(f.ctx, in)
	if err != nil || len(out.Instances) != 0 || len(out.Errors) != 1 {
		t.Fatalf("ICE fleet: %v %+v", err, out)
	}
	f.sim.SetInsufficientCapacity("", "", OnDemand, false)
	out, err = f.ec2.CreateFleet(f.ctx, in)
	if err != nil || len(out.Instances) != 0 || len(out.Errors) != 1 {
		t.Fatalf("replayed ICE fleet: %v %+v", err, out)
	}

	// Too long a token is EC2's InvalidParameterValue.
	in.ClientToken = aws.String(strings.Repeat("x", 65))
	_, err = f.ec2.CreateFleet(f.ctx, in)
	wantCode(t, err, "InvalidParameterValue")
}

// A response lost after EC2 acted is retried by the SDK with the same
// (SDK-generated) client token, and the retry must not launch again.
func TestCreateFleetLostResponseIsRetriedIdempotently(t *testing.T) {
	const ami = "ami-0123456789abcdef0"
	f := newFixture(t, Options{})
	f.createTemplate(t, "joist-lt", ami, nil)
	f.sim.DropNextResponses("CreateFleet", 1)
	out, err := f.ec2.CreateFleet(f.ctx, fleetInput("joist-lt", OnDemand, f.overrides(ami, []string{"t3.large"}, zoneA)))
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	if got := f.sim.Calls("CreateFleet"); got != 2 {
		t.Errorf("CreateFleet reached the simulator %d times, want 2 (the SDK retried)", got)
	}
	insts := f.sim.Instances()
	if len(insts) != 1 || insts[0].ID != launched(out)[0] {
		t.Fatalf("instances %+v, want exactly the one the retry returned (%v)", insts, launched(out))
	}
	calls := f.sim.CreateFleetCalls()
	if len(calls) != 2 || calls[0].ClientToken == "" || calls[0].ClientToken != calls[1].ClientToken || !calls[1].Replayed {
		t.Errorf("calls %+v", calls)
	}
	// The two requests were one operation; a second call is another.
	if ops := f.sim.CreateFleetOperations(); len(ops) != 1 || !ops[0].Replayed || ops[0].Invocation == "" {
		t.Errorf("operations %+v, want the one retried call, as its last attempt", ops)
	}
	if _, err := f.ec2.CreateFleet(f.ctx, fleetInput("joist-lt", OnDemand, f.overrides(ami, []string{"t3.large"}, zoneA))); err != nil {
		t.Fatal(err)
	}
	if ops := f.sim.CreateFleetOperations(); len(ops) != 2 || ops[1].Replayed {
		t.Errorf("operations %+v, want a second, new one", ops)
	}
}

func TestCreateFleetRequestErrors(t *testing.T) {
	const ami = "ami-0123456789abcdef0"
	cases := []struct {
		name string
		edit func(f *fixture, in *ec2.CreateFleetInput)
		code string
	}{
		{"unknown launch template name", func(f *fixture, in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = aws.String("nope")
		}, "InvalidLaunchTemplateName.NotFoundException"},
		{"unknown launch template id", func(f *fixture, in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].LaunchTemplateSpecification = &types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateId: aws.String("lt-0000000000000dead"), Version: aws.String("1")}
		}, "InvalidLaunchTemplateId.NotFound"},
		{"unknown version", func(f *fixture, in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.Version = aws.String("7")
		}, "InvalidLaunchTemplateId.VersionNotFound"},
		{"no version", func(f *fixture, in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.Version = nil
		}, "MissingParameter"},
		{"unknown instance type", func(f *fixture, in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].Overrides[0].InstanceType = "z9.huge"
		}, "InvalidParameterValue"},
		{"unknown subnet", func(f *fixture, in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].Overrides[0].SubnetId = aws.String("subnet-0000000000000dead")
		}, "InvalidSubnetID.NotFound"},
		{"maintain fleets are not simulated", func(f *fixture, in *ec2.CreateFleetInput) {
			in.Type = types.FleetTypeMaintain
		}, "UnsupportedOperation"},
		{"unknown allocation strategy", func(f *fixture, in *ec2.CreateFleetInput) {
			in.OnDemandOptions.AllocationStrategy = "cheapest-please"
		}, "InvalidParameterValue"},
		{"tags on an untaggable resource", func(f *fixture, in *ec2.CreateFleetInput) {
			in.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeVpc, Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}}
		}, "InvalidParameterValue"},
		{"reserved tag prefix", func(f *fixture, in *ec2.CreateFleetInput) {
			in.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{{Key: aws.String("aws:mine"), Value: aws.String("b")}}}}
		}, "InvalidParameterValue"},
		{"a parameter the simulator does not model", func(f *fixture, in *ec2.CreateFleetInput) {
			in.SpotOptions = &types.SpotOptionsRequest{MinTargetCapacity: aws.Int32(1)}
		}, "UnknownParameter"},
		{"dry run", func(f *fixture, in *ec2.CreateFleetInput) { in.DryRun = aws.Bool(true) }, "DryRunOperation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.createTemplate(t, "joist-lt", ami, nil)
			in := fleetInput("joist-lt", OnDemand, f.overrides(ami, []string{"t3.large"}, zoneA))
			tc.edit(f, in)
			_, err := f.ec2.CreateFleet(f.ctx, in)
			wantCode(t, err, tc.code)
			if n := len(f.sim.Instances()); n != 0 {
				t.Errorf("%d instances launched by a failed call", n)
			}
		})
	}
}

func TestCreateFleetPerOverrideErrors(t *testing.T) {
	cases := []struct {
		name  string
		opts  Options
		setup func(t *testing.T, f *fixture) (ami string, in *ec2.CreateFleetInput)
		code  string
	}{
		{"image built for the other architecture", Options{}, func(t *testing.T, f *fixture) (string, *ec2.CreateFleetInput) {
			ami := f.sim.AddImage(ImageSpec{Name: "arm", Architecture: "arm64"})
			f.createTemplate(t, "joist-lt", ami, nil)
			return ami, fleetInput("joist-lt", OnDemand, f.overrides(ami, []string{"t3.large"}, zoneA))
		}, "InvalidParameterValue"},
		{"type not offered in the zone", Options{}, func(t *testing.T, f *fixture) (string, *ec2.CreateFleetInput) {
			f.createTemplate(t, "joist-lt", "ami-0123456789abcdef0", nil)
			return "", fleetInput("joist-lt", OnDemand, f.overrides("ami-0123456789abcdef0", []string{"g5.xlarge"}, zoneC))
		}, "Unsupported"},
		{"spot on a type without spot", Options{}, func(t *testing.T, f *fixture) (string, *ec2.CreateFleetInput) {
			f.createTemplate(t, "joist-lt", "ami-0123456789abcdef0", nil)
			return "", fleetInput("joist-lt", Spot, f.overrides("ami-0123456789abcdef0", []string{"x1.metal"}, zoneA))
		}, "Unsupported"},
		{"subnet out of addresses", Options{}, func(t *testing.T, f *fixture) (string, *ec2.CreateFleetInput) {
			f.createTemplate(t, "joist-lt", "ami-0123456789abcdef0", nil)
			mustNil(t, f.sim.SetSubnetFreeIPs(f.seeded.SubnetIDs[zoneA], 0))
			return "", fleetInput("joist-lt", OnDemand, f.overrides("ami-0123456789abcdef0", []string{"t3.large"}, zoneA))
		}, "InsufficientFreeAddressesInSubnet"},
		{"spot max price below the spot price", Options{}, func(t *testing.T, f *fixture) (string, *ec2.CreateFleetInput) {
			f.createTemplate(t, "joist-lt", "ami-0123456789abcdef0", nil)
			in := fleetInput("joist-lt", Spot, f.overrides("ami-0123456789abcdef0", []string{"t3.large"}, zoneA))
			in.LaunchTemplateConfigs[0].Overrides[0].MaxPrice = aws.String("0.01")
			return "", in
		}, "SpotMaxPriceTooLow"},
		{"template security group in another VPC", Options{}, func(t *testing.T, f *fixture) (string, *ec2.CreateFleetInput) {
			other := f.sim.AddVPC("10.1.0.0/16", nil)
			f.createTemplate(t, "joist-lt", "ami-0123456789abcdef0", func(d *types.RequestLaunchTemplateData) {
				f.sim.mu.Lock()
				d.SecurityGroupIds = []string{f.sim.vpcs[other].defaultSG}
				f.sim.mu.Unlock()
			})
			return "", fleetInput("joist-lt", OnDemand, f.overrides("ami-0123456789abcdef0", []string{"t3.large"}, zoneA))
		}, "InvalidGroup.NotFound"},
		{"unknown image when images are required", Options{RequireKnownImages: true}, func(t *testing.T, f *fixture) (string, *ec2.CreateFleetInput) {
			f.createTemplate(t, "joist-lt", "ami-0123456789abcdef0", nil)
			return "", fleetInput("joist-lt", OnDemand, f.overrides("ami-0123456789abcdef0", []string{"t3.large"}, zoneA))
		}, "InvalidAMIID.NotFound"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts)
			_, in := tc.setup(t, f)
			out, err := f.ec2.CreateFleet(f.ctx, in)
			if err != nil {
				t.Fatalf("CreateFleet: %v (per-override problems are not call errors)", err)
			}
			if len(out.Instances) != 0 || len(out.Errors) != 1 {
				t.Fatalf("instances %+v errors %+v", out.Instances, out.Errors)
			}
			if got := aws.ToString(out.Errors[0].ErrorCode); got != tc.code {
				t.Errorf("error code %s (%s), want %s", got, aws.ToString(out.Errors[0].ErrorMessage), tc.code)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Concurrent launches (the provisioner and the reaper can overlap) and fault
// injection from the test while requests are in flight are safe, and no
// address is handed out twice.
func TestConcurrentLaunches(t *testing.T) {
	f := newFixture(t, Options{})
	f.createTemplate(t, "joist-lt", testAMI, nil)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := fleetInput("joist-lt", OnDemand, f.overrides(testAMI, []string{"t3.large", "m5.large"}, zoneA, zoneC))
			in.ClientToken = aws.String(fmt.Sprintf("plan-%d", i))
			out, err := f.ec2.CreateFleet(f.ctx, in)
			if err == nil && len(launched(out)) != 1 {
				err = fmt.Errorf("fleet %d launched %v, errors %+v", i, launched(out), out.Errors)
			}
			errs <- err
		}()
	}
	for i := range n {
		f.sim.SetInsufficientCapacity("t3.large", zoneC, OnDemand, i%2 == 0)
		f.sim.FailNext("DescribeImages", "InternalError", 500, 1)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	ips := map[string]bool{}
	for _, in := range f.sim.Instances() {
		if ips[in.PrivateIP] {
			t.Errorf("address %s handed out twice", in.PrivateIP)
		}
		ips[in.PrivateIP] = true
	}
	if len(ips) != n {
		t.Errorf("%d instances, want %d", len(ips), n)
	}
}
