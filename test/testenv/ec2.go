package testenv

import (
	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/test/ec2sim"
)

// CatalogInstanceTypes gives the EC2 simulator the embedded catalog's
// instance types with their prices in region, so the simulator and Joist
// never disagree about what a type is.
func CatalogInstanceTypes(region string) []ec2sim.InstanceTypeInfo {
	var out []ec2sim.InstanceTypeInfo
	for _, t := range catalog.All() {
		od, hasOD := t.OnDemandPrice[region]
		spot, hasSpot := t.SpotPrice[region]
		if !hasOD && !hasSpot {
			continue
		}
		out = append(out, ec2sim.InstanceTypeInfo{
			Name: t.Name, Arch: t.Arch, VCPU: t.VCPU, MemoryMiB: t.MemoryMiB,
			GPUCount: t.GPUCount, GPUName: t.GPUName, GPUManufacturer: t.GPUManufacturer, GPUMemoryMiB: t.GPUMemoryMiB,
			MaxENIs: t.MaxENIs, IPv4PerENI: t.IPv4PerENI, Hypervisor: t.Hypervisor, BareMetal: t.BareMetal,
			OnDemandPrice: od, SpotPrice: spot, SpotSupported: hasSpot,
		})
	}
	return out
}
