package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
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

// maxTemplateConfigs is CreateFleet's limit on launch template
// configurations in one request.
const maxTemplateConfigs = 50

// Option is one way to launch the node: an instance type in a zone with a
// capacity type, at a price.
type Option struct {
	InstanceType string
	// Arch is amd64 or arm64.
	Arch string
	// Variant is the AMI variant the type needs: "standard", "nvidia" or
	// "neuron" ("" means standard).
	Variant      string
	Zone         string
	CapacityType string
	Price        float64
	// MaxPods is the pod capacity the plan sized the type with. Zero
	// means Launch works it out from the catalog and the pool's kubelet
	// settings, the way the planner does; the node is told the number so
	// it never disagrees with the plan.
	MaxPods int64
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
	Labels map[string]string
	// MaxPods, when positive, overrides every option's.
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
	SubnetID     string
	CapacityType string
	Pool         string
	NodeClass    string
	State        string
	PrivateDNS   string
	LaunchTime   time.Time
	// LaunchTemplateID is the template the instance was launched from.
	LaunchTemplateID string
	// ImageID and SecurityGroups are what the instance runs with (read
	// back from DescribeInstances; drift compares them with the class).
	ImageID        string
	SecurityGroups []string
	Tags           map[string]string
	// Unavailable are offerings the same CreateFleet found out of capacity
	// before it launched this one; the caller marks them.
	Unavailable []catalog.OfferingKey
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

// fleetAttempt is what one CreateFleet request sends: the capacity type,
// the launch template configurations with their overrides, the token.
type fleetAttempt struct {
	capacityType string
	configs      []ec2types.FleetLaunchTemplateConfigRequest
	token        string
}

// Launch launches one node for the request. A capacity failure of every
// option is a *CapacityError; any other failure is an error naming the
// pool and the cause.
func (l *Launcher) Launch(ctx context.Context, req Request) (*Instance, error) {
	pool, nc := req.Pool, req.Class
	if pool == nil || nc == nil {
		return nil, fmt.Errorf("launch: request without pool or node class")
	}
	fail := func(err error) (*Instance, error) { return nil, fmt.Errorf("pool %q: %w", pool.Name, err) }
	cluster, err := l.ClusterInfo(ctx)
	if err != nil {
		return fail(err)
	}
	subnets, err := l.Subnets(ctx, nc)
	if err != nil {
		return fail(err)
	}
	capacityType, opts := chooseOptions(req.Options, subnets)
	if len(opts) == 0 {
		return fail(fmt.Errorf("no instance-type option is in a zone the node class %q has a subnet in (subnets in %s)", nc.Name, zoneList(subnets)))
	}

	labels := map[string]string{}
	for k, v := range req.Labels {
		labels[k] = v
	}
	labels[model.LabelCapacityType] = capacityType
	labels[pool.Label()] = pool.Name
	taints := append(append([]corev1.Taint{}, pool.Taints...), pool.StartupTaints...)

	var configs []ec2types.FleetLaunchTemplateConfigRequest
	if nc.LaunchTemplate != "" {
		// v1alpha1's escape hatch: the user's own template, used as is.
		configs = userTemplateConfig(nc.LaunchTemplate, opts, subnets)
	} else {
		configs, err = l.templateConfigs(ctx, cluster, req, opts, subnets, labels, taints)
		if err != nil {
			return fail(err)
		}
	}
	token := l.effectiveToken(req.Token)
	att := &fleetAttempt{capacityType: capacityType, configs: configs, token: token}
	out, err := l.createFleet(ctx, req, att, func() ([]ec2types.FleetLaunchTemplateConfigRequest, error) {
		if nc.LaunchTemplate != "" {
			return configs, nil
		}
		return l.templateConfigs(ctx, cluster, req, opts, subnets, labels, taints)
	})
	if err != nil {
		return fail(err)
	}
	if inst := l.instanceFrom(out, req, att); inst != nil {
		inst.Unavailable = unavailableFrom(capacityType, out.Errors)
		return inst, nil
	}

	// Nothing launched. Subnets out of addresses are skipped from now on;
	// when their zones have another subnet, try those zones again at once
	// (with a token of its own: the first one remembers its failure).
	full := fullSubnets(out.Errors)
	for _, id := range full {
		l.MarkSubnetFull(id)
	}
	var retried map[string]bool
	var errs2 []ec2types.CreateFleetError
	if len(full) > 0 {
		retryOut, zones, err := l.retryInOtherSubnets(ctx, req, att, full, nc)
		if err != nil {
			return fail(err)
		}
		if retryOut != nil {
			if inst := l.instanceFrom(retryOut, req, att); inst != nil {
				return inst, nil
			}
			retried, errs2 = zones, retryOut.Errors
		}
	}
	l.noteFailure(req.Token)
	var errs []ec2types.CreateFleetError
	for _, e := range out.Errors {
		if ov := overrideOf(e); ov != nil && retried[aws.ToString(ov.AvailabilityZone)] {
			continue // superseded by the retry's outcome
		}
		errs = append(errs, e)
	}
	return nil, fleetError(pool.Name, capacityType, append(errs, errs2...))
}

// chooseOptions picks the capacity type (spot when the options allow it,
// as Karpenter prefers it) and keeps that capacity type's options in zones
// with a subnet, at most MaxInstanceTypes types, cheapest first.
func chooseOptions(all []Option, subnets map[string]Subnet) (string, []Option) {
	capacityType := model.CapacityTypeOnDemand
	for _, o := range all {
		if o.CapacityType == model.CapacityTypeSpot {
			if _, ok := subnets[o.Zone]; ok {
				capacityType = model.CapacityTypeSpot
				break
			}
		}
	}
	type key struct{ typ, zone string }
	seen := map[key]bool{}
	cheapest := map[string]float64{}
	var opts []Option
	for _, o := range all {
		if o.CapacityType != capacityType {
			continue
		}
		if _, ok := subnets[o.Zone]; !ok {
			continue
		}
		k := key{o.InstanceType, o.Zone}
		if seen[k] {
			continue
		}
		seen[k] = true
		if o.Variant == "" {
			o.Variant = VariantStandard
		}
		opts = append(opts, o)
		if p, ok := cheapest[o.InstanceType]; !ok || o.Price < p {
			cheapest[o.InstanceType] = o.Price
		}
	}
	types := make([]string, 0, len(cheapest))
	for t := range cheapest {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool {
		if cheapest[types[i]] != cheapest[types[j]] {
			return cheapest[types[i]] < cheapest[types[j]]
		}
		return types[i] < types[j]
	})
	rank := map[string]int{}
	for i, t := range types {
		if i < MaxInstanceTypes {
			rank[t] = i
		}
	}
	kept := opts[:0]
	for _, o := range opts {
		if _, ok := rank[o.InstanceType]; ok {
			kept = append(kept, o)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		if kept[i].Price != kept[j].Price {
			return kept[i].Price < kept[j].Price
		}
		if rank[kept[i].InstanceType] != rank[kept[j].InstanceType] {
			return rank[kept[i].InstanceType] < rank[kept[j].InstanceType]
		}
		return kept[i].Zone < kept[j].Zone
	})
	return capacityType, kept
}

// templateConfigs resolves AMIs and kubelet max pods for the options and
// returns one launch template configuration per (AMI, max pods), creating
// the templates as needed, each with its options as overrides.
func (l *Launcher) templateConfigs(ctx context.Context, cluster Cluster, req Request, opts []Option, subnets map[string]Subnet, labels map[string]string, taints []corev1.Taint) ([]ec2types.FleetLaunchTemplateConfigRequest, error) {
	pool, nc := req.Pool, req.Class
	fam := family(nc)
	keySet := map[ImageKey]bool{}
	var keys []ImageKey
	for _, o := range opts {
		k := ImageKey{Arch: o.Arch, Variant: o.Variant}
		if !keySet[k] {
			keySet[k] = true
			keys = append(keys, k)
		}
	}
	amis, err := l.ResolveAMIs(ctx, nc, cluster.Version, keys)
	if err != nil {
		return nil, err
	}
	sgs, err := l.SecurityGroups(ctx, nc)
	if err != nil {
		return nil, err
	}
	profile := nc.InstanceProfile
	if profile == "" {
		profile = l.Cluster.InstanceProfile
	}
	md := model.MetadataOptions{HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 2, HTTPTokens: "required"}
	if nc.MetadataOptions != nil {
		md = *nc.MetadataOptions
	}
	kubelet := pool.Kubelet
	if kubelet == nil {
		kubelet = nc.Kubelet
	}
	if _, dropped := KubeletLabels(labels); len(dropped) > 0 {
		l.log().Debug("labels the kubelet sets itself or may not set are left out of the user data", "pool", pool.Name, "labels", dropped)
	}

	type group struct {
		ami     AMI
		maxPods int64
		opts    []Option
	}
	var groups []*group
	index := map[string]*group{}
	var unserved []string
	for _, o := range opts {
		ami, ok := amis[ImageKey{Arch: o.Arch, Variant: o.Variant}]
		if !ok {
			unserved = append(unserved, o.InstanceType)
			continue
		}
		mp := maxPodsFor(req, o, kubelet, nc)
		if fam == FamilyCustom {
			mp = 0 // the user's own bootstrap decides
		}
		gk := ami.ID + "/" + strconv.FormatInt(mp, 10)
		g := index[gk]
		if g == nil {
			if len(groups) == maxTemplateConfigs {
				unserved = append(unserved, o.InstanceType)
				continue
			}
			g = &group{ami: ami, maxPods: mp}
			index[gk] = g
			groups = append(groups, g)
		}
		g.opts = append(g.opts, o)
	}
	if len(unserved) > 0 {
		l.log().Info("instance types left out of the launch: no AMI for their architecture or accelerator, or over CreateFleet's template limit", "pool", pool.Name, "types", dedupe(unserved))
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("node class %q: no AMI serves any instance-type option (%s)", nc.Name, strings.Join(dedupe(unserved), ", "))
	}
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, g := range groups {
		userData, err := UserData(fam, cluster, Node{Labels: labels, Taints: taints, MaxPods: g.maxPods, Kubelet: kubelet, InstanceStorePolicy: nc.InstanceStorePolicy}, nc.UserData)
		if err != nil {
			return nil, fmt.Errorf("node class %q: user data: %w", nc.Name, err)
		}
		name, _, err := l.EnsureTemplate(ctx, TemplateContent{
			ImageID: g.ami.ID, UserData: userData, SecurityGroups: sgs, InstanceProfile: profile,
			Metadata: md, BlockDevices: nc.BlockDeviceMappings, AssociatePublicIP: nc.AssociatePublicIP,
			DetailedMonitoring: nc.DetailedMonitoring, Tags: l.templateTags(nc),
		})
		if err != nil {
			return nil, fmt.Errorf("node class %q: %w", nc.Name, err)
		}
		cfg := ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
		}
		for _, o := range g.opts {
			cfg.Overrides = append(cfg.Overrides, override(o, subnets[o.Zone].ID, g.ami.ID))
		}
		configs = append(configs, cfg)
	}
	return configs, nil
}

