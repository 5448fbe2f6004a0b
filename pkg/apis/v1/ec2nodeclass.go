package v1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AMI families of an EC2NodeClass.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
	AMIFamilyCustom       = "Custom"
)

// EC2NodeClass says how a NodePool's nodes are launched on EC2.
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EC2NodeClassSpec `json:"spec,omitempty"`
	Status json.RawMessage  `json:"status,omitempty"`
}

// EC2NodeClassList is a list of EC2NodeClasses.
type EC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EC2NodeClass `json:"items"`
}

// EC2NodeClassSpec is the desired state of an EC2NodeClass.
type EC2NodeClassSpec struct {
	SubnetSelectorTerms              []SubnetSelectorTerm              `json:"subnetSelectorTerms"`
	SecurityGroupSelectorTerms       []SecurityGroupSelectorTerm       `json:"securityGroupSelectorTerms"`
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`
	PlacementGroupSelector           *PlacementGroupSelector           `json:"placementGroupSelector,omitempty"`
	AssociatePublicIPAddress         *bool                             `json:"associatePublicIPAddress,omitempty"`
	IPPrefixCount                    *int32                            `json:"ipPrefixCount,omitempty"`
	AMISelectorTerms                 []AMISelectorTerm                 `json:"amiSelectorTerms"`
	// AMIFamily is required unless an alias term names the family.
	AMIFamily *string `json:"amiFamily,omitempty"`
	UserData  *string `json:"userData,omitempty"`
	// Role and InstanceProfile: exactly one must be set.
	Role            string            `json:"role,omitempty"`
	InstanceProfile *string           `json:"instanceProfile,omitempty"`
	Tags            map[string]string `json:"tags,omitempty"`
	// Kubelet is an open map mirroring the upstream KubeletConfiguration.
	Kubelet             map[string]json.RawMessage `json:"kubelet,omitempty"`
	BlockDeviceMappings []*BlockDeviceMapping      `json:"blockDeviceMappings,omitempty"`
	InstanceStorePolicy *string                    `json:"instanceStorePolicy,omitempty"`
	NetworkInterfaces   []*NetworkInterface        `json:"networkInterfaces,omitempty"`
	DetailedMonitoring  *bool                      `json:"detailedMonitoring,omitempty"`
	MetadataOptions     *MetadataOptions           `json:"metadataOptions,omitempty"`
	EnclaveOptions      *EnclaveOptions            `json:"enclaveOptions,omitempty"`
	ConnectionTracking  *ConnectionTracking        `json:"connectionTracking,omitempty"`
	Context             *string                    `json:"context,omitempty"`
	CPUOptions          *CPUOptions                `json:"cpuOptions,omitempty"`
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

// CapacityReservationSelectorTerm selects on-demand capacity reservations
// and capacity blocks.
type CapacityReservationSelectorTerm struct {
	Tags                  map[string]string `json:"tags,omitempty"`
	ID                    string            `json:"id,omitempty"`
	OwnerID               string            `json:"ownerID,omitempty"`
	InstanceMatchCriteria string            `json:"instanceMatchCriteria,omitempty"`
}

// PlacementGroupSelector names a placement group by name or id.
type PlacementGroupSelector struct {
	Name *string `json:"name,omitempty"`
	ID   *string `json:"id,omitempty"`
}

// AMISelectorTerm selects AMIs by alias, tags, id, name/owner or an SSM
// parameter.
type AMISelectorTerm struct {
	Alias        string            `json:"alias,omitempty"`
	Tags         map[string]string `json:"tags,omitempty"`
	ID           string            `json:"id,omitempty"`
	Name         string            `json:"name,omitempty"`
	Owner        string            `json:"owner,omitempty"`
	SSMParameter string            `json:"ssmParameter,omitempty"`
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
	// RootVolume marks the volume the kubelet root dir lives on.
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice describes an EBS volume.
type BlockDevice struct {
	DeleteOnTermination      *bool   `json:"deleteOnTermination,omitempty"`
	Encrypted                *bool   `json:"encrypted,omitempty"`
	IOPS                     *int64  `json:"iops,omitempty"`
	KMSKeyID                 *string `json:"kmsKeyID,omitempty"`
	SnapshotID               *string `json:"snapshotID,omitempty"`
	Throughput               *int64  `json:"throughput,omitempty"`
	VolumeInitializationRate *int32  `json:"volumeInitializationRate,omitempty"`
	// VolumeSize is in Gi, G, Ti or T, for example 20Gi.
	VolumeSize *string `json:"volumeSize,omitempty"`
	VolumeType *string `json:"volumeType,omitempty"`
}

// NetworkInterface is one network interface of a node.
type NetworkInterface struct {
	NetworkCardIndex int32  `json:"networkCardIndex"`
	DeviceIndex      int32  `json:"deviceIndex"`
	InterfaceType    string `json:"interfaceType"`
}

// EnclaveOptions turns on Nitro Enclaves.
type EnclaveOptions struct {
	Enabled *bool `json:"enabled"`
}

// ConnectionTracking sets idle connection tracking timeouts (seconds).
type ConnectionTracking struct {
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	UDPStreamTimeout      *int32 `json:"udpStreamTimeout,omitempty"`
	UDPTimeout            *int32 `json:"udpTimeout,omitempty"`
}

// CPUOptions holds CPU settings of the instance.
type CPUOptions struct {
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}
