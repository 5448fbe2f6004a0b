package catalog

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// Well-known instance-type label keys of Karpenter's AWS provider.
const (
	LabelInstanceCategory                = "karpenter.k8s.aws/instance-category"
	LabelInstanceFamily                  = "karpenter.k8s.aws/instance-family"
	LabelInstanceGeneration              = "karpenter.k8s.aws/instance-generation"
	LabelInstanceSize                    = "karpenter.k8s.aws/instance-size"
	LabelInstanceCPU                     = "karpenter.k8s.aws/instance-cpu"
	LabelInstanceCPUManufacturer         = "karpenter.k8s.aws/instance-cpu-manufacturer"
	LabelInstanceMemory                  = "karpenter.k8s.aws/instance-memory"
	LabelInstanceHypervisor              = "karpenter.k8s.aws/instance-hypervisor"
	LabelInstanceNetworkBandwidth        = "karpenter.k8s.aws/instance-network-bandwidth"
	LabelInstanceEBSBandwidth            = "karpenter.k8s.aws/instance-ebs-bandwidth"
	LabelInstanceLocalNVMe               = "karpenter.k8s.aws/instance-local-nvme"
	LabelInstanceCapabilityFlex          = "karpenter.k8s.aws/instance-capability-flex"
	LabelInstanceGPUName                 = "karpenter.k8s.aws/instance-gpu-name"
	LabelInstanceGPUManufacturer         = "karpenter.k8s.aws/instance-gpu-manufacturer"
	LabelInstanceGPUCount                = "karpenter.k8s.aws/instance-gpu-count"
	LabelInstanceGPUMemory               = "karpenter.k8s.aws/instance-gpu-memory"
	LabelInstanceAcceleratorName         = "karpenter.k8s.aws/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer = "karpenter.k8s.aws/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount        = "karpenter.k8s.aws/instance-accelerator-count"
)

// TypeLabelKeys lists every label key Labels and LabelsFor can set. A requirement on one
// of these keys is decided by the instance type alone (a type without the
// label does not satisfy In/Gt/Lt on it, as in Karpenter).
var TypeLabelKeys = []string{
	corev1.LabelInstanceTypeStable,
	corev1.LabelArchStable,
	corev1.LabelOSStable,
	corev1.LabelWindowsBuild,
	LabelInstanceCategory,
	LabelInstanceFamily,
	LabelInstanceGeneration,
	LabelInstanceSize,
	LabelInstanceCPU,
	LabelInstanceCPUManufacturer,
	LabelInstanceMemory,
	LabelInstanceHypervisor,
	LabelInstanceNetworkBandwidth,
	LabelInstanceEBSBandwidth,
	LabelInstanceLocalNVMe,
	LabelInstanceCapabilityFlex,
	LabelInstanceGPUName,
	LabelInstanceGPUManufacturer,
	LabelInstanceGPUCount,
	LabelInstanceGPUMemory,
	LabelInstanceAcceleratorName,
	LabelInstanceAcceleratorManufacturer,
	LabelInstanceAcceleratorCount,
}

// Labels returns the labels a node of this type carries because of its
// type, with Karpenter's values and omissions:
//
//   - hypervisor is "" on bare metal (a present, empty label) and absent
//     only when the data does not know it;
//   - network and EBS bandwidth are absent when unknown;
//   - local-nvme is absent without NVMe instance store;
//   - GPU labels are present when the type has a GPU kind, including the
//     fractional-GPU types whose count is 0;
//   - accelerator labels are present for Neuron and other inference
//     accelerators.
//
// Zone, region and capacity type are offering labels, not type labels.
func (t *InstanceType) Labels() map[string]string {
	l := map[string]string{
		corev1.LabelInstanceTypeStable: t.Name,
		corev1.LabelArchStable:         t.Arch,
		corev1.LabelOSStable:           string(corev1.Linux),
		LabelInstanceFamily:            t.Family,
		LabelInstanceSize:              t.Size,
		LabelInstanceCPU:               itoa(t.VCPU),
		LabelInstanceMemory:            itoa(t.MemoryMiB),
		LabelInstanceCapabilityFlex:    strconv.FormatBool(strings.Contains(t.Family, "-flex")),
	}
	if t.Category != "" && t.Generation > 0 {
		l[LabelInstanceCategory] = t.Category
		l[LabelInstanceGeneration] = strconv.Itoa(t.Generation)
	}
	if t.CPUManufacturer != "" {
		l[LabelInstanceCPUManufacturer] = t.CPUManufacturer
	}
	if t.HypervisorKnown {
		l[LabelInstanceHypervisor] = t.Hypervisor
	}
	if t.NetworkBandwidthMbps > 0 {
		l[LabelInstanceNetworkBandwidth] = itoa(t.NetworkBandwidthMbps)
	}
	if t.EBSBandwidthMbps > 0 {
		l[LabelInstanceEBSBandwidth] = itoa(t.EBSBandwidthMbps)
	}
	if t.LocalNVMeGB > 0 {
		l[LabelInstanceLocalNVMe] = itoa(t.LocalNVMeGB)
	}
	if t.GPUName != "" {
		l[LabelInstanceGPUName] = t.GPUName
		l[LabelInstanceGPUManufacturer] = t.GPUManufacturer
		l[LabelInstanceGPUCount] = itoa(t.GPUCount)
		l[LabelInstanceGPUMemory] = itoa(t.GPUMemoryMiB)
	}
	if t.AcceleratorName != "" {
		l[LabelInstanceAcceleratorName] = t.AcceleratorName
		l[LabelInstanceAcceleratorManufacturer] = t.AcceleratorManufacturer
		l[LabelInstanceAcceleratorCount] = itoa(t.AcceleratorCount)
	}
	return l
}

// LabelsFor is Labels for a node of the node class (nil: AL2023): a
// Windows family's node has kubernetes.io/os=windows and
// node.kubernetes.io/windows-build=<its build>, as Karpenter labels it;
// every other family's has kubernetes.io/os=linux and no build. Runs
// tells whether the class can be launched on the type at all.
func (t *InstanceType) LabelsFor(nc *model.NodeClass) map[string]string {
	l := t.Labels()
	if w, ok := nc.Windows(); ok {
		l[corev1.LabelOSStable] = string(corev1.Windows)
		l[corev1.LabelWindowsBuild] = w.Build
	}
	return l
}

// Runs tells whether a node of the node class (nil: AL2023) can run on the
// type: the EKS optimized Windows AMIs are x86_64 only, so an arm64 type
// is no option for a Windows class (Karpenter gives it no OS, so nothing
// selects it). Linux families run on every type.
func (t *InstanceType) Runs(nc *model.NodeClass) bool {
	if _, ok := nc.Windows(); ok {
		return t.Arch == "amd64"
	}
	return true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
