package ec2sim

import (
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"
)

const testAMI = "ami-0123456789abcdef0"

// launch starts one instance of type in zone with the given capacity type
// and instance tags, through the API, and returns its ID.
func (f *fixture) launch(t *testing.T, typeName, zone, capType string, tags map[string]string) string {
	t.Helper()
	if _, err := f.ec2.DescribeLaunchTemplates(f.ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"joist-lt"}}); err != nil {
		f.createTemplate(t, "joist-lt", testAMI, nil)
	}
	in := fleetInput("joist-lt", capType, f.overrides(testAMI, []string{typeName}, zone))
	var ts []types.Tag
	for k, v := range tags {
		ts = append(ts, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	in.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: ts}}
	out, err := f.ec2.CreateFleet(f.ctx, in)
	if err != nil || len(launched(out)) != 1 {
		t.Fatalf("launching %s in %s: %v %+v", typeName, zone, err, out)
	}
	return launched(out)[0]
}

func instanceIDs(out *ec2.DescribeInstancesOutput) []string {
	var ids []string
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			ids = append(ids, aws.ToString(in.InstanceId))
		}
	}
	sort.Strings(ids)
	return ids
}

func TestDescribeInstancesFilters(t *testing.T) {
	f := newFixture(t, Options{})
	a := f.launch(t, "t3.large", zoneA, OnDemand, map[string]string{"joist.sh/cluster": "hoon-cluster", "joist.sh/nodepool": "service"})
	b := f.launch(t, "t3.xlarge", zoneC, Spot, map[string]string{"joist.sh/cluster": "hoon-cluster", "joist.sh/nodepool": "management"})
	c := f.launch(t, "m5.large", zoneA, OnDemand, map[string]string{"joist.sh/cluster": "other"})
	_, err := f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{c}})
	mustNil(t, err)
	snapA, _ := f.sim.Instance(a)

	cases := []struct {
		name    string
		filters map[string][]string
		want    []string
		code    string
	}{
		{"no filter lists everything, terminated included", nil, []string{a, b, c}, ""},
		{"tag value", map[string][]string{"tag:joist.sh/cluster": {"hoon-cluster"}}, []string{a, b}, ""},
		{"tag value with *", map[string][]string{"tag:joist.sh/cluster": {"hoon-*"}}, []string{a, b}, ""},
		{"tag value with ? matching zero characters", map[string][]string{"tag:joist.sh/nodepool": {"service?"}}, []string{a}, ""},
		{"tag value with ? matching one character", map[string][]string{"tag:joist.sh/nodepool": {"servic?"}}, []string{a}, ""},
		{"tag key", map[string][]string{"tag-key": {"joist.sh/nodepool"}}, []string{a, b}, ""},
		{"tag values are ORed", map[string][]string{"tag:joist.sh/nodepool": {"service", "management"}}, []string{a, b}, ""},
		{"filters are ANDed", map[string][]string{"tag:joist.sh/cluster": {"hoon-cluster"}, "instance-type": {"t3.x*"}}, []string{b}, ""},
		{"state", map[string][]string{"instance-state-name": {"pending", "running"}}, []string{a, b}, ""},
		{"terminated", map[string][]string{"instance-state-name": {"terminated"}}, []string{c}, ""},
		{"zone", map[string][]string{"availability-zone": {"*2a"}}, []string{a, c}, ""},
		{"subnet", map[string][]string{"subnet-id": {f.seeded.SubnetIDs[zoneC]}}, []string{b}, ""},
		{"vpc (a terminated instance has none)", map[string][]string{"vpc-id": {f.seeded.VPCID}}, []string{a, b}, ""},
		{"instance id", map[string][]string{"instance-id": {a}}, []string{a}, ""},
		{"spot lifecycle", map[string][]string{"instance-lifecycle": {"spot"}}, []string{b}, ""},
		{"private DNS name", map[string][]string{"private-dns-name": {snapA.PrivateDNSName}}, []string{a}, ""},
		{"fleet system tag", map[string][]string{"tag:aws:ec2:fleet-id": {snapA.FleetID}}, []string{a}, ""},
		{"case-sensitive", map[string][]string{"tag:joist.sh/cluster": {"HOON-CLUSTER"}}, nil, ""},
		{"unknown filter", map[string][]string{"flavour": {"x"}}, nil, "InvalidParameterValue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var filters []types.Filter
			for n, v := range tc.filters {
				filters = append(filters, types.Filter{Name: aws.String(n), Values: v})
			}
			out, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{Filters: filters})
			wantCode(t, err, tc.code)
			if err != nil {
				return
			}
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if got := instanceIDs(out); !equalStrings(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestDescribeInstancesPagination(t *testing.T) {
	f := newFixture(t, Options{})
	f.createTemplate(t, "joist-lt", testAMI, nil)
	in := fleetInput("joist-lt", OnDemand, f.overrides(testAMI, []string{"t3.large"}, zoneA))
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(12)
	out, err := f.ec2.CreateFleet(f.ctx, in)
	if err != nil || len(launched(out)) != 12 {
		t.Fatalf("CreateFleet: %v %+v", err, out)
	}
	p := ec2.NewDescribeInstancesPaginator(f.ec2, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
	var pages, total int
	seen := map[string]bool{}
	for p.HasMorePages() {
		page, err := p.NextPage(f.ctx)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		for _, id := range instanceIDs(page) {
			if seen[id] {
				t.Errorf("%s on two pages", id)
			}
			seen[id] = true
			total++
		}
	}
	if pages != 3 || total != 12 {
		t.Errorf("%d pages, %d instances; want 3 pages, 12 instances", pages, total)
	}

	errCases := []struct {
		name string
		in   *ec2.DescribeInstancesInput
		code string
	}{
		{"MaxResults below 5", &ec2.DescribeInstancesInput{MaxResults: aws.Int32(3)}, "InvalidParameterValue"},
		{"MaxResults with instance IDs", &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5), InstanceIds: launched(out)[:1]}, "InvalidParameterCombination"},
		{"forged token", &ec2.DescribeInstancesInput{NextToken: aws.String("bm9wZQ")}, "InvalidPaginationToken"},
		{"unknown instance", &ec2.DescribeInstancesInput{InstanceIds: []string{launched(out)[0], "i-0000000000000dead"}}, "InvalidInstanceID.NotFound"},
		{"malformed instance ID", &ec2.DescribeInstancesInput{InstanceIds: []string{"instance-1"}}, "InvalidInstanceID.Malformed"},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.ec2.DescribeInstances(f.ctx, tc.in)
			wantCode(t, err, tc.code)
		})
	}
}

