package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
)

// Subnet is a subnet a node may launch into.
type Subnet struct {
	ID   string
	Zone string
	// ZoneID is the zone's ID (use1-az4), the same in every account.
	ZoneID  string
	FreeIPs int32
	VPC     string
}

// selectorField names a node class's selector the way its API spells it,
// so an error points at the line the user must change.
func selectorField(nc *model.NodeClass, kind string) string {
	if nc.API == model.APIV1 {
		return "spec." + kind + "SelectorTerms"
	}
	return "spec." + kind + "Selector"
}

// termFilters turns one selector term into EC2 filters (AND'ed, as the
// fields of a term are). A tag value of "*" means the key must exist
// (tag-key); other values may hold EC2's own `*` and `?` wildcards, which
// EC2 applies. v1alpha1 selectors also took comma-separated values as
// alternatives (Karpenter v0.20 split them), so those are split for node
// classes read from that API; v1 tag values are taken whole.
func termFilters(nc *model.NodeClass, t model.SelectorTerm, idFilter, nameFilter string) []ec2types.Filter {
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
		vals := []string{v}
		if nc.API != model.APIV1 && strings.Contains(v, ",") {
			vals = nil
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "" {
					vals = append(vals, p)
				}
			}
		}
		fs = append(fs, ec2types.Filter{Name: aws.String("tag:" + k), Values: vals})
	}
	if t.ID != "" && idFilter != "" {
		fs = append(fs, ec2types.Filter{Name: aws.String(idFilter), Values: []string{t.ID}})
	}
	if t.Name != "" && nameFilter != "" {
		fs = append(fs, ec2types.Filter{Name: aws.String(nameFilter), Values: []string{t.Name}})
	}
	return fs
}

// cacheKey identifies what a node class selects, so an edited selector is
// looked up afresh rather than served from the cache.
func cacheKey(nc *model.NodeClass, what string, terms []model.SelectorTerm) string {
	b, _ := json.Marshal(terms)
	return what + "/" + nc.API + "/" + nc.Name + "/" + string(b)
}

// allSubnets lists every subnet the node class selects (terms OR'ed),
// sorted by id, cached for CacheTTL.
func (l *Launcher) allSubnets(ctx context.Context, nc *model.NodeClass) ([]Subnet, error) {
	field := selectorField(nc, "subnet")
	if len(nc.SubnetSelector) == 0 {
		return nil, fmt.Errorf("node class %q: %s is empty", nc.Name, field)
	}
	key := cacheKey(nc, "subnets", nc.SubnetSelector)
	now := l.now()
	if got, ok := l.subnets.get(key, now); ok {
		return got, nil
	}
	seen := map[string]Subnet{}
	for i, term := range nc.SubnetSelector {
		fs := termFilters(nc, term, "subnet-id", "")
		if len(fs) == 0 {
			return nil, fmt.Errorf("node class %q: %s[%d] selects nothing (no tags and no id)", nc.Name, field, i)
		}
		p := ec2.NewDescribeSubnetsPaginator(l.EC2, &ec2.DescribeSubnetsInput{Filters: fs})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("node class %q: %s: describe subnets: %w", nc.Name, field, err)
			}
			for _, s := range out.Subnets {
				sn := Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId),
					FreeIPs: aws.ToInt32(s.AvailableIpAddressCount), VPC: aws.ToString(s.VpcId)}
				seen[sn.ID] = sn
			}
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("node class %q: no subnet matches %s %s", nc.Name, field, termsString(nc.SubnetSelector))
	}
	out := make([]Subnet, 0, len(seen))
	for _, s := range seen {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	l.subnets.put(key, out, now.Add(l.ttl()))
	// The listing is the new truth about free addresses: forget what
	// earlier launches took.
	l.mu.Lock()
	for _, s := range out {
		delete(l.inflight, s.ID)
	}
	l.mu.Unlock()
	return out, nil
}

