// Package v1alpha5 holds the karpenter.sh/v1alpha5 Provisioner as Karpenter
// v0.20 served it (core@064a52f pkg/apis/v1alpha5), plus the few fields
// later v1alpha5 releases added that users still bring (kubelet image GC
// thresholds and cpuCFSQuota).
//
// Types only: defaulting, validation and mapping are in pkg/specs.
package v1alpha5

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group, version and kind of the Provisioner.
const (
	Group   = "karpenter.sh"
	Version = "v1alpha5"
	Kind    = "Provisioner"
	// APIVersion is the apiVersion a Provisioner document carries.
	APIVersion = Group + "/" + Version
)

// Provisioner is a Karpenter v0.20 node pool: what nodes may be launched
// for pending pods, and when they are retired.
type Provisioner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProvisionerSpec   `json:"spec,omitempty"`
	Status ProvisionerStatus `json:"status,omitempty"`
}

// ProvisionerList is a list of Provisioners, as `kubectl get -o yaml` prints.
type ProvisionerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provisioner `json:"items"`
}

// ProvisionerSpec is the desired state of a Provisioner.
type ProvisionerSpec struct {
	// Annotations are applied to every node.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels are layered with Requirements and applied to every node.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are applied to every node; pods must tolerate them.
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are applied at boot and expected to be removed by a
	// DaemonSet; pods need not tolerate them to drive provisioning.
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements are layered with Labels and applied to every node.
	Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
	// KubeletConfiguration is passed to the kubelet of every node.
	KubeletConfiguration *KubeletConfiguration `json:"kubeletConfiguration,omitempty"`
	// Provider holds inline AWS settings (the legacy form of an
	// AWSNodeTemplate). Mutually exclusive with ProviderRef.
	Provider *json.RawMessage `json:"provider,omitempty"`
	// ProviderRef names an AWSNodeTemplate.
	ProviderRef *ProviderRef `json:"providerRef,omitempty"`
	// TTLSecondsAfterEmpty deletes a node this long after it became empty
	// (no non-DaemonSet pods). Unset disables emptiness deletion.
	TTLSecondsAfterEmpty *int64 `json:"ttlSecondsAfterEmpty,omitempty"`
	// TTLSecondsUntilExpired deletes a node this long after it was
	// created. Unset disables expiry.
	TTLSecondsUntilExpired *int64 `json:"ttlSecondsUntilExpired,omitempty"`
	// Limits caps the total resources of the Provisioner's nodes.
	Limits *Limits `json:"limits,omitempty"`
	// Weight orders Provisioners, higher first (1-100; unset counts as 0).
	Weight *int32 `json:"weight,omitempty"`
	// Consolidation turns on replacing or removing underused nodes.
	Consolidation *Consolidation `json:"consolidation,omitempty"`
}

// Consolidation holds the consolidation switch.
type Consolidation struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// ProviderRef points at the AWSNodeTemplate a Provisioner launches with.
type ProviderRef struct {
	// Kind of the referent; AWSNodeTemplate when empty.
	Kind string `json:"kind,omitempty"`
	// Name of the referent.
	Name string `json:"name,omitempty"`
	// APIVersion of the referent; karpenter.k8s.aws/v1alpha1 when empty.
	APIVersion string `json:"apiVersion,omitempty"`
}

// Limits caps the resources a Provisioner may provision in total.
type Limits struct {
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// KubeletConfiguration is the subset of kubelet settings a v1alpha5
// Provisioner could set.
type KubeletConfiguration struct {
	ClusterDNS                []string                   `json:"clusterDNS,omitempty"`
	ContainerRuntime          *string                    `json:"containerRuntime,omitempty"`
	MaxPods                   *int32                     `json:"maxPods,omitempty"`
	PodsPerCore               *int32                     `json:"podsPerCore,omitempty"`
	SystemReserved            corev1.ResourceList        `json:"systemReserved,omitempty"`
	KubeReserved              corev1.ResourceList        `json:"kubeReserved,omitempty"`
	EvictionHard              map[string]string          `json:"evictionHard,omitempty"`
	EvictionSoft              map[string]string          `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod   map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMaxPodGracePeriod *int32                     `json:"evictionMaxPodGracePeriod,omitempty"`
	// ImageGCHighThresholdPercent, ImageGCLowThresholdPercent and
	// CPUCFSQuota came in v1alpha5 releases after v0.20.
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent  *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	CPUCFSQuota                 *bool  `json:"cpuCFSQuota,omitempty"`
}

// ProvisionerStatus is what Karpenter observed. Joist never reads it; it
// is typed so that objects read back from the API server decode.
type ProvisionerStatus struct {
	LastScaleTime *metav1.Time        `json:"lastScaleTime,omitempty"`
	Resources     corev1.ResourceList `json:"resources,omitempty"`
	Conditions    []json.RawMessage   `json:"conditions,omitempty"`
}
