package catalog

import (
	"maps"
	"slices"
)

// capacityErrorCodes are the EC2 error codes (from CreateFleet's per-override
// errors or a RunInstances failure) that mean "this offering cannot be had
// right now", after which the offering is marked unavailable and the plan is
// redone without it, as Karpenter does. InsufficientFreeAddressesInSubnet is
// about the subnet rather than the type, but retrying the same zone gets the
// same answer, so the zone's offering is avoided too.
var capacityErrorCodes = map[string]bool{
	"InsufficientInstanceCapacity":      true,
	"MaxSpotInstanceCountExceeded":      true,
	"VcpuLimitExceeded":                 true,
	"UnfulfillableCapacity":             true,
	"Unsupported":                       true,
	"InsufficientFreeAddressesInSubnet": true,
	"MaxFleetCountExceeded":             true,
	"SpotMaxPriceTooLow":                true,
	// A capacity reservation with no room left (or none compatible with
	// the override), and one being reclaimed: the reserved offering is
	// out, as in Karpenter's pkg/errors.
	"ReservationCapacityExceeded":                 true,
	"InvalidCapacityReservationState.Unavailable": true,
}

// IsCapacityError tells whether an EC2 error code means the offering
// should be marked unavailable (see Unavailable) rather than treated as a
// failure of the request.
func IsCapacityError(code string) bool { return capacityErrorCodes[code] }

// CapacityErrorCodes lists the codes IsCapacityError accepts, sorted, for
// documentation and for simulators that inject them.
func CapacityErrorCodes() []string { return slices.Sorted(maps.Keys(capacityErrorCodes)) }
