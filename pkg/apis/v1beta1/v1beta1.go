// Package v1beta1 holds Karpenter's v1beta1 spec APIs as Karpenter
// v0.32–v0.37 served them: karpenter.sh/v1beta1 NodePool
// (sigs.k8s.io/karpenter pkg/apis/v1beta1) and karpenter.k8s.aws/v1beta1
// EC2NodeClass (karpenter-provider-aws pkg/apis/v1beta1), in their last
// form (v1.0's conversion source).
//
// They differ from v1 in a few places, which pkg/specs converts as
// Karpenter v1.0's conversion webhook did: the NodePool carries the
// kubelet settings and the node lifetime (disruption.expireAfter), names
// its node class by apiVersion, and calls consolidation of underutilized
// nodes WhenUnderutilized; the EC2NodeClass names its AMI family (Ubuntu
// among them) instead of an alias. Types only: defaulting, validation,
// conversion and mapping are in pkg/specs.
package v1beta1

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Groups, version and kinds of the v1beta1 APIs.
const (
	GroupCore           = "karpenter.sh"
	GroupAWS            = "karpenter.k8s.aws"
	Version             = "v1beta1"
	KindNodePool        = "NodePool"
	KindEC2NodeClass    = "EC2NodeClass"
	APIVersionNodePool  = GroupCore + "/" + Version
	APIVersionNodeClass = GroupAWS + "/" + Version
)

// Consolidation policies of a v1beta1 NodePool.
const (
	ConsolidationPolicyWhenEmpty         = "WhenEmpty"
	ConsolidationPolicyWhenUnderutilized = "WhenUnderutilized"
)

// AMIFamilyUbuntu is the family v1 dropped.
const AMIFamilyUbuntu = "Ubuntu"

// NodePool is a Karpenter v1beta1 node pool.
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodePoolSpec    `json:"spec"`
	Status json.RawMessage `json:"status,omitempty"`
}

// NodePoolSpec is the desired state of a v1beta1 NodePool.
type NodePoolSpec struct {
	Template   NodeClaimTemplate   `json:"template"`
	Disruption *Disruption         `json:"disruption,omitempty"`
	Limits     corev1.ResourceList `json:"limits,omitempty"`
	Weight     *int32              `json:"weight,omitempty"`
}

// Disruption is v1beta1's consolidation, expiry and budgets.
type Disruption struct {
	// ConsolidateAfter is a duration or Never; only with WhenEmpty, or
	// Never with WhenUnderutilized.
	ConsolidateAfter *string `json:"consolidateAfter,omitempty"`
	// ConsolidationPolicy is WhenEmpty or WhenUnderutilized.
	ConsolidationPolicy string `json:"consolidationPolicy,omitempty"`
	// ExpireAfter is the node lifetime (v1 moved it to the template).
	ExpireAfter *string  `json:"expireAfter,omitempty"`
	Budgets     []Budget `json:"budgets,omitempty"`
}

// Budget limits concurrent disruptions (no reasons in v1beta1).
type Budget struct {
	Nodes    string  `json:"nodes"`
	Schedule *string `json:"schedule,omitempty"`
	Duration *string `json:"duration,omitempty"`
}

// NodeClaimTemplate is the metadata and spec every node starts from.
type NodeClaimTemplate struct {
	ObjectMeta TemplateMeta          `json:"metadata,omitempty"`
	Spec       NodeClaimTemplateSpec `json:"spec"`
}

// TemplateMeta is the labels and annotations put on every node.
type TemplateMeta struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is v1beta1's node template.
type NodeClaimTemplateSpec struct {
	Taints        []corev1.Taint                         `json:"taints,omitempty"`
	StartupTaints []corev1.Taint                         `json:"startupTaints,omitempty"`
	Requirements  []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// Resources was never read by Karpenter (deprecated in v1beta1).
	Resources *ResourceRequirements `json:"resources,omitempty"`
	// Kubelet is the node's kubelet settings (v1 moved them to the
	// EC2NodeClass).
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
	// NodeClassRef names the EC2NodeClass. Required.
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
}

// NodeSelectorRequirementWithMinValues is a requirement with minValues.
type NodeSelectorRequirementWithMinValues struct {
	Key       string                      `json:"key"`
	Operator  corev1.NodeSelectorOperator `json:"operator"`
	Values    []string                    `json:"values,omitempty"`
	MinValues *int                        `json:"minValues,omitempty"`
}

