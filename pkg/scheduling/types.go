package scheduling

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// InstanceType is what the simulator needs to know about one EC2 instance
// type. It is independent of pkg/catalog so the simulator stays a leaf: the
// caller converts (see the benchmark helper and cmd/joist/plan.go).
type InstanceType struct {
	Name string
	// Labels are the labels a node of this type carries because of its
	// type: instance-type, arch, os and the karpenter.k8s.aws/instance-*
	// family. Zone, region and capacity type come from the offering.
	Labels map[string]string
	// Capacity is what the node reports; pool limits count it.
	Capacity corev1.ResourceList
	// Allocatable is Capacity less kube-reserved, system-reserved and the
	// eviction threshold. A pool whose kubelet settings change it gets its
	// own list through Input.PoolInstanceTypes.
	Allocatable corev1.ResourceList
	Offerings   []Offering
	// VolumeLimits are the volumes a node of this type can attach per
	// CSI driver (ebs.csi.aws.com: …); a driver not listed is unlimited.
	// Nil for most callers: then nothing is limited.
	VolumeLimits map[string]int64
}

// Offering is one zone and capacity type a type can be launched in.
type Offering struct {
	Zone         string
	CapacityType string
	// Price is USD per hour. Whether it can be launched now is
	// Input.Unavailable's to say.
	Price float64
}

// Node is a node the plan may put pods on without launching anything: an
// existing node of the cluster, or an in-flight one (launched, not yet
// registered), described from EC2 tags and the catalog.
type Node struct {
	// Name is the node name, or for an in-flight node the instance id.
	Name string
	// Pool is the pool the node belongs to ("" for nodes Joist does not
	// manage); its capacity counts against that pool's limits.
	Pool string
	// InFlight marks a launched instance that has not registered yet. Its
	// DaemonSet pods are not running yet, so their overhead is reserved.
	InFlight bool
	Labels   map[string]string
	Taints   []corev1.Taint
	// Unschedulable is a cordoned node: nothing new goes there.
	Unschedulable bool
	Capacity      corev1.ResourceList
	Allocatable   corev1.ResourceList
	// VolumeLimits are the volumes the node can attach per CSI driver,
	// from its CSINode (drivers[].allocatable.count). Nil until the
	// CSINode is published: then its instance type's limits apply.
	VolumeLimits map[string]int64
	// Pods are the pods bound to the node (DaemonSet pods included) or, for
	// an in-flight node, the pods already planned onto it.
	Pods []*corev1.Pod
	// Bound are more pods bound to the node, in their compact form
	// (NewBoundPod): what a reader of a large cluster gives for the
	// running pods nothing moves. Solve reads them as it reads Pods.
	Bound []BoundPod
	// PricePerHour is informational (it is not part of the plan's cost).
	PricePerHour float64
}

// Input is everything the simulator looks at. Solve treats it as read-only.
type Input struct {
	// Pods are the pending pods to place. Pods owned by a DaemonSet or
	// already bound are skipped (reported in Plan.Skipped).
	Pods []*corev1.Pod
	// Nodes are the existing and in-flight nodes, filled before anything new
	// is launched.
	Nodes      []*Node
	DaemonSets []*appsv1.DaemonSet
	// Pools are the node pools. Pools with Replicas set (static pools) are
	// never scaled by the simulator.
	Pools []*model.Pool
	// ZoneIDs are the zones' IDs (topology.k8s.aws/zone-id), by zone
	// name, as the node classes' subnets give them: with them a pod or
	// pool may select or spread by zone ID (zoneid.go); nil when unknown.
	ZoneIDs map[string]string
	// NotReady are pools that cannot launch now, by name, with why (their
	// node class selects no subnet, say): as Karpenter leaves a NodePool
	// that is not Ready out of scheduling, no new node is planned in them
	// and they give no topology domains; their nodes are nodes like any.
	NotReady map[string]string
	// InstanceTypes are the types every pool may choose from (further
	// narrowed by each pool's requirements).
	InstanceTypes []*InstanceType
	// PoolInstanceTypes overrides InstanceTypes for a pool by name, for
	// pools whose kubelet settings change allocatable.
	PoolInstanceTypes map[string][]*InstanceType
	// Prepared are InstanceTypes and PoolInstanceTypes lists prepared
	// once for many solves (PrepareTypes; fromcatalog.Input fills it). A
	// list without its prepared form here is prepared for the one solve.
	Prepared []*PreparedTypes
	// Region fills topology.kubernetes.io/region on new nodes.
	Region string
	// Unavailable tells whether an offering must not be used now (after an
	// insufficient-capacity error); nil means every offering is usable.
	Unavailable func(instanceType, zone, capacityType string) bool

	// Volumes: claims, volumes and classes the pods' volumes refer to.
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	// Namespaces give namespaceSelectors of pod (anti)affinity their
	// labels; without them a namespace only has kubernetes.io/metadata.name.
	Namespaces []*corev1.Namespace

	// Options tune the search; the zero value is the default.
	Options Options
}

