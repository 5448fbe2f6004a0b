// Package stack defines JoistStack: everything Joist needs in one AWS
// account and region to autoscale one EKS cluster.
//
// It lives apart from main so that tests build the same stack the app
// deploys, from a Config rather than from the process's context and
// environment.
package stack

import (
	"fmt"
	"github.com/joist-dev/joist/pkg/iampolicy"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseks"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Joist's own events, as the forwarder puts them. They must equal the
// constants of the product's events package (events/events.go); the infra
// module does not import it, to keep the product's dependency graph out of
// this module, and stack_test.go reads that file to catch drift.
const (
	EventSource           = "joist.forwarder"
	DetailTypePendingPods = "Pending Pods"
	DetailTypeNodeReady   = "Node Ready"
	// DetailTypeNodesDeleting wakes the reaper (Joist nodes started
	// deleting: their drain begins at once, not at the next minute).
	DetailTypeNodesDeleting = "Nodes Deleting"
	// DetailTypeNodesEmptied wakes the reaper too (a Joist node lost its
	// last pod: its emptiness clock starts now).
	DetailTypeNodesEmptied = "Nodes Emptied"
)

// Where the forwarder runs in the cluster. The forwarder role trusts only
// this service account of this cluster (EKS Pod Identity session tags), and
// infra/k8s/forwarder.yaml creates it.
const (
	ForwarderNamespace      = "joist"
	ForwarderServiceAccount = "joist-forwarder"
)

// FunctionGroup is the Kubernetes group a function's access entry puts
// its role in (pkg/rbac.Group); infra/k8s/rbac.yaml binds that function's
// ClusterRole, and nothing more, to it.
func FunctionGroup(function string) string { return "joist-" + function }

// Tuning that the rest of the stack derives from. Named so the test and
// docs/deploy.md can refer to the reasons rather than to bare numbers.
const (
	// provisionerTimeoutSeconds bounds one reconcile: list, simulate,
	// CreateFleet, nominate.
	provisionerTimeoutSeconds = 90
	// pendingBatchSize and pendingBatchWindowSeconds let a burst of
	// pending-pods events become one reconcile instead of a hundred.
	pendingBatchSize          = 100
	pendingBatchWindowSeconds = 1
	// pendingMaxReceiveCount is how often a pending-pods batch may fail
	// before its messages go to the DLQ. Five, as AWS advises for a queue
	// feeding a function with reserved concurrency: throttled receives
	// count too.
	pendingMaxReceiveCount = 5
	// binderTimeoutSeconds bounds one batch of Node Ready events: read
	// the planned pods of each node and bind them.
	binderTimeoutSeconds = 60
	// readyBatchSize: Node Ready events come one per node, and each node
	// is bound on its own, so no batching window; a burst of nodes still
	// shares an invocation.
	readyBatchSize = 10
	// readyMaxReceiveCount is how often a Node Ready batch may fail before
	// its messages go to the DLQ. The binder's handler (pkg/trigger)
	// reports every message of a failed batch, so one stubborn node can
	// take its batch-mates along; five receives give them as many
	// chances, as on the pending queue and on the test ground.
	readyMaxReceiveCount = 5
	// interruptionRetentionSeconds is Karpenter's: an interruption notice
	// older than five minutes describes an instance that is already gone.
	interruptionRetentionSeconds = 300
	// interruptionTimeoutSeconds is the interruption function's timeout:
	// one batch of replacement passes (each launches and returns; the
	// drain is carried on by the termination engine), short enough that
	// a redelivery still falls inside the two-minute spot warning.
	interruptionTimeoutSeconds = 30
	// interruptionBatchSize: messages are handled one by one in an
	// invocation, each reported on its own in batchItemFailures.
	interruptionBatchSize = 10
	// interruptionMaxReceiveCount is how often an interruption message may
	// fail (the Lease held elsewhere, EC2 or the API server failing)
	// before it goes to the DLQ; as on the other queues.
	interruptionMaxReceiveCount = 5
)

// JoistStack is the CloudFormation stack for one cluster. Its fields let
// tests and callers reach the constructs without searching the tree.
type JoistStack struct {
	awscdk.Stack
	Config            Config
	Bus               awsevents.EventBus
	PendingQueue      awssqs.Queue
	PendingDLQ        awssqs.Queue
	ReadyQueue        awssqs.Queue
	ReadyDLQ          awssqs.Queue
	InterruptionQueue awssqs.Queue
	InterruptionDLQ   awssqs.Queue
	Functions         map[string]awslambda.Function
	Roles             map[string]awsiam.Role
	LogGroups         map[string]awslogs.LogGroup
	ForwarderPolicy   awsiam.ManagedPolicy
	ForwarderRole     awsiam.Role
	// AlarmTopic receives every alarm in Alarms.
	AlarmTopic awssns.ITopic
	Alarms     []awscloudwatch.Alarm
	// Network is nil unless the functions run in the cluster's VPC.
	Network *Network
}

// fnSpec is what differs between the functions.
type fnSpec struct {
	name        string
	id          string
	description string
	timeout     float64 // seconds
	memoryMB    float64
	// launch: may create fleets, instances and launch templates (the
	// provisioner, and the reaper, which runs the same reconcile).
	launch bool
	// manage: may terminate the cluster's instances and delete its launch
	// templates (the reaper retires nodes; the interruption function
	// terminates nothing: the reclaim ends the instance).
	manage bool
}

var fnSpecs = []fnSpec{
	{FnProvisioner, "Provisioner", "turns pending pods into EC2 capacity", provisionerTimeoutSeconds, 512, true, false},
	{FnBinder, "Binder", "binds planned pods once their node is Ready", binderTimeoutSeconds, 256, false, false},
	{FnReaper, "Reaper", "retires empty, expired and leaked nodes; safety-net reconcile", 120, 512, true, true},
	{FnInstaller, "Installer", "installs Joist's in-cluster objects (custom resource)", 300, 256, false, false},
	// 1,024 MB for CPU, not memory: its pass always reads the bound pods
	// inside a 30 s timeout (docs/scale.md: 24 s at 50,000 pods on 512 MB,
	// about 0.3 vCPU; 1,024 MB doubles the CPU).
	{FnInterruption, "Interruption", "launches the replacement of interrupted nodes before they go", interruptionTimeoutSeconds, 1024, true, false},
}

// CheckAssets reports every function whose bootstrap binary is missing
// from dir. CDK would happily zip an empty directory and deploy a function
// that cannot start; failing at synth is cheaper.
func CheckAssets(dir string) error {
	var missing []string
	for _, name := range FunctionNames {
		p := filepath.Join(dir, name, "bootstrap")
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("lambda assets missing (run `make build`, or pass -c %s=DIR): %s",
			CtxAssetDir, strings.Join(missing, ", "))
	}
	return nil
}

// New validates cfg, checks the Lambda assets and defines the stack under
// scope with construct id id (the CloudFormation stack name is
// StackName(cfg.ClusterName), so one account can hold a stack per cluster).
func New(scope constructs.Construct, id string, cfg Config) (*JoistStack, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckAssets(cfg.AssetDir); err != nil {
		return nil, err
	}
	var specParams map[string]string
	if cfg.SpecsDir != "" {
		var err error
		if specParams, err = SpecParameters(cfg.ClusterName, cfg.SpecsDir); err != nil {
			return nil, err
		}
	}
	props := &awscdk.StackProps{
		StackName:   jsii.String(StackName(cfg.ClusterName)),
		Description: jsii.String(fmt.Sprintf("Joist node autoscaler for EKS cluster %s", cfg.ClusterName)),
	}
	if cfg.Region != "" || cfg.Account != "" {
		env := &awscdk.Environment{}
		if cfg.Region != "" {
			env.Region = jsii.String(cfg.Region)
		}
		if cfg.Account != "" {
			env.Account = jsii.String(cfg.Account)
		}
		props.Env = env
	}
	st := awscdk.NewStack(scope, jsii.String(id), props)
	s := &JoistStack{
		Stack:     st,
		Config:    cfg,
		Functions: map[string]awslambda.Function{},
		Roles:     map[string]awsiam.Role{},
		LogGroups: map[string]awslogs.LogGroup{},
	}
	// Every taggable resource carries the cluster tag, so a look at the
	// console (or a tag-based policy) tells which cluster it serves.
	// CloudFormation's AWS::CloudWatch::Dashboard takes no Tags (cfn-lint
	// E3002; a deploy would fail on it).
	awscdk.Tags_Of(st).Add(jsii.String(ClusterTagKey), jsii.String(cfg.ClusterName), &awscdk.TagProps{
		ExcludeResourceTypes: jsii.Strings("AWS::CloudWatch::Dashboard"),
	})

	s.defineMessaging()
	s.defineNetwork()
	s.defineFunctions()
	s.defineRoutes()
	s.defineForwarderAccess()
	var installerAccess awscdk.CfnResource
	if cfg.AccessEntries {
		installerAccess = s.defineAccessEntries()
	}
	s.defineInstall(installerAccess)
	if specParams != nil {
		s.defineSpecs(specParams)
	}
	s.defineOperations()
	if cfg.Teardown {
		s.defineTeardown()
	}
	s.defineOutputs()
	return s, nil
}

func (s *JoistStack) defineMessaging() {
	cluster := s.Config.ClusterName
	s.Bus = awsevents.NewEventBus(s.Stack, jsii.String("Bus"), &awsevents.EventBusProps{
		EventBusName: jsii.String(BusName(cluster)),
		Description:  jsii.String("Joist events of cluster " + cluster + " (pending pods, node ready)"),
	})

	// The pending and ready queues, and their DLQs, have fixed names: the
	// test ground creates the same ones (test/testenv/bus.go).
	// AWS's advice for an SQS event source: a visibility timeout of six
	// times the function timeout, so that Lambda can retry a throttled
	// batch (the provisioner runs one at a time) before the messages
	// reappear. A hint older than an hour is worthless: the reaper has
	// reconciled sixty times since.
	s.PendingQueue, s.PendingDLQ = s.queueWithDLQ("Pending", PendingQueueName(cluster), 6*provisionerTimeoutSeconds, pendingMaxReceiveCount)
	// Node Ready events, for the binder: the same shape as the pending
	// queue, because the binder's handler is the same SQS batch handler
	// (pkg/trigger) as the provisioner's, reporting batchItemFailures.
	s.ReadyQueue, s.ReadyDLQ = s.queueWithDLQ("Ready", ReadyQueueName(cluster), 6*binderTimeoutSeconds, readyMaxReceiveCount)

	// Karpenter's interruption queue, setting for setting: 300 s retention
	// (a notice older than that is about an instance that no longer
	// exists), SSE, TLS only; and a DLQ, so that a message that keeps
	// failing is kept for inspection rather than retried until it expires.
	s.InterruptionDLQ = awssqs.NewQueue(s.Stack, jsii.String("InterruptionDeadLetterQueue"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	s.InterruptionQueue = awssqs.NewQueue(s.Stack, jsii.String("InterruptionQueue"), &awssqs.QueueProps{
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		RetentionPeriod:   awscdk.Duration_Seconds(jsii.Number(interruptionRetentionSeconds)),
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(2 * interruptionTimeoutSeconds)),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: s.InterruptionDLQ, MaxReceiveCount: jsii.Number(interruptionMaxReceiveCount)},
	})
}

// environment is what every function is told about the cluster. Empty
// optional values are left out rather than set to "": the functions then
// read them from eks:DescribeCluster.
func (s *JoistStack) environment() *map[string]*string {
	c := s.Config
	env := map[string]*string{
		"CLUSTER_NAME":             jsii.String(c.ClusterName),
		"SPEC_SOURCE":              jsii.String(c.SpecSource),
		"SPEC_PREFIX":              jsii.String(SpecPrefix(c.ClusterName)),
		"EVENT_BUS_NAME":           s.Bus.EventBusName(),
		"DEFAULT_INSTANCE_PROFILE": jsii.String(c.DefaultInstanceProfile),
		// Instance types, offerings and prices from EC2 and the Pricing
		// API, cached across warm invocations, the embedded catalog as
		// the fallback.
		"JOIST_CATALOG": jsii.String("live"),
	}
	if c.ClusterEndpoint != "" {
		env["CLUSTER_ENDPOINT"] = jsii.String(c.ClusterEndpoint)
		env["CLUSTER_CA"] = jsii.String(c.ClusterCA)
	}
	for k, v := range map[string]string{
		"KUBERNETES_VERSION":   c.KubernetesVersion,
		"CLUSTER_SERVICE_CIDR": c.ServiceCIDR,
		"CLUSTER_DNS_IP":       c.ClusterDNSIP,
		"JOIST_ZONES":          c.Zones,
		// The functions read these (pkg/wiring); unset is Karpenter's
		// defaults.
		"JOIST_PREFERENCE_POLICY": c.PreferencePolicy,
		"JOIST_MIN_VALUES_POLICY": c.MinValuesPolicy,
		"JOIST_SCHEDULER_CONFIG":  c.SchedulerConfig,
		"JOIST_RESERVED_ENIS":     c.ReservedENIs,
		"JOIST_FEATURE_GATES":     c.FeatureGates,
	} {
		if v != "" {
			env[k] = jsii.String(v)
		}
	}
	if c.LogLevel != LogLevelInfo {
		env["LOG_LEVEL"] = jsii.String(c.LogLevel)
	}
	return &env
}

func (s *JoistStack) defineFunctions() {
	c := s.Config
	retention := retentionDays[c.LogRetentionDays]
	// Lambda drops JSON log lines below this level before they reach
	// CloudWatch, so it must follow the functions' own LOG_LEVEL.
	appLevel := awslambda.ApplicationLogLevel_INFO
	if c.LogLevel == LogLevelDebug {
		appLevel = awslambda.ApplicationLogLevel_DEBUG
	}
	for _, spec := range fnSpecs {
		// One role per function: the binder has no business launching
		// instances, and only the reaper may terminate them.
		role := awsiam.NewRole(s.Stack, jsii.String(spec.id+"Role"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
			Description: jsii.String(fmt.Sprintf("Joist %s of cluster %s", spec.name, c.ClusterName)),
		})
		// An explicit log group instead of the logRetention custom
		// resource: no extra Node.js Lambda in the stack, and the role
		// gets write access to this group only, not logs:* on *. Its name
		// is generated (and output): a fixed name would collide with the
		// group a deleted stack leaves behind.
		logs := awslogs.NewLogGroup(s.Stack, jsii.String(spec.id+"Logs"), &awslogs.LogGroupProps{
			Retention: retention,
		})
		logs.GrantWrite(role)
		props := &awslambda.FunctionProps{
			Description:  jsii.String(fmt.Sprintf("Joist %s (cluster %s): %s", spec.name, c.ClusterName, spec.description)),
			Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture: awslambda.Architecture_ARM_64(),
			Handler:      jsii.String("bootstrap"),
			Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(c.AssetDir, spec.name)), nil),
			Environment:  s.environment(),
			Timeout:      awscdk.Duration_Seconds(jsii.Number(spec.timeout)),
			MemorySize:   jsii.Number(spec.memoryMB),
			Role:         role,
			LogGroup:     logs,
			// The functions write JSON (slog); Lambda's JSON format keeps
			// its own START/REPORT lines in the same shape and filters by
			// the "level" field.
			LoggingFormat:         awslambda.LoggingFormat_JSON,
			ApplicationLogLevelV2: appLevel,
			SystemLogLevelV2:      awslambda.SystemLogLevel_INFO,
		}
		s.placeInVPC(props, role)
		switch spec.name {
		case FnProvisioner:
			// One decider at a time per cluster (DESIGN.md principle 3).
			props.ReservedConcurrentExecutions = jsii.Number(1)
		case FnReaper:
			// A failed tick is not retried: the next one is a minute away.
			props.RetryAttempts = jsii.Number(0)
			props.MaxEventAge = awscdk.Duration_Seconds(jsii.Number(60))
		}
		fn := awslambda.NewFunction(s.Stack, jsii.String(spec.id), props)
		s.Functions[spec.name] = fn
		s.Roles[spec.name] = role
		s.LogGroups[spec.name] = logs
		s.grantAWS(role, spec)
		explainWildcards(role)
	}

	s.Functions[FnProvisioner].AddEventSource(awslambdaeventsources.NewSqsEventSource(s.PendingQueue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:         jsii.Number(pendingBatchSize),
		MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(pendingBatchWindowSeconds)),
		// The provisioner reports only the messages it could not read;
		// a good batch is not redelivered because one body was bad.
		ReportBatchItemFailures: jsii.Bool(true),
		// The lowest the event source allows. With reserved concurrency
		// 1 every extra poller only produces throttles, and throttled
		// receives count towards the DLQ's maxReceiveCount.
		MaxConcurrency: jsii.Number(2),
	}))
	// The binder is invoked only by this mapping, synchronously, so it
	// has no asynchronous-invocation settings: retries and the DLQ are the
	// ready queue's redrive policy.
	s.Functions[FnBinder].AddEventSource(awslambdaeventsources.NewSqsEventSource(s.ReadyQueue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:         jsii.Number(readyBatchSize),
		MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(0)),
		// A batch the binder fails comes back as batchItemFailures, and
		// after readyMaxReceiveCount receives goes to the DLQ.
		ReportBatchItemFailures: jsii.Bool(true),
	}))
	// AWS's interruption events: at once, no batching window (the spot
	// warning's two minutes are the budget). Each message that failed for
	// a passing reason alone comes back (batchItemFailures); malformed
	// ones are deleted by the function.
	s.Functions[FnInterruption].AddEventSource(awslambdaeventsources.NewSqsEventSource(s.InterruptionQueue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(interruptionBatchSize),
		MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(0)),
		ReportBatchItemFailures: jsii.Bool(true),
	}))
}

