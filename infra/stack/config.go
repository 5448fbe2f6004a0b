package stack

import (
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/joist-dev/joist/pkg/featuregates"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Spec sources: where the functions read node pools and node classes.
const (
	SpecSourceSSM = "ssm"
	SpecSourceCRD = "crd"
)

// Context keys read by ConfigFromContext. They are the names a user passes
// with `cdk deploy -c key=value`, so they are part of Joist's interface.
const (
	CtxClusterName            = "clusterName"
	CtxClusterEndpoint        = "clusterEndpoint"
	CtxClusterCA              = "clusterCA"
	CtxRegion                 = "region"
	CtxAccount                = "account"
	CtxSpecSource             = "specSource"
	CtxKubernetesVersion      = "kubernetesVersion"
	CtxAssetDir               = "assetDir"
	CtxNodeRole               = "nodeRole"
	CtxDefaultInstanceProfile = "defaultInstanceProfile"
	CtxLogRetentionDays       = "logRetentionDays"
	CtxAccessEntries          = "accessEntries"
	CtxServiceCIDR            = "serviceCIDR"
	CtxClusterDNSIP           = "clusterDNSIP"
	CtxZones                  = "zones"
	CtxLogLevel               = "logLevel"
	// CtxPreferencePolicy and CtxMinValuesPolicy are Karpenter's
	// --preference-policy (Respect, Ignore) and --min-values-policy
	// (Strict, BestEffort), for the provisioner and consolidation.
	CtxPreferencePolicy = "preferencePolicy"
	CtxMinValuesPolicy  = "minValuesPolicy"
	// CtxSchedulerConfig is Karpenter's --scheduler-config: a YAML or
	// JSON document (a string, or an object in cdk.json) whose
	// podTopologySpread.defaultConstraints the functions give to pods
	// that declare no spread (JOIST_SCHEDULER_CONFIG).
	CtxSchedulerConfig = "schedulerConfig"
	// CtxReservedENIs is Karpenter's RESERVED_ENIS: ENIs per node the VPC
	// CNI may not give pods (custom networking), left out of every
	// type's max pods (JOIST_RESERVED_ENIS).
	CtxReservedENIs = "reservedENIs"
	// CtxFeatureGates is Karpenter's FEATURE_GATES ("NodeRepair=true"):
	// the functions act on NodeRepair and SpotToSpotConsolidation and
	// accept Karpenter's others (JOIST_FEATURE_GATES).
	CtxFeatureGates = "featureGates"
	// CtxForwarderImage is a prebuilt forwarder image URI; without it
	// `cdk deploy` builds cmd/forwarder/Dockerfile (a DockerImageAsset).
	CtxForwarderImage = "forwarderImage"
	// CtxSourceDir is the repository root, the forwarder image's build
	// context (default ".": the app runs from the root).
	CtxSourceDir = "sourceDir"
	// CtxSpecs is a folder of Provisioners/AWSNodeTemplates/NodePools/
	// EC2NodeClasses the stack stores as the cluster's SSM parameters
	// (joist specs push's layout), validated at synth.
	CtxSpecs = "specs"
	// CtxAlarmTopicArn sends the alarms to an existing SNS topic instead
	// of the stack's own.
	CtxAlarmTopicArn = "alarmTopicArn"
	// CtxVpcID and CtxSubnetIDs (comma-separated) place the functions in
	// the cluster's VPC, for a cluster whose API endpoint is private.
	CtxVpcID     = "vpcId"
	CtxSubnetIDs = "subnetIds"
	// CtxClusterSecurityGroupID is the cluster's security group: the stack
	// lets the functions' group reach its API endpoint on 443.
	CtxClusterSecurityGroupID = "clusterSecurityGroupId"
	// CtxVpcEndpoints makes the stack create the interface endpoints the
	// functions need in a VPC without a NAT (EC2, SSM, EKS).
	CtxVpcEndpoints = "vpcEndpoints"
	// CtxTeardown makes `cdk destroy` retire every Joist node (drained,
	// instance terminated) before the functions go.
	CtxTeardown = "teardown"
)

// Function names. Each is a directory under the asset directory holding a
// `bootstrap` binary, the name `make build` gives it.
const (
	FnProvisioner  = "provisioner"
	FnBinder       = "binder"
	FnReaper       = "reaper"
	FnInterruption = "interruption"
	FnInstaller    = "installer"
)

// FunctionNames lists every function the stack defines, in a fixed order.
var FunctionNames = []string{FnProvisioner, FnBinder, FnReaper, FnInterruption, FnInstaller}

// ClusterTagKey is the tag that scopes every EC2 resource Joist creates and
// every destructive call it may make. The launcher must put it on the
// fleet, the instances, their volumes, network interfaces and spot
// requests, and on its launch templates; the IAM conditions refuse
// anything else.
const ClusterTagKey = "joist.sh/cluster"

// Config is everything the stack needs to know about one cluster.
type Config struct {
	// ClusterName is the EKS cluster's name. Required: it names the bus,
	// scopes the IAM conditions and the SSM prefix.
	ClusterName string
	// ClusterEndpoint and ClusterCA (base64 PEM) spare the functions an
	// eks:DescribeCluster call on a cold start. Optional.
	ClusterEndpoint string
	ClusterCA       string
	// Region and Account pin the stack's environment. Empty means
	// environment-agnostic (the CLI's profile decides at deploy time).
	Region  string
	Account string
	// SpecSource is ssm (parameters under /joist/<cluster>/) or crd
	// (objects of the Karpenter CRDs in the cluster).
	SpecSource string
	// KubernetesVersion overrides the version the functions would read
	// from DescribeCluster (used for AMI aliases). Optional.
	KubernetesVersion string
	// AssetDir holds <function>/bootstrap for every function.
	AssetDir string
	// NodeRole is the IAM role (name or ARN) of the nodes Joist launches;
	// the functions may pass only this role to EC2.
	NodeRole string
	// DefaultInstanceProfile is used for node classes that name no role or
	// instance profile, as Karpenter's settings.aws.defaultInstanceProfile.
	DefaultInstanceProfile string
	// LogRetentionDays is how long the functions' logs are kept.
	LogRetentionDays int
	// ServiceCIDR and ClusterDNSIP go into the nodes' bootstrap (nodeadm
	// and bootstrap.sh need them); empty means DescribeCluster's values.
	ServiceCIDR  string
	ClusterDNSIP string
	// Zones limits the offline catalog to these zones (comma-separated),
	// for regions whose zones are not a, b and c.
	Zones string
	// LogLevel is info or debug, for the functions' own logs.
	LogLevel string
	// PreferencePolicy and MinValuesPolicy are Karpenter's scheduling
	// policies (scheduling.PolicyOptions); empty is each one's default
	// (Respect, Strict).
	PreferencePolicy string
	MinValuesPolicy  string
	// SchedulerConfig is Karpenter's --scheduler-config document
	// (scheduling.ParseSchedulerConfig); empty for none. With default
	// constraints in it the installer grants the planning functions the
	// reads they need (rbac.Features.DefaultSpread).
	SchedulerConfig string
	// ReservedENIs is Karpenter's RESERVED_ENIS, a whole number of 0 or
	// more; empty is 0.
	ReservedENIs string
	// FeatureGates is Karpenter's FEATURE_GATES (featuregates.Parse);
	// empty is every gate's default.
	FeatureGates string
	// AccessEntries makes the stack create the EKS access entries for the
	// function roles (needs a cluster in API or API_AND_CONFIG_MAP mode).
	// On by default; -c accessEntries=false when you manage them.
	AccessEntries bool
	// ForwarderImage is a prebuilt forwarder image; empty builds it from
	// SourceDir at deploy time.
	ForwarderImage string
	// SourceDir is the repository root (the image's build context).
	SourceDir string
	// SpecsDir, when set, holds the specs the stack stores as SSM
	// parameters (spec source ssm only).
	SpecsDir string
	// AlarmTopicArn, when set, receives the alarms (else the stack's
	// topic, output AlarmTopicArn).
	AlarmTopicArn string
	// VpcID and SubnetIDs, when set, run the functions in the cluster's
	// VPC (docs/deploy.md, "Private clusters"); empty runs them outside
	// any VPC, which needs an API endpoint public to Lambda.
	VpcID     string
	SubnetIDs []string
	// ClusterSecurityGroupID, in VPC mode, gets an ingress rule for 443
	// from the functions' security group.
	ClusterSecurityGroupID string
	// VpcEndpoints, in VPC mode, creates interface endpoints for EC2, SSM
	// and EKS in SubnetIDs (for subnets without a route to a NAT).
	VpcEndpoints bool
	// Teardown makes deleting the stack retire every Joist node first
	// (Custom::JoistTeardown, pkg/install.Teardown). Off by default: a
	// stack deleted to be deployed again should not empty the cluster.
	Teardown bool
}

// InVPC says whether the functions run in the cluster's VPC.
func (c Config) InVPC() bool { return c.VpcID != "" }

// Defaults applied by ConfigFromContext when a key is absent.
const (
	DefaultLogRetentionDays = 30
	DefaultAssetDir         = "build/lambda"
)

// DefaultNodeRole is the node role a Karpenter user already has, by the
// name Karpenter's getting-started guide gives it.
func DefaultNodeRole(cluster string) string { return "KarpenterNodeRole-" + cluster }

// DefaultInstanceProfile is the matching instance profile name.
func DefaultInstanceProfile(cluster string) string {
	return "KarpenterNodeInstanceProfile-" + cluster
}

// SpecPrefix is the SSM path under which the cluster's specs live.
func SpecPrefix(cluster string) string { return "/joist/" + cluster + "/" }

// BusName is the name of the cluster's EventBridge bus.
func BusName(cluster string) string { return "joist-" + cluster }

// Names of the queues and rules that carry Joist's own events. They are
// fixed, not generated by CloudFormation, because the test ground
// (test/testenv/bus.go) creates the same ones by these names.
func PendingQueueName(cluster string) string   { return "joist-" + cluster + "-pending" }
func ReadyQueueName(cluster string) string     { return "joist-" + cluster + "-ready" }
func PendingRuleName(cluster string) string    { return "joist-" + cluster + "-pending-pods" }
func NodeReadyRuleName(cluster string) string  { return "joist-" + cluster + "-node-ready" }
func ReaperWakeRuleName(cluster string) string { return "joist-" + cluster + "-reaper-wake" }

// DeadLetterQueueName is the name of a queue's dead-letter queue.
func DeadLetterQueueName(queue string) string { return queue + "-dlq" }

// AWS's limits on those names. Both accept every character EKS allows in
// a cluster name; only the length can be too much.
const (
	maxQueueNameLen = 80
	maxRuleNameLen  = 64
)

// StackName is the CloudFormation stack name: one stack per cluster, so
// the cluster is in it. EKS allows '_' in cluster names; CloudFormation
// does not in stack names.
func StackName(cluster string) string {
	return "joist-" + strings.ReplaceAll(cluster, "_", "-")
}

// Log levels the functions understand (their LOG_LEVEL).
const (
	LogLevelInfo  = "info"
	LogLevelDebug = "debug"
)

var (
	// eksClusterName is EKS's own rule for cluster names.
	eksClusterName = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$`)
	k8sVersion     = regexp.MustCompile(`^1\.[0-9]+$`)
	zoneList       = regexp.MustCompile(`^[a-z0-9-]+(,[a-z0-9-]+)*$`)
)

// retentionDays maps the retentions CloudWatch Logs accepts to CDK's enum.
var retentionDays = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS,
	5: awslogs.RetentionDays_FIVE_DAYS, 7: awslogs.RetentionDays_ONE_WEEK,
	14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS,
	120: awslogs.RetentionDays_FOUR_MONTHS, 150: awslogs.RetentionDays_FIVE_MONTHS,
	180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS,
	731: awslogs.RetentionDays_TWO_YEARS, 1096: awslogs.RetentionDays_THREE_YEARS,
	1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
	2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS,
	3288: awslogs.RetentionDays_NINE_YEARS, 3653: awslogs.RetentionDays_TEN_YEARS,
}

// Validate reports the first thing that would make a broken stack. It runs
// before any construct is made so that a typo in -c fails with a plain
// message instead of a CloudFormation rollback.
func (c Config) Validate() error {
	if c.ClusterName == "" {
		return fmt.Errorf("context %q is required (cdk deploy -c %s=NAME)", CtxClusterName, CtxClusterName)
	}
	if !eksClusterName.MatchString(c.ClusterName) {
		return fmt.Errorf("context %s=%q is not an EKS cluster name", CtxClusterName, c.ClusterName)
	}
	// EKS allows 100 characters, the fixed queue and rule names fewer.
	for _, n := range []struct {
		name string
		max  int
	}{
		{DeadLetterQueueName(PendingQueueName(c.ClusterName)), maxQueueNameLen},
		{DeadLetterQueueName(ReadyQueueName(c.ClusterName)), maxQueueNameLen},
		{PendingRuleName(c.ClusterName), maxRuleNameLen},
		{NodeReadyRuleName(c.ClusterName), maxRuleNameLen},
		{ReaperWakeRuleName(c.ClusterName), maxRuleNameLen},
	} {
		if len(n.name) > n.max {
			return fmt.Errorf("context %s=%q is too long for Joist: it makes the name %q, longer than the %d characters AWS allows",
				CtxClusterName, c.ClusterName, n.name, n.max)
		}
	}
	switch c.SpecSource {
	case SpecSourceSSM, SpecSourceCRD:
	default:
		return fmt.Errorf("context %s=%q: want %q or %q", CtxSpecSource, c.SpecSource, SpecSourceSSM, SpecSourceCRD)
	}
	if c.SpecsDir != "" && c.SpecSource != SpecSourceSSM {
		return fmt.Errorf("context %s=%q stores specs as SSM parameters: it needs %s=%s", CtxSpecs, c.SpecsDir, CtxSpecSource, SpecSourceSSM)
	}
	if c.ClusterEndpoint != "" && !strings.HasPrefix(c.ClusterEndpoint, "https://") {
		return fmt.Errorf("context %s=%q: want an https:// URL", CtxClusterEndpoint, c.ClusterEndpoint)
	}
	if (c.ClusterEndpoint == "") != (c.ClusterCA == "") {
		// One without the other still needs DescribeCluster, so it saves
		// nothing and usually means a forgotten flag.
		return fmt.Errorf("context %s and %s go together: give both or neither", CtxClusterEndpoint, CtxClusterCA)
	}
	if c.KubernetesVersion != "" && !k8sVersion.MatchString(c.KubernetesVersion) {
		return fmt.Errorf("context %s=%q: want MAJOR.MINOR such as 1.31", CtxKubernetesVersion, c.KubernetesVersion)
	}
	if c.ServiceCIDR != "" {
		if _, _, err := net.ParseCIDR(c.ServiceCIDR); err != nil {
			return fmt.Errorf("context %s=%q: %v", CtxServiceCIDR, c.ServiceCIDR, err)
		}
	}
	if c.ClusterDNSIP != "" && net.ParseIP(c.ClusterDNSIP) == nil {
		return fmt.Errorf("context %s=%q is not an IP address", CtxClusterDNSIP, c.ClusterDNSIP)
	}
	if c.Zones != "" && !zoneList.MatchString(c.Zones) {
		return fmt.Errorf("context %s=%q: want zone names separated by commas", CtxZones, c.Zones)
	}
	switch c.LogLevel {
	case LogLevelInfo, LogLevelDebug:
	default:
		return fmt.Errorf("context %s=%q: want %q or %q", CtxLogLevel, c.LogLevel, LogLevelInfo, LogLevelDebug)
	}
	if _, err := scheduling.PolicyOptions(c.PreferencePolicy, ""); err != nil {
		return fmt.Errorf("context %s: %w", CtxPreferencePolicy, err)
	}
	if _, err := scheduling.PolicyOptions("", c.MinValuesPolicy); err != nil {
		return fmt.Errorf("context %s: %w", CtxMinValuesPolicy, err)
	}
	if _, err := scheduling.ParseSchedulerConfig(c.SchedulerConfig); err != nil {
		return fmt.Errorf("context %s: %w", CtxSchedulerConfig, err)
	}
	if n, err := strconv.Atoi(c.ReservedENIs); c.ReservedENIs != "" && (err != nil || n < 0) {
		return fmt.Errorf("context %s=%q: want a whole number of 0 or more", CtxReservedENIs, c.ReservedENIs)
	}
	if _, err := featuregates.Parse(c.FeatureGates); err != nil {
		return fmt.Errorf("context %s: %w", CtxFeatureGates, err)
	}
	if c.AssetDir == "" {
		return fmt.Errorf("context %s is empty", CtxAssetDir)
	}
	if c.NodeRole == "" {
		return fmt.Errorf("context %s is empty", CtxNodeRole)
	}
	if _, ok := retentionDays[c.LogRetentionDays]; !ok {
		return fmt.Errorf("context %s=%d is not a retention CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, 60, 90, ...)", CtxLogRetentionDays, c.LogRetentionDays)
	}
	return c.validateNetwork()
}

var (
	vpcIDPattern    = regexp.MustCompile(`^vpc-[0-9a-f]{8,17}$`)
	subnetIDPattern = regexp.MustCompile(`^subnet-[0-9a-f]{8,17}$`)
	sgIDPattern     = regexp.MustCompile(`^sg-[0-9a-f]{8,17}$`)
)

func (c Config) validateNetwork() error {
	if c.VpcID == "" {
		switch {
		case len(c.SubnetIDs) > 0:
			return fmt.Errorf("context %s needs %s (the VPC the subnets are in)", CtxSubnetIDs, CtxVpcID)
		case c.ClusterSecurityGroupID != "":
			return fmt.Errorf("context %s needs %s and %s (the functions run outside any VPC without them)", CtxClusterSecurityGroupID, CtxVpcID, CtxSubnetIDs)
		case c.VpcEndpoints:
			return fmt.Errorf("context %s needs %s and %s", CtxVpcEndpoints, CtxVpcID, CtxSubnetIDs)
		}
		return nil
	}
	if !vpcIDPattern.MatchString(c.VpcID) {
		return fmt.Errorf("context %s=%q is not a VPC id (vpc-...)", CtxVpcID, c.VpcID)
	}
	if len(c.SubnetIDs) == 0 {
		return fmt.Errorf("context %s=%s needs %s: the private subnets (comma-separated) the functions run in", CtxVpcID, c.VpcID, CtxSubnetIDs)
	}
	for _, id := range c.SubnetIDs {
		if !subnetIDPattern.MatchString(id) {
			return fmt.Errorf("context %s: %q is not a subnet id (subnet-...)", CtxSubnetIDs, id)
		}
	}
	if c.ClusterSecurityGroupID != "" && !sgIDPattern.MatchString(c.ClusterSecurityGroupID) {
		return fmt.Errorf("context %s=%q is not a security group id (sg-...)", CtxClusterSecurityGroupID, c.ClusterSecurityGroupID)
	}
	return nil
}

// ConfigFromContext reads the configuration from the construct tree's
// context (cdk.json, -c flags, CDK_CONTEXT_JSON) and fills in defaults.
// It does not validate; call Validate.
func ConfigFromContext(scope constructs.Construct) (Config, error) {
	get := func(key string) (string, error) {
		v := scope.Node().TryGetContext(jsii.String(key))
		switch v := v.(type) {
		case nil:
			return "", nil
		case string:
			return strings.TrimSpace(v), nil
		case bool:
			return strconv.FormatBool(v), nil
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64), nil
		default:
			return "", fmt.Errorf("context %s: want a string, got %T", key, v)
		}
	}
	var c Config
	var err error
	// The scheduler config may be an object in cdk.json: the functions
	// get it as JSON.
	if v := scope.Node().TryGetContext(jsii.String(CtxSchedulerConfig)); v != nil {
		if str, ok := v.(string); ok {
			c.SchedulerConfig = strings.TrimSpace(str)
		} else {
			b, err := json.Marshal(v)
			if err != nil {
				return Config{}, fmt.Errorf("context %s: %w", CtxSchedulerConfig, err)
			}
			c.SchedulerConfig = string(b)
		}
	}
	fields := []struct {
		key string
		dst *string
	}{
		{CtxClusterName, &c.ClusterName},
		{CtxClusterEndpoint, &c.ClusterEndpoint},
		{CtxClusterCA, &c.ClusterCA},
		{CtxRegion, &c.Region},
		{CtxAccount, &c.Account},
		{CtxSpecSource, &c.SpecSource},
		{CtxKubernetesVersion, &c.KubernetesVersion},
		{CtxAssetDir, &c.AssetDir},
		{CtxNodeRole, &c.NodeRole},
		{CtxDefaultInstanceProfile, &c.DefaultInstanceProfile},
		{CtxServiceCIDR, &c.ServiceCIDR},
		{CtxClusterDNSIP, &c.ClusterDNSIP},
		{CtxZones, &c.Zones},
		{CtxLogLevel, &c.LogLevel},
		{CtxPreferencePolicy, &c.PreferencePolicy},
		{CtxMinValuesPolicy, &c.MinValuesPolicy},
		{CtxReservedENIs, &c.ReservedENIs},
		{CtxFeatureGates, &c.FeatureGates},
		{CtxForwarderImage, &c.ForwarderImage},
		{CtxSourceDir, &c.SourceDir},
		{CtxSpecs, &c.SpecsDir},
		{CtxAlarmTopicArn, &c.AlarmTopicArn},
		{CtxVpcID, &c.VpcID},
		{CtxClusterSecurityGroupID, &c.ClusterSecurityGroupID},
	}
	for _, f := range fields {
		if *f.dst, err = get(f.key); err != nil {
			return Config{}, err
		}
	}
	if c.SpecSource == "" {
		c.SpecSource = SpecSourceSSM
	}
	if c.AssetDir == "" {
		c.AssetDir = DefaultAssetDir
	}
	if c.LogLevel == "" {
		c.LogLevel = LogLevelInfo
	}
	if c.SourceDir == "" {
		c.SourceDir = "."
	}
	c.AccessEntries = true
	if c.NodeRole == "" && c.ClusterName != "" {
		c.NodeRole = DefaultNodeRole(c.ClusterName)
	}
	if c.DefaultInstanceProfile == "" && c.ClusterName != "" {
		c.DefaultInstanceProfile = DefaultInstanceProfile(c.ClusterName)
	}
	c.LogRetentionDays = DefaultLogRetentionDays
	if s, err := get(CtxLogRetentionDays); err != nil {
		return Config{}, err
	} else if s != "" {
		if c.LogRetentionDays, err = strconv.Atoi(s); err != nil {
			return Config{}, fmt.Errorf("context %s=%q: %v", CtxLogRetentionDays, s, err)
		}
	}
	if s, err := get(CtxSubnetIDs); err != nil {
		return Config{}, err
	} else {
		for _, id := range strings.Split(s, ",") {
			if id = strings.TrimSpace(id); id != "" {
				c.SubnetIDs = append(c.SubnetIDs, id)
			}
		}
	}
	if s, err := get(CtxTeardown); err != nil {
		return Config{}, err
	} else if s != "" {
		if c.Teardown, err = strconv.ParseBool(s); err != nil {
			return Config{}, fmt.Errorf("context %s=%q: %v", CtxTeardown, s, err)
		}
	}
	if s, err := get(CtxVpcEndpoints); err != nil {
		return Config{}, err
	} else if s != "" {
		if c.VpcEndpoints, err = strconv.ParseBool(s); err != nil {
			return Config{}, fmt.Errorf("context %s=%q: %v", CtxVpcEndpoints, s, err)
		}
	}
	if s, err := get(CtxAccessEntries); err != nil {
		return Config{}, err
	} else if s != "" {
		if c.AccessEntries, err = strconv.ParseBool(s); err != nil {
			return Config{}, fmt.Errorf("context %s=%q: %v", CtxAccessEntries, s, err)
		}
	}
	return c, nil
}

// defaultSpread says whether the scheduler config has default topology
// spread constraints (a valid config; Validate checks it).
func (c Config) defaultSpread() bool {
	sc, err := scheduling.ParseSchedulerConfig(c.SchedulerConfig)
	return err == nil && len(sc.Defaults()) > 0
}
