// Package model is Joist's one internal view of node pools and node classes.
//
// Both Karpenter API generations (v1alpha5 Provisioner + v1alpha1
// AWSNodeTemplate, and v1 NodePool + EC2NodeClass) are defaulted, validated
// and then mapped onto these types; everything past the spec reader
// (catalog, simulator, launcher, disruption) uses only this package. It is
// pure: no SDK, no client, no clock.
package model

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/kubeletcel"
)

// Well-known label keys Joist reads and writes.
const (
	LabelNodePool        = "karpenter.sh/nodepool"
	LabelProvisionerName = "karpenter.sh/provisioner-name"
	LabelCapacityType    = "karpenter.sh/capacity-type"
	LabelInstanceType    = corev1.LabelInstanceTypeStable // node.kubernetes.io/instance-type
	LabelZone            = corev1.LabelTopologyZone       // topology.kubernetes.io/zone
	LabelRegion          = corev1.LabelTopologyRegion
	LabelArch            = corev1.LabelArchStable
	LabelOS              = corev1.LabelOSStable
	LabelHostname        = corev1.LabelHostname

	CapacityTypeOnDemand = "on-demand"
	CapacityTypeSpot     = "spot"
	// CapacityTypeReserved is capacity an EC2 capacity reservation (an
	// on-demand capacity reservation or a capacity block) holds for the
	// account: a node launched into one carries the reservation's labels.
	CapacityTypeReserved = "reserved"

	LabelReservationID   = "karpenter.k8s.aws/capacity-reservation-id"
	LabelReservationType = "karpenter.k8s.aws/capacity-reservation-type"

	// LabelPlacementGroupID is the placement group a node was launched
	// into (its node class's placementGroupSelector), and
	// LabelPlacementGroupPartition its partition in a partition placement
	// group: Karpenter's well-known labels, which pods may select and
	// spread over.
	LabelPlacementGroupID        = "karpenter.k8s.aws/placement-group-id"
	LabelPlacementGroupPartition = "karpenter.k8s.aws/placement-group-partition"
)

// NormalizedLabelKeys maps deprecated and provider-specific label keys
// onto the key Karpenter (and so Joist) schedules with. Karpenter
// normalises requirement keys before validating and defaulting them, so a
// v1alpha5 requirement on beta.kubernetes.io/arch counts as an arch
// requirement, and a pod asking for the EBS CSI zone key constrains the
// zone. The spec reader and the simulator both read this one list.
var NormalizedLabelKeys = map[string]string{
	corev1.LabelFailureDomainBetaZone:   corev1.LabelTopologyZone,
	corev1.LabelFailureDomainBetaRegion: corev1.LabelTopologyRegion,
	"beta.kubernetes.io/arch":           corev1.LabelArchStable,
	"beta.kubernetes.io/os":             corev1.LabelOSStable,
	corev1.LabelInstanceType:            corev1.LabelInstanceTypeStable,
	// Added by the AWS provider in the v1 era.
	"topology.ebs.csi.aws.com/zone": corev1.LabelTopologyZone,
}

// NormalizeLabelKey returns the key k stands for (k itself when it is not
// a deprecated or provider-specific alias).
func NormalizeLabelKey(k string) string {
	if n, ok := NormalizedLabelKeys[k]; ok {
		return n
	}
	return k
}

// API generation a pool was read from. It decides which pool label a node
// carries (karpenter.sh/provisioner-name or karpenter.sh/nodepool).
const (
	APIV1Alpha5 = "v1alpha5"
	APIV1       = "v1"
)

// Requirement is a node selector requirement with Karpenter v1's minValues.
// Operators are the core ones plus Gte and Lte.
type Requirement struct {
	Key       string   `json:"key"`
	Operator  string   `json:"operator"`
	Values    []string `json:"values,omitempty"`
	MinValues *int     `json:"minValues,omitempty"`
}

