// Package catalog is Joist's knowledge of EC2 instance types: their specs,
// what a node of each type can hold once the kubelet has taken its share,
// the well-known labels a node of the type carries, and where and at what
// price the type can be launched.
//
// The data is embedded (instance-types.json.gz, made by ./gen from the
// shared data file) so every Lambda cold start has a full catalog with no
// network call; the live adapter (package live) refreshes offerings and
// prices from AWS on top of it.
//
// The package is pure: no AWS SDK, no Kubernetes client, no clock it does
// not receive. Sizing follows Karpenter's AWS provider with amiFamily AL2023
// and no blockDeviceMappings, so a plan made here matches what Karpenter
// would have made for the same pods.
package catalog

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/joist-dev/joist/pkg/catalog/internal/record"
)

//go:generate go run ./gen -out instance-types.json.gz

//go:embed instance-types.json.gz
var embedded []byte

// InstanceType is one EC2 instance type. Values returned by All and Lookup
// are shared: treat them as read-only (copy before changing, as the live
// adapter does).
//
// Numeric fields use zero for "unknown" where zero is never a real value
// (bandwidths, ENI counts).
type InstanceType struct {
	Name string `json:"name"`
	// Family is the part of the name before the dot, e.g. m5, c7i-flex.
	Family string `json:"family"`
	// Category is the letters before the generation digit (m, c, inf, u).
	Category string `json:"category,omitempty"`
	// Generation is the digit after the category; 0 when unknown.
	Generation int `json:"generation,omitempty"`
	// Size is the part of the name after the dot, e.g. large, metal-24xl.
	Size string `json:"size"`
	// Arch is amd64 or arm64 (Kubernetes names).
	Arch      string `json:"arch"`
	VCPU      int64  `json:"vcpu"`
	MemoryMiB int64  `json:"memoryMiB"`
	// CPUManufacturer is intel, amd, aws or apple.
	CPUManufacturer string `json:"cpuManufacturer,omitempty"`
	// GPUCount is the number of GPUs; 0 also for fractional-GPU types,
	// which still have a GPUName.
	GPUCount        int64  `json:"gpuCount,omitempty"`
	GPUName         string `json:"gpuName,omitempty"`
	GPUManufacturer string `json:"gpuManufacturer,omitempty"`
	// GPUMemoryMiB is per GPU (Karpenter's label meaning), not the total.
	GPUMemoryMiB int64 `json:"gpuMemoryMiB,omitempty"`
	// Accelerator* describe Neuron devices (manufacturer aws) and other
	// inference accelerators such as qualcomm-ai100.
	AcceleratorName         string `json:"acceleratorName,omitempty"`
	AcceleratorManufacturer string `json:"acceleratorManufacturer,omitempty"`
	AcceleratorCount        int64  `json:"acceleratorCount,omitempty"`
	// NeuronCoreCount is the NeuronCores over all Neuron devices.
	NeuronCoreCount int64 `json:"neuronCoreCount,omitempty"`
	// HabanaGaudiCount is the Habana Gaudi accelerators (dl1).
	HabanaGaudiCount int64 `json:"habanaGaudiCount,omitempty"`
	// LocalNVMeGB is the NVMe instance store in AWS's decimal GB; 0 when
	// none or not NVMe.
	LocalNVMeGB int64 `json:"localNvmeGB,omitempty"`
	// NetworkBandwidthMbps is the baseline bandwidth; 0 when unknown.
	NetworkBandwidthMbps int64 `json:"networkBandwidthMbps,omitempty"`
	// EBSBandwidthMbps is the maximum EBS bandwidth; 0 when unknown.
	EBSBandwidthMbps int64 `json:"ebsBandwidthMbps,omitempty"`
	// MaxENIs is the interfaces over all network cards; 0 when unknown.
	MaxENIs int64 `json:"maxENIs,omitempty"`
	// MaxENIsDefaultCard is the interfaces of the default network card,
	// the number pod density uses; 0 when unknown.
	MaxENIsDefaultCard int64 `json:"maxENIsDefaultCard,omitempty"`
	// IPv4PerENI is the IPv4 addresses per interface; 0 when unknown.
	IPv4PerENI int64 `json:"ipv4PerENI,omitempty"`
	// BranchENIs is the branch interfaces for security groups for pods;
	// 0 when the type is not trunking-compatible.
	BranchENIs int64 `json:"branchENIs,omitempty"`
	// PublishedMaxPods is Karpenter's published default pod density for
	// the type (its docs page, AL2023); 0 when unknown. MaxPods computes
	// the same number from the ENI fields; this one is kept to check it.
	PublishedMaxPods int64 `json:"publishedMaxPods,omitempty"`
	// EKSCappedMaxPods is the old EKS calculator's figure with the 110/250
	// cap, for users coming from AL2 managed node groups.
	EKSCappedMaxPods int64 `json:"eksCappedMaxPods,omitempty"`
	// EFACount is the EFA interfaces the type supports.
	EFACount int64 `json:"efaCount,omitempty"`
	// Hypervisor is nitro, xen, or "" for bare metal. It is meaningful
	// only when HypervisorKnown.
	Hypervisor      string `json:"hypervisor"`
	HypervisorKnown bool   `json:"hypervisorKnown"`
	BareMetal       bool   `json:"bareMetal"`
	Burstable       bool   `json:"burstable"`
	// SpotSupported is true when a source shows spot use of the type.
	// False means unknown: no source states that spot is unsupported.
	SpotSupported     bool `json:"spotSupported"`
	CurrentGeneration bool `json:"currentGeneration"`
	// OnDemandPrice maps a region to USD per hour (Linux, shared tenancy).
	OnDemandPrice map[string]float64 `json:"onDemandPrice,omitempty"`
	// SpotPrice maps a region to the lowest zone's USD per hour in the
	// snapshot.
	SpotPrice map[string]float64 `json:"spotPrice,omitempty"`
	// StaleRegionalPrices is true when AWS changed the type's price after
	// the regional snapshot: prices outside us-east-1 and GovCloud are old.
	StaleRegionalPrices bool `json:"staleRegionalPrices,omitempty"`
}

