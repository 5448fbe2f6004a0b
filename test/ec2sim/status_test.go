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

// statuses reads DescribeInstanceStatus through the SDK's paginator.
func (f *fixture) statuses(t *testing.T, in *ec2.DescribeInstanceStatusInput) (map[string]types.InstanceStatus, int) {
	t.Helper()
	out := map[string]types.InstanceStatus{}
	p := ec2.NewDescribeInstanceStatusPaginator(f.ec2, in)
	pages := 0
	for p.HasMorePages() {
		page, err := p.NextPage(f.ctx)
		if err != nil {
			t.Fatalf("DescribeInstanceStatus page %d: %v", pages, err)
		}
		pages++
		for _, s := range page.InstanceStatuses {
			id := aws.ToString(s.InstanceId)
			if _, dup := out[id]; dup {
				t.Errorf("%s on two pages", id)
			}
			out[id] = s
		}
	}
	return out, pages
}

// DescribeInstanceStatus reports each check as ok until the simulator
// impairs it, then impaired with a failed reachability detail; a scheduled
// retirement shows as an instance-retirement event; pending instances
// appear only with IncludeAllInstances, their checks not applicable.
func TestDescribeInstanceStatus(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC))
	f := newFixture(t, Options{Clock: clock, BootDelay: 30 * time.Second})
	healthy := f.launch(t, "t3.large", zoneA, OnDemand, nil)
	sick := f.launch(t, "t3.large", zoneA, OnDemand, nil)
	host := f.launch(t, "t3.large", zoneB, OnDemand, nil)
	retiring := f.launch(t, "t3.large", zoneB, OnDemand, nil)
	if err := f.sim.Impair(sick); err == nil {
		t.Fatal("a pending instance was impaired")
	}
	clock.Step(30 * time.Second)
	late := f.launch(t, "t3.large", zoneC, OnDemand, nil)
	mustNil(t, f.sim.Impair(sick))
	mustNil(t, f.sim.ImpairSystem(host))
	at := time.Date(2026, 12, 16, 10, 0, 0, 0, time.UTC)
	mustNil(t, f.sim.ScheduleRetirement(retiring, at))

	got, _ := f.statuses(t, &ec2.DescribeInstanceStatusInput{})
	if _, ok := got[late]; ok || len(got) != 4 {
		t.Errorf("without IncludeAllInstances: %d statuses (pending %s among them: %v), want the 4 running", len(got), late, got[late].InstanceId != nil)
	}
	got, _ = f.statuses(t, &ec2.DescribeInstanceStatusInput{IncludeAllInstances: aws.Bool(true), InstanceIds: []string{healthy, sick, host, retiring, late}})
	check := func(id string, wantState types.InstanceStateName, wantInstance, wantSystem types.SummaryStatus) {
		t.Helper()
		s, ok := got[id]
		if !ok {
			t.Fatalf("%s: no status", id)
		}
		if s.InstanceState.Name != wantState || s.InstanceStatus.Status != wantInstance || s.SystemStatus.Status != wantSystem {
			t.Errorf("%s: state %s, instance %s, system %s; want %s, %s, %s", id, s.InstanceState.Name, s.InstanceStatus.Status, s.SystemStatus.Status, wantState, wantInstance, wantSystem)
		}
	}
	check(healthy, "running", "ok", "ok")
	check(sick, "running", "impaired", "ok")
	check(host, "running", "ok", "impaired")
	check(retiring, "running", "ok", "ok")
	check(late, "pending", "not-applicable", "not-applicable")
	if d := got[sick].InstanceStatus.Details; len(d) != 1 || d[0].Name != "reachability" || d[0].Status != "failed" || !aws.ToTime(d[0].ImpairedSince).Equal(clock.Now()) {
		t.Errorf("impaired instance's details %+v, want reachability failed since now", d)
	}
	if aws.ToString(got[sick].AvailabilityZone) != zoneA {
		t.Errorf("zone %q", aws.ToString(got[sick].AvailabilityZone))
	}
	ev := got[retiring].Events
	if len(ev) != 1 || ev[0].Code != types.EventCodeInstanceRetirement || !aws.ToTime(ev[0].NotBefore).Equal(at) || aws.ToString(ev[0].InstanceEventId) == "" {
		t.Errorf("retiring instance's events %+v, want one instance-retirement not before %s", ev, at)
	}
	if len(got[healthy].Events) != 0 {
		t.Errorf("healthy instance's events %+v", got[healthy].Events)
	}

	filtered, _ := f.statuses(t, &ec2.DescribeInstanceStatusInput{Filters: []types.Filter{{Name: aws.String("instance-status.status"), Values: []string{"impaired"}}}})
	if len(filtered) != 1 || filtered[sick].InstanceId == nil {
		t.Errorf("instance-status.status=impaired matched %d", len(filtered))
	}
	filtered, _ = f.statuses(t, &ec2.DescribeInstanceStatusInput{Filters: []types.Filter{{Name: aws.String("event.code"), Values: []string{"instance-retirement"}}}})
	if len(filtered) != 1 || filtered[retiring].InstanceId == nil {
		t.Errorf("event.code=instance-retirement matched %d", len(filtered))
	}
}

func TestDescribeInstanceStatusPagination(t *testing.T) {
	f := newFixture(t, Options{})
	f.createTemplate(t, "joist-lt", testAMI, nil)
	in := fleetInput("joist-lt", OnDemand, f.overrides(testAMI, []string{"t3.large"}, zoneA))
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(12)
	out, err := f.ec2.CreateFleet(f.ctx, in)
	if err != nil || len(launched(out)) != 12 {
		t.Fatalf("CreateFleet: %v %+v", err, out)
	}
	got, pages := f.statuses(t, &ec2.DescribeInstanceStatusInput{IncludeAllInstances: aws.Bool(true), MaxResults: aws.Int32(5)})
	if pages != 3 || len(got) != 12 {
		t.Errorf("%d pages, %d statuses; want 3 pages, 12", pages, len(got))
	}
	ids := launched(out)
	sort.Strings(ids)
	many := make([]string, 101)
	for i := range many {
		many[i] = ids[0]
	}
	for _, tc := range []struct {
		name string
		in   *ec2.DescribeInstanceStatusInput
		code string
	}{
		{"MaxResults with instance IDs", &ec2.DescribeInstanceStatusInput{MaxResults: aws.Int32(5), InstanceIds: ids[:1]}, "InvalidParameterCombination"},
		{"more than 100 instance IDs", &ec2.DescribeInstanceStatusInput{InstanceIds: many}, "InvalidParameterValue"},
		{"unknown instance", &ec2.DescribeInstanceStatusInput{InstanceIds: []string{ids[0], "i-0000000000000dead"}}, "InvalidInstanceID.NotFound"},
		{"forged token", &ec2.DescribeInstanceStatusInput{NextToken: aws.String("bm9wZQ")}, "InvalidPaginationToken"},
		{"unknown filter", &ec2.DescribeInstanceStatusInput{Filters: []types.Filter{{Name: aws.String("tag:joist.sh/cluster"), Values: []string{"x"}}}}, "InvalidParameterValue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.ec2.DescribeInstanceStatus(f.ctx, tc.in)
			wantCode(t, err, tc.code)
		})
	}
}