// Pool is a node pool: what a new node may be and what it carries.
type Pool struct {
	Name string `json:"name"`
	// API is APIV1Alpha5 or APIV1.
	API          string            `json:"api"`
	Requirements []Requirement     `json:"requirements,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	// ObjectAnnotations are the Provisioner's or NodePool's own
	// metadata.annotations (Joist's options such as joist.sh/rebalance),
	// not the nodes' (Annotations).
	ObjectAnnotations map[string]string `json:"objectAnnotations,omitempty"`
	Taints            []corev1.Taint    `json:"taints,omitempty"`
	StartupTaints     []corev1.Taint    `json:"startupTaints,omitempty"`
	// Limits caps the total capacity of the pool's nodes (cpu, memory,
	// nodes, any resource). Nil means unlimited.
	Limits corev1.ResourceList `json:"limits,omitempty"`
	// Weight orders pools: higher first. Unset counts as 0.
	Weight int32 `json:"weight,omitempty"`
	// NodeClass names the pool's node class (providerRef / nodeClassRef).
	NodeClass string `json:"nodeClass,omitempty"`
	// Kubelet is the pool's kubelet configuration (v1alpha5 keeps it on
	// the Provisioner; v1 on the EC2NodeClass, copied here for sizing).
	Kubelet    *Kubelet   `json:"kubelet,omitempty"`
	Disruption Disruption `json:"disruption"`
	// Replicas makes a v1 pool static (alpha in Karpenter): exactly this
	// many nodes, never scaled by pending pods. Nil means a dynamic pool.
	Replicas *int64 `json:"replicas,omitempty"`
}

// StaticTarget is how many nodes a static pool (Replicas set) keeps: its
// replicas, at most its limits.nodes; 0 for a dynamic pool.
func (p *Pool) StaticTarget() int {
	if p.Replicas == nil {
		return 0
	}
	want := *p.Replicas
	if q, ok := p.Limits["nodes"]; ok {
		want = min(want, q.Value())
	}
	return int(max(0, min(want, math.MaxInt32)))
}

// Label returns the node label that names this pool for its API generation.
func (p *Pool) Label() string {
	if p.API == APIV1Alpha5 {
		return LabelProvisionerName
	}
	return LabelNodePool
}

// Disruption holds when a pool's nodes are retired.
type Disruption struct {
	// ConsolidationPolicy is WhenEmpty, WhenEmptyOrUnderutilized or Balanced.
	ConsolidationPolicy string `json:"consolidationPolicy,omitempty"`
	// ConsolidateAfter is the quiet time before an empty or underused node
	// is removed; nil means never.
	ConsolidateAfter *time.Duration `json:"consolidateAfter,omitempty"`
	// ExpireAfter is the maximum node lifetime; nil means never.
	ExpireAfter *time.Duration `json:"expireAfter,omitempty"`
	// TerminationGracePeriod caps drain time; nil means wait forever.
	TerminationGracePeriod *time.Duration `json:"terminationGracePeriod,omitempty"`
	Budgets                []Budget       `json:"budgets,omitempty"`
}

// Budget limits how many nodes may be disrupted at once.
type Budget struct {
	Nodes    string         `json:"nodes"`
	Schedule string         `json:"schedule,omitempty"`
	Duration *time.Duration `json:"duration,omitempty"`
	Reasons  []string       `json:"reasons,omitempty"`
}

// Kubelet is the subset of kubelet settings Joist sizes nodes with and
// passes to the node's bootstrap.
type Kubelet struct {
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	MaxPods    *int32   `json:"maxPods,omitempty"`
	// MaxPodsExpression is a v1 maxPods given as a CEL expression
	// (evaluated per instance type) instead of a number.
	MaxPodsExpression           string            `json:"maxPodsExpression,omitempty"`
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
	ContainerRuntime            string            `json:"containerRuntime,omitempty"`
	// Extra holds v1 kubelet keys Joist does not interpret; they are passed
	// through to AL2023's NodeConfig as given.
	Extra map[string]any `json:"extra,omitempty"`
	// EvaluateCEL is Karpenter's NodeClassCEL feature gate, on: the
	// settings given as CEL expressions (Expressions) are evaluated per
	// instance type (catalog.InstanceType.KubeletFor) rather than keep the
	// pools from launching. The operator's setting, not the spec's: no
	// part of the spec hash (Spec.WithNodeClassCEL sets it).
	EvaluateCEL bool `json:"-"`
}

// Expressions are the kubelet settings given as CEL expressions, as
// spec.kubelet paths ("maxPods", "kubeReserved.cpu"), sorted: Karpenter
// v1.15 evaluates them per instance type only behind its NodeClassCEL
// feature gate (alpha, off by default), and with the gate off marks such
// an EC2NodeClass not ready rather than launch nodes with defaults the
// user did not ask for. Joist does the same (EvaluateCEL).
func (k *Kubelet) Expressions() []string {
	if k == nil {
		return nil
	}
	var out []string
	if k.MaxPodsExpression != "" {
		out = append(out, "maxPods")
	}
	for _, f := range []struct {
		name string
		m    map[string]string
	}{{"kubeReserved", k.KubeReserved}, {"systemReserved", k.SystemReserved}} {
		for key, v := range f.m {
			if _, err := resource.ParseQuantity(v); err != nil {
				out = append(out, f.name+"."+key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// KubeletNotReady says why a pool of class nc whose kubelet settings are k
// cannot launch a node ("": it can): settings its AMI family would drop
// (kubeletDropped), settings given as CEL expressions
// (Kubelet.Expressions) without the NodeClassCEL gate, or one that does
// not compile (an int or a double of the instance type's variables,
// pkg/kubeletcel). Launching with the family's defaults instead would be
// a node the user did not ask for, and a reservation such as "vcpus * 10"
// in the node's kubelet configuration would keep it from starting.
func KubeletNotReady(nc *NodeClass, k *Kubelet) string {
	if why := kubeletDropped(nc, k); why != "" {
		return fmt.Sprintf("node class %q: %s", nc.Name, why)
	}
	paths := k.Expressions()
	if len(paths) == 0 {
		return ""
	}
	if k.EvaluateCEL {
		for _, p := range paths {
			if err := kubeletcel.Compile(k.expression(p)); err != nil {
				return fmt.Sprintf("node class %q: spec.kubelet.%s: %v", nc.Name, p, err)
			}
		}
		return ""
	}
	for i, p := range paths {
		paths[i] = "spec.kubelet." + p
	}
	return fmt.Sprintf("node class %q: %s: CEL expressions need Karpenter's NodeClassCEL feature gate (FEATURE_GATES=NodeClassCEL=true): give numbers and quantities, or turn it on", nc.Name, strings.Join(paths, ", "))
}

// kubeletDropped says which of an EC2NodeClass's kubelet settings its
// AMI family would drop ("": none), as Karpenter v1.15 refuses such a
// class (validateKubeletFieldsSupported) rather than launch nodes
// without what the user set: only AL2023 (and Custom, whose bootstrap is
// the user's) takes kubelet fields Karpenter does not map (Extra), and
// AL2, Bottlerocket and Windows take one clusterDNS address;
// Bottlerocket has no podsPerCore.
func kubeletDropped(nc *NodeClass, k *Kubelet) string {
	if k == nil || nc.API != APIV1 || nc.AMIFamily == "" || nc.AMIFamily == "AL2023" || nc.AMIFamily == "Custom" {
		return ""
	}
	var drop, why []string
	for key := range k.Extra {
		drop = append(drop, key)
	}
	if k.PodsPerCore != nil && nc.AMIFamily == "Bottlerocket" {
		drop = append(drop, "podsPerCore")
	}
	if len(drop) > 0 {
		sort.Strings(drop)
		why = append(why, fmt.Sprintf("spec.kubelet has fields not applied by the %s AMI family that would be silently dropped: %s", nc.AMIFamily, strings.Join(drop, ", ")))
	}
	if len(k.ClusterDNS) > 1 {
		why = append(why, fmt.Sprintf("spec.kubelet.clusterDNS: the %s AMI family doesn't accept multiple entries, only one, but %d were set", nc.AMIFamily, len(k.ClusterDNS)))
	}
	return strings.Join(why, "; ")
}

// expression is the CEL expression at path (one of Expressions).
func (k *Kubelet) expression(path string) string {
	if path == "maxPods" {
		return k.MaxPodsExpression
	}
	field, key, _ := strings.Cut(path, ".")
	if field == "kubeReserved" {
		return k.KubeReserved[key]
	}
	return k.SystemReserved[key]
}

// SelectorTerm finds AWS resources (subnets, security groups, AMIs). Terms
// of a list are OR'ed; the fields inside one term are AND'ed. Tag values
// may hold `*` wildcards.
type SelectorTerm struct {
	Tags  map[string]string `json:"tags,omitempty"`
	ID    string            `json:"id,omitempty"`
	Name  string            `json:"name,omitempty"`
	Owner string            `json:"owner,omitempty"`
	// Alias is an AMI family alias such as al2023@latest.
	Alias string `json:"alias,omitempty"`
	// SSMParameter names an SSM parameter holding an AMI id.
	SSMParameter string `json:"ssmParameter,omitempty"`
}

// NodeClass is how a pool's nodes are launched on EC2.
type NodeClass struct {
	Name string `json:"name"`
	// API is APIV1Alpha5 (AWSNodeTemplate) or APIV1 (EC2NodeClass).
	API                   string         `json:"api"`
	SubnetSelector        []SelectorTerm `json:"subnetSelector,omitempty"`
	SecurityGroupSelector []SelectorTerm `json:"securityGroupSelector,omitempty"`
	AMISelector           []SelectorTerm `json:"amiSelector,omitempty"`
	// AMIFamily is AL2, AL2023, Bottlerocket, Ubuntu, Custom or Windows*.
	AMIFamily       string            `json:"amiFamily,omitempty"`
	UserData        *string           `json:"userData,omitempty"`
	Role            string            `json:"role,omitempty"`
	InstanceProfile string            `json:"instanceProfile,omitempty"`
	Tags            map[string]string `json:"tags,omitempty"`
	// LaunchTemplate names a user-managed launch template (v1alpha1 only).
	LaunchTemplate      string               `json:"launchTemplate,omitempty"`
	MetadataOptions     *MetadataOptions     `json:"metadataOptions,omitempty"`
	BlockDeviceMappings []BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	Kubelet             *Kubelet             `json:"kubelet,omitempty"`
	InstanceStorePolicy string               `json:"instanceStorePolicy,omitempty"`
	AssociatePublicIP   *bool                `json:"associatePublicIPAddress,omitempty"`
	DetailedMonitoring  *bool                `json:"detailedMonitoring,omitempty"`
	Context             string               `json:"context,omitempty"`
	// CapacityReservationSelector finds on-demand capacity reservations
	// and capacity blocks (v1 only).
	CapacityReservationSelector []CapacityReservationTerm `json:"capacityReservationSelector,omitempty"`
	// PlacementGroup names a placement group by name or id (v1 only).
	PlacementGroup *PlacementGroup `json:"placementGroup,omitempty"`
	// IPPrefixCount is the number of IPv4 prefixes for the primary ENI.
	IPPrefixCount     *int32             `json:"ipPrefixCount,omitempty"`
	NetworkInterfaces []NetworkInterface `json:"networkInterfaces,omitempty"`
	// NestedVirtualization is "enabled", "disabled" or empty (unset).
	NestedVirtualization string `json:"nestedVirtualization,omitempty"`
	// ReservedENIs is not the class's but the operator's: the ENIs per
	// node the VPC CNI may not give pods (JOIST_RESERVED_ENIS, Karpenter's
	// RESERVED_ENIS, for custom networking), set on every class as the
	// specs are read (wiring.Env.Specs), so that the pod density of every
	// type follows. Not part of the spec: it changes no spec hash.
	ReservedENIs int64 `json:"-"`
	// EnclaveEnabled turns on Nitro Enclaves; nil means unset.
	EnclaveEnabled     *bool               `json:"enclaveEnabled,omitempty"`
	ConnectionTracking *ConnectionTracking `json:"connectionTracking,omitempty"`
}

// CapacityReservationTerm selects capacity reservations. Terms are OR'ed.
type CapacityReservationTerm struct {
	Tags                  map[string]string `json:"tags,omitempty"`
	ID                    string            `json:"id,omitempty"`
	OwnerID               string            `json:"ownerID,omitempty"`
	InstanceMatchCriteria string            `json:"instanceMatchCriteria,omitempty"`
}

// PlacementGroup names a placement group; exactly one field is set.
type PlacementGroup struct {
	Name string `json:"name,omitempty"`
	ID   string `json:"id,omitempty"`
}

// NetworkInterface is one ENI of a node; InterfaceType is "interface"
// or "efa-only".
type NetworkInterface struct {
	NetworkCardIndex int32  `json:"networkCardIndex"`
	DeviceIndex      int32  `json:"deviceIndex"`
	InterfaceType    string `json:"interfaceType"`
}

// ConnectionTracking holds idle connection tracking timeouts in seconds.
type ConnectionTracking struct {
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	UDPStreamTimeout      *int32 `json:"udpStreamTimeout,omitempty"`
	UDPTimeout            *int32 `json:"udpTimeout,omitempty"`
}

// MetadataOptions are the instance metadata service settings.
type MetadataOptions struct {
	HTTPEndpoint            string `json:"httpEndpoint,omitempty"`
	HTTPProtocolIPv6        string `json:"httpProtocolIPv6,omitempty"`
	HTTPPutResponseHopLimit int32  `json:"httpPutResponseHopLimit,omitempty"`
	HTTPTokens              string `json:"httpTokens,omitempty"`
}

// BlockDeviceMapping is one EBS volume of a node.
type BlockDeviceMapping struct {
	DeviceName string `json:"deviceName"`
	RootVolume bool   `json:"rootVolume,omitempty"`
	EBS        *EBS   `json:"ebs,omitempty"`
	// VirtualName names an instance store volume (v1alpha1 only).
	VirtualName string `json:"virtualName,omitempty"`
}

// EBS describes an EBS volume.
type EBS struct {
	DeleteOnTermination *bool  `json:"deleteOnTermination,omitempty"`
	Encrypted           *bool  `json:"encrypted,omitempty"`
	IOPS                *int64 `json:"iops,omitempty"`
	KMSKeyID            string `json:"kmsKeyID,omitempty"`
	SnapshotID          string `json:"snapshotID,omitempty"`
	Throughput          *int64 `json:"throughput,omitempty"`
	VolumeSize          string `json:"volumeSize,omitempty"`
	VolumeType          string `json:"volumeType,omitempty"`
	// VolumeInitializationRate is the snapshot initialization rate in
	// MiB/s (v1 only).
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`
}