// An instance walks pending -> running -> shutting-down -> terminated ->
// gone on the simulator's clock, giving its address back on the way.
func TestInstanceLifecycle(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	f := newFixture(t, Options{Clock: clock, BootDelay: 30 * time.Second, ShutdownDelay: 10 * time.Second, TerminatedRetention: time.Hour})
	subnetA := f.seeded.SubnetIDs[zoneA]
	free := func() int32 {
		out, err := f.ec2.DescribeSubnets(f.ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{subnetA}})
		mustNil(t, err)
		return aws.ToInt32(out.Subnets[0].AvailableIpAddressCount)
	}
	before := free()
	id := f.launch(t, "t3.large", zoneA, OnDemand, nil)
	state := func() string {
		out, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			return apiCode(t, err)
		}
		return string(out.Reservations[0].Instances[0].State.Name)
	}
	steps := []struct {
		advance time.Duration
		act     func()
		want    string
		free    int32
	}{
		{0, nil, "pending", before - 1},
		{29 * time.Second, nil, "pending", before - 1},
		{time.Second, nil, "running", before - 1},
		{0, func() {
			out, err := f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
			mustNil(t, err)
			if c := out.TerminatingInstances[0]; c.PreviousState.Name != "running" || c.CurrentState.Name != "shutting-down" || aws.ToInt32(c.CurrentState.Code) != 32 {
				t.Errorf("terminate reported %+v -> %+v", c.PreviousState, c.CurrentState)
			}
		}, "shutting-down", before - 1},
		{10 * time.Second, nil, "terminated", before},
		{59 * time.Minute, nil, "terminated", before},
		{time.Minute, nil, "InvalidInstanceID.NotFound", before},
	}
	for i, st := range steps {
		clock.Step(st.advance)
		if st.act != nil {
			st.act()
		}
		if got := state(); got != st.want {
			t.Fatalf("step %d: state %s, want %s", i, got, st.want)
		}
		if got := free(); got != st.free {
			t.Errorf("step %d: %d free addresses, want %d", i, got, st.free)
		}
	}
}

