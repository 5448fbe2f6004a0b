package catalog

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/model"
)

// Extended resources a node of an instance type can advertise, as
// Karpenter's AWS provider names them.
const (
	ResourceNVIDIAGPU     corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU        corev1.ResourceName = "amd.com/gpu"
	ResourceAWSNeuron     corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceAWSNeuronCore corev1.ResourceName = "aws.amazon.com/neuroncore"
	ResourceHabanaGaudi   corev1.ResourceName = "habana.ai/gaudi"
	ResourceEFA           corev1.ResourceName = "vpc.amazonaws.com/efa"
	ResourceAWSPodENI     corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
	// ResourcePrivateIPv4Address is what Windows pods consume (the VPC
	// resource controller hands out secondary IPs on Windows nodes).
	ResourcePrivateIPv4Address corev1.ResourceName = "vpc.amazonaws.com/PrivateIPv4Address"

	EvictionMemoryAvailable = "memory.available"
	EvictionNodeFSAvailable = "nodefs.available"
)

const (
	mebi = int64(1) << 20
	gibi = int64(1) << 30

	// VMMemoryOverheadPercent is the share of memory the hypervisor and
	// firmware keep, as Karpenter's VM_MEMORY_OVERHEAD_PERCENT default:
	// EC2 reports more memory than the guest kernel sees.
	VMMemoryOverheadPercent = 0.075

	// gravitonReservedMiB is the CMA memory arm64 kernels reserve and
	// Kubernetes cannot use (Karpenter subtracts it before the overhead).
	gravitonReservedMiB = 64

	// DefaultEphemeralStorage is the root volume Karpenter assumes for
	// AL2/AL2023 when a node class has no blockDeviceMappings: 20Gi gp3.
	DefaultEphemeralStorage = 20 * gibi
)

// MaxPods is the pod capacity of a node of this type: kubelet maxPods when
// set, otherwise the VPC CNI's ENI-limited density (interfaces on the
// default network card × (IPv4 per interface − 1) + 2, the +2 for the
// host-network aws-node and kube-proxy pods), capped by podsPerCore × vCPU
// when podsPerCore is set. A type without ENI data has no pod capacity
// unless maxPods is set, so the simulator never plans onto a guess.
//
// It assumes AL2023 and no node class settings; MaxPodsFor takes the node
// class into account.
func (t *InstanceType) MaxPods(k *model.Kubelet) int64 { return t.MaxPodsFor(k, nil) }

// MaxPodsFor is MaxPods for a node of the given node class (nil means
// AL2023 with defaults): Windows has a fixed 110, Bottlerocket ignores
// podsPerCore, and EFA-only interfaces on the first card take ENIs away
// from pods.
func (t *InstanceType) MaxPodsFor(k *model.Kubelet, nc *model.NodeClass) int64 {
	s := shapeOf(nc)
	return t.maxPods(t.kubeletFor(k, s), s)
}

func (t *InstanceType) maxPods(k *model.Kubelet, s shape) int64 {
	var n int64
	switch {
	case k != nil && k.MaxPods != nil:
		n = int64(*k.MaxPods)
	case s.family.eniLimitedPods:
		n = t.eniLimitedPods(s.efaOnlyOnCard0 + s.reservedENIs)
	default:
		n = 110
	}
	if s.family.podsPerCore && k != nil && k.PodsPerCore != nil && *k.PodsPerCore > 0 {
		n = min(n, int64(*k.PodsPerCore)*t.VCPU)
	}
	return max(n, 0)
}

// eniLimitedPods is the VPC CNI's pod density when unusable of the default
// card's ENIs carry no pods (EFA-only interfaces, reserved ENIs); 0 when
// the type's ENI data is unknown or no ENI is left. When only the total interface count is
// known (a few high-memory types described by one source only) it stands
// in for the default card's, as in the published figures.
func (t *InstanceType) eniLimitedPods(unusable int64) int64 {
	enis := t.defaultCardENIs()
	if enis <= 0 || t.IPv4PerENI <= 0 {
		return 0
	}
	usable := enis - unusable
	if usable <= 0 {
		return 0
	}
	return usable*(t.IPv4PerENI-1) + 2
}