// Spec is a resolved set of pools with their node classes, and the
// problems found while reading it. One bad object never hides the others.
type Spec struct {
	Pools       []*Pool               `json:"pools"`
	NodeClasses map[string]*NodeClass `json:"nodeClasses"`
	// Overlays are the valid NodeOverlays, highest weight first (then by
	// name, descending, as Karpenter orders them).
	Overlays []*Overlay `json:"overlays,omitempty"`
	// Declared names every pool the source holds an object for, valid or
	// not (Pools holds only the valid ones). A node of a pool that is not
	// declared belongs to a deleted pool and is retired, as Karpenter's
	// NodePool deletion takes its nodes along; a pool whose object is
	// merely invalid keeps its nodes.
	Declared map[string]bool `json:"-"`
	// Partial is set when some document of the source could not be read
	// at all, so a declared pool may be missing from Declared: nothing is
	// then judged deleted.
	Partial bool `json:"-"`
}

// WithReservedENIs is spec with every node class's ReservedENIs set to n
// (the classes copied; spec itself is not changed): the operator's
// RESERVED_ENIS, which every type's pod density follows. With n 0 it is
// spec.
func (s *Spec) WithReservedENIs(n int64) *Spec {
	if s == nil || n == 0 {
		return s
	}
	out := *s
	out.NodeClasses = make(map[string]*NodeClass, len(s.NodeClasses))
	for name, nc := range s.NodeClasses {
		c := *nc
		c.ReservedENIs = n
		out.NodeClasses[name] = &c
	}
	return &out
}

