package ec2sim

import (
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func filtersOf(m map[string][]string) []types.Filter {
	var out []types.Filter
	for n, v := range m {
		out = append(out, types.Filter{Name: aws.String(n), Values: v})
	}
	return out
}

func TestDescribeSubnets(t *testing.T) {
	f := newFixture(t, Options{})
	other := f.sim.AddSubnet(zoneB, "10.0.200.0/24", map[string]string{"Name": "public"})
	all := []string{f.seeded.SubnetIDs[zoneA], f.seeded.SubnetIDs[zoneB], f.seeded.SubnetIDs[zoneC]}
	cases := []struct {
		name    string
		ids     []string
		filters map[string][]string
		want    []string
		code    string
	}{
		// The seed AWSNodeTemplate's selector, as Karpenter turns it into filters.
		{name: "seed subnetSelector (tag:K with *)", filters: map[string][]string{"tag:karpenter.sh/discovery/hoon-cluster": {"*"}}, want: all},
		{name: "discovery tag", filters: map[string][]string{"tag:karpenter.sh/discovery": {testCluster}}, want: all},
		{name: "cluster ownership tag key", filters: map[string][]string{"tag-key": {"kubernetes.io/cluster/hoon-cluster"}}, want: all},
		{name: "zone with ?", filters: map[string][]string{"availability-zone": {"ap-northeast-2?"}}, want: append(all, other)},
		{name: "zone id", filters: map[string][]string{"availability-zone-id": {"apne2-az2"}}, want: []string{f.seeded.SubnetIDs[zoneB], other}},
		{name: "vpc", filters: map[string][]string{"vpc-id": {f.seeded.VPCID}}, want: append(all, other)},
		{name: "ids and filters together", ids: []string{f.seeded.SubnetIDs[zoneA], other}, filters: map[string][]string{"tag:Name": {"pub*"}}, want: []string{other}},
		{name: "subnet-id filter", filters: map[string][]string{"subnet-id": {other}}, want: []string{other}},
		{name: "no match is empty, not an error", filters: map[string][]string{"tag:karpenter.sh/discovery": {"someone-else"}}},
		{name: "unknown id", ids: []string{"subnet-0000000000000dead"}, code: "InvalidSubnetID.NotFound"},
		{name: "unknown filter", filters: map[string][]string{"colour": {"red"}}, code: "InvalidParameterValue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribeSubnets(f.ctx, &ec2.DescribeSubnetsInput{SubnetIds: tc.ids, Filters: filtersOf(tc.filters)})
			wantCode(t, err, tc.code)
			if err != nil {
				return
			}
			var got []string
			for _, sn := range out.Subnets {
				got = append(got, aws.ToString(sn.SubnetId))
			}
			want := append([]string(nil), tc.want...)
			sort.Strings(got)
			sort.Strings(want)
			if !equalStrings(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}

	out, err := f.ec2.DescribeSubnets(f.ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{f.seeded.SubnetIDs[zoneA]}})
	mustNil(t, err)
	sn := out.Subnets[0]
	if aws.ToString(sn.CidrBlock) != "10.0.0.0/19" || aws.ToInt32(sn.AvailableIpAddressCount) != 8192-5 ||
		aws.ToString(sn.AvailabilityZone) != zoneA || aws.ToString(sn.AvailabilityZoneId) != "apne2-az1" ||
		sn.State != types.SubnetStateAvailable || aws.ToString(sn.VpcId) != f.seeded.VPCID || tagMapOf(sn.Tags)["kubernetes.io/cluster/hoon-cluster"] != "shared" {
		t.Errorf("subnet %+v", sn)
	}
}

// Launches take addresses from the subnet; a /28 holds 11 instances.
func TestSubnetAddresses(t *testing.T) {
	f := newFixture(t, Options{})
	tiny := f.sim.AddSubnet(zoneB, "10.0.250.0/28", nil)
	f.createTemplate(t, "joist-lt", testAMI, nil)
	in := fleetInput("joist-lt", OnDemand, []types.FleetLaunchTemplateOverridesRequest{{InstanceType: "t3.large", SubnetId: aws.String(tiny)}})
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(12)
	out, err := f.ec2.CreateFleet(f.ctx, in)
	mustNil(t, err)
	if len(launched(out)) != 11 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientFreeAddressesInSubnet" {
		t.Fatalf("launched %d, errors %+v", len(launched(out)), out.Errors)
	}
	ips := map[string]bool{}
	for _, in := range f.sim.Instances() {
		if ips[in.PrivateIP] {
			t.Errorf("address %s handed out twice", in.PrivateIP)
		}
		ips[in.PrivateIP] = true
	}
	if !ips["10.0.250.4"] || !ips["10.0.250.14"] || ips["10.0.250.15"] {
		t.Errorf("addresses %v: want .4 to .14 (AWS reserves the first four and the last)", ips)
	}
	_, err = f.ec2.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: launched(out)[:3]})
	mustNil(t, err)
	sub, err := f.ec2.DescribeSubnets(f.ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{tiny}})
	mustNil(t, err)
	if got := aws.ToInt32(sub.Subnets[0].AvailableIpAddressCount); got != 3 {
		t.Errorf("%d free after terminating 3, want 3", got)
	}
}

