package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
)

// MaxInstanceTypes is how many instance types one CreateFleet may try,
// cheapest first (Karpenter's limit too).
const MaxInstanceTypes = 60

// Option is one way to launch the node: an instance type in a zone with a
// capacity type, at a price.
type Option struct {
	InstanceType string
	Arch         string
	// Variant is the AMI variant the type needs: "standard", "nvidia" or
	// "neuron".
	Variant      string
	Zone         string
	CapacityType string
	Price        float64
}

// Request is one node to launch.
type Request struct {
	Pool  *model.Pool
	Class *model.NodeClass
	// Options are every instance-type × zone × capacity-type the node may
	// be; the fleet picks among them.
	Options []Option
	// Labels are what the node registers with besides the ones the kubelet
	// and the launch add (pool labels, requirement-fixed labels, the pool
	// name label).
	Labels  map[string]string
	MaxPods int64
	// Token makes the launch idempotent: the same token returns the
	// instance the first call launched. Derive it from the plan.
	Token string
}

// Instance is an EC2 instance of the cluster.
type Instance struct {
	ID           string
	InstanceType string
	Zone         string
	CapacityType string
	Pool         string
	NodeClass    string
	State        string
	PrivateDNS   string
	LaunchTime   time.Time
	Tags         map[string]string
}

// CapacityError is a launch that failed because every offering tried was
// out of capacity (or a limit). The caller marks them unavailable and
// plans again without them.
type CapacityError struct {
	Pool      string
	Offerings []catalog.OfferingKey
	Codes     []string
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("launch for pool %q: no capacity: %s", e.Pool, strings.Join(e.Codes, ", "))
}

// Token derives an idempotency token (at most 64 characters, as
// CreateFleet's ClientToken allows) from the parts of a plan.
func Token(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "joist-" + hex.EncodeToString(h.Sum(nil))[:40]
}

// Launch launches one node for the request.
func (l *Launcher) Launch(ctx context.Context, req Request) (*Instance, error) {
	pool, nc := req.Pool, req.Class
	subnets, err := l.Subnets(ctx, nc)
	if err != nil {
		return nil, err
	}
	sgs, err := l.SecurityGroups(ctx, nc)
	if err != nil {
		return nil, err
	}
	// Spot over on-demand when the pool allows both (Karpenter's order).
	capacityType := model.CapacityTypeOnDemand
	for _, o := range req.Options {
		if o.CapacityType == model.CapacityTypeSpot {
			capacityType = model.CapacityTypeSpot
			break
		}
	}
	opts := make([]Option, 0, len(req.Options))
	types := map[string]bool{}
	for _, o := range req.Options {
		if o.CapacityType != capacityType {
			continue
		}
		if _, ok := subnets[o.Zone]; !ok {
			continue
		}
		if !types[o.InstanceType] && len(types) >= MaxInstanceTypes {
			continue
		}
		types[o.InstanceType] = true
		opts = append(opts, o)
	}
	if len(opts) == 0 {
		return nil, fmt.Errorf("pool %q: no instance-type option has a subnet in its zone (subnets in %s)", pool.Name, zoneList(subnets))
	}
	sort.SliceStable(opts, func(i, j int) bool { return opts[i].Price < opts[j].Price })

	labels := map[string]string{}
	for k, v := range req.Labels {
		labels[k] = v
	}
	labels[model.LabelCapacityType] = capacityType
	labels[pool.Label()] = pool.Name
	tags := l.tags(pool, nc)

	// One launch template per AMI (architecture × accelerator variant).
	type amiKey struct{ arch, variant string }
	groups := map[amiKey][]Option{}
	var keys []amiKey
	for _, o := range opts {
		k := amiKey{o.Arch, o.Variant}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], o)
	}
	family := nc.AMIFamily
	if family == "" {
		family = FamilyAL2
	}
	userData, err := UserData(family, l.Cluster, Node{Labels: labels, Taints: append(append([]corev1.Taint{}, pool.Taints...), pool.StartupTaints...), MaxPods: req.MaxPods, Kubelet: pool.Kubelet}, nc.UserData)
	if err != nil {
		return nil, fmt.Errorf("pool %q: user data: %w", pool.Name, err)
	}
	profile := nc.InstanceProfile
	if profile == "" {
		profile = l.Cluster.InstanceProfile
	}
	md := model.MetadataOptions{HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 2, HTTPTokens: "required"}
	if nc.MetadataOptions != nil {
		md = *nc.MetadataOptions
	}
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, k := range keys {
		ami, err := l.ResolveAMI(ctx, family, k.arch, k.variant)
		if err != nil {
			return nil, fmt.Errorf("pool %q: %w", pool.Name, err)
		}
		name, _, err := l.EnsureTemplate(ctx, TemplateContent{
			ImageID: ami, UserData: userData, SecurityGroups: sgs, InstanceProfile: profile,
			Metadata: md, BlockDevices: nc.BlockDeviceMappings, Tags: tags,
		})
		if err != nil {
			return nil, fmt.Errorf("pool %q: %w", pool.Name, err)
		}
		cfg := ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
		}
		for i, o := range groups[k] {
			cfg.Overrides = append(cfg.Overrides, ec2types.FleetLaunchTemplateOverridesRequest{
				InstanceType:     ec2types.InstanceType(o.InstanceType),
				SubnetId:         aws.String(subnets[o.Zone].ID),
				AvailabilityZone: aws.String(o.Zone),
				Priority:         aws.Float64(float64(i)),
			})
		}
		configs = append(configs, cfg)
	}
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: ec2Tags(tags)},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: ec2Tags(tags)},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: ec2Tags(tags)},
		},
		ClientToken: aws.String(req.Token),
	}
	if nc.Context != "" {
		in.Context = aws.String(nc.Context)
	}
	if capacityType == model.CapacityTypeSpot {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	out, err := l.EC2.CreateFleet(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("pool %q: create fleet: %w", pool.Name, err)
	}
	for _, inst := range out.Instances {
		if len(inst.InstanceIds) == 0 {
			continue
		}
		i := &Instance{
			ID: inst.InstanceIds[0], InstanceType: string(inst.InstanceType), CapacityType: capacityType,
			Pool: pool.Name, NodeClass: nc.Name, State: "pending", Tags: tags,
		}
		if lt := inst.LaunchTemplateAndOverrides; lt != nil && lt.Overrides != nil {
			i.Zone = aws.ToString(lt.Overrides.AvailabilityZone)
		}
		return i, nil
	}
	return nil, fleetError(pool.Name, capacityType, out.Errors)
}

