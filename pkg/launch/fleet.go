package launch

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// fleetAttempt is what one CreateFleet request sends: the capacity type,
// the launch template configurations with their overrides, the token.
type fleetAttempt struct {
	capacityType string
	// reservationType is the kind of reservation a reserved launch goes
	// into (it sets the fleet's target capacity type); reserved maps each
	// reserved option's type and zone to it, so the launched instance
	// knows its reservation.
	reservationType string
	reserved        map[typeZone]Option
	// prioritized launches by the overrides' priorities (an option's
	// price is a NodeOverlay's).
	prioritized bool
	configs     []ec2types.FleetLaunchTemplateConfigRequest
	token       string
}

type typeZone struct{ typ, zone string }

// Launch launches one node for the request. A capacity failure of every
// option is a *CapacityError; any other failure is an error naming the
// pool and the cause.
func (l *Launcher) Launch(ctx context.Context, req Request) (*Instance, error) {
	pool, nc := req.Pool, req.Class
	if pool == nil || nc == nil {
		return nil, fmt.Errorf("launch: request without pool or node class")
	}
	fail := func(err error) (*Instance, error) { return nil, fmt.Errorf("pool %q: %w", pool.Name, err) }
	if err := checkReserved(req.Options); err != nil {
		return fail(err)
	}
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
	att := &fleetAttempt{capacityType: capacityType}
	for _, o := range opts {
		att.prioritized = att.prioritized || o.PriceOverlaid
	}
	if capacityType == model.CapacityTypeReserved {
		if nc.LaunchTemplate != "" {
			return fail(fmt.Errorf("node class %q: a reserved launch needs Joist's own launch template, not spec.launchTemplate %q", nc.Name, nc.LaunchTemplate))
		}
		att.reservationType, att.reserved = opts[0].ReservationType, map[typeZone]Option{}
		for _, o := range opts {
			att.reserved[typeZone{o.InstanceType, o.Zone}] = o
		}
	}

	labels := map[string]string{}
	for k, v := range req.Labels {
		labels[k] = v
	}
	// The capacity type the node registers with is the launch's, whatever
	// the caller's labels say; templateConfigs adds (or drops) the
	// reservation's labels per template.
	labels[model.LabelCapacityType] = capacityType
	labels[pool.Label()] = pool.Name
	// A node of a class with a placement group registers with the group's
	// id and, in a partition group, the partition it launches into.
	pg, err := l.PlacementGroup(ctx, nc)
	if err != nil {
		return fail(err)
	}
	if pg != nil {
		labels[model.LabelPlacementGroupID] = pg.ID
		if n := pg.partition(labels); n > 0 {
			labels[model.LabelPlacementGroupPartition] = strconv.Itoa(int(n))
		}
	}
	taints := append(append([]corev1.Taint{}, pool.Taints...), pool.StartupTaints...)

	var configs []ec2types.FleetLaunchTemplateConfigRequest
	if nc.LaunchTemplate != "" {
		// v1alpha1's escape hatch: the user's own template, used as is.
		configs = userTemplateConfig(nc.LaunchTemplate, opts, subnets)
	} else {
		configs, err = l.templateConfigs(ctx, cluster, req, opts, subnets, labels, taints, pg)
		if err != nil {
			return fail(err)
		}
	}
	att.configs, att.token = configs, l.effectiveToken(req.Token)
	out, err := l.createFleet(ctx, req, att, func() ([]ec2types.FleetLaunchTemplateConfigRequest, error) {
		if nc.LaunchTemplate != "" {
			return configs, nil
		}
		return l.templateConfigs(ctx, cluster, req, opts, subnets, labels, taints, pg)
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
// the instance, its volumes and the fleet. A reserved launch targets
// on-demand capacity for an ODCR and capacity-block capacity (with no
// on-demand options) for a capacity block, as EC2 Fleet requires and
// Karpenter sends; the templates name the reservations.
func (l *Launcher) fleetInput(req Request, att *fleetAttempt) *ec2.CreateFleetInput {
	tags := ec2Tags(l.tags(req.Pool, req.Class))
	target := ec2types.DefaultTargetCapacityType(att.capacityType)
	if att.capacityType == model.CapacityTypeReserved {
		target = ec2types.DefaultTargetCapacityTypeOnDemand
		if att.reservationType == ReservationTypeCapacityBlock {
			target = ec2types.DefaultTargetCapacityTypeCapacityBlock
		}
	}
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: att.configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: target,
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
	switch {
	case att.capacityType == model.CapacityTypeSpot && att.prioritized:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized}
	case att.capacityType == model.CapacityTypeSpot:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	case target == ec2types.DefaultTargetCapacityTypeCapacityBlock:
	case att.prioritized:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyPrioritized}
	default:
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
		if fi.Lifecycle != "" && ct != model.CapacityTypeReserved {
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
		if ct == model.CapacityTypeReserved {
			i.ReservationID = att.reserved[typeZone{i.InstanceType, i.Zone}].ReservationID
		}
		if i.SubnetID != "" {
			l.tookAddress(i.SubnetID)
		}
		return i
	}
	return nil
}
