package launch

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
)

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
		if e.Lifecycle != "" && ct != model.CapacityTypeReserved {
			// A reserved launch's errors say on-demand (or
			// capacity-block); the offering that failed is the reserved
			// one.
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

func overrideOf(e ec2types.CreateFleetError) *ec2types.FleetLaunchTemplateOverrides {
	if e.LaunchTemplateAndOverrides == nil {
		return nil
	}
	return e.LaunchTemplateAndOverrides.Overrides
}