func override(o Option, subnetID, imageID string) ec2types.FleetLaunchTemplateOverridesRequest {
	ov := ec2types.FleetLaunchTemplateOverridesRequest{
		InstanceType:     ec2types.InstanceType(o.InstanceType),
		SubnetId:         aws.String(subnetID),
		AvailabilityZone: aws.String(o.Zone),
		Priority:         aws.Float64(o.Price),
	}
	if imageID != "" {
		ov.ImageId = aws.String(imageID)
	}
	return ov
}

// userTemplateConfig launches from a user-managed template by name.
func userTemplateConfig(name string, opts []Option, subnets map[string]Subnet) []ec2types.FleetLaunchTemplateConfigRequest {
	cfg := ec2types.FleetLaunchTemplateConfigRequest{
		LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
	}
	for _, o := range opts {
		cfg.Overrides = append(cfg.Overrides, override(o, subnets[o.Zone].ID, ""))
	}
	return []ec2types.FleetLaunchTemplateConfigRequest{cfg}
}

// maxPodsFor is the pod capacity a node of the option's type gets.
func maxPodsFor(req Request, o Option, k *model.Kubelet, nc *model.NodeClass) int64 {
	if req.MaxPods > 0 {
		return req.MaxPods
	}
	if o.MaxPods > 0 {
		return o.MaxPods
	}
	if t, ok := catalog.Lookup(o.InstanceType); ok {
		return t.MaxPodsFor(k, nc)
	}
	return 0
}

