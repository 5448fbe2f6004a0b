package ec2sim

import (
	"sort"
	"strconv"
	"strings"
)

// InstanceTypeInfo is everything the simulator knows about an instance
// type. It comes from outside (the catalog, through an adapter the lead
// owns), so the simulator never disagrees with the rest of Joist about what
// a type is. The JSON names follow the shared catalog file where the
// meaning is the same.
type InstanceTypeInfo struct {
	Name string `json:"name"`
	// Arch is EC2's architecture name, x86_64 or arm64; Kubernetes' amd64
	// is accepted and stored as x86_64.
	Arch      string `json:"arch"`
	VCPU      int64  `json:"vcpu"`
	MemoryMiB int64  `json:"memoryMiB"`
	GPUCount  int64  `json:"gpuCount"`
	// GPUName and GPUManufacturer are reported as given (EC2 spells them
	// like "A10G" and "NVIDIA"; the catalog lower-cases them).
	GPUName         string `json:"gpuName"`
	GPUManufacturer string `json:"gpuManufacturer"`
	// GPUMemoryMiB is per GPU, as in EC2's GpuInfo.Gpus[].MemoryInfo.
	GPUMemoryMiB int64 `json:"gpuMemoryMiB"`
	MaxENIs      int64 `json:"maxENIs"`
	IPv4PerENI   int64 `json:"ipv4PerENI"`
	// Hypervisor is nitro or xen; empty for bare metal.
	Hypervisor string `json:"hypervisor"`
	BareMetal  bool   `json:"bareMetal"`
	// OnDemandPrice and SpotPrice are USD per hour; 0 means unknown, and an
	// override with an unknown price sorts after every priced one.
	OnDemandPrice float64 `json:"onDemandPrice"`
	SpotPrice     float64 `json:"spotPrice"`
	SpotSupported bool    `json:"spotSupported"`
	// Zones limits the zones the type is offered in; empty means every
	// simulated zone. Launching it elsewhere fails with Unsupported.
	Zones []string `json:"zones,omitempty"`
}

func normalizeArch(a string) string {
	switch a {
	case "amd64", "x86-64", "":
		return "x86_64"
	case "aarch64":
		return "arm64"
	}
	return a
}

// offeredZones lists the simulated zones the type is offered in.
func (s *Sim) offeredZones(it InstanceTypeInfo) []string {
	if len(it.Zones) == 0 {
		return append([]string(nil), s.opts.Zones...)
	}
	var out []string
	for _, z := range s.opts.Zones {
		for _, want := range it.Zones {
			if z == want {
				out = append(out, z)
			}
		}
	}
	return out
}

func (s *Sim) offeredIn(it InstanceTypeInfo, zone string) bool {
	for _, z := range s.offeredZones(it) {
		if z == zone {
			return true
		}
	}
	return false
}

// ---- DescribeInstanceTypes ----

type describeInstanceTypesRequest struct {
	names   []string
	filters []filter
	page    pageRequest
}

func parseDescribeInstanceTypes(p *params) (describeInstanceTypesRequest, error) {
	var r describeInstanceTypesRequest
	var err error
	r.names = p.strList("InstanceType")
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	// EC2 pages DescribeInstanceTypes at 100 even when MaxResults is not
	// sent, so a caller that ignores NextToken sees a truncated catalog.
	r.page, err = readPage(p, "DescribeInstanceTypes", pageLimits{min: 5, max: 100, def: 100})
	return r, err
}

func usageClasses(it InstanceTypeInfo) []string {
	if it.SpotSupported {
		return []string{OnDemand, Spot}
	}
	return []string{OnDemand}
}

func burstable(name string) bool {
	return strings.HasPrefix(name, "t") && !strings.HasPrefix(name, "trn")
}

var instanceTypeFilters = filterSpec[InstanceTypeInfo]{fields: map[string]func(InstanceTypeInfo) []string{
	"instance-type":                           func(it InstanceTypeInfo) []string { return one(it.Name) },
	"processor-info.supported-architecture":   func(it InstanceTypeInfo) []string { return one(it.Arch) },
	"supported-virtualization-type":           func(InstanceTypeInfo) []string { return one("hvm") },
	"supported-root-device-type":              func(InstanceTypeInfo) []string { return one("ebs") },
	"current-generation":                      func(InstanceTypeInfo) []string { return boolStr(true) },
	"free-tier-eligible":                      func(InstanceTypeInfo) []string { return boolStr(false) },
	"bare-metal":                              func(it InstanceTypeInfo) []string { return boolStr(it.BareMetal) },
	"hypervisor":                              func(it InstanceTypeInfo) []string { return one(it.Hypervisor) },
	"vcpu-info.default-vcpus":                 func(it InstanceTypeInfo) []string { return one(strconv.FormatInt(it.VCPU, 10)) },
	"memory-info.size-in-mib":                 func(it InstanceTypeInfo) []string { return one(strconv.FormatInt(it.MemoryMiB, 10)) },
	"supported-usage-class":                   usageClasses,
	"burstable-performance-supported":         func(it InstanceTypeInfo) []string { return boolStr(burstable(it.Name)) },
	"placement-group-info.supported-strategy": func(it InstanceTypeInfo) []string { return placementStrategies(it.Name) },
}}