// ResourceRequirements is v1beta1's unused template resources.
type ResourceRequirements struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// KubeletConfiguration is v1beta1's closed set of kubelet settings (the
// same fields v1's EC2NodeClass spec.kubelet reads).
type KubeletConfiguration struct {
	ClusterDNS                  []string          `json:"clusterDNS,omitempty"`
	MaxPods                     *int32            `json:"maxPods,omitempty"`
	PodsPerCore                 *int32            `json:"podsPerCore,omitempty"`
	SystemReserved              map[string]string `json:"systemReserved,omitempty"`
	KubeReserved                map[string]string `json:"kubeReserved,omitempty"`
	EvictionHard                map[string]string `json:"evictionHard,omitempty"`
	EvictionSoft                map[string]string `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod     map[string]string `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMaxPodGracePeriod   *int32            `json:"evictionMaxPodGracePeriod,omitempty"`
	ImageGCHighThresholdPercent *int32            `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent  *int32            `json:"imageGCLowThresholdPercent,omitempty"`
	CPUCFSQuota                 *bool             `json:"cpuCFSQuota,omitempty"`
}

// NodeClassReference names a node class by kind, name and apiVersion.
type NodeClassReference struct {
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// EC2NodeClass is a Karpenter v1beta1 EC2NodeClass.
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EC2NodeClassSpec `json:"spec,omitempty"`
	Status json.RawMessage  `json:"status,omitempty"`
}

// EC2NodeClassSpec is the desired state of a v1beta1 EC2NodeClass.
type EC2NodeClassSpec struct {
	SubnetSelectorTerms        []SubnetSelectorTerm        `json:"subnetSelectorTerms"`
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`
	AssociatePublicIPAddress   *bool                       `json:"associatePublicIPAddress,omitempty"`
	AMISelectorTerms           []AMISelectorTerm           `json:"amiSelectorTerms,omitempty"`
	// AMIFamily is required: AL2, AL2023, Bottlerocket, Ubuntu, Custom,
	// Windows2019 or Windows2022.
	AMIFamily           *string               `json:"amiFamily"`
	UserData            *string               `json:"userData,omitempty"`
	Role                string                `json:"role,omitempty"`
	InstanceProfile     *string               `json:"instanceProfile,omitempty"`
	Tags                map[string]string     `json:"tags,omitempty"`
	BlockDeviceMappings []*BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	InstanceStorePolicy *string               `json:"instanceStorePolicy,omitempty"`
	DetailedMonitoring  *bool                 `json:"detailedMonitoring,omitempty"`
	MetadataOptions     *MetadataOptions      `json:"metadataOptions,omitempty"`
	Context             *string               `json:"context,omitempty"`
}

// SubnetSelectorTerm selects subnets by tags or by id.
type SubnetSelectorTerm struct {
	Tags map[string]string `json:"tags,omitempty"`
	ID   string            `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, id or name.
type SecurityGroupSelectorTerm struct {
	Tags map[string]string `json:"tags,omitempty"`
	ID   string            `json:"id,omitempty"`
	Name string            `json:"name,omitempty"`
}

// AMISelectorTerm selects AMIs by tags, id or name and owner.
type AMISelectorTerm struct {
	Tags  map[string]string `json:"tags,omitempty"`
	ID    string            `json:"id,omitempty"`
	Name  string            `json:"name,omitempty"`
	Owner string            `json:"owner,omitempty"`
}

// MetadataOptions are the instance metadata service settings.
type MetadataOptions struct {
	HTTPEndpoint            *string `json:"httpEndpoint,omitempty"`
	HTTPProtocolIPv6        *string `json:"httpProtocolIPv6,omitempty"`
	HTTPPutResponseHopLimit *int64  `json:"httpPutResponseHopLimit,omitempty"`
	HTTPTokens              *string `json:"httpTokens,omitempty"`
}

// BlockDeviceMapping is one EBS volume of a node.
type BlockDeviceMapping struct {
	DeviceName *string      `json:"deviceName,omitempty"`
	EBS        *BlockDevice `json:"ebs,omitempty"`
	RootVolume bool         `json:"rootVolume,omitempty"`
}

// BlockDevice describes an EBS volume.
type BlockDevice struct {
	DeleteOnTermination *bool   `json:"deleteOnTermination,omitempty"`
	Encrypted           *bool   `json:"encrypted,omitempty"`
	IOPS                *int64  `json:"iops,omitempty"`
	KMSKeyID            *string `json:"kmsKeyID,omitempty"`
	SnapshotID          *string `json:"snapshotID,omitempty"`
	Throughput          *int64  `json:"throughput,omitempty"`
	VolumeSize          *string `json:"volumeSize,omitempty"`
	VolumeType          *string `json:"volumeType,omitempty"`
}
