// Package launch turns a planned node into a running EC2 instance: it finds
// the node class's subnets, security groups and AMIs, renders the user data
// that makes the node join with its pool's labels, taints and kubelet
// settings, keeps a launch template per resolved content, and calls
// CreateFleet (instant, one instance) with every instance-type option and
// zone as an override. It also lists and terminates the instances tagged
// for the cluster and deletes the launch templates no instance uses.
//
// A Launcher lives across warm Lambda invocations: what it discovers
// (subnets, security groups, AMIs, launch templates, the cluster's
// Kubernetes version) is cached briefly in it, so a burst of launches costs
// a handful of describe calls rather than a handful per launch.
package launch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/utils/clock"
)

// Tags Joist puts on everything it launches. The cluster tag is what IAM
// conditions and every listing key on. Joist deliberately does not use
// Karpenter's own tags (karpenter.sh/nodepool and friends): a Karpenter
// still running in the cluster during a migration would take instances
// carrying them for leaked NodeClaims and terminate them.
const (
	TagCluster   = "joist.sh/cluster"
	TagNodePool  = "joist.sh/nodepool"
	TagNodeClass = "joist.sh/nodeclass"
	// TagSpecHash is model.SpecHash of the pool and class an instance
	// was launched for (static drift).
	TagSpecHash = "joist.sh/spec-hash"
	TagPlan     = "joist.sh/plan"
	// TagLaunchTemplateID is the tag EC2 itself puts on an instance
	// launched from a template; DeleteUnusedTemplates reads it.
	TagLaunchTemplateID = "aws:ec2launchtemplate:id"
)

// DefaultCacheTTL is how long discovered subnets, security groups, AMIs and
// cluster details are reused (Karpenter refreshes them every minute too):
// long enough that a burst of launches shares one lookup, short enough that
// a tag change or a new AMI is picked up within a minute.
const DefaultCacheTTL = time.Minute

// EC2API is the part of EC2 the launcher uses.
type EC2API interface {
	CreateFleet(context.Context, *ec2.CreateFleetInput, ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	DescribeInstanceStatus(context.Context, *ec2.DescribeInstanceStatusInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error)
	TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
	DescribeSubnets(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeSecurityGroups(context.Context, *ec2.DescribeSecurityGroupsInput, ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	DescribeImages(context.Context, *ec2.DescribeImagesInput, ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	CreateLaunchTemplate(context.Context, *ec2.CreateLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DeleteLaunchTemplate(context.Context, *ec2.DeleteLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
	DescribeCapacityReservations(context.Context, *ec2.DescribeCapacityReservationsInput, ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error)
	DescribePlacementGroups(context.Context, *ec2.DescribePlacementGroupsInput, ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error)
}

// SSMAPI reads the public AMI parameters (and a node class's own
// ssmParameter AMI terms).
type SSMAPI interface {
	GetParameter(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// EKSAPI reads what the configuration leaves out about the cluster: its
// Kubernetes version, endpoint, certificate authority and service range.
type EKSAPI interface {
	DescribeCluster(context.Context, *eks.DescribeClusterInput, ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// Cluster is what a node needs to know to join.
type Cluster struct {
	Name     string
	Endpoint string
	// CA is the cluster's certificate authority, base64 PEM as EKS gives it.
	CA string
	// Version is the Kubernetes minor version, e.g. "1.32". Empty means:
	// ask EKS (DescribeCluster).
	Version string
	// ServiceCIDR is the cluster's service range (AL2023's NodeConfig
	// requires it). Empty means: ask EKS.
	ServiceCIDR string
	// DNSClusterIP is the kube-dns service IP, when known. A pool's
	// kubelet clusterDNS takes precedence.
	DNSClusterIP string
	// InstanceProfile is the default instance profile for node classes
	// that name none (v1alpha5's aws.defaultInstanceProfile).
	InstanceProfile string
}

// Launcher launches and lists the cluster's instances. The zero value with
// EC2, SSM and Cluster set is ready to use; EKS is needed only when Cluster
// lacks the version, endpoint, CA or service range.
type Launcher struct {
	EC2     EC2API
	SSM     SSMAPI
	EKS     EKSAPI
	Cluster Cluster
	Log     *slog.Logger
	// Clock is the clock that ages the caches and stamps what the
	// Launcher records (nil: the real one; tests pass a
	// k8s.io/utils/clock/testing clock).
	Clock clock.PassiveClock
	// CacheTTL overrides DefaultCacheTTL.
	CacheTTL time.Duration
	// SubnetFullTTL is how long a subnet that reported
	// InsufficientFreeAddressesInSubnet is skipped (default: three
	// minutes, as unavailable offerings).
	SubnetFullTTL time.Duration

	mu sync.Mutex
	// templates maps launch template name → id, created or seen.
	templates map[string]string
	// hydrated is set once the cluster's existing templates were listed.
	hydrated bool
	// cluster is the resolved cluster and when it expires.
	cluster      *Cluster
	clusterUntil time.Time

	subnets ttlCache[[]Subnet]
	groups  ttlCache[[]string]
	images  ttlCache[[]AMI]
	params  ttlCache[string]
	// placements are resolved placement groups (PlacementGroup).
	placements ttlCache[*PlacementGroup]
	full       ttlCache[bool] // subnet id → skipped until expiry
	// inflight counts the addresses this Launcher's launches took from a
	// subnet since it was last listed, so the next launch ranks subnets
	// by what is really left (Karpenter does the same).
	inflight map[string]int
	// failedTokens counts, per plan token, the launches that launched
	// nothing (see effectiveToken).
	failedTokens map[string]int
}

func (l *Launcher) now() time.Time {
	if l.Clock != nil {
		return l.Clock.Now()
	}
	return time.Now()
}

func (l *Launcher) ttl() time.Duration {
	if l.CacheTTL > 0 {
		return l.CacheTTL
	}
	return DefaultCacheTTL
}

func (l *Launcher) log() *slog.Logger {
	if l.Log != nil {
		return l.Log
	}
	return slog.New(slog.DiscardHandler)
}

// ttlCache is a small map with per-entry expiry on the Launcher's clock.
// The zero value is ready; it is safe for concurrent use.
type ttlCache[V any] struct {
	mu      sync.Mutex
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v     V
	until time.Time
}

func (c *ttlCache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.until) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[V]) put(key string, v V, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]ttlEntry[V]{}
	}
	c.entries[key] = ttlEntry[V]{v: v, until: until}
}