type memoryInfoXML struct {
	SizeInMiB int64 `xml:"sizeInMiB"`
}

type gpuXML struct {
	Name         string        `xml:"name"`
	Manufacturer string        `xml:"manufacturer"`
	Count        int64         `xml:"count"`
	MemoryInfo   memoryInfoXML `xml:"memoryInfo"`
}

type networkCardXML struct {
	NetworkCardIndex         int    `xml:"networkCardIndex"`
	NetworkPerformance       string `xml:"networkPerformance"`
	MaximumNetworkInterfaces int64  `xml:"maximumNetworkInterfaces"`
}

type instanceTypeXML struct {
	InstanceType                 string           `xml:"instanceType"`
	CurrentGeneration            bool             `xml:"currentGeneration"`
	FreeTierEligible             bool             `xml:"freeTierEligible"`
	SupportedUsageClasses        itemList[string] `xml:"supportedUsageClasses"`
	SupportedRootDeviceTypes     itemList[string] `xml:"supportedRootDeviceTypes"`
	SupportedVirtualizationTypes itemList[string] `xml:"supportedVirtualizationTypes"`
	BareMetal                    bool             `xml:"bareMetal"`
	Hypervisor                   string           `xml:"hypervisor,omitempty"`
	ProcessorInfo                struct {
		SupportedArchitectures itemList[string] `xml:"supportedArchitectures"`
	} `xml:"processorInfo"`
	VCPUInfo struct {
		DefaultVCpus          int64 `xml:"defaultVCpus"`
		DefaultCores          int64 `xml:"defaultCores"`
		DefaultThreadsPerCore int64 `xml:"defaultThreadsPerCore"`
	} `xml:"vCpuInfo"`
	MemoryInfo               memoryInfoXML `xml:"memoryInfo"`
	InstanceStorageSupported bool          `xml:"instanceStorageSupported"`
	EbsInfo                  struct {
		EbsOptimizedSupport string `xml:"ebsOptimizedSupport"`
		EncryptionSupport   string `xml:"encryptionSupport"`
		NvmeSupport         string `xml:"nvmeSupport"`
	} `xml:"ebsInfo"`
	NetworkInfo struct {
		NetworkPerformance           string                   `xml:"networkPerformance"`
		MaximumNetworkInterfaces     int64                    `xml:"maximumNetworkInterfaces"`
		MaximumNetworkCards          int                      `xml:"maximumNetworkCards"`
		DefaultNetworkCardIndex      int                      `xml:"defaultNetworkCardIndex"`
		NetworkCards                 itemList[networkCardXML] `xml:"networkCards"`
		Ipv4AddressesPerInterface    int64                    `xml:"ipv4AddressesPerInterface"`
		Ipv6AddressesPerInterface    int64                    `xml:"ipv6AddressesPerInterface"`
		Ipv6Supported                bool                     `xml:"ipv6Supported"`
		EnaSupport                   string                   `xml:"enaSupport"`
		EfaSupported                 bool                     `xml:"efaSupported"`
		EncryptionInTransitSupported bool                     `xml:"encryptionInTransitSupported"`
	} `xml:"networkInfo"`
	GpuInfo *struct {
		Gpus                itemList[gpuXML] `xml:"gpus"`
		TotalGpuMemoryInMiB int64            `xml:"totalGpuMemoryInMiB"`
	} `xml:"gpuInfo,omitempty"`
	PlacementGroupInfo struct {
		SupportedStrategies itemList[string] `xml:"supportedStrategies"`
	} `xml:"placementGroupInfo"`
	HibernationSupported          bool             `xml:"hibernationSupported"`
	BurstablePerformanceSupported bool             `xml:"burstablePerformanceSupported"`
	DedicatedHostsSupported       bool             `xml:"dedicatedHostsSupported"`
	AutoRecoverySupported         bool             `xml:"autoRecoverySupported"`
	SupportedBootModes            itemList[string] `xml:"supportedBootModes"`
}