// defineRoutes wires events to queues and functions.
func (s *JoistStack) defineRoutes() {
	c := s.Config
	awsevents.NewRule(s.Stack, jsii.String("PendingPodsRule"), &awsevents.RuleProps{
		RuleName:    jsii.String(PendingRuleName(c.ClusterName)),
		EventBus:    s.Bus,
		Description: jsii.String("Joist pending pods of " + c.ClusterName + " to the pending queue"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(EventSource),
			DetailType: jsii.Strings(DetailTypePendingPods),
		},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewSqsQueue(s.PendingQueue, nil)},
	})
	awsevents.NewRule(s.Stack, jsii.String("NodeReadyRule"), &awsevents.RuleProps{
		RuleName:    jsii.String(NodeReadyRuleName(c.ClusterName)),
		EventBus:    s.Bus,
		Description: jsii.String("Joist node ready events of " + c.ClusterName + " to the ready queue"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(EventSource),
			DetailType: jsii.Strings(DetailTypeNodeReady),
		},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewSqsQueue(s.ReadyQueue, nil)},
	})
	// The forwarder's wake-ups for the reaper (nodes starting to delete,
	// nodes emptied) go straight to it, as the schedule's do (an
	// asynchronous invoke; no retries, 60 s event age, as the reaper's
	// invoke config says): the reaper treats them as a tick, never
	// reading what they name, so a duplicate or forged one costs one run.
	// The forwarder sends one per burst.
	awsevents.NewRule(s.Stack, jsii.String("ReaperWakeRule"), &awsevents.RuleProps{
		RuleName:    jsii.String(ReaperWakeRuleName(c.ClusterName)),
		EventBus:    s.Bus,
		Description: jsii.String("Joist nodes of " + c.ClusterName + " deleting or emptied: wake the reaper"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(EventSource),
			DetailType: jsii.Strings(DetailTypeNodesDeleting, DetailTypeNodesEmptied),
		},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Functions[FnReaper], &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(2),
			MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(60)),
		})},
	})
	awsevents.NewRule(s.Stack, jsii.String("ReaperSchedule"), &awsevents.RuleProps{
		Description: jsii.String("Joist reaper of " + c.ClusterName + ": disruption and the safety-net reconcile"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Functions[FnReaper], &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(2),
			MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(60)),
		})},
	})

	// The interruption function's health check: DescribeInstanceStatus
	// for the cluster's instances once a minute (impaired status checks,
	// scheduled events), acted on like a scheduled change. The function
	// tells this event from the queue's batches by its shape.
	awsevents.NewRule(s.Stack, jsii.String("HealthCheckSchedule"), &awsevents.RuleProps{
		Description: jsii.String("Joist instance health check of " + c.ClusterName + ": DescribeInstanceStatus, replacement first"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Functions[FnInterruption], &awseventstargets.LambdaFunctionProps{
			// A missed minute is made up by the next one.
			RetryAttempts: jsii.Number(0),
			MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(60)),
		})},
	})

	// AWS's events arrive on the default bus of the account and region.
	// EventBridge cannot filter them by instance tag, so the queue gets
	// every instance's; the interruption function drops what is not the
	// cluster's (the joist.sh/cluster tag, read from EC2).
	toInterruption := &[]awsevents.IRuleTarget{awseventstargets.NewSqsQueue(s.InterruptionQueue, nil)}
	for _, r := range []struct {
		id, source, detailType string
		detail                 *map[string]interface{}
	}{
		{"SpotInterruptionRule", "aws.ec2", "EC2 Spot Instance Interruption Warning", nil},
		{"RebalanceRule", "aws.ec2", "EC2 Instance Rebalance Recommendation", nil},
		{"CapacityReservationInterruptionRule", "aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", nil},
		// Only the states that end an instance: pending and running
		// would be most of the traffic and mean nothing to Joist.
		{"InstanceStateChangeRule", "aws.ec2", "EC2 Instance State-change Notification",
			&map[string]interface{}{"state": jsii.Strings("stopping", "stopped", "shutting-down", "terminated")}},
		// Only EC2 scheduled changes (retirement, maintenance), the only
		// Health events Karpenter acts on.
		{"ScheduledChangeRule", "aws.health", "AWS Health Event",
			&map[string]interface{}{"service": jsii.Strings("EC2"), "eventTypeCategory": jsii.Strings("scheduledChange")}},
	} {
		awsevents.NewRule(s.Stack, jsii.String(r.id), &awsevents.RuleProps{
			Description: jsii.String("Joist interruption (" + c.ClusterName + "): " + r.detailType),
			EventPattern: &awsevents.EventPattern{
				Source:     jsii.Strings(r.source),
				DetailType: jsii.Strings(r.detailType),
				Detail:     r.detail,
			},
			Targets: toInterruption,
		})
	}
}