// createFleet sends one CreateFleet. When EC2 says a launch template is
// gone (the reaper deleted it between our listing and now), the cached
// templates are forgotten, rebuilt once and the call repeated.
func (l *Launcher) createFleet(ctx context.Context, req Request, att *fleetAttempt, rebuild func() ([]ec2types.FleetLaunchTemplateConfigRequest, error)) (*ec2.CreateFleetOutput, error) {
	out, err := l.EC2.CreateFleet(ctx, l.fleetInput(req, att))
	if err != nil && isTemplateNotFound(err) && req.Class.LaunchTemplate == "" {
		for _, c := range att.configs {
			l.forgetTemplate(aws.ToString(c.LaunchTemplateSpecification.LaunchTemplateName))
		}
		configs, rerr := rebuild()
		if rerr != nil {
			return nil, rerr
		}
		att.configs = configs
		out, err = l.EC2.CreateFleet(ctx, l.fleetInput(req, att))
	}
	if err != nil {
		if isTemplateNotFound(err) && req.Class.LaunchTemplate != "" {
			return nil, fmt.Errorf("node class %q: spec.launchTemplate %q: %w", req.Class.Name, req.Class.LaunchTemplate, err)
		}
		return nil, fmt.Errorf("create fleet: %w", err)
	}
	return out, nil
}

