package ec2sim

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/joist-dev/joist/pkg/iampolicy"
)

const (
	testRegion  = "ap-northeast-2"
	testCluster = "hoon-cluster"
	zoneA       = "ap-northeast-2a"
	zoneB       = "ap-northeast-2b"
	zoneC       = "ap-northeast-2c"
)

// testTypes is a small catalog whose prices make the allocation choices
// easy to read: on-demand, m5.large is cheapest; on spot, t3.large is.
func testTypes() []InstanceTypeInfo {
	return []InstanceTypeInfo{
		{Name: "t3.large", Arch: "amd64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 12, Hypervisor: "nitro", OnDemandPrice: 0.104, SpotPrice: 0.030, SpotSupported: true},
		{Name: "t3.xlarge", Arch: "amd64", VCPU: 4, MemoryMiB: 16384, MaxENIs: 4, IPv4PerENI: 15, Hypervisor: "nitro", OnDemandPrice: 0.208, SpotPrice: 0.062, SpotSupported: true},
		{Name: "m5.large", Arch: "x86_64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10, Hypervisor: "nitro", OnDemandPrice: 0.096, SpotPrice: 0.040, SpotSupported: true},
		{Name: "c6g.large", Arch: "arm64", VCPU: 2, MemoryMiB: 4096, MaxENIs: 3, IPv4PerENI: 10, Hypervisor: "nitro", OnDemandPrice: 0.068, SpotPrice: 0.027, SpotSupported: true},
		{Name: "g5.xlarge", Arch: "x86_64", VCPU: 4, MemoryMiB: 16384, GPUCount: 1, GPUName: "A10G", GPUManufacturer: "NVIDIA", GPUMemoryMiB: 24576,
			MaxENIs: 4, IPv4PerENI: 15, Hypervisor: "nitro", OnDemandPrice: 1.006, SpotPrice: 0.45, SpotSupported: true, Zones: []string{zoneA}},
		{Name: "x1.metal", Arch: "x86_64", VCPU: 64, MemoryMiB: 1024 * 1024, MaxENIs: 8, IPv4PerENI: 30, BareMetal: true, OnDemandPrice: 13.0},
	}
}

// fixture is a seeded simulator and an SDK client pointed at it.
type fixture struct {
	sim    *Sim
	ec2    *ec2.Client
	seeded Seeded
	ctx    context.Context
}

// newFixture starts a simulator seeded for the seed cluster and returns the
// real SDK client talking to it over HTTP, so every test proves the wire
// format as well as the behaviour.
func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	if opts.Region == "" {
		opts.Region = testRegion
	}
	if opts.InstanceTypes == nil {
		opts.InstanceTypes = testTypes()
	}
	sim := New(opts)
	seeded := sim.SeedDefault(testCluster)
	return &fixture{sim: sim, ec2: newClient(t, sim.Start(t)), seeded: seeded, ctx: context.Background()}
}

// newClient is the SDK's EC2 client with static credentials and the
// standard retryer, its backoff shortened so retry tests run fast.
func newClient(t *testing.T, endpoint string) *ec2.Client {
	t.Helper()
	return ec2.New(ec2.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxBackoff = 5 * time.Millisecond
			o.Backoff = retry.NewExponentialJitterBackoff(5 * time.Millisecond)
		}),
	})
}

// createTemplate makes a launch template the way Joist does and returns its
// ID.
func (f *fixture) createTemplate(t *testing.T, name, imageID string, extra func(*types.RequestLaunchTemplateData)) string {
	t.Helper()
	data := &types.RequestLaunchTemplateData{
		ImageId:          aws.String(imageID),
		UserData:         aws.String("IyEvYmluL2Jhc2gK"),
		SecurityGroupIds: []string{f.seeded.SecurityGroupID},
		TagSpecifications: []types.LaunchTemplateTagSpecificationRequest{{
			ResourceType: types.ResourceTypeInstance,
			Tags:         []types.Tag{{Key: aws.String("from-template"), Value: aws.String("yes")}, {Key: aws.String("shared"), Value: aws.String("template")}},
		}},
	}
	if extra != nil {
		extra(data)
	}
	out, err := f.ec2.CreateLaunchTemplate(f.ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data})
	if err != nil {
		t.Fatalf("CreateLaunchTemplate %s: %v", name, err)
	}
	return aws.ToString(out.LaunchTemplate.LaunchTemplateId)
}

// overrides is the cross product Karpenter sends: every type in every zone's
// subnet.
func (f *fixture) overrides(imageID string, typeNames []string, zones ...string) []types.FleetLaunchTemplateOverridesRequest {
	var out []types.FleetLaunchTemplateOverridesRequest
	for _, tn := range typeNames {
		for _, z := range zones {
			out = append(out, types.FleetLaunchTemplateOverridesRequest{
				InstanceType:     types.InstanceType(tn),
				SubnetId:         aws.String(f.seeded.SubnetIDs[z]),
				AvailabilityZone: aws.String(z),
				ImageId:          aws.String(imageID),
			})
		}
	}
	return out
}

// fleetInput is an instant fleet for one instance of the given capacity
// type from the named template.
func fleetInput(ltName, capacityType string, overrides []types.FleetLaunchTemplateOverridesRequest) *ec2.CreateFleetInput {
	in := &ec2.CreateFleetInput{
		Type: types.FleetTypeInstant,
		LaunchTemplateConfigs: []types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(ltName), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TargetCapacitySpecification: &types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: types.DefaultTargetCapacityType(capacityType),
		},
	}
	if capacityType == Spot {
		in.SpotOptions = &types.SpotOptionsRequest{AllocationStrategy: types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &types.OnDemandOptionsRequest{AllocationStrategy: types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return in
}

// apiCode returns the EC2 error code the SDK surfaced, or "" for nil.
func apiCode(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error is not an API error: %v", err)
	}
	return ae.ErrorCode()
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := apiCode(t, err); got != code {
		t.Fatalf("error code = %q, want %q (err: %v)", got, code, err)
	}
}

func tagMapOf(ts []types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range ts {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

// launched returns the instance IDs of a CreateFleet response.
func launched(out *ec2.CreateFleetOutput) []string {
	var ids []string
	for _, fi := range out.Instances {
		ids = append(ids, fi.InstanceIds...)
	}
	return ids
}

// namesOf maps ids back to the names a test seeded them under (ids: name
// to id), keeping their order.
func namesOf(ids map[string]string, got []string) []string {
	byID := make(map[string]string, len(ids))
	for name, id := range ids {
		byID[id] = name
	}
	var out []string
	for _, id := range got {
		out = append(out, byID[id])
	}
	return out
}

// policyWithout is p less the actions and the resources drop says go,
// wherever a statement names them; a statement left with no action or no
// resource goes too: the policy Joist would have without those grants.
func policyWithout(p iampolicy.Policy, dropAction, dropResource func(string) bool) iampolicy.Policy {
	out := iampolicy.Policy{Principal: p.Principal}
	for _, st := range p.Statements {
		st.Actions = slices.DeleteFunc(slices.Clone(st.Actions), dropAction)
		st.Resources = slices.DeleteFunc(slices.Clone(st.Resources), dropResource)
		if len(st.Actions) > 0 && len(st.Resources) > 0 {
			out.Statements = append(out.Statements, st)
		}
	}
	return out
}