// arn builds an ARN in this stack's partition and region.
func (s *JoistStack) arn(service, account, resource string) *string {
	return jsii.String(fmt.Sprintf("arn:%s:%s:%s:%s:%s",
		*s.Stack.Partition(), service, *s.Stack.Region(), account, resource))
}

// nodeRoleArn accepts a role name or a full ARN.
func (s *JoistStack) nodeRoleArn() *string {
	if strings.HasPrefix(s.Config.NodeRole, "arn:") {
		return jsii.String(s.Config.NodeRole)
	}
	return jsii.String(fmt.Sprintf("arn:%s:iam::%s:role/%s", *s.Stack.Partition(), *s.Stack.Account(), s.Config.NodeRole))
}

// ClusterArn is the ARN of the EKS cluster the stack serves.
func (s *JoistStack) ClusterArn() *string {
	return s.arn("eks", *s.Stack.Account(), "cluster/"+s.Config.ClusterName)
}

// IAMParams are the deployment's facts the functions' statements depend
// on (partition, account and region are CloudFormation tokens).
func (s *JoistStack) IAMParams() iampolicy.Params {
	return iampolicy.Params{
		Partition: *s.Stack.Partition(), Region: *s.Stack.Region(), Account: *s.Stack.Account(),
		Cluster: s.Config.ClusterName, NodeRoleARN: *s.nodeRoleArn(), EventBusARN: *s.Bus.EventBusArn(),
	}
}