// fleetInput is the instant, one-instance CreateFleet Karpenter sends:
// lowest-price for on-demand, price-capacity-optimized for spot, tags on
// the instance, its volumes and the fleet.
func (l *Launcher) fleetInput(req Request, att *fleetAttempt) *ec2.CreateFleetInput {
	tags := ec2Tags(l.tags(req.Pool, req.Class))
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: att.configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(att.capacityType),
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: tags},
		},
	}
	if att.token != "" {
		in.ClientToken = aws.String(att.token)
	}
	if req.Class.Context != "" {
		in.Context = aws.String(req.Class.Context)
	}
	if att.capacityType == model.CapacityTypeSpot {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return in
}

// instanceFrom returns the launched instance of a response, if any.
func (l *Launcher) instanceFrom(out *ec2.CreateFleetOutput, req Request, att *fleetAttempt) *Instance {
	for _, fi := range out.Instances {
		if len(fi.InstanceIds) == 0 {
			continue
		}
		ct := att.capacityType
		if fi.Lifecycle != "" {
			ct = string(fi.Lifecycle)
		}
		i := &Instance{
			ID: fi.InstanceIds[0], InstanceType: string(fi.InstanceType), CapacityType: ct,
			Pool: req.Pool.Name, NodeClass: req.Class.Name, State: "pending", Tags: l.tags(req.Pool, req.Class),
		}
		if lt := fi.LaunchTemplateAndOverrides; lt != nil {
			if lt.Overrides != nil {
				i.Zone = aws.ToString(lt.Overrides.AvailabilityZone)
				i.SubnetID = aws.ToString(lt.Overrides.SubnetId)
			}
			if lt.LaunchTemplateSpecification != nil {
				i.LaunchTemplateID = aws.ToString(lt.LaunchTemplateSpecification.LaunchTemplateId)
			}
		}
		if i.SubnetID != "" {
			l.tookAddress(i.SubnetID)
		}
		return i
	}
	return nil
}

