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
	att := &fleetAttempt{capacityType: first.capacityType, reservationType: first.reservationType, reserved: first.reserved, configs: configs}
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