// grantAWS gives one function's role its AWS permissions: exactly the
// statements of pkg/iampolicy, the same ones the test ground enforces on
// every call the functions make. Everything that changes EC2 is tied to
// the joist.sh/cluster tag (created resources must carry it, existing ones
// must already have it), so one cluster's Joist can never touch another's
// instances or anything else in the account.
func (s *JoistStack) grantAWS(role awsiam.Role, spec fnSpec) {
	pol, err := iampolicy.For(spec.name, s.IAMParams())
	if err != nil {
		panic(err) // the stack's own function names; a bug, not input
	}
	for _, st := range pol.Statements {
		role.AddToPolicy(awsiam.PolicyStatement_FromJson(st.JSON()))
	}
}

func (s *JoistStack) forwarderStatements() *[]awsiam.PolicyStatement {
	pol, err := iampolicy.For(iampolicy.Forwarder, s.IAMParams())
	if err != nil {
		panic(err)
	}
	var out []awsiam.PolicyStatement
	for _, st := range pol.Statements {
		out = append(out, awsiam.PolicyStatement_FromJson(st.JSON()))
	}
	return &out
}

// defineForwarderAccess creates what the in-cluster forwarder may do:
// PutEvents on this bus and nothing else. The policy is separate from the
// role so it can also be attached to an IRSA role the user already has.
func (s *JoistStack) defineForwarderAccess() {
	c := s.Config
	s.ForwarderPolicy = awsiam.NewManagedPolicy(s.Stack, jsii.String("ForwarderPolicy"), &awsiam.ManagedPolicyProps{
		Description: jsii.String("Joist forwarder of " + c.ClusterName + ": put events on its bus only"),
		Statements:  s.forwarderStatements(),
	})
	// An EKS Pod Identity role. Pod Identity passes the cluster,
	// namespace and service account as session tags; the trust policy
	// admits only the forwarder's service account of this cluster.
	principal := awsiam.NewServicePrincipal(jsii.String("pods.eks.amazonaws.com"), nil).WithConditions(&map[string]interface{}{
		// Pod Identity names the cluster that asks; only this one may.
		"ArnEquals": map[string]interface{}{"aws:SourceArn": *s.ClusterArn()},
		"StringEquals": map[string]interface{}{
			"aws:SourceAccount":                         *s.Stack.Account(),
			"aws:RequestTag/eks-cluster-name":           c.ClusterName,
			"aws:RequestTag/kubernetes-namespace":       ForwarderNamespace,
			"aws:RequestTag/kubernetes-service-account": ForwarderServiceAccount,
		},
	})
	s.ForwarderRole = awsiam.NewRole(s.Stack, jsii.String("ForwarderRole"), &awsiam.RoleProps{
		AssumedBy:       awsiam.NewSessionTagsPrincipal(principal),
		Description:     jsii.String("Joist forwarder of " + c.ClusterName + " (EKS Pod Identity)"),
		ManagedPolicies: &[]awsiam.IManagedPolicy{s.ForwarderPolicy},
	})
}