// defaultCardENIs is the default network card's ENI count, the type's
// total where only that is known.
func (t *InstanceType) defaultCardENIs() int64 {
	if t.MaxENIsDefaultCard > 0 {
		return t.MaxENIsDefaultCard
	}
	return t.MaxENIs
}

// memoryCapacity is what the kubelet will report as memory capacity: the
// EC2 figure less the arm64 CMA reservation and the VM overhead (rounded
// up to whole MiB, as Karpenter computes it).
func (t *InstanceType) memoryCapacity() int64 {
	mib := t.MemoryMiB
	if t.Arch == "arm64" {
		mib -= gravitonReservedMiB
	}
	bytes := mib * mebi
	overheadMiB := int64(math.Ceil(float64(bytes) * VMMemoryOverheadPercent / 1024 / 1024))
	return bytes - overheadMiB*mebi
}

// Capacity is what a node of this type reports as capacity, with the
// root volume Karpenter assumes (20Gi). Extended resources are listed only
// when the type has them. It assumes AL2023 and no node class settings;
// CapacityFor takes the node class into account.
func (t *InstanceType) Capacity(k *model.Kubelet) corev1.ResourceList { return t.CapacityFor(k, nil) }

// CapacityFor is Capacity for a node of the given node class (nil means
// AL2023 with defaults): its root volume or RAID0 instance store becomes
// ephemeral-storage, its family decides pod density, and listed network
// interfaces decide the EFA count.
func (t *InstanceType) CapacityFor(k *model.Kubelet, nc *model.NodeClass) corev1.ResourceList {
	s := shapeOf(nc)
	return t.capacity(t.kubeletFor(k, s), s)
}