// Options tune Solve. The zero value is what Joist runs with.
type Options struct {
	// IgnorePreferences drops preferred affinities and ScheduleAnyway
	// spreads up front (Karpenter's PREFERENCE_POLICY=Ignore).
	IgnorePreferences bool
	// NoImprove skips the local search after the first packing (for
	// comparisons and debugging).
	NoImprove bool
	// MinValuesBestEffort is Karpenter's MinValuesPolicy=BestEffort: a
	// pool's minValues neither limit how a new node is packed nor fail
	// it; a node whose options offer fewer values is launched with the
	// minValues lowered to what they offer (NewNode.MinValuesRelaxed).
	MinValuesBestEffort bool
}

// Plan is Solve's answer.
type Plan struct {
	// Existing lists pods placed on existing or in-flight nodes, one entry
	// per node that received any, in Input.Nodes order.
	Existing []Placement
	// NewNodes are the nodes to launch, in pool-weight order.
	NewNodes []NewNode
	// Unschedulable are pods no node can take, with the reason.
	Unschedulable []Failure
	// Skipped are pods the simulator does not place at all (DaemonSet pods,
	// pods already bound), with why.
	Skipped []Failure
	// Relaxed are placed pods whose preferences (or, for several OR'ed
	// required node terms, the first terms) had to be given up, with what
	// was given up, in Karpenter's relaxation order.
	Relaxed []Failure
	// TotalPricePerHour is the sum of the new nodes' cheapest offerings.
	TotalPricePerHour float64
	// LowerBoundPricePerHour is a proven lower bound on the $/h of any plan
	// that places the same pods on new nodes (see docs/scheduling.md).
	LowerBoundPricePerHour float64
}

// Placement is a set of pods put on one existing or in-flight node.
type Placement struct {
	Node     string
	InFlight bool
	Pods     []*corev1.Pod
}

// NewNode is one node to launch.
type NewNode struct {
	Pool string
	// Requirements are the node's requirements: the pool's, narrowed by the
	// pods it holds (zone, capacity type, instance types, custom labels).
	// Read only: the instance type names are shared like the options.
	Requirements []model.Requirement
	// Labels are the labels the node gets beyond those of its instance type
	// and offering: pool labels and single-valued requirements.
	Labels map[string]string
	// Taints are the pool's taints (startup taints not included).
	Taints []corev1.Taint
	// InstanceTypeOptions are every type that holds the node's pods and
	// DaemonSets, cheapest first; CreateFleet picks among them. Read only:
	// new nodes with the same options share one list, within a plan and
	// across solves against one prepared catalog.
	InstanceTypeOptions []InstanceTypeOption
	// Cheapest is the offering the plan's price assumes.
	Cheapest Launch
	// Zones are the zones the node may be launched in.
	Zones []string
	// CapacityTypes are the capacity types the node may use.
	CapacityTypes []string
	Pods          []*corev1.Pod
	// Requests is the pods' requests plus the DaemonSet overhead reserved
	// on the cheapest type.
	Requests corev1.ResourceList
	// MinValuesRelaxed is set when Options.MinValuesBestEffort lowered a
	// minValues of the pool for this node (Requirements carry the
	// lowered counts, as Karpenter's NodeClaim does).
	MinValuesRelaxed bool
}

// InstanceTypeOption is one type a new node may be, with its cheapest
// usable offering for the node's zones and capacity types.
type InstanceTypeOption struct {
	Name         string
	Zone         string
	CapacityType string
	PricePerHour float64
}

// Launch is an offering chosen for a node.
type Launch struct {
	InstanceType string
	Zone         string
	CapacityType string
	PricePerHour float64
}

// Failure is a pod that could not be placed, and why.
type Failure struct {
	Pod    *corev1.Pod
	Reason string
}

// ReadsNamespaces says whether planning among these pods needs the
// cluster's Namespace objects (Input.Namespaces): some pod (anti-)affinity
// term selects namespaces by their labels. Callers read namespaces only
// then; an empty selector ({}: every namespace) needs none.
func ReadsNamespaces(groups ...[]*corev1.Pod) bool {
	for _, ps := range groups {
		for _, p := range ps {
			for _, t := range podAffinityTerms(p.Spec.Affinity) {
				if s := t.NamespaceSelector; s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0) {
					return true
				}
			}
		}
	}
	return false
}

// podAffinityTerms are every pod affinity and anti-affinity term of a,
// required and preferred.
func podAffinityTerms(a *corev1.Affinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	var out []corev1.PodAffinityTerm
	add := func(req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm) {
		out = append(out, req...)
		for _, w := range pref {
			out = append(out, w.PodAffinityTerm)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		add(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		add(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return out
}