// retryInOtherSubnets repeats the launch for the zones whose subnet was
// full, in each zone's next-best subnet. It returns nil when no such zone
// has another subnet.
func (l *Launcher) retryInOtherSubnets(ctx context.Context, req Request, first *fleetAttempt, full []string, nc *model.NodeClass) (*ec2.CreateFleetOutput, map[string]bool, error) {
	fullSet := map[string]bool{}
	for _, id := range full {
		fullSet[id] = true
	}
	all, err := l.allSubnets(ctx, nc)
	if err != nil {
		return nil, nil, err
	}
	zonal := l.zonal(all)
	zones := map[string]bool{}
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, c := range first.configs {
		var ovs []ec2types.FleetLaunchTemplateOverridesRequest
		for _, ov := range c.Overrides {
			if !fullSet[aws.ToString(ov.SubnetId)] {
				continue
			}
			z := aws.ToString(ov.AvailabilityZone)
			alt, ok := zonal[z]
			if !ok || fullSet[alt.ID] {
				continue
			}
			ov.SubnetId = aws.String(alt.ID)
			ovs = append(ovs, ov)
			zones[z] = true
		}
		if len(ovs) > 0 {
			c.Overrides = ovs
			configs = append(configs, c)
		}
	}
	if len(configs) == 0 {
		return nil, nil, nil
	}
	sort.Strings(full)
	att := &fleetAttempt{capacityType: first.capacityType, configs: configs}
	if first.token != "" {
		att.token = Token(append([]string{first.token, "subnets-full"}, full...)...)
	}
	l.log().Info("subnets out of addresses; trying their zones' other subnets", "pool", req.Pool.Name, "full", full)
	out, err := l.EC2.CreateFleet(ctx, l.fleetInput(req, att))
	if err != nil {
		return nil, nil, fmt.Errorf("create fleet (other subnets): %w", err)
	}
	return out, zones, nil
}

func overrideOf(e ec2types.CreateFleetError) *ec2types.FleetLaunchTemplateOverrides {
	if e.LaunchTemplateAndOverrides == nil {
		return nil
	}
	return e.LaunchTemplateAndOverrides.Overrides
}

// fullSubnets are the subnets a response says have no free address.
func fullSubnets(errs []ec2types.CreateFleetError) []string {
	var ids []string
	for _, e := range errs {
		if aws.ToString(e.ErrorCode) != "InsufficientFreeAddressesInSubnet" {
			continue
		}
		if ov := overrideOf(e); ov != nil && aws.ToString(ov.SubnetId) != "" {
			ids = append(ids, aws.ToString(ov.SubnetId))
		}
	}
	return dedupe(ids)
}

// unavailableFrom lists the offerings a fleet that did launch reported out
// of capacity on its way (an instant fleet moves on to the next override):
// they are as unavailable as if the whole launch had failed.
func unavailableFrom(capacityType string, errs []ec2types.CreateFleetError) []catalog.OfferingKey {
	var capacity []ec2types.CreateFleetError
	for _, e := range errs {
		if catalog.IsCapacityError(aws.ToString(e.ErrorCode)) {
			capacity = append(capacity, e)
		}
	}
	if ce, ok := fleetError("", capacityType, capacity).(*CapacityError); ok && len(capacity) > 0 {
		return ce.Offerings
	}
	return nil
}

