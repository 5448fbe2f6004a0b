package launch

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/joist-dev/joist/pkg/model"
)

// Subnet is a subnet a node may launch into.
type Subnet struct {
	ID      string
	Zone    string
	FreeIPs int32
	VPC     string
}

// filters turns one selector term into EC2 filters. A tag value of "*"
// means the key must exist (tag-key); other values may hold EC2's own `*`
// and `?` wildcards.
func filters(t model.SelectorTerm, idFilter, nameFilter string) []ec2types.Filter {
	var fs []ec2types.Filter
	keys := make([]string, 0, len(t.Tags))
	for k := range t.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := t.Tags[k]
		if v == "*" || v == "" {
			fs = append(fs, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
			continue
		}
		fs = append(fs, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
	}
	if t.ID != "" {
		fs = append(fs, ec2types.Filter{Name: aws.String(idFilter), Values: []string{t.ID}})
	}
	if t.Name != "" && nameFilter != "" {
		fs = append(fs, ec2types.Filter{Name: aws.String(nameFilter), Values: []string{t.Name}})
	}
	return fs
}

// Subnets finds the node class's subnets (terms OR'ed, fields AND'ed) and
// keeps one per zone: the one with the most free addresses.
func (l *Launcher) Subnets(ctx context.Context, nc *model.NodeClass) (map[string]Subnet, error) {
	if len(nc.SubnetSelector) == 0 {
		return nil, fmt.Errorf("node class %q: no subnet selector", nc.Name)
	}
	byZone := map[string]Subnet{}
	for _, term := range nc.SubnetSelector {
		p := ec2.NewDescribeSubnetsPaginator(l.EC2, &ec2.DescribeSubnetsInput{Filters: filters(term, "subnet-id", "")})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("node class %q: describe subnets: %w", nc.Name, err)
			}
			for _, s := range out.Subnets {
				sn := Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), FreeIPs: aws.ToInt32(s.AvailableIpAddressCount), VPC: aws.ToString(s.VpcId)}
				cur, ok := byZone[sn.Zone]
				if !ok || sn.FreeIPs > cur.FreeIPs || (sn.FreeIPs == cur.FreeIPs && sn.ID < cur.ID) {
					byZone[sn.Zone] = sn
				}
			}
		}
	}
	if len(byZone) == 0 {
		return nil, fmt.Errorf("node class %q: no subnet matches spec.subnetSelector", nc.Name)
	}
	return byZone, nil
}

// SecurityGroups finds the node class's security groups, sorted by id.
func (l *Launcher) SecurityGroups(ctx context.Context, nc *model.NodeClass) ([]string, error) {
	if len(nc.SecurityGroupSelector) == 0 {
		return nil, fmt.Errorf("node class %q: no security group selector", nc.Name)
	}
	seen := map[string]bool{}
	for _, term := range nc.SecurityGroupSelector {
		p := ec2.NewDescribeSecurityGroupsPaginator(l.EC2, &ec2.DescribeSecurityGroupsInput{Filters: filters(term, "group-id", "group-name")})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("node class %q: describe security groups: %w", nc.Name, err)
			}
			for _, g := range out.SecurityGroups {
				seen[aws.ToString(g.GroupId)] = true
			}
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("node class %q: no security group matches spec.securityGroupSelector", nc.Name)
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}