// WithNodeClassCEL is spec with every kubelet setting's EvaluateCEL set
// (the pools, classes and settings copied; spec itself is not changed):
// the operator's NodeClassCEL feature gate. With on false it is spec.
func (s *Spec) WithNodeClassCEL(on bool) *Spec {
	if s == nil || !on {
		return s
	}
	out := *s
	evaluating := func(k *Kubelet) *Kubelet {
		if k == nil {
			return nil
		}
		c := *k
		c.EvaluateCEL = true
		return &c
	}
	out.Pools = make([]*Pool, len(s.Pools))
	for i, p := range s.Pools {
		c := *p
		c.Kubelet = evaluating(p.Kubelet)
		out.Pools[i] = &c
	}
	out.NodeClasses = make(map[string]*NodeClass, len(s.NodeClasses))
	for name, nc := range s.NodeClasses {
		c := *nc
		c.Kubelet = evaluating(nc.Kubelet)
		out.NodeClasses[name] = &c
	}
	return &out
}

// Overlay is a NodeOverlay (karpenter.sh/v1alpha1): for the instance
// types and offerings its requirements select in each pool, the price
// the simulator ranks them by and the extended resources they offer
// (pkg/scheduling/fromcatalog applies them).
type Overlay struct {
	Name         string        `json:"name"`
	Requirements []Requirement `json:"requirements,omitempty"`
	// Price replaces an offering's price (USD per hour, as written);
	// PriceAdjustment changes it ("+0.5", "-10%"). At most one is set.
	Price           string `json:"price,omitempty"`
	PriceAdjustment string `json:"priceAdjustment,omitempty"`
	// Capacity adds extended resources to the selected types.
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Weight orders overlays that select the same offering or resource:
	// the highest applies. Unset is 0.
	Weight int32 `json:"weight,omitempty"`
}

