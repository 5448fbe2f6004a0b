package launch

import (
	"sort"
	"strings"

	"github.com/joist-dev/joist/pkg/model"
)

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

func zoneList(m map[string]Subnet) string {
	zs := make([]string, 0, len(m))
	for z := range m {
		zs = append(zs, z)
	}
	sort.Strings(zs)
	return strings.Join(zs, ", ")
}
