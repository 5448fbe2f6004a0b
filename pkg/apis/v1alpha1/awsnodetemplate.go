// Package v1alpha1 holds the karpenter.k8s.aws/v1alpha1 AWSNodeTemplate as
// Karpenter v0.20 served it (aws@v0.20.0 pkg/apis/v1alpha1), plus
// detailedMonitoring, which later v1alpha1 releases added. The same AWS
// settings are what a v1alpha5 Provisioner's inline spec.provider holds.
//
// Types only: defaulting, validation and mapping are in pkg/specs.
package v1alpha1

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group, version and kind of the AWSNodeTemplate.
const (
	Group   = "karpenter.k8s.aws"
	Version = "v1alpha1"
	Kind    = "AWSNodeTemplate"
	// APIVersion is the apiVersion an AWSNodeTemplate document carries.
	APIVersion = Group + "/" + Version
)

// Special selector keys of v1alpha1 selectors. AWSIDs (and the later
// AWSIDsV2 spelling) takes a comma-separated list of IDs; the others
// select AMIs by name and owner (added after v0.20).
const (
	SelectorKeyAWSIDs   = "aws-ids"
	SelectorKeyAWSIDsV2 = "aws::ids"
	SelectorKeyAMIName  = "aws::name"
	SelectorKeyAMIOwner = "aws::owners"
)

// AMI families a v1alpha1 template may name.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyUbuntu       = "Ubuntu"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyCustom       = "Custom"
)

// AWSNodeTemplate says how a Provisioner's nodes are launched on EC2.
type AWSNodeTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AWSNodeTemplateSpec `json:"spec,omitempty"`
	Status json.RawMessage     `json:"status,omitempty"`
}

// AWSNodeTemplateList is a list of AWSNodeTemplates.
type AWSNodeTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AWSNodeTemplate `json:"items"`
}

// AWSNodeTemplateSpec is the AWS settings plus user data and AMI selection.
type AWSNodeTemplateSpec struct {
	// UserData is merged with Joist's own (MIME for AL2, TOML for
	// Bottlerocket). Mutually exclusive with launchTemplate.
	UserData *string `json:"userData,omitempty"`
	AWS      `json:",inline"`
	// AMISelector finds AMIs by tag, or by the aws-ids key.
	AMISelector map[string]string `json:"amiSelector,omitempty"`
	// DetailedMonitoring turns on detailed CloudWatch monitoring.
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
}

// AWS is the provider settings shared by AWSNodeTemplate and the inline
// spec.provider of a Provisioner.
type AWS struct {
	// TypeMeta lets an inline provider say apiVersion/kind; both optional.
	metav1.TypeMeta `json:",inline"`
	// AMIFamily is AL2 (default), Bottlerocket, Ubuntu, Windows2019,
	// Windows2022 or Custom.
	AMIFamily *string `json:"amiFamily,omitempty"`
	// Context is the EC2 Fleet reserved Context field.
	Context *string `json:"context,omitempty"`
	// InstanceProfile is the IAM instance profile of the nodes; Joist's
	// configured default when unset.
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// SubnetSelector finds subnets by tag ("*" matches any value) or by
	// aws-ids. Required.
	SubnetSelector map[string]string `json:"subnetSelector,omitempty"`
	// SecurityGroupSelector finds security groups by tag or by aws-ids.
	// Required unless launchTemplate is set.
	SecurityGroupSelector map[string]string `json:"securityGroupSelector,omitempty"`
	// Tags go on instances, volumes, fleets and launch templates.
	Tags           map[string]string `json:"tags,omitempty"`
	LaunchTemplate `json:",inline"`
}

// LaunchTemplate holds the launch template settings.
type LaunchTemplate struct {
	// LaunchTemplateName names a user-managed launch template to launch
	// with instead of a generated one.
	LaunchTemplateName *string `json:"launchTemplate,omitempty"`
	// MetadataOptions are the IMDS settings of generated launch templates.
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// BlockDeviceMappings are the volumes of generated launch templates.
	BlockDeviceMappings []*BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
}

// MetadataOptions are the instance metadata service settings.
type MetadataOptions struct {
	HTTPEndpoint            *string `json:"httpEndpoint,omitempty"`
	HTTPProtocolIPv6        *string `json:"httpProtocolIPv6,omitempty"`
	HTTPPutResponseHopLimit *int64  `json:"httpPutResponseHopLimit,omitempty"`
	HTTPTokens              *string `json:"httpTokens,omitempty"`
}

// BlockDeviceMapping is one volume of a node.
type BlockDeviceMapping struct {
	DeviceName *string `json:"deviceName,omitempty"`
	// VirtualName names an instance store volume (for example ephemeral0).
	VirtualName *string      `json:"virtualName,omitempty"`
	EBS         *BlockDevice `json:"ebs,omitempty"`
}

// BlockDevice describes an EBS volume.
type BlockDevice struct {
	DeleteOnTermination *bool              `json:"deleteOnTermination,omitempty"`
	Encrypted           *bool              `json:"encrypted,omitempty"`
	IOPS                *int64             `json:"iops,omitempty"`
	KMSKeyID            *string            `json:"kmsKeyID,omitempty"`
	SnapshotID          *string            `json:"snapshotID,omitempty"`
	Throughput          *int64             `json:"throughput,omitempty"`
	VolumeSize          *resource.Quantity `json:"volumeSize,omitempty"`
	VolumeType          *string            `json:"volumeType,omitempty"`
}