// defineAccessEntries lets each function role into the cluster's API as
// its own user in its own group (FunctionGroup); what each group may do is
// its ClusterRole (pkg/rbac), which the installer applies. The installer
// itself gets the cluster-admin access policy: it creates ClusterRoles and
// bindings, and Kubernetes lets only a holder of a permission (or of bind
// and escalate) grant it, so nothing narrower can install the others'
// roles. It returns the installer's entry.
func (s *JoistStack) defineAccessEntries() awscdk.CfnResource {
	var installer awscdk.CfnResource
	for _, spec := range fnSpecs {
		props := &awseks.CfnAccessEntryProps{
			ClusterName:  jsii.String(s.Config.ClusterName),
			PrincipalArn: s.Roles[spec.name].RoleArn(),
			Type:         jsii.String("STANDARD"),
			Username:     jsii.String("joist:" + spec.name),
		}
		if spec.name == FnInstaller {
			props.AccessPolicies = &[]interface{}{&awseks.CfnAccessEntry_AccessPolicyProperty{
				PolicyArn:   jsii.String("arn:" + *s.Stack.Partition() + ":eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"),
				AccessScope: &awseks.CfnAccessEntry_AccessScopeProperty{Type: jsii.String("cluster")},
			}}
		} else {
			props.KubernetesGroups = jsii.Strings(FunctionGroup(spec.name))
		}
		e := awseks.NewCfnAccessEntry(s.Stack, jsii.String(spec.id+"AccessEntry"), props)
		if spec.name == FnInstaller {
			installer = e
		}
	}
	return installer
}

