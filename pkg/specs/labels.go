package specs

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Label keys the spec reader knows by name.
const (
	labelProvisionerName    = "karpenter.sh/provisioner-name"
	labelNodePool           = "karpenter.sh/nodepool"
	labelCapacityType       = "karpenter.sh/capacity-type"
	labelEmptinessTimestamp = "karpenter.sh/emptiness-timestamp"
	labelInstanceCategory   = "karpenter.k8s.aws/instance-category"
	labelInstanceFamily     = "karpenter.k8s.aws/instance-family"
	labelInstanceGeneration = "karpenter.k8s.aws/instance-generation"
	labelInstanceTenancy    = "karpenter.k8s.aws/instance-tenancy"
	labelNodeClass          = "karpenter.k8s.aws/ec2nodeclass"
)

// awsInstanceLabelsV1Alpha5 are the karpenter.k8s.aws labels a v1alpha5
// Provisioner may use: v0.20's set plus the ones later v1alpha5 releases
// registered, so that manifests from any v1alpha5 release read unchanged.
var awsInstanceLabelsV1Alpha5 = sets.New(
	// v0.20
	"karpenter.k8s.aws/instance-hypervisor",
	labelInstanceCategory,
	labelInstanceFamily,
	labelInstanceGeneration,
	"karpenter.k8s.aws/instance-local-nvme",
	"karpenter.k8s.aws/instance-size",
	"karpenter.k8s.aws/instance-cpu",
	"karpenter.k8s.aws/instance-memory",
	"karpenter.k8s.aws/instance-pods",
	"karpenter.k8s.aws/instance-gpu-name",
	"karpenter.k8s.aws/instance-gpu-manufacturer",
	"karpenter.k8s.aws/instance-gpu-count",
	"karpenter.k8s.aws/instance-gpu-memory",
	// later v1alpha5 releases
	"karpenter.k8s.aws/instance-encryption-in-transit-supported",
	"karpenter.k8s.aws/instance-cpu-manufacturer",
	"karpenter.k8s.aws/instance-network-bandwidth",
	"karpenter.k8s.aws/instance-accelerator-name",
	"karpenter.k8s.aws/instance-accelerator-manufacturer",
	"karpenter.k8s.aws/instance-accelerator-count",
)

// wellKnownV1Alpha5 are the labels in restricted domains that v1alpha5
// allowed in requirements and labels.
var wellKnownV1Alpha5 = sets.New(
	labelProvisionerName,
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
	corev1.LabelInstanceTypeStable,
	corev1.LabelArchStable,
	corev1.LabelOSStable,
	labelCapacityType,
).Union(awsInstanceLabelsV1Alpha5)

// restrictedDomainsV1Alpha5 are reserved by the kubelet or Karpenter.
// Karpenter matched them as plain suffixes of the key's domain (so
// "examplek8s.io" is restricted too); Joist does the same.
var restrictedDomainsV1Alpha5 = []string{"kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws"}

// domainExceptionsV1Alpha5 are sub-domains of restricted domains that are
// allowed because the kubelet does not own them. Matched exactly.
var domainExceptionsV1Alpha5 = sets.New("kops.k8s.io", corev1.LabelNamespaceSuffixNode)

var restrictedLabelsV1Alpha5 = sets.New(labelEmptinessTimestamp, corev1.LabelHostname)

func labelDomain(key string) string {
	if i := strings.Index(key, "/"); i >= 0 {
		return key[:i]
	}
	return ""
}

// restrictedV1Alpha5 returns why a v1alpha5 label key may not be used, or
// "" when it may.
func restrictedV1Alpha5(key string) string {
	if wellKnownV1Alpha5.Has(key) {
		return ""
	}
	domain := labelDomain(key)
	if domainExceptionsV1Alpha5.Has(domain) {
		return ""
	}
	for _, d := range restrictedDomainsV1Alpha5 {
		if strings.HasSuffix(domain, d) {
			return "label domain \"" + d + "\" is restricted; use a well-known label or a custom label outside " +
				strings.Join(restrictedDomainsV1Alpha5, ", ")
		}
	}
	if restrictedLabelsV1Alpha5.Has(key) {
		return "label \"" + key + "\" is restricted"
	}
	return ""
}

// awsInstanceLabelsV1 are the karpenter.k8s.aws labels a v1 NodePool may
// use (aws v1.15 labels.go; the CRD's CEL list also names
// karpenter.k8s.aws/ec2nodeclass, but the controller then rejects it).
var awsInstanceLabelsV1 = sets.New(
	"karpenter.k8s.aws/capacity-reservation-id",
	"karpenter.k8s.aws/capacity-reservation-type",
	"karpenter.k8s.aws/capacity-reservation-interruptible",
	"karpenter.k8s.aws/instance-hypervisor",
	"karpenter.k8s.aws/instance-encryption-in-transit-supported",
	labelInstanceCategory,
	"karpenter.k8s.aws/instance-capability-flex",
	labelInstanceFamily,
	labelInstanceGeneration,
	"karpenter.k8s.aws/instance-size",
	"karpenter.k8s.aws/instance-local-nvme",
	"karpenter.k8s.aws/instance-cpu",
	"karpenter.k8s.aws/instance-cpu-manufacturer",
	"karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
	"karpenter.k8s.aws/instance-memory",
	"karpenter.k8s.aws/instance-ebs-bandwidth",
	"karpenter.k8s.aws/instance-network-bandwidth",
	"karpenter.k8s.aws/instance-gpu-name",
	"karpenter.k8s.aws/instance-gpu-manufacturer",
	"karpenter.k8s.aws/instance-gpu-count",
	"karpenter.k8s.aws/instance-gpu-memory",
	"karpenter.k8s.aws/instance-accelerator-name",
	"karpenter.k8s.aws/instance-accelerator-manufacturer",
	"karpenter.k8s.aws/instance-accelerator-count",
	labelInstanceTenancy,
	"karpenter.k8s.aws/placement-group-id",
	"karpenter.k8s.aws/placement-group-partition",
)

// restrictedV1 returns why a v1 label key may not be used in a NodePool's
// labels or requirements, or "". The messages are the CRD's CEL messages.
func restrictedV1(key string) string {
	domain := key
	if i := strings.Index(key, "/"); i >= 0 {
		domain = key[:i]
	}
	switch {
	case key == labelNodePool:
		return `label "karpenter.sh/nodepool" is restricted`
	case key == corev1.LabelHostname:
		return `label "kubernetes.io/hostname" is restricted`
	case strings.HasSuffix(domain, "karpenter.sh") && key != labelCapacityType:
		return `label domain "karpenter.sh" is restricted`
	case strings.HasSuffix(domain, "karpenter.k8s.aws") && !awsInstanceLabelsV1.Has(key):
		return `label domain "karpenter.k8s.aws" is restricted`
	}
	return ""
}

// wellKnownValuesV1 are labels whose values Karpenter knows; an In
// requirement on them needs at least one known value (else the pool can
// never launch anything).
var wellKnownValuesV1 = map[string][]string{
	labelCapacityType:    {"on-demand", "spot", "reserved"},
	labelInstanceTenancy: {"default", "dedicated"},
}