func TestTerminateInstances(t *testing.T) {
	f := newFixture(t, Options{})
	a := f.launch(t, "t3.large", zoneA, OnDemand, nil)
	b := f.launch(t, "t3.large", zoneA, OnDemand, nil)

	// Unknown or malformed IDs fail the whole call and terminate nothing.
	_, err := f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{a, "i-0000000000000dead"}})
	wantCode(t, err, "InvalidInstanceID.NotFound")
	_, err = f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-xyz"}})
	wantCode(t, err, "InvalidInstanceID.Malformed")
	if snap, _ := f.sim.Instance(a); snap.State != "running" {
		t.Fatalf("a failed call terminated %s (%s)", a, snap.State)
	}

	// Terminating twice succeeds and reports the instance already gone.
	for i, wantPrev := range []types.InstanceStateName{"running", "terminated"} {
		out, err := f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{a, b}})
		if err != nil {
			t.Fatalf("terminate #%d: %v", i+1, err)
		}
		if len(out.TerminatingInstances) != 2 {
			t.Fatalf("terminate #%d: %+v", i+1, out.TerminatingInstances)
		}
		for _, c := range out.TerminatingInstances {
			if c.PreviousState.Name != wantPrev {
				t.Errorf("terminate #%d: %s was %s, want %s", i+1, aws.ToString(c.InstanceId), c.PreviousState.Name, wantPrev)
			}
		}
	}
	out, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{a}})
	mustNil(t, err)
	inst := out.Reservations[0].Instances[0]
	if aws.ToString(inst.StateReason.Code) != "Client.UserInitiatedShutdown" || aws.ToString(inst.PrivateIpAddress) != "" {
		t.Errorf("terminated instance: reason %v, ip %q", aws.ToString(inst.StateReason.Code), aws.ToString(inst.PrivateIpAddress))
	}
}

func TestStuckAndExternallyTerminatedInstances(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	f := newFixture(t, Options{Clock: clock, BootDelay: time.Second})
	f.sim.StickNextLaunches(1)
	stuck := f.launch(t, "t3.large", zoneA, OnDemand, nil)
	normal := f.launch(t, "t3.large", zoneA, Spot, nil)
	late := f.launch(t, "t3.large", zoneA, OnDemand, nil)
	mustNil(t, f.sim.StickPending(late))
	clock.Step(time.Hour)
	states := map[string]string{}
	for _, in := range f.sim.Instances() {
		states[in.ID] = in.State
	}
	if states[stuck] != "pending" || states[late] != "pending" || states[normal] != "running" {
		t.Fatalf("states %v", states)
	}
	if err := f.sim.StickPending(normal); err == nil {
		t.Error("StickPending on a running instance succeeded")
	}

	mustNil(t, f.sim.TerminateExternally(normal))
	out, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{normal}})
	mustNil(t, err)
	inst := out.Reservations[0].Instances[0]
	if inst.State.Name != "terminated" || aws.ToString(inst.StateReason.Code) != "Server.SpotInstanceTermination" || inst.InstanceLifecycle != types.InstanceLifecycleTypeSpot {
		t.Errorf("externally terminated spot instance: %s %s %s", inst.State.Name, aws.ToString(inst.StateReason.Code), inst.InstanceLifecycle)
	}
	if err := f.sim.TerminateExternally("i-0000000000000dead"); err == nil {
		t.Error("TerminateExternally of an unknown instance succeeded")
	}
}