// Info describes the embedded data: how old its prices are.
type Info struct {
	// Generated is the date the data was built.
	Generated string `json:"generated"`
	// OnDemandPriceAsOf maps a region, or "other regions", to the date of
	// its on-demand prices.
	OnDemandPriceAsOf map[string]string `json:"onDemandPriceAsOf"`
	// SpotPriceAsOf is the date of the spot price snapshot.
	SpotPriceAsOf string `json:"spotPriceAsOf"`
	// Refreshed maps a region to the date its prices (on-demand and spot)
	// were taken from AWS by `gen -refresh-regions`; empty for data made
	// offline from the shared file.
	Refreshed map[string]string `json:"refreshed,omitempty"`
	// Types is the number of instance types.
	Types int `json:"types"`
}

type loaded struct {
	all    []*InstanceType
	byName map[string]*InstanceType
	info   Info
}

var (
	loadOnce sync.Once
	data     *loaded
)

// load parses the embedded file once per process. A bad embedded file is a
// build defect that tests catch, so it panics rather than making every
// caller handle an error that cannot happen in a tested build.
func load() *loaded {
	loadOnce.Do(func() {
		l, err := parse(embedded)
		if err != nil {
			panic(fmt.Sprintf("catalog: embedded instance-type data is unreadable: %v", err))
		}
		data = l
	})
	return data
}