func instanceTypeToXML(it InstanceTypeInfo) instanceTypeXML {
	x := instanceTypeXML{
		InstanceType:                  it.Name,
		CurrentGeneration:             true,
		SupportedUsageClasses:         items(usageClasses(it)),
		SupportedRootDeviceTypes:      items([]string{"ebs"}),
		SupportedVirtualizationTypes:  items([]string{"hvm"}),
		BareMetal:                     it.BareMetal,
		Hypervisor:                    it.Hypervisor,
		MemoryInfo:                    memoryInfoXML{SizeInMiB: it.MemoryMiB},
		BurstablePerformanceSupported: burstable(it.Name),
		AutoRecoverySupported:         !it.BareMetal,
		SupportedBootModes:            items([]string{"legacy-bios", "uefi"}),
	}
	if it.Arch == "arm64" {
		x.SupportedBootModes = items([]string{"uefi"})
	}
	x.ProcessorInfo.SupportedArchitectures = items([]string{it.Arch})
	x.VCPUInfo.DefaultVCpus = it.VCPU
	x.VCPUInfo.DefaultThreadsPerCore = 2
	if it.Arch == "arm64" || it.VCPU < 2 {
		x.VCPUInfo.DefaultThreadsPerCore = 1
	}
	x.VCPUInfo.DefaultCores = max(1, it.VCPU/x.VCPUInfo.DefaultThreadsPerCore)
	x.EbsInfo.EbsOptimizedSupport = "default"
	x.EbsInfo.EncryptionSupport = "supported"
	x.EbsInfo.NvmeSupport = "required"
	perf := "Up to 5 Gigabit"
	n := &x.NetworkInfo
	n.NetworkPerformance = perf
	n.MaximumNetworkInterfaces = it.MaxENIs
	n.MaximumNetworkCards = 1
	n.NetworkCards = items([]networkCardXML{{NetworkCardIndex: 0, NetworkPerformance: perf, MaximumNetworkInterfaces: it.MaxENIs}})
	n.Ipv4AddressesPerInterface = it.IPv4PerENI
	n.Ipv6AddressesPerInterface = it.IPv4PerENI
	n.Ipv6Supported = true
	n.EnaSupport = "required"
	if it.GPUCount > 0 {
		x.GpuInfo = &struct {
			Gpus                itemList[gpuXML] `xml:"gpus"`
			TotalGpuMemoryInMiB int64            `xml:"totalGpuMemoryInMiB"`
		}{
			Gpus: items([]gpuXML{{Name: it.GPUName, Manufacturer: it.GPUManufacturer, Count: it.GPUCount,
				MemoryInfo: memoryInfoXML{SizeInMiB: it.GPUMemoryMiB}}}),
			TotalGpuMemoryInMiB: it.GPUCount * it.GPUMemoryMiB,
		}
	}
	x.PlacementGroupInfo.SupportedStrategies = items(placementStrategies(it.Name))
	return x
}

type describeInstanceTypesResponse struct {
	responseMeta
	InstanceTypes itemList[instanceTypeXML] `xml:"instanceTypeSet"`
	NextToken     string                    `xml:"nextToken,omitempty"`
}

func (s *Sim) describeInstanceTypes(r describeInstanceTypesRequest) (response, error) {
	match, err := instanceTypeFilters.compile(r.filters)
	if err != nil {
		return nil, err
	}
	names := s.typeOrder
	if len(r.names) > 0 {
		var missing []string
		for _, n := range r.names {
			if _, ok := s.types[n]; !ok {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return nil, clientErr("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", strings.Join(missing, ", "))
		}
		names = append([]string(nil), r.names...)
		sort.Strings(names)
	}
	var out []instanceTypeXML
	for _, n := range names {
		if it := s.types[n]; match(it) {
			out = append(out, instanceTypeToXML(it))
		}
	}
	page, next := paginate(out, r.page)
	return &describeInstanceTypesResponse{InstanceTypes: items(page), NextToken: next}, nil
}

// ---- DescribeInstanceTypeOfferings ----

type describeOfferingsRequest struct {
	locationType string
	filters      []filter
	page         pageRequest
}

func parseDescribeInstanceTypeOfferings(p *params) (describeOfferingsRequest, error) {
	r := describeOfferingsRequest{locationType: "region"}
	var err error
	if lt, ok := p.get("LocationType"); ok {
		switch lt {
		case "region", "availability-zone", "availability-zone-id":
			r.locationType = lt
		default:
			return r, invalidParam("Value (%s) for parameter LocationType is invalid.", lt)
		}
	}
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	r.page, err = readPage(p, "DescribeInstanceTypeOfferings", pageLimits{min: 5, max: 1000, def: 1000})
	return r, err
}

type offeringXML struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

type describeOfferingsResponse struct {
	responseMeta
	Offerings itemList[offeringXML] `xml:"instanceTypeOfferingSet"`
	NextToken string                `xml:"nextToken,omitempty"`
}

func (s *Sim) describeInstanceTypeOfferings(r describeOfferingsRequest) (response, error) {
	spec := filterSpec[offeringXML]{fields: map[string]func(offeringXML) []string{
		"location":      func(o offeringXML) []string { return one(o.Location) },
		"instance-type": func(o offeringXML) []string { return one(o.InstanceType) },
	}}
	match, err := spec.compile(r.filters)
	if err != nil {
		return nil, err
	}
	var out []offeringXML
	add := func(o offeringXML) {
		if match(o) {
			out = append(out, o)
		}
	}
	for _, name := range s.typeOrder {
		it := s.types[name]
		switch r.locationType {
		case "region":
			add(offeringXML{InstanceType: name, LocationType: "region", Location: s.opts.Region})
		case "availability-zone":
			for _, z := range s.offeredZones(it) {
				add(offeringXML{InstanceType: name, LocationType: r.locationType, Location: z})
			}
		case "availability-zone-id":
			for _, z := range s.offeredZones(it) {
				zz, _ := s.zoneByName(z)
				add(offeringXML{InstanceType: name, LocationType: r.locationType, Location: zz.id})
			}
		}
	}
	page, next := paginate(out, r.page)
	return &describeOfferingsResponse{Offerings: items(page), NextToken: next}, nil
}