func fleetError(pool, capacityType string, errs []ec2types.CreateFleetError) error {
	ce := &CapacityError{Pool: pool}
	var other []string
	seen := map[string]bool{}
	for _, e := range errs {
		code := aws.ToString(e.ErrorCode)
		if !catalog.IsCapacityError(code) {
			other = append(other, code+": "+aws.ToString(e.ErrorMessage))
			continue
		}
		if !seen[code] {
			seen[code] = true
			ce.Codes = append(ce.Codes, code)
		}
		if lt := e.LaunchTemplateAndOverrides; lt != nil && lt.Overrides != nil {
			ce.Offerings = append(ce.Offerings, catalog.OfferingKey{
				InstanceType: string(lt.Overrides.InstanceType), Zone: aws.ToString(lt.Overrides.AvailabilityZone), CapacityType: capacityType,
			})
		}
	}
	if len(ce.Codes) > 0 && len(other) == 0 {
		return ce
	}
	if len(other) == 0 {
		return fmt.Errorf("launch for pool %q: create fleet returned no instance and no error", pool)
	}
	return errors.New("launch for pool " + fmt.Sprintf("%q", pool) + ": " + strings.Join(other, "; "))
}

func zoneList(m map[string]Subnet) string {
	zs := make([]string, 0, len(m))
	for z := range m {
		zs = append(zs, z)
	}
	sort.Strings(zs)
	return strings.Join(zs, ", ")
}

// tags go on the instance, its volumes, the fleet and the launch template.
func (l *Launcher) tags(pool *model.Pool, nc *model.NodeClass) map[string]string {
	t := map[string]string{}
	for k, v := range nc.Tags {
		t[k] = v
	}
	t[TagCluster] = l.Cluster.Name
	t[TagNodePool] = pool.Name
	t[TagNodeClass] = nc.Name
	t["kubernetes.io/cluster/"+l.Cluster.Name] = "owned"
	t["Name"] = "joist/" + l.Cluster.Name + "/" + pool.Name
	return t
}