// defineInstall puts Joist's in-cluster objects in through the installer
// function as a custom resource (Custom::JoistInstall, pkg/install): the
// functions' RBAC, the Lease's Role, the admission policy and the
// forwarder, whose image is built by `cdk deploy` from
// cmd/forwarder/Dockerfile unless -c forwarderImage names one. The
// forwarder's credentials come from an EKS Pod Identity association of its
// service account with ForwarderRole (the cluster needs the Pod Identity
// agent add-on). The function answers CloudFormation itself (no provider
// framework, no extra Node.js function).
func (s *JoistStack) defineInstall(installerAccess awscdk.CfnResource) {
	c := s.Config
	image := c.ForwarderImage
	if image == "" {
		asset := awsecrassets.NewDockerImageAsset(s.Stack, jsii.String("ForwarderImage"), &awsecrassets.DockerImageAssetProps{
			Directory: jsii.String(c.SourceDir),
			File:      jsii.String("cmd/forwarder/Dockerfile"),
			Platform:  awsecrassets.Platform_LINUX_ARM64(),
			Exclude:   jsii.Strings(".git", "bin", "build", "cdk.out", "infra/cdk.out", "tools", "docs", "node_modules"),
		})
		image = *asset.ImageUri()
	}
	awseks.NewCfnPodIdentityAssociation(s.Stack, jsii.String("ForwarderPodIdentity"), &awseks.CfnPodIdentityAssociationProps{
		ClusterName:    jsii.String(c.ClusterName),
		Namespace:      jsii.String(ForwarderNamespace),
		ServiceAccount: jsii.String(ForwarderServiceAccount),
		RoleArn:        s.ForwarderRole.RoleArn(),
	})
	props := map[string]interface{}{
		"Cluster":        c.ClusterName,
		"Region":         *s.Stack.Region(),
		"ForwarderImage": image,
		"EventBus":       *s.Bus.EventBusName(),
		// In CRD mode the installer creates the Karpenter CRDs the
		// cluster lacks (never replacing or deleting one).
		"CRDs": strconv.FormatBool(c.SpecSource == SpecSourceCRD),
	}
	// With default spread constraints the planning functions read
	// Services and the pods' controllers: only then are they granted.
	if c.defaultSpread() {
		props["DefaultSpread"] = "true"
	}
	cr := awscdk.NewCustomResource(s.Stack, jsii.String("Install"), &awscdk.CustomResourceProps{
		ServiceToken: s.Functions[FnInstaller].FunctionArn(),
		ResourceType: jsii.String("Custom::JoistInstall"),
		Properties:   &props,
	})
	if installerAccess != nil {
		cr.Node().AddDependency(installerAccess)
	}
}

