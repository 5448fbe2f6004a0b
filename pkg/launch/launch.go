// Package launch turns a planned node into a running EC2 instance: it finds
// the node class's subnets, security groups and AMI, renders the user data
// that makes the node join with its pool's labels and taints, keeps a
// launch template per resolved content, and calls CreateFleet (instant)
// with every instance-type option and zone as an override. It also lists
// and terminates the instances tagged for the cluster.
package launch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// Tags Joist puts on everything it launches. The cluster tag is what IAM
// conditions and every listing key on.
const (
	TagCluster   = "joist.sh/cluster"
	TagNodePool  = "joist.sh/nodepool"
	TagNodeClass = "joist.sh/nodeclass"
	TagPlan      = "joist.sh/plan"
)

// EC2API is the part of EC2 the launcher uses.
type EC2API interface {
	CreateFleet(context.Context, *ec2.CreateFleetInput, ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
	DescribeSubnets(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeSecurityGroups(context.Context, *ec2.DescribeSecurityGroupsInput, ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	CreateLaunchTemplate(context.Context, *ec2.CreateLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
}

// SSMAPI reads the public AMI parameters.
type SSMAPI interface {
	GetParameter(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// Cluster is what a node needs to know to join.
type Cluster struct {
	Name     string
	Endpoint string
	// CA is the cluster's certificate authority, base64 PEM as EKS gives it.
	CA string
	// Version is the Kubernetes minor version, e.g. "1.32".
	Version string
	// ServiceCIDR is the cluster's service range (AL2023's NodeConfig).
	ServiceCIDR string
	// DNSClusterIP is the kube-dns service IP, when known.
	DNSClusterIP string
	// InstanceProfile is the default instance profile for node classes
	// that name none (v1alpha5's aws.defaultInstanceProfile).
	InstanceProfile string
}

// Launcher launches and lists the cluster's instances.
type Launcher struct {
	EC2     EC2API
	SSM     SSMAPI
	Cluster Cluster
	Log     *slog.Logger
	// Now is the clock (tests pass their own).
	Now func() time.Time

	mu        sync.Mutex
	templates map[string]string // launch template name → id, created or seen
}

func (l *Launcher) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}