// Right after a launch EC2 may not know the instance yet.
func TestVisibilityLag(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	f := newFixture(t, Options{Clock: clock, VisibilityLag: 2 * time.Second})
	id := f.launch(t, "t3.large", zoneA, OnDemand, nil)
	_, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	wantCode(t, err, "InvalidInstanceID.NotFound")
	_, err = f.ec2.CreateTags(f.ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}})
	wantCode(t, err, "InvalidInstanceID.NotFound")
	clock.Step(2 * time.Second)
	_, err = f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	mustNil(t, err)
}

func TestTags(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.launch(t, "t3.large", zoneA, OnDemand, map[string]string{"keep": "1", "drop": "x", "guarded": "v1"})
	tagsOf := func() map[string]string {
		out, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		mustNil(t, err)
		return tagMapOf(out.Reservations[0].Instances[0].Tags)
	}
	_, err := f.ec2.CreateTags(f.ctx, &ec2.CreateTagsInput{Resources: []string{id, f.seeded.SubnetIDs[zoneA]},
		Tags: []types.Tag{{Key: aws.String("added"), Value: aws.String("yes")}, {Key: aws.String("keep"), Value: aws.String("2")}}})
	mustNil(t, err)
	_, err = f.ec2.DeleteTags(f.ctx, &ec2.DeleteTagsInput{Resources: []string{id}, Tags: []types.Tag{
		{Key: aws.String("drop")},                                // any value
		{Key: aws.String("guarded"), Value: aws.String("other")}, // value must match: kept
		{Key: aws.String("absent")},                              // not there: fine
	}})
	mustNil(t, err)
	got := tagsOf()
	for k, want := range map[string]string{"added": "yes", "keep": "2", "guarded": "v1"} {
		if got[k] != want {
			t.Errorf("tag %s = %q, want %q", k, got[k], want)
		}
	}
	if _, ok := got["drop"]; ok {
		t.Error("tag drop survived DeleteTags")
	}
	if got[TagFleetID] == "" {
		t.Error("system tag gone")
	}

	desc, err := f.ec2.DescribeTags(f.ctx, &ec2.DescribeTagsInput{Filters: []types.Filter{
		{Name: aws.String("key"), Values: []string{"added"}},
	}})
	mustNil(t, err)
	var resources []string
	for _, td := range desc.Tags {
		resources = append(resources, aws.ToString(td.ResourceId)+"/"+string(td.ResourceType))
	}
	sort.Strings(resources)
	if want := []string{id + "/instance", f.seeded.SubnetIDs[zoneA] + "/subnet"}; !equalStrings(resources, want) {
		t.Errorf("DescribeTags found %v, want %v", resources, want)
	}

	errCases := []struct {
		name string
		in   *ec2.CreateTagsInput
		code string
	}{
		{"reserved prefix", &ec2.CreateTagsInput{Resources: []string{id}, Tags: []types.Tag{{Key: aws.String("aws:x"), Value: aws.String("1")}}}, "InvalidParameterValue"},
		{"unknown instance", &ec2.CreateTagsInput{Resources: []string{"i-0000000000000dead"}, Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("1")}}}, "InvalidInstanceID.NotFound"},
		{"unknown subnet", &ec2.CreateTagsInput{Resources: []string{"subnet-0000000000000dead"}, Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("1")}}}, "InvalidSubnetID.NotFound"},
		{"unknown kind", &ec2.CreateTagsInput{Resources: []string{"bucket-1"}, Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("1")}}}, "InvalidID"},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.ec2.CreateTags(f.ctx, tc.in)
			wantCode(t, err, tc.code)
		})
	}
	many := make([]types.Tag, 0, 50)
	for i := range 50 {
		many = append(many, types.Tag{Key: aws.String("k" + itoa(i)), Value: aws.String("v")})
	}
	_, err = f.ec2.CreateTags(f.ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: many})
	wantCode(t, err, "TagLimitExceeded")
}