// teardownTimeoutSeconds is the installer's timeout with teardown on: the
// longest Lambda allows, for the drains; the handler answers 30 s before.
const teardownTimeoutSeconds = 900

// defineTeardown adds Custom::JoistTeardown (pkg/install.Teardown), served
// by the installer. It depends on everything else in the stack, so that
// CloudFormation deletes it first, while the reaper, its schedule, its
// access entry and RBAC still work: its delete has the reaper retire every
// Joist node and answers once none is left. The installer's timeout grows
// to Lambda's longest for the wait.
func (s *JoistStack) defineTeardown() {
	cr := awscdk.NewCustomResource(s.Stack, jsii.String("Teardown"), &awscdk.CustomResourceProps{
		ServiceToken: s.Functions[FnInstaller].FunctionArn(),
		ResourceType: jsii.String("Custom::JoistTeardown"),
		Properties: &map[string]interface{}{
			"Cluster": s.Config.ClusterName,
		},
	})
	for _, child := range *s.Stack.Node().Children() {
		if child == cr || child.Node().Id() == nil || *child.Node().Id() == "Teardown" {
			continue
		}
		cr.Node().AddDependency(child)
	}
	fn, ok := s.Functions[FnInstaller].Node().DefaultChild().(awslambda.CfnFunction)
	if ok {
		fn.SetTimeout(jsii.Number(teardownTimeoutSeconds))
	}
}