// Subnets finds the node class's subnets and keeps one per zone: the one
// with the most free addresses (less those this Launcher's recent launches
// took), skipping subnets that recently reported having none. Ties go to
// the lowest id so the choice is stable.
func (l *Launcher) Subnets(ctx context.Context, nc *model.NodeClass) (map[string]Subnet, error) {
	all, err := l.allSubnets(ctx, nc)
	if err != nil {
		return nil, err
	}
	byZone := l.zonal(all)
	if len(byZone) == 0 {
		ids := make([]string, len(all))
		for i, s := range all {
			ids[i] = s.ID
		}
		return nil, fmt.Errorf("node class %q: every subnet %s selects is out of free addresses (%s)", nc.Name, selectorField(nc, "subnet"), strings.Join(ids, ", "))
	}
	return byZone, nil
}

func (l *Launcher) zonal(all []Subnet) map[string]Subnet {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	byZone := map[string]Subnet{}
	for _, s := range all {
		if full, _ := l.full.get(s.ID, now); full {
			continue
		}
		s.FreeIPs -= int32(l.inflight[s.ID])
		cur, ok := byZone[s.Zone]
		if !ok || s.FreeIPs > cur.FreeIPs || (s.FreeIPs == cur.FreeIPs && s.ID < cur.ID) {
			byZone[s.Zone] = s
		}
	}
	return byZone
}

// MarkSubnetFull makes the launcher skip a subnet for SubnetFullTTL, after
// EC2 said it has no free address (InsufficientFreeAddressesInSubnet):
// another subnet of the zone, if the node class has one, is used instead.
func (l *Launcher) MarkSubnetFull(id string) {
	ttl := l.SubnetFullTTL
	if ttl <= 0 {
		ttl = catalog.DefaultUnavailableTTL
	}
	l.full.put(id, true, l.now().Add(ttl))
}

// tookAddress records that a launch took an address from a subnet.
func (l *Launcher) tookAddress(subnetID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight == nil {
		l.inflight = map[string]int{}
	}
	l.inflight[subnetID]++
}

// SecurityGroups finds the node class's security groups (terms OR'ed;
// tags, id and, in v1, the group name AND'ed within a term), sorted by id
// and cached for CacheTTL.
func (l *Launcher) SecurityGroups(ctx context.Context, nc *model.NodeClass) ([]string, error) {
	field := selectorField(nc, "securityGroup")
	if len(nc.SecurityGroupSelector) == 0 {
		return nil, fmt.Errorf("node class %q: %s is empty", nc.Name, field)
	}
	key := cacheKey(nc, "groups", nc.SecurityGroupSelector)
	now := l.now()
	if got, ok := l.groups.get(key, now); ok {
		return got, nil
	}
	seen := map[string]bool{}
	for i, term := range nc.SecurityGroupSelector {
		fs := termFilters(nc, term, "group-id", "group-name")
		if len(fs) == 0 {
			return nil, fmt.Errorf("node class %q: %s[%d] selects nothing (no tags, id or name)", nc.Name, field, i)
		}
		p := ec2.NewDescribeSecurityGroupsPaginator(l.EC2, &ec2.DescribeSecurityGroupsInput{Filters: fs})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("node class %q: %s: describe security groups: %w", nc.Name, field, err)
			}
			for _, g := range out.SecurityGroups {
				seen[aws.ToString(g.GroupId)] = true
			}
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("node class %q: no security group matches %s %s", nc.Name, field, termsString(nc.SecurityGroupSelector))
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	l.groups.put(key, ids, now.Add(l.ttl()))
	return ids, nil
}

// termsString renders selector terms compactly for error messages.
func termsString(terms []model.SelectorTerm) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		var fs []string
		keys := make([]string, 0, len(t.Tags))
		for k := range t.Tags {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fs = append(fs, fmt.Sprintf("tag %s=%s", k, t.Tags[k]))
		}
		for _, f := range []struct{ name, v string }{{"id", t.ID}, {"name", t.Name}, {"owner", t.Owner}, {"alias", t.Alias}, {"ssmParameter", t.SSMParameter}} {
			if f.v != "" {
				fs = append(fs, f.name+" "+f.v)
			}
		}
		parts[i] = "{" + strings.Join(fs, ", ") + "}"
	}
	return strings.Join(parts, " or ")
}
