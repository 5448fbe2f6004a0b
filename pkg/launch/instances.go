package launch

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/joist-dev/joist/pkg/model"
)

// maxFilterValues is how many values EC2 takes in one filter.
const maxFilterValues = 200

// Instances lists the cluster's instances that are pending or running,
// by their cluster tag: the truth about in-flight capacity.
func (l *Launcher) Instances(ctx context.Context) ([]Instance, error) {
	return l.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + TagCluster), Values: []string{l.Cluster.Name}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
}

// Tagged lists every instance tagged for the cluster in any state EC2
// still shows (a terminated one stays visible for about an hour): which
// nodes Joist owns is read from it (termination.Owned), and a node whose
// instance was just ended is still known as Joist's.
func (l *Launcher) Tagged(ctx context.Context) ([]Instance, error) {
	return l.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + TagCluster), Values: []string{l.Cluster.Name}},
	}})
}

// Live reports whether the instance is pending or running (what Instances
// lists).
func (i Instance) Live() bool { return i.State == "pending" || i.State == "running" }

// Describe reads instances by id, whatever their tags and state (an
// interruption names instances that may be another cluster's, or gone).
// Ids EC2 does not know are simply absent from the result.
func (l *Launcher) Describe(ctx context.Context, ids ...string) ([]Instance, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []Instance
	for start := 0; start < len(ids); start += maxFilterValues {
		batch := ids[start:min(start+maxFilterValues, len(ids))]
		got, err := l.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
			{Name: aws.String("instance-id"), Values: batch},
		}})
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

func (l *Launcher) describe(ctx context.Context, in *ec2.DescribeInstancesInput) ([]Instance, error) {
	var out []Instance
	p := ec2.NewDescribeInstancesPaginator(l.EC2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				out = append(out, fromEC2(i))
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

func fromEC2(i ec2types.Instance) Instance {
	tags := map[string]string{}
	for _, t := range i.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	ct, reservation := capacityTypeOf(i)
	inst := Instance{
		ID: aws.ToString(i.InstanceId), InstanceType: string(i.InstanceType), CapacityType: ct, ReservationID: reservation,
		Pool: tags[TagNodePool], NodeClass: tags[TagNodeClass], PrivateDNS: aws.ToString(i.PrivateDnsName), Tags: tags,
		LaunchTime: aws.ToTime(i.LaunchTime), SubnetID: aws.ToString(i.SubnetId), LaunchTemplateID: tags[TagLaunchTemplateID],
	}
	if i.Placement != nil {
		inst.Zone = aws.ToString(i.Placement.AvailabilityZone)
	}
	inst.ImageID = aws.ToString(i.ImageId)
	for _, g := range i.SecurityGroups {
		inst.SecurityGroups = append(inst.SecurityGroups, aws.ToString(g.GroupId))
	}
	if i.State != nil {
		inst.State = string(i.State.Name)
	}
	return inst
}

// capacityTypeOf reads what capacity an instance runs on, and in which
// reservation. Reserved is an instance EC2 runs in a capacity reservation
// it was launched into on purpose: a capacity block, or a targeted launch
// (preference capacity-reservations-only, which is how Joist launches
// into one). An on-demand instance that an open ODCR merely absorbed
// stays on-demand, as Karpenter reads it: nothing planned it into the
// reservation, and it may move out of it.
func capacityTypeOf(i ec2types.Instance) (string, string) {
	if i.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		return model.CapacityTypeSpot, ""
	}
	id := aws.ToString(i.CapacityReservationId)
	if id != "" && (i.InstanceLifecycle == ec2types.InstanceLifecycleTypeCapacityBlock ||
		(i.CapacityReservationSpecification != nil && i.CapacityReservationSpecification.CapacityReservationPreference == ec2types.CapacityReservationPreferenceCapacityReservationsOnly)) {
		return model.CapacityTypeReserved, id
	}
	return model.CapacityTypeOnDemand, ""
}

// Gone reports whether an instance no longer runs: unknown to EC2, or
// stopping, stopped, shutting down or terminated.
func (l *Launcher) Gone(ctx context.Context, id string) (bool, error) {
	got, err := l.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("instance-id"), Values: []string{id}},
	}})
	if err != nil {
		return false, fmt.Errorf("instance %s: %w", id, err)
	}
	for _, i := range got {
		if i.ID == id && (i.State == "pending" || i.State == "running") {
			return false, nil
		}
	}
	return true, nil
}

