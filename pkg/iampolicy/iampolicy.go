// Package iampolicy is the one source of truth for what each Joist
// function may do in AWS. The CDK stack renders these statements into each
// function's role, and the test ground's EC2 simulator and AWS front
// evaluate every call a function makes against the very same statements,
// so a permission the code needs and the policy lacks fails a test, and a
// statement no test needs is reported as unused.
//
// The package is pure (standard library only) so that the CDK module can
// import it without the product's dependencies.
package iampolicy

import (
	"fmt"
	"sort"
	"strings"
)

// The principals with a policy here: the Lambda functions and the
// in-cluster forwarder.
const (
	Provisioner  = "provisioner"
	Binder       = "binder"
	Reaper       = "reaper"
	Interruption = "interruption"
	Forwarder    = "forwarder"
	// Installer is the stack's custom resource that applies Joist's
	// in-cluster objects (pkg/install): it finds the API server and
	// nothing else; what it may do in the cluster is its access entry's.
	Installer = "installer"
)

// Principals lists every principal For knows, in a fixed order.
func Principals() []string {
	return []string{Provisioner, Binder, Reaper, Interruption, Forwarder, Installer}
}

// ClusterTag is the tag that scopes every EC2 resource Joist creates and
// every destructive call it may make (launch.TagCluster).
const ClusterTag = "joist.sh/cluster"

// Version is the IAM policy language version.
const Version = "2012-10-17"

// Effects.
const (
	Allow = "Allow"
	Deny  = "Deny"
)

// Condition is an IAM condition block: operator → condition key → values.
// Keys of one operator must all hold, and so must all operators; a key's
// values are alternatives (AWS's evaluation rules).
type Condition map[string]map[string][]string

// Statement is one IAM policy statement.
type Statement struct {
	Sid       string
	Effect    string
	Actions   []string
	Resources []string
	Condition Condition
}

// Policy is an identity policy: what one principal may do.
type Policy struct {
	Principal  string
	Statements []Statement
}

// Document is the policy as IAM's JSON document (a value for
// encoding/json, or for the CDK's PolicyDocument.fromJson).
func (p Policy) Document() map[string]any {
	st := make([]any, len(p.Statements))
	for i, s := range p.Statements {
		st[i] = s.JSON()
	}
	return map[string]any{"Version": Version, "Statement": st}
}

// JSON is the statement as IAM's JSON (for PolicyStatement.fromJson).
func (s Statement) JSON() map[string]any {
	out := map[string]any{
		"Sid":      s.Sid,
		"Effect":   s.Effect,
		"Action":   strList(s.Actions),
		"Resource": strList(s.Resources),
	}
	if len(s.Condition) > 0 {
		c := map[string]any{}
		for op, keys := range s.Condition {
			m := map[string]any{}
			for k, v := range keys {
				m[k] = strList(v)
			}
			c[op] = m
		}
		out["Condition"] = c
	}
	return out
}

// strList renders one value as a string and several as a list, as IAM
// documents are usually written.
func strList(v []string) any {
	if len(v) == 1 {
		return v[0]
	}
	return append([]string(nil), v...)
}

// Statement returns the statement with the sid, if any.
func (p Policy) Statement(sid string) (Statement, bool) {
	for _, s := range p.Statements {
		if s.Sid == sid {
			return s, true
		}
	}
	return Statement{}, false
}

// Without returns a copy of the policy without the statement sid (for
// tests that prove a statement is needed).
func (p Policy) Without(sid string) Policy {
	out := Policy{Principal: p.Principal}
	for _, s := range p.Statements {
		if s.Sid != sid {
			out.Statements = append(out.Statements, s)
		}
	}
	return out
}

