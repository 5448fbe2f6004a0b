package launch

import (
	"time"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
)

// MaxInstanceTypes is how many instance types one CreateFleet may try,
// cheapest first (Karpenter's limit too).
const MaxInstanceTypes = 60

// Option is one way to launch the node: an instance type in a zone with a
// capacity type, at a price.
type Option struct {
	InstanceType string
	// Arch is amd64 or arm64.
	Arch string
	// Variant is the AMI variant the type needs: "standard", "nvidia" or
	// "neuron" ("" means standard).
	Variant      string
	Zone         string
	CapacityType string
	Price        float64
	// MaxPods is the pod capacity the plan sized the type with (the
	// provisioner sets it from the catalog it planned with). Zero means
	// Launch works it out from the embedded catalog and the pool's kubelet
	// settings; the node is told the number so it never disagrees with the
	// plan.
	MaxPods int64
	// Kubelet is the kubelet settings the plan sized the type with: the
	// pool's, with their CEL expressions evaluated for the type under the
	// NodeClassCEL gate (catalog.InstanceType.KubeletFor). Nil means
	// Launch works them out from the embedded catalog. Types whose settings
	// differ get launch templates of their own.
	Kubelet *model.Kubelet
	// ReservationID is the capacity reservation the option launches into
	// (CapacityType "reserved" only); ReservationType is its type,
	// "default" or "capacity-block".
	ReservationID   string
	ReservationType string
	// PriceOverlaid marks a Price a NodeOverlay set: EC2's prices are
	// not the plan's, so the fleet launches by the options' priorities
	// (their Price, cheapest first) instead, as Karpenter does with
	// overlays.
	PriceOverlaid bool
}

// Reservation is an active EC2 capacity reservation (an on-demand
// capacity reservation or a capacity block) a node class selects.
type Reservation struct {
	ID           string
	InstanceType string
	Zone         string
	OwnerID      string
	// Type is "default" (an ODCR) or "capacity-block".
	Type string
	// MatchCriteria is "open" or "targeted".
	MatchCriteria string
	// Available is how many more instances it can hold now.
	Available int
	// End is when it ends (zero: it does not).
	End time.Time
}

// Request is one node to launch.
type Request struct {
	Pool  *model.Pool
	Class *model.NodeClass
	// Options are every instance-type × zone × capacity-type the node may
	// be; the fleet picks among them.
	Options []Option
	// Labels are what the node registers with besides the ones the kubelet
	// and the launch add (pool labels, requirement-fixed labels, the pool
	// name label).
	Labels map[string]string
	// MaxPods, when positive, overrides every option's.
	MaxPods int64
	// Token makes the launch idempotent: the same token returns the
	// instance the first call launched. Derive it from the plan.
	Token string
}

// Instance is an EC2 instance of the cluster.
type Instance struct {
	ID           string
	InstanceType string
	Zone         string
	SubnetID     string
	CapacityType string
	// ReservationID is the capacity reservation the instance runs in
	// (CapacityType "reserved").
	ReservationID string
	Pool          string
	NodeClass     string
	State         string
	PrivateDNS    string
	LaunchTime    time.Time
	// LaunchTemplateID is the template the instance was launched from.
	LaunchTemplateID string
	// ImageID and SecurityGroups are what the instance runs with (read
	// back from DescribeInstances; drift compares them with the class).
	ImageID        string
	SecurityGroups []string
	Tags           map[string]string
	// Unavailable are offerings the same CreateFleet found out of capacity
	// before it launched this one; the caller marks them.
	Unavailable []catalog.OfferingKey
}