// Terminate terminates instances of this cluster. It checks every id
// first and refuses them all if any instance does not carry the cluster's
// tag (IAM should refuse too; this says why before trying), and treats
// instances that are already gone or going as done.
func (l *Launcher) Terminate(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	var found []Instance
	for start := 0; start < len(ids); start += maxFilterValues {
		batch := ids[start:min(start+maxFilterValues, len(ids))]
		got, err := l.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
			{Name: aws.String("instance-id"), Values: batch},
		}})
		if err != nil {
			return fmt.Errorf("terminate: %w", err)
		}
		found = append(found, got...)
	}
	var ok []string
	for _, i := range found {
		if i.Tags[TagCluster] != l.Cluster.Name {
			return fmt.Errorf("refusing to terminate %s: it lacks tag %s=%s", i.ID, TagCluster, l.Cluster.Name)
		}
		if i.State != "terminated" && i.State != "shutting-down" {
			ok = append(ok, i.ID)
		}
	}
	for start := 0; start < len(ok); start += maxFilterValues {
		batch := ok[start:min(start+maxFilterValues, len(ok))]
		if _, err := l.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: batch}); err != nil {
			return fmt.Errorf("terminate %v: %w", batch, err)
		}
	}
	if len(ok) > 0 {
		l.log().Info("terminated instances", "ids", ok)
	}
	return nil
}

// maxStatusIDs is how many instance ids DescribeInstanceStatus takes.
const maxStatusIDs = 100

// InstanceStatus is EC2's health of one instance (DescribeInstanceStatus):
// its status checks' summaries and its scheduled events.
type InstanceStatus struct {
	ID, State                    string
	InstanceStatus, SystemStatus string
	Events                       []InstanceEvent
}

// InstanceEvent is an event EC2 scheduled for an instance.
type InstanceEvent struct {
	Code, Description string
	NotBefore         time.Time
}

// Statuses reads the status checks and scheduled events of the instances
// given, whatever their state (IncludeAllInstances), 100 ids a call as
// EC2 takes them, following every page. An id EC2 does not know fails
// the call (EC2 refuses the whole request).
func (l *Launcher) Statuses(ctx context.Context, ids ...string) ([]InstanceStatus, error) {
	var out []InstanceStatus
	for start := 0; start < len(ids); start += maxStatusIDs {
		batch := ids[start:min(start+maxStatusIDs, len(ids))]
		p := ec2.NewDescribeInstanceStatusPaginator(l.EC2, &ec2.DescribeInstanceStatusInput{
			InstanceIds: batch, IncludeAllInstances: aws.Bool(true),
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describe instance status of %d instances: %w", len(batch), err)
			}
			for _, s := range page.InstanceStatuses {
				out = append(out, statusFromEC2(s))
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

func statusFromEC2(s ec2types.InstanceStatus) InstanceStatus {
	st := InstanceStatus{ID: aws.ToString(s.InstanceId)}
	if s.InstanceState != nil {
		st.State = string(s.InstanceState.Name)
	}
	if s.InstanceStatus != nil {
		st.InstanceStatus = string(s.InstanceStatus.Status)
	}
	if s.SystemStatus != nil {
		st.SystemStatus = string(s.SystemStatus.Status)
	}
	for _, e := range s.Events {
		st.Events = append(st.Events, InstanceEvent{Code: string(e.Code), Description: aws.ToString(e.Description), NotBefore: aws.ToTime(e.NotBefore)})
	}
	return st
}