func TestDescribeSecurityGroups(t *testing.T) {
	f := newFixture(t, Options{})
	extra := f.sim.AddSecurityGroup("nodes-extra", map[string]string{"team": "a"})
	f.sim.mu.Lock()
	defaultSG := f.sim.vpcs[f.seeded.VPCID].defaultSG
	f.sim.mu.Unlock()
	cases := []struct {
		name       string
		ids, names []string
		filters    map[string][]string
		want       []string
		code       string
	}{
		// The seed AWSNodeTemplate's securityGroupSelector.
		{name: "seed securityGroupSelector", filters: map[string][]string{"tag:aws:eks:cluster-name": {testCluster}}, want: []string{f.seeded.SecurityGroupID}},
		{name: "group name with *", filters: map[string][]string{"group-name": {"eks-cluster-sg-*"}}, want: []string{f.seeded.SecurityGroupID}},
		{name: "every group of the VPC, the default one included", filters: map[string][]string{"vpc-id": {f.seeded.VPCID}}, want: []string{defaultSG, f.seeded.SecurityGroupID, extra}},
		{name: "by id", ids: []string{extra}, want: []string{extra}},
		{name: "by name", names: []string{"default"}, want: []string{defaultSG}},
		{name: "group-id filter", filters: map[string][]string{"group-id": {extra, f.seeded.SecurityGroupID}}, want: []string{f.seeded.SecurityGroupID, extra}},
		{name: "tag-key", filters: map[string][]string{"tag-key": {"team"}}, want: []string{extra}},
		{name: "unknown id", ids: []string{"sg-0000000000000dead"}, code: "InvalidGroup.NotFound"},
		{name: "unknown name", names: []string{"nope"}, code: "InvalidGroup.NotFound"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribeSecurityGroups(f.ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: tc.ids, GroupNames: tc.names, Filters: filtersOf(tc.filters)})
			wantCode(t, err, tc.code)
			if err != nil {
				return
			}
			var got []string
			for _, g := range out.SecurityGroups {
				got = append(got, aws.ToString(g.GroupId))
				if aws.ToString(g.VpcId) != f.seeded.VPCID || aws.ToString(g.OwnerId) != DefaultAccountID {
					t.Errorf("group %+v", g)
				}
			}
			want := append([]string(nil), tc.want...)
			sort.Strings(got)
			sort.Strings(want)
			if !equalStrings(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestDescribeAvailabilityZones(t *testing.T) {
	f := newFixture(t, Options{Zones: []string{zoneA, zoneC}})
	out, err := f.ec2.DescribeAvailabilityZones(f.ctx, &ec2.DescribeAvailabilityZonesInput{})
	mustNil(t, err)
	if len(out.AvailabilityZones) != 2 {
		t.Fatalf("zones %+v", out.AvailabilityZones)
	}
	z := out.AvailabilityZones[1]
	if aws.ToString(z.ZoneName) != zoneC || aws.ToString(z.ZoneId) != "apne2-az2" || z.State != types.AvailabilityZoneStateAvailable ||
		aws.ToString(z.RegionName) != testRegion || aws.ToString(z.ZoneType) != "availability-zone" {
		t.Errorf("zone %+v", z)
	}
	out, err = f.ec2.DescribeAvailabilityZones(f.ctx, &ec2.DescribeAvailabilityZonesInput{Filters: filtersOf(map[string][]string{"zone-id": {"apne2-az1"}})})
	mustNil(t, err)
	if len(out.AvailabilityZones) != 1 || aws.ToString(out.AvailabilityZones[0].ZoneName) != zoneA {
		t.Errorf("filtered zones %+v", out.AvailabilityZones)
	}
	_, err = f.ec2.DescribeAvailabilityZones(f.ctx, &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"ap-northeast-2z"}})
	wantCode(t, err, "InvalidParameterValue")
}

func TestRegionCodes(t *testing.T) {
	for region, want := range map[string]string{
		"ap-northeast-2": "apne2", "us-east-1": "use1", "eu-central-1": "euc1", "us-west-2": "usw2", "ap-southeast-1": "apse1",
	} {
		if got := regionCode(region); got != want {
			t.Errorf("regionCode(%s) = %s, want %s", region, got, want)
		}
	}
	us := New(Options{Region: "us-east-1"})
	if got := us.dnsSuffix(); got != "ec2.internal" {
		t.Errorf("us-east-1 DNS suffix %s, want ec2.internal", got)
	}
}