// fleetError explains a CreateFleet that launched nothing: a
// *CapacityError when every error is about capacity, else a *LaunchError.
func fleetError(pool, capacityType string, errs []ec2types.CreateFleetError) error {
	ce := &CapacityError{Pool: pool}
	codes := map[string]bool{}
	var other []string
	seenOff := map[catalog.OfferingKey]bool{}
	for _, e := range errs {
		code := aws.ToString(e.ErrorCode)
		ov := overrideOf(e)
		where := ""
		if ov != nil {
			where = fmt.Sprintf(" (%s in %s)", ov.InstanceType, aws.ToString(ov.AvailabilityZone))
		}
		if !catalog.IsCapacityError(code) {
			other = append(other, code+": "+aws.ToString(e.ErrorMessage)+where)
			continue
		}
		codes[code] = true
		if ov == nil {
			continue
		}
		ct := capacityType
		if e.Lifecycle != "" {
			ct = string(e.Lifecycle)
		}
		k := catalog.OfferingKey{InstanceType: string(ov.InstanceType), Zone: aws.ToString(ov.AvailabilityZone), CapacityType: ct}
		if !seenOff[k] {
			seenOff[k] = true
			ce.Offerings = append(ce.Offerings, k)
		}
		if code == "InsufficientFreeAddressesInSubnet" && aws.ToString(ov.SubnetId) != "" {
			ce.Subnets = append(ce.Subnets, aws.ToString(ov.SubnetId))
		}
	}
	ce.Codes = sortedCodes(codes)
	ce.Subnets = dedupe(ce.Subnets)
	if len(ce.Codes) > 0 && len(other) == 0 {
		return ce
	}
	if len(other) == 0 {
		return &LaunchError{Pool: pool, Causes: []string{"CreateFleet launched no instance and reported no error"}}
	}
	return &LaunchError{Pool: pool, Causes: dedupe(other)}
}

// effectiveToken is the client token to send for a plan's token. EC2
// remembers a token's outcome, failures included: the same plan sent again
// after a capacity failure (the offerings' unavailability has expired,
// nothing else changed) would get the old failure back. So after a plan's
// launch failed, the next attempt for it carries a token of its own.
// Only responses that launched nothing count as failures: a call that
// errored may have launched (its response lost), and keeps its token so
// a retry finds that instance.
func (l *Launcher) effectiveToken(token string) string {
	if token == "" {
		return ""
	}
	l.mu.Lock()
	n := l.failedTokens[token]
	l.mu.Unlock()
	if n == 0 {
		return token
	}
	return Token(token, "after-failure", strconv.Itoa(n))
}

func (l *Launcher) noteFailure(token string) {
	if token == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failedTokens == nil {
		l.failedTokens = map[string]int{}
	}
	if len(l.failedTokens) > 10000 {
		// A warm Launcher lives for hours at most; this bounds it anyway.
		l.failedTokens = map[string]int{}
	}
	l.failedTokens[token]++
}

func zoneList(m map[string]Subnet) string {
	zs := make([]string, 0, len(m))
	for z := range m {
		zs = append(zs, z)
	}
	sort.Strings(zs)
	return strings.Join(zs, ", ")
}

// tags go on the instance, its volumes and the fleet.
func (l *Launcher) tags(pool *model.Pool, nc *model.NodeClass) map[string]string {
	t := l.templateTags(nc)
	t[TagNodePool] = pool.Name
	t[TagSpecHash] = model.SpecHash(pool, nc)
	t["Name"] = "joist/" + l.Cluster.Name + "/" + pool.Name
	return t
}

// templateTags go on launch templates: the node class's tags and the
// cluster's (which IAM conditions and listings key on).
func (l *Launcher) templateTags(nc *model.NodeClass) map[string]string {
	t := map[string]string{}
	for k, v := range nc.Tags {
		t[k] = v
	}
	t[TagCluster] = l.Cluster.Name
	t[TagNodeClass] = nc.Name
	t["kubernetes.io/cluster/"+l.Cluster.Name] = "owned"
	return t
}