// Actions lists every action the policy names, sorted.
func (p Policy) Actions() []string {
	seen := map[string]bool{}
	for _, s := range p.Statements {
		for _, a := range s.Actions {
			seen[a] = true
		}
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// Params are the facts of one deployment the statements depend on. In the
// CDK stack they may be CloudFormation tokens (the partition, the account).
type Params struct {
	// Partition is aws, aws-cn or aws-us-gov.
	Partition string
	Region    string
	Account   string
	Cluster   string
	// NodeRoleARN is the only role the functions may pass to EC2 (through
	// the node classes' instance profile).
	NodeRoleARN string
	// EventBusARN is the cluster's bus, the forwarder's only target.
	EventBusARN string
}

// Validate says what is missing.
func (p Params) Validate() error {
	var missing []string
	for name, v := range map[string]string{
		"Partition": p.Partition, "Region": p.Region, "Account": p.Account, "Cluster": p.Cluster,
		"NodeRoleARN": p.NodeRoleARN, "EventBusARN": p.EventBusARN,
	} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("iam policy parameters: missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// ARN builds an ARN in the deployment's partition.
func (p Params) ARN(service, region, account, resource string) string {
	return "arn:" + p.Partition + ":" + service + ":" + region + ":" + account + ":" + resource
}

// ClusterARN is the EKS cluster's ARN.
func (p Params) ClusterARN() string {
	return p.ARN("eks", p.Region, p.Account, "cluster/"+p.Cluster)
}

// SpecPrefix is the SSM path of the cluster's specs, without the trailing
// slash.
func (p Params) SpecPrefix() string { return "/joist/" + p.Cluster }

// PassedToServices are EC2's service names in every partition, as
// Karpenter's policy lists them, so one policy serves aws-cn too.
var PassedToServices = []string{"ec2.amazonaws.com", "ec2.amazonaws.com.cn"}

// For returns the policy of one principal. Every statement is there
// because some code path of that principal needs it; the test ground
// proves both directions.
func For(principal string, p Params) (Policy, error) {
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	var st []Statement
	switch principal {
	case Provisioner:
		st = append(st, readStatements(p)...)
		st = append(st, launchStatements(p)...)
	case Reaper:
		// The reaper runs the provisioner's reconcile as the safety net,
		// so it launches too; and it alone ends instances (registration
		// timeout, leaked instances) and deletes unused launch templates.
		st = append(st, readStatements(p)...)
		st = append(st, launchStatements(p)...)
		st = append(st, terminateStatements(p)...)
	case Interruption:
		// It reads the instances a message names (DescribeInstances,
		// among the named regional reads) and launches the replacement
		// with the provisioner's pass. It terminates nothing: the
		// reclaim ends the instance, and retiring a node is the
		// termination engine's. Its health check reads the instances'
		// status checks and scheduled events.
		st = append(st, readStatements(p)...)
		st = append(st, launchStatements(p)...)
		st = append(st, instanceHealth(p))
	case Binder, Installer:
		// They talk to the Kubernetes API, finding the API server as
		// every function does, and read the instances' cluster tag to
		// tell which nodes are Joist's (termination.Owned): the binder
		// puts the termination finalizer only on those, the teardown
		// waits for those.
		st = append(st, describeCluster(p), readInstances(p))
	case Forwarder:
		st = append(st, Statement{
			Sid: "PutEventsOnBus", Effect: Allow,
			Actions: []string{"events:PutEvents"}, Resources: []string{p.EventBusARN},
		})
	default:
		return Policy{}, fmt.Errorf("iam policy: unknown principal %q (want one of %s)", principal, strings.Join(Principals(), ", "))
	}
	return Policy{Principal: principal, Statements: st}, nil
}

// MustFor is For for callers whose parameters are known to be complete.
func MustFor(principal string, p Params) Policy {
	pol, err := For(principal, p)
	if err != nil {
		panic(err)
	}
	return pol
}

// readInstances is the one EC2 read of the functions that launch nothing.
func readInstances(p Params) Statement {
	return Statement{
		Sid: "ReadInstances", Effect: Allow,
		Actions: []string{"ec2:DescribeInstances"}, Resources: []string{"*"},
		Condition: Condition{"StringEquals": {"aws:RequestedRegion": {p.Region}}},
	}
}

// RegionalDescribeActions are the EC2 reads a deciding function makes,
// named one by one (no Describe*), as Karpenter's policy does.
// DescribeCapacityReservations finds the reservations a node class's
// capacityReservationSelectorTerms select and DescribePlacementGroups the
// group a placementGroupSelector names (Karpenter's
// AllowRegionalReadActions names both).
var RegionalDescribeActions = []string{
	"ec2:DescribeCapacityReservations",
	"ec2:DescribeImages",
	"ec2:DescribeInstanceTypeOfferings",
	"ec2:DescribeInstanceTypes",
	"ec2:DescribeInstances",
	"ec2:DescribeLaunchTemplates",
	"ec2:DescribePlacementGroups",
	"ec2:DescribeSecurityGroups",
	"ec2:DescribeSpotPriceHistory",
	"ec2:DescribeSubnets",
}

// describeCluster finds the API server's endpoint and CA when the stack
// was not given them.
func describeCluster(p Params) Statement {
	return Statement{
		Sid: "DescribeCluster", Effect: Allow,
		Actions: []string{"eks:DescribeCluster"}, Resources: []string{p.ClusterARN()},
	}
}

func readStatements(p Params) []Statement {
	return []Statement{
		{
			// EC2 has no resource-level permissions for Describe*; the
			// region condition keeps the reads to the cluster's region.
			Sid: "RegionalReads", Effect: Allow,
			Actions: RegionalDescribeActions, Resources: []string{"*"},
			Condition: Condition{"StringEquals": {"aws:RequestedRegion": {p.Region}}},
		},
		describeCluster(p),
		{
			// The specs under /joist/<cluster>/, read as one path
			// (GetParametersByPath names the path itself, hence the
			// resource without /*).
			Sid: "ReadSpecs", Effect: Allow,
			Actions: []string{"ssm:GetParametersByPath"},
			Resources: []string{
				p.ARN("ssm", p.Region, p.Account, "parameter"+p.SpecPrefix()),
				p.ARN("ssm", p.Region, p.Account, "parameter"+p.SpecPrefix()+"/*"),
			},
		},
		{
			// The public parameters that resolve AMI aliases.
			Sid: "ReadPublicParameters", Effect: Allow,
			Actions:   []string{"ssm:GetParameter"},
			Resources: []string{p.ARN("ssm", p.Region, "", "parameter/aws/service/*")},
		},
		{
			// The Pricing API has no resource-level permissions and
			// answers only in a few regions, so no region condition.
			Sid: "Pricing", Effect: Allow,
			Actions: []string{"pricing:GetProducts"}, Resources: []string{"*"},
		},
	}
}

// CreatedResourceTypes are the EC2 resources a launch creates; each must
// carry the cluster tag at creation.
var CreatedResourceTypes = []string{"fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request"}

// CreateActions are the calls that may tag what they create.
var CreateActions = []string{"CreateFleet", "RunInstances", "CreateLaunchTemplate"}

func launchStatements(p Params) []Statement {
	created := make([]string, len(CreatedResourceTypes))
	for i, t := range CreatedResourceTypes {
		created[i] = p.ARN("ec2", p.Region, p.Account, t+"/*")
	}
	requestTag := Condition{"StringEquals": {"aws:RequestTag/" + ClusterTag: {p.Cluster}}}
	return []Statement{
		{
			// Existing things a launch refers to. Subnets and security
			// groups may be shared from another account (RAM), hence *;
			// so may capacity reservations, which a launch into a
			// reservation (reserved capacity) is authorized on, as in
			// Karpenter's AllowScopedEC2InstanceAccessActions; and
			// placement groups, which a launch into one is authorized on.
			Sid: "LaunchFromExisting", Effect: Allow,
			Actions: []string{"ec2:CreateFleet", "ec2:RunInstances"},
			Resources: []string{
				p.ARN("ec2", p.Region, "", "image/*"),
				p.ARN("ec2", p.Region, "", "snapshot/*"),
				p.ARN("ec2", p.Region, "*", "subnet/*"),
				p.ARN("ec2", p.Region, "*", "security-group/*"),
				p.ARN("ec2", p.Region, "*", "capacity-reservation/*"),
				p.ARN("ec2", p.Region, "*", "placement-group/*"),
			},
		},
		{
			// Only the cluster's own launch templates.
			Sid: "LaunchFromOwnTemplates", Effect: Allow,
			Actions:   []string{"ec2:CreateFleet", "ec2:RunInstances"},
			Resources: []string{p.ARN("ec2", p.Region, p.Account, "launch-template/*")},
			Condition: Condition{"StringEquals": {"aws:ResourceTag/" + ClusterTag: {p.Cluster}}},
		},
		{
			Sid: "CreateTaggedResources", Effect: Allow,
			Actions:   []string{"ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateLaunchTemplate"},
			Resources: created, Condition: requestTag,
		},
		{
			// Tag-on-create needs CreateTags too; it is allowed only as
			// part of those calls, so it can never retag anything later.
			Sid: "TagOnCreate", Effect: Allow,
			Actions: []string{"ec2:CreateTags"}, Resources: created,
			Condition: Condition{"StringEquals": {
				"aws:RequestTag/" + ClusterTag: {p.Cluster},
				"ec2:CreateAction":             CreateActions,
			}},
		},
		{
			Sid: "PassNodeRole", Effect: Allow,
			Actions: []string{"iam:PassRole"}, Resources: []string{p.NodeRoleARN},
			Condition: Condition{"StringEquals": {"iam:PassedToService": PassedToServices}},
		},
	}
}

// instanceHealth is the interruption function's once-a-minute health
// check: the status checks and scheduled events of the cluster's
// instances. DescribeInstanceStatus has no resource-level permissions;
// the region condition keeps it to the cluster's region.
func instanceHealth(p Params) Statement {
	return Statement{
		Sid: "InstanceHealth", Effect: Allow,
		Actions: []string{"ec2:DescribeInstanceStatus"}, Resources: []string{"*"},
		Condition: Condition{"StringEquals": {"aws:RequestedRegion": {p.Region}}},
	}
}

func terminateStatements(p Params) []Statement {
	return []Statement{{
		Sid: "TerminateOwnInstances", Effect: Allow,
		Actions:   []string{"ec2:TerminateInstances"},
		Resources: []string{p.ARN("ec2", p.Region, p.Account, "instance/*")},
		Condition: Condition{"StringEquals": {"aws:ResourceTag/" + ClusterTag: {p.Cluster}}},
	}, {
		// Launch templates no live instance uses any more (pkg/garbage);
		// only the cluster's own, by their tag.
		Sid: "DeleteOwnLaunchTemplates", Effect: Allow,
		Actions:   []string{"ec2:DeleteLaunchTemplate"},
		Resources: []string{p.ARN("ec2", p.Region, p.Account, "launch-template/*")},
		Condition: Condition{"StringEquals": {"aws:ResourceTag/" + ClusterTag: {p.Cluster}}},
	}}
}