func (s *JoistStack) defineOutputs() {
	out := func(id string, value *string, description string) {
		awscdk.NewCfnOutput(s.Stack, jsii.String(id), &awscdk.CfnOutputProps{
			Value:       value,
			Description: jsii.String(description),
		})
	}
	out("EventBusName", s.Bus.EventBusName(), "the forwarder's EVENT_BUS_NAME")
	if s.Network != nil {
		out("FunctionSecurityGroupId", s.Network.SecurityGroup.SecurityGroupId(), "the functions' security group: the cluster's API endpoint must admit it on 443")
	}
	out("EventBusArn", s.Bus.EventBusArn(), "the bus the forwarder puts events on")
	out("PendingQueueUrl", s.PendingQueue.QueueUrl(), "pending-pods events, polled by the provisioner")
	out("PendingDeadLetterQueueUrl", s.PendingDLQ.QueueUrl(), "pending-pods batches that failed 5 times")
	out("ReadyQueueUrl", s.ReadyQueue.QueueUrl(), "Node Ready events, polled by the binder")
	out("ReadyDeadLetterQueueUrl", s.ReadyDLQ.QueueUrl(), "Node Ready batches that failed 5 times")
	out("InterruptionQueueUrl", s.InterruptionQueue.QueueUrl(), "EC2 and Health events, polled by the interruption function; messages expire after 300 s")
	out("InterruptionDeadLetterQueueUrl", s.InterruptionDLQ.QueueUrl(), "interruption messages that failed 5 times")
	for _, spec := range fnSpecs {
		out(spec.id+"FunctionName", s.Functions[spec.name].FunctionName(), "the "+spec.name+" function")
		access := "its EKS access entry puts it in group " + FunctionGroup(spec.name)
		if spec.name == FnInstaller {
			access = "its EKS access entry carries AmazonEKSClusterAdminPolicy"
		}
		out(spec.id+"RoleArn", s.Roles[spec.name].RoleArn(), "the "+spec.name+"'s role: "+access)
		out(spec.id+"LogGroupName", s.LogGroups[spec.name].LogGroupName(), "the "+spec.name+"'s logs (aws logs tail NAME --follow)")
	}
	out("ForwarderPolicyArn", s.ForwarderPolicy.ManagedPolicyArn(), "attach to the forwarder's IRSA role if you do not use ForwarderRoleArn")
	out("ForwarderRoleArn", s.ForwarderRole.RoleArn(), "EKS Pod Identity role for "+ForwarderNamespace+"/"+ForwarderServiceAccount)
	out("AlarmTopicArn", s.AlarmTopic.TopicArn(), "subscribe to it for Joist's alarms (or give -c alarmTopicArn)")
}

// queueWithDLQ makes an encrypted, TLS-only queue of the given name with a
// dead-letter queue (kept 14 days for inspection) that takes a message
// after maxReceive receives. Messages live an hour.
func (s *JoistStack) queueWithDLQ(id, name string, visibilitySeconds, maxReceive float64) (awssqs.Queue, awssqs.Queue) {
	dlq := awssqs.NewQueue(s.Stack, jsii.String(id+"DeadLetterQueue"), &awssqs.QueueProps{
		QueueName:       jsii.String(DeadLetterQueueName(name)),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	q := awssqs.NewQueue(s.Stack, jsii.String(id+"Queue"), &awssqs.QueueProps{
		QueueName:         jsii.String(name),
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(visibilitySeconds)),
		RetentionPeriod:   awscdk.Duration_Hours(jsii.Number(1)),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(maxReceive)},
	})
	return q, dlq
}