func (t *InstanceType) capacity(k *model.Kubelet, s shape) corev1.ResourceList {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(t.VCPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(t.memoryCapacity(), resource.BinarySI),
		corev1.ResourceEphemeralStorage: t.ephemeralStorage(s),
		corev1.ResourcePods:             *resource.NewQuantity(t.maxPods(k, s), resource.DecimalSI),
	}
	add := func(name corev1.ResourceName, n int64) {
		if n > 0 {
			rl[name] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	switch t.GPUManufacturer {
	case "nvidia":
		add(ResourceNVIDIAGPU, t.GPUCount)
	case "amd":
		add(ResourceAMDGPU, t.GPUCount)
	}
	if t.AcceleratorManufacturer == "aws" {
		add(ResourceAWSNeuron, t.AcceleratorCount)
		add(ResourceAWSNeuronCore, t.NeuronCoreCount)
	}
	add(ResourceHabanaGaudi, t.HabanaGaudiCount)
	if s.efaInterfaces >= 0 {
		add(ResourceEFA, s.efaInterfaces)
	} else {
		add(ResourceEFA, t.EFACount)
	}
	add(ResourceAWSPodENI, t.BranchENIs)
	if s.family.windows && t.IPv4PerENI > 1 {
		add(ResourcePrivateIPv4Address, t.IPv4PerENI-1)
	}
	return rl
}

// ephemeralStorage is the size of the volume pods' ephemeral storage lives
// on: the RAID0 instance store when the node class asks for it and the
// type has NVMe, else the node class's root (or family ephemeral) volume,
// else the family's default.
func (t *InstanceType) ephemeralStorage(s shape) resource.Quantity {
	if s.raid0 && t.LocalNVMeGB > 0 {
		return *resource.NewQuantity(t.LocalNVMeGB*1000*1000*1000, resource.DecimalSI)
	}
	if s.volume != nil {
		return *s.volume
	}
	return *resource.NewQuantity(s.family.defaultVolume, resource.BinarySI)
}

// Overhead is what the kubelet keeps from a node's capacity, by kind.
type Overhead struct {
	KubeReserved      corev1.ResourceList `json:"kubeReserved"`
	SystemReserved    corev1.ResourceList `json:"systemReserved"`
	EvictionThreshold corev1.ResourceList `json:"evictionThreshold"`
}

// Total sums the three parts.
func (o Overhead) Total() corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, rl := range []corev1.ResourceList{o.KubeReserved, o.SystemReserved, o.EvictionThreshold} {
		for name, q := range rl {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return total
}

// Overhead computes the kubelet's reservations for a node of this type the
// way EKS AMIs (and Karpenter) configure them:
//
//   - kube-reserved cpu: 6% of the first core, 1% of the second, 0.5% of
//     the third and fourth, 0.25% of the rest;
//   - kube-reserved memory: 11Mi per ENI-limited pod + 255Mi. The pod count
//     is the ENI-limited one even when maxPods is overridden, because AL2023
//     sizes the reservation from the instance, not from kubelet maxPods
//     (Bottlerocket and Windows use the node's pod count);
//   - kube-reserved ephemeral-storage: 1Gi;
//   - user kubeReserved values replace the defaults key by key;
//   - system-reserved: only what the user sets;
//   - eviction: memory.available 100Mi and nodefs.available 10%, or the
//     evictionHard values (quantities or percentages of capacity; 100%
//     disables the threshold). evictionSoft never changes allocatable.
//
// Values that do not parse are skipped (ValidateKubelet reports them).
// It assumes AL2023 and no node class settings; OverheadFor takes the node
// class into account.
func (t *InstanceType) Overhead(k *model.Kubelet) Overhead { return t.OverheadFor(k, nil) }

// OverheadFor is Overhead for a node of the given node class.
func (t *InstanceType) OverheadFor(k *model.Kubelet, nc *model.NodeClass) Overhead {
	s := shapeOf(nc)
	return t.overhead(t.kubeletFor(k, s), s)
}

func (t *InstanceType) overhead(k *model.Kubelet, s shape) Overhead {
	memCap := t.memoryCapacity()
	storage := t.ephemeralStorage(s)
	storageCap := storage.Value()

	var podsForMemory int64
	if s.family.eniLimitedMemoryOverhead {
		// Karpenter v1.15 sizes this on the ENI-limited pods less the
		// EFA-only interfaces, whatever the reserved ENIs and maxPods
		// (ENILimitedPods(ctx, info, 0, networkInterfaces) in its
		// instancetype/types.go).
		podsForMemory = t.eniLimitedPods(s.efaOnlyOnCard0)
	}
	if podsForMemory == 0 {
		podsForMemory = t.maxPods(k, s)
	}
	kube := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(kubeReservedMilliCPU(t.VCPU*1000), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*podsForMemory+255)*mebi, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(gibi, resource.BinarySI),
	}
	system := corev1.ResourceList{}
	eviction := corev1.ResourceList{
		corev1.ResourceMemory:           *resource.NewQuantity(100*mebi, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(math.Ceil(float64(storageCap)/100*10)), resource.BinarySI),
	}
	if k != nil {
		overrideQuantities(kube, k.KubeReserved)
		overrideQuantities(system, k.SystemReserved)
		if v, ok := k.EvictionHard[EvictionMemoryAvailable]; ok {
			if q, err := evictionSignal(memCap, v); err == nil {
				eviction[corev1.ResourceMemory] = q
			}
		}
		if v, ok := k.EvictionHard[EvictionNodeFSAvailable]; ok {
			if q, err := evictionSignal(storageCap, v); err == nil {
				eviction[corev1.ResourceEphemeralStorage] = q
			}
		}
	}
	return Overhead{KubeReserved: kube, SystemReserved: system, EvictionThreshold: eviction}
}

// Allocatable is capacity less kube-reserved, system-reserved and the
// hard eviction thresholds: what the scheduler can place pods into. No
// resource goes below zero. It assumes AL2023 and no node class settings;
// AllocatableFor takes the node class into account.
func (t *InstanceType) Allocatable(k *model.Kubelet) corev1.ResourceList {
	return t.AllocatableFor(k, nil)
}

// AllocatableFor is Allocatable for a node of the given node class.
func (t *InstanceType) AllocatableFor(k *model.Kubelet, nc *model.NodeClass) corev1.ResourceList {
	s := shapeOf(nc)
	k = t.kubeletFor(k, s)
	alloc := t.capacity(k, s)
	o := t.overhead(k, s)
	// Integer arithmetic (millicores for cpu, units otherwise): Quantity
	// arithmetic across formats is slow, and the simulator sizes every
	// type for every pool.
	reserved := map[corev1.ResourceName]int64{}
	for _, rl := range []corev1.ResourceList{o.KubeReserved, o.SystemReserved, o.EvictionThreshold} {
		for name, q := range rl {
			reserved[name] += scaled(name, q)
		}
	}
	for name, r := range reserved {
		c, ok := alloc[name]
		if !ok {
			continue
		}
		v := max(scaled(name, c)-r, 0)
		if name == corev1.ResourceCPU {
			alloc[name] = *resource.NewMilliQuantity(v, resource.DecimalSI)
		} else {
			alloc[name] = *resource.NewQuantity(v, c.Format)
		}
	}
	return alloc
}

// scaled is a quantity in the unit Allocatable computes in: millicores for
// cpu, whole units (bytes, counts) for everything else.
func scaled(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// kubeReservedMilliCPU applies the EKS cpu reservation ranges to a core
// count in millicores, truncating each range's share to whole millicores.
func kubeReservedMilliCPU(milli int64) int64 {
	ranges := []struct {
		start, end int64
		share      float64
	}{
		{0, 1000, 0.06},
		{1000, 2000, 0.01},
		{2000, 4000, 0.005},
		{4000, math.MaxInt64, 0.0025},
	}
	var reserved int64
	for _, r := range ranges {
		if milli <= r.start {
			break
		}
		span := min(milli, r.end) - r.start
		reserved += int64(float64(span) * r.share)
	}
	return reserved
}

func overrideQuantities(dst corev1.ResourceList, src map[string]string) {
	for name, v := range src {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			continue
		}
		dst[corev1.ResourceName(name)] = q
	}
}

// evictionSignal turns an evictionHard value into bytes: a percentage of
// the capacity (rounded up; 100% means disabled, so 0) or a quantity.
func evictionSignal(capacity int64, v string) (resource.Quantity, error) {
	if strings.HasSuffix(v, "%") {
		p, err := parsePercent(v)
		if err != nil {
			return resource.Quantity{}, err
		}
		if p == 100 {
			p = 0
		}
		return *resource.NewQuantity(int64(math.Ceil(float64(capacity)/100*p)), resource.BinarySI), nil
	}
	return resource.ParseQuantity(v)
}

func parsePercent(v string) (float64, error) {
	p, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("percentage %q: %w", v, err)
	}
	if p < 0 || p > 100 {
		return 0, fmt.Errorf("percentage %q is outside 0-100%%", v)
	}
	return p, nil
}

// ValidateKubelet reports kubelet values the sizing here cannot read:
// reserved quantities that do not parse and eviction thresholds that are
// neither a quantity nor a 0-100% percentage. Sizing skips such values,
// so a spec reader should reject them up front.
func ValidateKubelet(k *model.Kubelet) error {
	if k == nil {
		return nil
	}
	var errs []error
	for _, f := range []struct {
		field string
		m     map[string]string
	}{{"kubeReserved", k.KubeReserved}, {"systemReserved", k.SystemReserved}} {
		for name, v := range f.m {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%s]: %w", f.field, name, err))
				continue
			}
			if q.Sign() < 0 {
				errs = append(errs, fmt.Errorf("%s[%s]: %q is negative", f.field, name, v))
			}
		}
	}
	for _, f := range []struct {
		field string
		m     map[string]string
	}{{"evictionHard", k.EvictionHard}, {"evictionSoft", k.EvictionSoft}} {
		for signal, v := range f.m {
			if strings.HasSuffix(v, "%") {
				if _, err := parsePercent(v); err != nil {
					errs = append(errs, fmt.Errorf("%s[%s]: %w", f.field, signal, err))
				}
				continue
			}
			if _, err := resource.ParseQuantity(v); err != nil {
				errs = append(errs, fmt.Errorf("%s[%s]: %w", f.field, signal, err))
			}
		}
	}
	if k.MaxPods != nil && *k.MaxPods < 0 {
		errs = append(errs, fmt.Errorf("maxPods: %d is negative", *k.MaxPods))
	}
	if k.PodsPerCore != nil && *k.PodsPerCore < 0 {
		errs = append(errs, fmt.Errorf("podsPerCore: %d is negative", *k.PodsPerCore))
	}
	return errors.Join(errs...)
}