func parse(b []byte) (*loaded, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("open gzip: %w", err)
	}
	dec := json.NewDecoder(zr)
	dec.DisallowUnknownFields()
	var f record.File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("decode catalog: %w", err)
	}
	stale := map[string]bool{}
	for _, n := range f.StaleRegionalPrices {
		stale[n] = true
	}
	l := &loaded{
		all:    make([]*InstanceType, 0, len(f.Types)),
		byName: make(map[string]*InstanceType, len(f.Types)),
		info: Info{
			Generated:         f.Generated,
			OnDemandPriceAsOf: f.OnDemandPriceAsOf,
			SpotPriceAsOf:     f.SpotPriceAsOf,
			Refreshed:         f.Refreshed,
			Types:             len(f.Types),
		},
	}
	for i := range f.Types {
		t := fromRecord(&f.Types[i])
		t.StaleRegionalPrices = stale[t.Name]
		if _, dup := l.byName[t.Name]; dup {
			return nil, fmt.Errorf("duplicate instance type %s", t.Name)
		}
		l.all = append(l.all, t)
		l.byName[t.Name] = t
	}
	sort.Slice(l.all, func(i, j int) bool { return l.all[i].Name < l.all[j].Name })
	return l, nil
}

func fromRecord(r *record.Type) *InstanceType {
	t := &InstanceType{
		Name:                    r.Name,
		Family:                  r.Family,
		Category:                r.Category,
		Generation:              r.Generation,
		Size:                    r.Size,
		Arch:                    r.Arch,
		VCPU:                    r.VCPU,
		MemoryMiB:               r.MemoryMiB,
		CPUManufacturer:         r.CPUManufacturer,
		GPUCount:                r.GPUCount,
		GPUName:                 r.GPUName,
		GPUManufacturer:         r.GPUManufacturer,
		GPUMemoryMiB:            r.GPUMemoryMiB,
		AcceleratorName:         r.AcceleratorName,
		AcceleratorManufacturer: r.AcceleratorManufacturer,
		AcceleratorCount:        r.AcceleratorCount,
		NeuronCoreCount:         r.NeuronCoreCount,
		HabanaGaudiCount:        r.HabanaGaudiCount,
		LocalNVMeGB:             r.LocalNVMeGB,
		NetworkBandwidthMbps:    r.NetworkBandwidthMbps,
		EBSBandwidthMbps:        r.EBSBandwidthMbps,
		MaxENIs:                 r.MaxENIs,
		MaxENIsDefaultCard:      r.MaxENIsDefaultCard,
		IPv4PerENI:              r.IPv4PerENI,
		BranchENIs:              r.BranchENIs,
		PublishedMaxPods:        r.PublishedMaxPods,
		EKSCappedMaxPods:        r.EKSCappedMaxPods,
		EFACount:                r.EFACount,
		BareMetal:               r.BareMetal,
		Burstable:               r.Burstable,
		SpotSupported:           r.SpotSupported,
		CurrentGeneration:       r.CurrentGeneration,
		OnDemandPrice:           r.OnDemandPrice,
		SpotPrice:               r.SpotPrice,
	}
	if r.Hypervisor != nil {
		t.Hypervisor, t.HypervisorKnown = *r.Hypervisor, true
	}
	return t
}

// All returns every embedded instance type, sorted by name. The slice and
// the types are shared: do not change them.
func All() []*InstanceType { return load().all }

// Lookup finds an embedded instance type by name.
func Lookup(name string) (*InstanceType, bool) {
	t, ok := load().byName[name]
	return t, ok
}

// DataInfo tells how old the embedded data and its prices are.
func DataInfo() Info { return load().info }

// Clone returns a deep copy that the caller may change (the live adapter
// overlays fresh prices and specs on copies of the embedded types).
func (t *InstanceType) Clone() *InstanceType {
	c := *t
	c.OnDemandPrice = cloneMap(t.OnDemandPrice)
	c.SpotPrice = cloneMap(t.SpotPrice)
	return &c
}

func cloneMap(m map[string]float64) map[string]float64 {
	if m == nil {
		return nil
	}
	c := make(map[string]float64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
