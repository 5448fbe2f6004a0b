package launch

import (
	"fmt"
	"sort"
	"strings"

	"github.com/joist-dev/joist/pkg/model"
)

// checkReserved refuses options that mix reserved capacity with on-demand
// or spot (the provisioner plans a reserved node on its own: one fleet
// has one target capacity type), and reserved options that do not say
// which reservation they launch into.
func checkReserved(all []Option) error {
	reserved := 0
	for _, o := range all {
		if o.CapacityType != model.CapacityTypeReserved {
			continue
		}
		reserved++
		if o.ReservationID == "" {
			return fmt.Errorf("reserved option %s in %s names no capacity reservation", o.InstanceType, o.Zone)
		}
		if o.ReservationType != ReservationTypeDefault && o.ReservationType != ReservationTypeCapacityBlock {
			return fmt.Errorf("reserved option %s in %s: reservation %s has type %q, want %q or %q", o.InstanceType, o.Zone, o.ReservationID, o.ReservationType, ReservationTypeDefault, ReservationTypeCapacityBlock)
		}
	}
	if reserved > 0 && reserved < len(all) {
		return fmt.Errorf("the options mix reserved capacity with on-demand or spot (%d of %d reserved); a reserved node is launched on its own", reserved, len(all))
	}
	return nil
}

// Reservation types (Option.ReservationType, Reservation.Type), as EC2
// spells them.
const (
	ReservationTypeDefault       = "default"
	ReservationTypeCapacityBlock = "capacity-block"
)

// chooseOptions picks the capacity type (reserved when the options are,
// else spot when the options allow it, as Karpenter prefers it) and keeps
// that capacity type's options in zones with a subnet, at most
// MaxInstanceTypes types, cheapest first. Reserved options keep one
// reservation per type and zone (the first the caller gave), so the
// launched instance tells which reservation it is in, and one kind of
// reservation: capacity blocks and ODCRs take different fleets, so the
// kind of the cheapest option wins (an ODCR on a tie, as Karpenter
// prefers), and of capacity blocks only the cheapest one is tried, as
// Karpenter does.
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
	reservationType := ""
	if best := cheapestReserved(all, subnets); best != nil {
		capacityType, reservationType = model.CapacityTypeReserved, best.ReservationType
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
		if reservationType != "" && o.ReservationType != reservationType {
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
	if reservationType == ReservationTypeCapacityBlock && len(kept) > 1 {
		kept = kept[:1]
	}
	return capacityType, kept
}

// cheapestReserved is the cheapest reserved option in a zone with a
// subnet; on a price tie an ODCR before a capacity block, then the
// caller's order.
func cheapestReserved(all []Option, subnets map[string]Subnet) *Option {
	var best *Option
	for i, o := range all {
		if o.CapacityType != model.CapacityTypeReserved {
			continue
		}
		if _, ok := subnets[o.Zone]; !ok {
			continue
		}
		if best == nil || o.Price < best.Price || (o.Price == best.Price && best.ReservationType == ReservationTypeCapacityBlock && o.ReservationType == ReservationTypeDefault) {
			best = &all[i]
		}
	}
	return best
}

func zoneList(m map[string]Subnet) string {
	zs := make([]string, 0, len(m))
	for z := range m {
		zs = append(zs, z)
	}
	sort.Strings(zs)
	return strings.Join(zs, ", ")
}