// SpecHash is a digest of what a node of pool p, of class nc, is launched
// with, less what drift judges on its own (requirements, the selectors of
// AMIs, subnets, groups and capacity reservations) and less what never
// changes a node (limits, weight, disruption, replicas). A node launched
// under another hash is drifted: Karpenter's static drift (its
// nodepool-hash and ec2nodeclass-hash annotations), as one instance tag.
func SpecHash(p *Pool, nc *NodeClass) string {
	type poolPart struct {
		Labels        map[string]string `json:"labels,omitempty"`
		Annotations   map[string]string `json:"annotations,omitempty"`
		Taints        []corev1.Taint    `json:"taints,omitempty"`
		StartupTaints []corev1.Taint    `json:"startupTaints,omitempty"`
		NodeClass     string            `json:"nodeClass,omitempty"`
		Kubelet       *Kubelet          `json:"kubelet,omitempty"`
	}
	var class NodeClass
	if nc != nil {
		class = *nc
		class.SubnetSelector, class.SecurityGroupSelector, class.AMISelector, class.CapacityReservationSelector = nil, nil, nil, nil
	}
	b, _ := json.Marshal(struct {
		Pool  poolPart  `json:"pool"`
		Class NodeClass `json:"class"`
	}{poolPart{p.Labels, p.Annotations, p.Taints, p.StartupTaints, p.NodeClass, p.Kubelet}, class})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
