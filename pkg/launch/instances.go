package launch

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Instances lists the cluster's instances that are pending or running,
// by their cluster tag: the truth about in-flight capacity.
func (l *Launcher) Instances(ctx context.Context) ([]Instance, error) {
	return l.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + TagCluster), Values: []string{l.Cluster.Name}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
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
	ct := "on-demand"
	if i.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		ct = "spot"
	}
	inst := Instance{
		ID: aws.ToString(i.InstanceId), InstanceType: string(i.InstanceType), CapacityType: ct,
		Pool: tags[TagNodePool], NodeClass: tags[TagNodeClass], PrivateDNS: aws.ToString(i.PrivateDnsName), Tags: tags,
		LaunchTime: aws.ToTime(i.LaunchTime),
	}
	if i.Placement != nil {
		inst.Zone = aws.ToString(i.Placement.AvailabilityZone)
	}
	if i.State != nil {
		inst.State = string(i.State.Name)
	}
	return inst
}

// Terminate terminates instances of this cluster. It refuses any id whose
// instance does not carry the cluster's tag, and treats instances that are
// already gone as done.
func (l *Launcher) Terminate(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	found, err := l.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("instance-id"), Values: ids},
	}})
	if err != nil {
		return err
	}
	var ok []string
	known := map[string]bool{}
	for _, i := range found {
		known[i.ID] = true
		if i.Tags[TagCluster] != l.Cluster.Name {
			return fmt.Errorf("refusing to terminate %s: it lacks tag %s=%s", i.ID, TagCluster, l.Cluster.Name)
		}
		if i.State != "terminated" && i.State != "shutting-down" {
			ok = append(ok, i.ID)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	if _, err := l.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ok}); err != nil {
		return fmt.Errorf("terminate %v: %w", ok, err)
	}
	return nil
}
