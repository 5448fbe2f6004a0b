package stack

import (
	"slices"

	"encoding/json"
	"fmt"
	"github.com/joist-dev/joist/pkg/iampolicy"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

func TestMain(m *testing.M) {
	// The machine's Node.js 20 makes the jsii runtime print a large
	// end-of-life banner on every start; it says nothing about the code.
	if os.Getenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION") == "" {
		os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	}
	os.Exit(m.Run())
}

// Synthesizing costs a second or two of Node.js per stack, so the tests
// share one stack per configuration.
var (
	baseOnce sync.Once
	baseTpl  assertions.Template
	baseSt   *JoistStack
	baseErr  error
)

// placeholderAssets makes a directory with a bootstrap file per function,
// standing in for `make build` so the stack synthesizes without Go
// cross-compiles. The content differs per function so the assets differ,
// as they do for real.
func placeholderAssets(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range FunctionNames {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		body := "#!/bin/sh\n# placeholder for " + name + "\n"
		if err := os.WriteFile(filepath.Join(dir, name, "bootstrap"), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := forwarderSource(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// forwarderSource puts a stand-in build context for the forwarder's image
// under dir/src (staging the real repository in every synth would copy it
// each time).
func forwarderSource(dir string) error {
	p := filepath.Join(dir, "src", "cmd", "forwarder", "Dockerfile")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte("FROM scratch\n"), 0o644)
}

func baseConfig(assetDir string) Config {
	return Config{
		SourceDir:              filepath.Join(assetDir, "src"),
		AccessEntries:          true,
		ClusterName:            "hoon-cluster",
		Region:                 "ap-northeast-2",
		SpecSource:             SpecSourceSSM,
		AssetDir:               assetDir,
		NodeRole:               DefaultNodeRole("hoon-cluster"),
		DefaultInstanceProfile: DefaultInstanceProfile("hoon-cluster"),
		LogRetentionDays:       DefaultLogRetentionDays,
		LogLevel:               LogLevelInfo,
	}
}

func synth(t *testing.T, cfg Config) (*JoistStack, assertions.Template) {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	st, err := New(app, "JoistStack", cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return st, assertions.Template_FromStack(st.Stack, nil)
}

// base is the stack with the defaults of cdk.json (cluster hoon-cluster,
// region ap-northeast-2, spec source ssm) and no optional context.
func base(t *testing.T) (*JoistStack, assertions.Template) {
	t.Helper()
	baseOnce.Do(func() {
		// The temp dir must outlive this test: later tests reuse the
		// template, though not the files.
		dir, err := os.MkdirTemp("", "joist-assets-")
		if err != nil {
			baseErr = err
			return
		}
		for _, name := range FunctionNames {
			p := filepath.Join(dir, name, "bootstrap")
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.WriteFile(p, []byte("#!/bin/sh\n# "+name+"\n"), 0o755)
			}
			if err != nil {
				baseErr = err
				return
			}
		}
		if baseErr = forwarderSource(dir); baseErr != nil {
			return
		}
		defer os.RemoveAll(dir)
		out, err := os.MkdirTemp("", "joist-cdk-out-")
		if err != nil {
			baseErr = err
			return
		}
		defer os.RemoveAll(out)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
		baseSt, baseErr = New(app, "JoistStack", baseConfig(dir))
		if baseErr == nil {
			baseTpl = assertions.Template_FromStack(baseSt.Stack, nil)
		}
	})
	if baseErr != nil {
		t.Fatalf("New: %v", baseErr)
	}
	return baseSt, baseTpl
}

// check runs a CDK assertion, which panics on mismatch, and turns the
// panic into a test error with the matcher's explanation.
func check(t *testing.T, what string, assert func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	assert()
}

func obj(kv ...interface{}) *map[string]interface{} {
	m := map[string]interface{}{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return &m
}

func like(kv ...interface{}) assertions.Matcher { return assertions.Match_ObjectLike(obj(kv...)) }

func arrayWith(items ...interface{}) assertions.Matcher { return assertions.Match_ArrayWith(&items) }

// logicalID returns the CloudFormation logical id of an L2 construct's
// resource, for Ref and GetAtt comparisons.
func logicalID(t *testing.T, st *JoistStack, c constructs.IConstruct) string {
	t.Helper()
	el, ok := c.Node().DefaultChild().(awscdk.CfnElement)
	if !ok {
		t.Fatalf("%T has no CfnElement default child", c)
	}
	return *st.Stack.GetLogicalId(el)
}

// resources returns the template's resources of one type, by logical id.
func resources(t *testing.T, tpl assertions.Template, typ string) map[string]map[string]interface{} {
	t.Helper()
	found := tpl.FindResources(jsii.String(typ), nil)
	out := map[string]map[string]interface{}{}
	for id, r := range *found {
		out[id] = *r
	}
	return out
}

func props(r map[string]interface{}) map[string]interface{} {
	p, _ := r["Properties"].(map[string]interface{})
	return p
}

func TestBus(t *testing.T) {
	_, tpl := base(t)
	check(t, "one bus", func() { tpl.ResourceCountIs(jsii.String("AWS::Events::EventBus"), jsii.Number(1)) })
	check(t, "bus name", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Events::EventBus"), like("Name", "joist-hoon-cluster"))
	})
}

func TestQueues(t *testing.T) {
	st, tpl := base(t)
	check(t, "six queues (pending, ready and interruption, and their DLQs)", func() {
		tpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(6))
	})
	q := resources(t, tpl, "AWS::SQS::Queue")
	pending := props(q[logicalID(t, st, st.PendingQueue)])
	dlqID := logicalID(t, st, st.PendingDLQ)
	wantRedrive := map[string]interface{}{
		"deadLetterTargetArn": map[string]interface{}{"Fn::GetAtt": []interface{}{dlqID, "Arn"}},
		"maxReceiveCount":     float64(pendingMaxReceiveCount),
	}
	if !reflect.DeepEqual(pending["RedrivePolicy"], wantRedrive) {
		t.Errorf("pending RedrivePolicy = %v, want %v", pending["RedrivePolicy"], wantRedrive)
	}
	if got := pending["VisibilityTimeout"]; got != float64(6*provisionerTimeoutSeconds) {
		t.Errorf("pending VisibilityTimeout = %v, want 6 x the provisioner timeout", got)
	}
	ready := props(q[logicalID(t, st, st.ReadyQueue)])
	readyDLQID := logicalID(t, st, st.ReadyDLQ)
	wantRedrive = map[string]interface{}{
		"deadLetterTargetArn": map[string]interface{}{"Fn::GetAtt": []interface{}{readyDLQID, "Arn"}},
		"maxReceiveCount":     float64(5),
	}
	if !reflect.DeepEqual(ready["RedrivePolicy"], wantRedrive) {
		t.Errorf("ready RedrivePolicy = %v, want %v", ready["RedrivePolicy"], wantRedrive)
	}
	if got := ready["VisibilityTimeout"]; got != float64(6*binderTimeoutSeconds) {
		t.Errorf("ready VisibilityTimeout = %v, want 6 x the binder timeout", got)
	}
	if got := ready["MessageRetentionPeriod"]; got != float64(3600) {
		t.Errorf("ready MessageRetentionPeriod = %v, want 3600 (1 h)", got)
	}
	for _, dlq := range []string{dlqID, readyDLQID} {
		if got := props(q[dlq])["MessageRetentionPeriod"]; got != float64(14*24*3600) {
			t.Errorf("DLQ %s MessageRetentionPeriod = %v, want 14 days", dlq, got)
		}
		if _, ok := props(q[dlq])["RedrivePolicy"]; ok {
			t.Errorf("DLQ %s has a DLQ of its own", dlq)
		}
	}
	// The test ground (test/testenv/bus.go) creates queues of these names.
	for queue, want := range map[constructs.IConstruct]string{
		st.PendingQueue: "joist-hoon-cluster-pending",
		st.PendingDLQ:   "joist-hoon-cluster-pending-dlq",
		st.ReadyQueue:   "joist-hoon-cluster-ready",
		st.ReadyDLQ:     "joist-hoon-cluster-ready-dlq",
	} {
		id := logicalID(t, st, queue)
		if got := props(q[id])["QueueName"]; got != want {
			t.Errorf("queue %s: QueueName %v, want %s", id, got, want)
		}
	}
	intr := props(q[logicalID(t, st, st.InterruptionQueue)])
	if got := intr["MessageRetentionPeriod"]; got != float64(300) {
		t.Errorf("interruption MessageRetentionPeriod = %v, want 300", got)
	}
	if vis, ok := intr["VisibilityTimeout"].(float64); !ok || vis < interruptionTimeoutSeconds {
		t.Errorf("interruption VisibilityTimeout = %v, want >= the function timeout %d", intr["VisibilityTimeout"], interruptionTimeoutSeconds)
	}
	wantRedrive = map[string]interface{}{
		"deadLetterTargetArn": map[string]interface{}{"Fn::GetAtt": []interface{}{logicalID(t, st, st.InterruptionDLQ), "Arn"}},
		"maxReceiveCount":     float64(interruptionMaxReceiveCount),
	}
	if !reflect.DeepEqual(intr["RedrivePolicy"], wantRedrive) {
		t.Errorf("interruption RedrivePolicy = %v, want %v", intr["RedrivePolicy"], wantRedrive)
	}
	for id, r := range q {
		if props(r)["SqsManagedSseEnabled"] != true {
			t.Errorf("queue %s: SSE not enabled", id)
		}
	}
	// Every queue refuses plain HTTP.
	for id, r := range resources(t, tpl, "AWS::SQS::QueuePolicy") {
		if !strings.Contains(fmt.Sprint(props(r)["PolicyDocument"]), "aws:SecureTransport") {
			t.Errorf("queue policy %s does not deny non-TLS", id)
		}
	}
	// EventBridge may send to the pending, ready and interruption queues.
	for _, queue := range []constructs.IConstruct{st.PendingQueue, st.ReadyQueue, st.InterruptionQueue} {
		id := logicalID(t, st, queue)
		check(t, "events.amazonaws.com may send to "+id, func() {
			tpl.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), like(
				"Queues", []interface{}{obj("Ref", id)},
				"PolicyDocument", like("Statement", arrayWith(like(
					"Effect", "Allow",
					"Principal", obj("Service", "events.amazonaws.com"),
					"Action", arrayWith("sqs:SendMessage"),
				))),
			))
		})
	}
}

// rulesByPattern finds rules by source and detail-type.
func rule(t *testing.T, tpl assertions.Template, source, detailType string) (string, map[string]interface{}) {
	t.Helper()
	var ids []string
	var found map[string]interface{}
	for id, r := range resources(t, tpl, "AWS::Events::Rule") {
		p := props(r)
		pat, _ := p["EventPattern"].(map[string]interface{})
		if reflect.DeepEqual(pat["source"], []interface{}{source}) && reflect.DeepEqual(pat["detail-type"], []interface{}{detailType}) {
			ids = append(ids, id)
			found = p
		}
	}
	if len(ids) != 1 {
		t.Fatalf("rules for %s / %s: %v, want exactly one", source, detailType, ids)
	}
	return ids[0], found
}

func target(t *testing.T, rule map[string]interface{}) map[string]interface{} {
	t.Helper()
	targets, _ := rule["Targets"].([]interface{})
	if len(targets) != 1 {
		t.Fatalf("rule targets = %v, want one", targets)
	}
	return targets[0].(map[string]interface{})
}

func getAtt(id string) map[string]interface{} {
	return map[string]interface{}{"Fn::GetAtt": []interface{}{id, "Arn"}}
}

func TestJoistRules(t *testing.T) {
	st, tpl := base(t)
	busRef := map[string]interface{}{"Ref": logicalID(t, st, st.Bus)}

	_, pending := rule(t, tpl, EventSource, DetailTypePendingPods)
	// The test ground (test/testenv/bus.go) creates rules of these names.
	if got := pending["Name"]; got != "joist-hoon-cluster-pending-pods" {
		t.Errorf("pending rule Name = %v, want joist-hoon-cluster-pending-pods", got)
	}
	if !reflect.DeepEqual(pending["EventBusName"], busRef) {
		t.Errorf("pending rule bus = %v, want %v", pending["EventBusName"], busRef)
	}
	if got, want := target(t, pending)["Arn"], getAtt(logicalID(t, st, st.PendingQueue)); !reflect.DeepEqual(got, want) {
		t.Errorf("pending rule target = %v, want the pending queue %v", got, want)
	}

	_, ready := rule(t, tpl, EventSource, DetailTypeNodeReady)
	if got := ready["Name"]; got != "joist-hoon-cluster-node-ready" {
		t.Errorf("node ready rule Name = %v, want joist-hoon-cluster-node-ready", got)
	}
	if !reflect.DeepEqual(ready["EventBusName"], busRef) {
		t.Errorf("node ready rule bus = %v, want %v", ready["EventBusName"], busRef)
	}
	if got, want := target(t, ready)["Arn"], getAtt(logicalID(t, st, st.ReadyQueue)); !reflect.DeepEqual(got, want) {
		t.Errorf("node ready rule target = %v, want the ready queue %v", got, want)
	}
	// The reaper's wake-up goes to the reaper itself, on the cluster's bus.
	var wake map[string]interface{}
	for _, r := range resources(t, tpl, "AWS::Events::Rule") {
		if p := props(r); p["Name"] == "joist-hoon-cluster-reaper-wake" {
			wake = p
		}
	}
	if wake == nil {
		t.Fatal("no rule joist-hoon-cluster-reaper-wake")
	}
	pat, _ := wake["EventPattern"].(map[string]interface{})
	if want := []interface{}{EventSource}; !reflect.DeepEqual(pat["source"], want) {
		t.Errorf("reaper wake rule source = %v, want %v", pat["source"], want)
	}
	if want := []interface{}{DetailTypeNodesDeleting, DetailTypeNodesEmptied}; !reflect.DeepEqual(pat["detail-type"], want) {
		t.Errorf("reaper wake rule detail types = %v, want %v", pat["detail-type"], want)
	}
	if !reflect.DeepEqual(wake["EventBusName"], busRef) {
		t.Errorf("reaper wake rule bus = %v, want %v", wake["EventBusName"], busRef)
	}
	reaper := getAtt(logicalID(t, st, st.Functions[FnReaper]))
	if got := target(t, wake)["Arn"]; !reflect.DeepEqual(got, reaper) {
		t.Errorf("reaper wake rule target = %v, want the reaper %v", got, reaper)
	}
	wakeInvokes := 0
	for _, r := range resources(t, tpl, "AWS::Lambda::Permission") {
		p := props(r)
		if reflect.DeepEqual(p["FunctionName"], reaper) && p["Principal"] == "events.amazonaws.com" {
			wakeInvokes++
		}
	}
	if wakeInvokes != 2 {
		t.Errorf("%d EventBridge permissions on the reaper, want 2 (the schedule and the wake rule)", wakeInvokes)
	}
	// Nothing invokes the binder but its event source mapping.
	for id, r := range resources(t, tpl, "AWS::Lambda::Permission") {
		if reflect.DeepEqual(props(r)["FunctionName"], getAtt(logicalID(t, st, st.Functions[FnBinder]))) {
			t.Errorf("permission %s lets %v invoke the binder", id, props(r)["Principal"])
		}
	}
}

func TestInterruptionRules(t *testing.T) {
	st, tpl := base(t)
	queue := getAtt(logicalID(t, st, st.InterruptionQueue))
	for _, c := range []struct {
		source, detailType string
		detail             map[string]interface{}
	}{
		{"aws.ec2", "EC2 Spot Instance Interruption Warning", nil},
		{"aws.ec2", "EC2 Instance Rebalance Recommendation", nil},
		{"aws.ec2", "EC2 Instance State-change Notification", map[string]interface{}{
			"state": []interface{}{"stopping", "stopped", "shutting-down", "terminated"}}},
		{"aws.health", "AWS Health Event", map[string]interface{}{
			"service": []interface{}{"EC2"}, "eventTypeCategory": []interface{}{"scheduledChange"}}},
	} {
		_, r := rule(t, tpl, c.source, c.detailType)
		if bus, ok := r["EventBusName"]; ok {
			t.Errorf("%s rule is on bus %v, want the default bus", c.detailType, bus)
		}
		pat := r["EventPattern"].(map[string]interface{})
		if detail, _ := pat["detail"].(map[string]interface{}); !reflect.DeepEqual(detail, c.detail) {
			t.Errorf("%s rule detail = %v, want %v", c.detailType, pat["detail"], c.detail)
		}
		if got := target(t, r)["Arn"]; !reflect.DeepEqual(got, queue) {
			t.Errorf("%s rule target = %v, want the interruption queue", c.detailType, got)
		}
	}
}

func TestFunctions(t *testing.T) {
	st, tpl := base(t)
	fns := resources(t, tpl, "AWS::Lambda::Function")
	if len(fns) != len(FunctionNames) {
		t.Errorf("%d functions, want %d", len(fns), len(FunctionNames))
	}
	busRef := map[string]interface{}{"Ref": logicalID(t, st, st.Bus)}
	logs := resources(t, tpl, "AWS::Logs::LogGroup")
	for _, name := range FunctionNames {
		p := props(fns[logicalID(t, st, st.Functions[name])])
		if p == nil {
			t.Errorf("%s: not in the template", name)
			continue
		}
		if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" ||
			!reflect.DeepEqual(p["Architectures"], []interface{}{"arm64"}) {
			t.Errorf("%s: runtime %v, handler %v, architectures %v; want provided.al2023, bootstrap, [arm64]",
				name, p["Runtime"], p["Handler"], p["Architectures"])
		}
		want := map[string]interface{}{
			"CLUSTER_NAME":             "hoon-cluster",
			"SPEC_SOURCE":              "ssm",
			"SPEC_PREFIX":              "/joist/hoon-cluster/",
			"EVENT_BUS_NAME":           busRef,
			"DEFAULT_INSTANCE_PROFILE": "KarpenterNodeInstanceProfile-hoon-cluster",
			"JOIST_CATALOG":            "live",
		}
		env, _ := p["Environment"].(map[string]interface{})
		if !reflect.DeepEqual(env["Variables"], want) {
			t.Errorf("%s: environment %v, want %v", name, env["Variables"], want)
		}
		lc, _ := p["LoggingConfig"].(map[string]interface{})
		if lc["LogFormat"] != "JSON" {
			t.Errorf("%s: log format %v, want JSON", name, lc["LogFormat"])
		}
		lg, _ := lc["LogGroup"].(map[string]interface{})
		ref, _ := lg["Ref"].(string)
		if r, ok := logs[ref]; !ok || props(r)["RetentionInDays"] != float64(DefaultLogRetentionDays) {
			t.Errorf("%s: log group %v, want one with %d days' retention", name, lc["LogGroup"], DefaultLogRetentionDays)
		}
		_, reserved := p["ReservedConcurrentExecutions"]
		if reserved != (name == FnProvisioner) {
			t.Errorf("%s: ReservedConcurrentExecutions = %v; only the provisioner is reserved", name, p["ReservedConcurrentExecutions"])
		}
	}
	prov := props(fns[logicalID(t, st, st.Functions[FnProvisioner])])
	if prov["ReservedConcurrentExecutions"] != float64(1) || prov["MemorySize"] != float64(512) {
		t.Errorf("provisioner: reserved %v, memory %v; want 1 and 512", prov["ReservedConcurrentExecutions"], prov["MemorySize"])
	}
	if to, _ := prov["Timeout"].(float64); to < 60 || to > 120 {
		t.Errorf("provisioner timeout %v s, want 60..120", prov["Timeout"])
	}
	binder := props(fns[logicalID(t, st, st.Functions[FnBinder])])
	if binder["Timeout"] != float64(binderTimeoutSeconds) {
		t.Errorf("binder timeout %v s, want %d (the ready queue's visibility is derived from it)", binder["Timeout"], binderTimeoutSeconds)
	}
	// The binder is fed by SQS only: no asynchronous-invocation DLQ,
	// retries or event age. The reaper's async settings are the only ones.
	if dlc, ok := binder["DeadLetterConfig"]; ok {
		t.Errorf("binder DeadLetterConfig = %v, want none", dlc)
	}
	reaperRef := map[string]interface{}{"Ref": logicalID(t, st, st.Functions[FnReaper])}
	for id, r := range resources(t, tpl, "AWS::Lambda::EventInvokeConfig") {
		if fn := props(r)["FunctionName"]; !reflect.DeepEqual(fn, reaperRef) {
			t.Errorf("EventInvokeConfig %s for %v; only the reaper has one", id, fn)
		}
	}
	check(t, "reaper: no async retries, 60 s event age", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventInvokeConfig"), like(
			"FunctionName", reaperRef, "MaximumRetryAttempts", 0, "MaximumEventAgeInSeconds", 60))
	})
	// The binder's role may read the ready queue and send nowhere.
	stmts := statements(t, st, tpl, FnBinder)
	readyArn := getAtt(logicalID(t, st, st.ReadyQueue))
	if found := allowing(stmts, "sqs:ReceiveMessage"); len(found) != 1 || !reflect.DeepEqual(found[0]["Resource"], readyArn) {
		t.Errorf("binder sqs:ReceiveMessage statements %v, want one on the ready queue", found)
	}
	if found := allowing(stmts, "sqs:SendMessage"); len(found) > 0 {
		t.Errorf("binder may sqs:SendMessage: %v", found)
	}
}

func TestEventSourceMappings(t *testing.T) {
	st, tpl := base(t)
	check(t, "provisioner polls the pending queue", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(
			"FunctionName", obj("Ref", logicalID(t, st, st.Functions[FnProvisioner])),
			"EventSourceArn", getAtt(logicalID(t, st, st.PendingQueue)),
			"BatchSize", pendingBatchSize,
			"MaximumBatchingWindowInSeconds", 1,
			"FunctionResponseTypes", []interface{}{"ReportBatchItemFailures"},
			"ScalingConfig", obj("MaximumConcurrency", 2),
		))
	})
	check(t, "binder polls the ready queue", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(
			"FunctionName", obj("Ref", logicalID(t, st, st.Functions[FnBinder])),
			"EventSourceArn", getAtt(logicalID(t, st, st.ReadyQueue)),
			"BatchSize", 10,
			"MaximumBatchingWindowInSeconds", 0,
			"FunctionResponseTypes", []interface{}{"ReportBatchItemFailures"},
		))
	})
	check(t, "interruption polls the interruption queue", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(
			"FunctionName", obj("Ref", logicalID(t, st, st.Functions[FnInterruption])),
			"EventSourceArn", getAtt(logicalID(t, st, st.InterruptionQueue)),
			"BatchSize", 10,
			"MaximumBatchingWindowInSeconds", 0,
			"FunctionResponseTypes", []interface{}{"ReportBatchItemFailures"},
		))
	})
	check(t, "three mappings", func() {
		tpl.ResourceCountIs(jsii.String("AWS::Lambda::EventSourceMapping"), jsii.Number(3))
	})
	if pendingBatchSize < 10 || pendingBatchSize > 100 {
		t.Errorf("pending batch size %d, want 10..100", pendingBatchSize)
	}
}

// TestSchedules: two rate(1 minute) rules, one for the reaper, one for
// the interruption function's health check, each allowed to invoke its
// function.
func TestSchedules(t *testing.T) {
	st, tpl := base(t)
	want := map[string]interface{}{
		FnReaper:       getAtt(logicalID(t, st, st.Functions[FnReaper])),
		FnInterruption: getAtt(logicalID(t, st, st.Functions[FnInterruption])),
	}
	seen := map[string]int{}
	for id, r := range resources(t, tpl, "AWS::Events::Rule") {
		p := props(r)
		if p["ScheduleExpression"] == nil {
			continue
		}
		if p["ScheduleExpression"] != "rate(1 minute)" {
			t.Errorf("%s: schedule %v, want rate(1 minute)", id, p["ScheduleExpression"])
		}
		got := target(t, p)["Arn"]
		matched := false
		for fn, arn := range want {
			if reflect.DeepEqual(got, arn) {
				seen[fn]++
				matched = true
			}
		}
		if !matched {
			t.Errorf("%s: target %v, want the reaper or the interruption function", id, got)
		}
	}
	for fn, arn := range want {
		if seen[fn] != 1 {
			t.Errorf("%d schedule rules for %s, want 1", seen[fn], fn)
		}
		check(t, "EventBridge may invoke "+fn, func() {
			tpl.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), like(
				"FunctionName", arn, "Principal", "events.amazonaws.com"))
		})
	}
}

// statements returns the IAM statements of one role's inline policies.
func statements(t *testing.T, st *JoistStack, tpl assertions.Template, fn string) []map[string]interface{} {
	t.Helper()
	roleID := logicalID(t, st, st.Roles[fn])
	var out []map[string]interface{}
	for _, r := range resources(t, tpl, "AWS::IAM::Policy") {
		p := props(r)
		if !reflect.DeepEqual(p["Roles"], []interface{}{map[string]interface{}{"Ref": roleID}}) {
			continue
		}
		for _, s := range p["PolicyDocument"].(map[string]interface{})["Statement"].([]interface{}) {
			out = append(out, s.(map[string]interface{}))
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no policy statements", fn)
	}
	return out
}

func actions(s map[string]interface{}) []string {
	switch a := s["Action"].(type) {
	case string:
		return []string{a}
	case []interface{}:
		var out []string
		for _, x := range a {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

// allowing returns the statements that allow action.
func allowing(stmts []map[string]interface{}, action string) []map[string]interface{} {
	var out []map[string]interface{}
	for _, s := range stmts {
		for _, a := range actions(s) {
			if a == action && s["Effect"] == "Allow" {
				out = append(out, s)
			}
		}
	}
	return out
}

func conditionValue(s map[string]interface{}, op, key string) interface{} {
	c, _ := s["Condition"].(map[string]interface{})
	m, _ := c[op].(map[string]interface{})
	return m[key]
}

// TestRolesHoldExactlyTheStatementsOfIAMPolicy: the deployed policies are
// pkg/iampolicy's, statement for statement (the ones the test ground
// enforces).
func TestRolesHoldExactlyTheStatementsOfIAMPolicy(t *testing.T) {
	st, tpl := base(t)
	for _, fn := range FunctionNames {
		stmts := statements(t, st, tpl, fn)
		want := iampolicy.MustFor(fn, st.IAMParams())
		var got, wantSids []string
		for _, s := range stmts {
			if sid, ok := s["Sid"].(string); ok {
				got = append(got, sid)
			}
		}
		for _, s := range want.Statements {
			wantSids = append(wantSids, s.Sid)
		}
		if !slices.Equal(got, wantSids) {
			t.Errorf("%s: statements %v, want %v", fn, got, wantSids)
		}
	}
}

func TestTerminateNeedsClusterTag(t *testing.T) {
	st, tpl := base(t)
	for _, fn := range FunctionNames {
		stmts := statements(t, st, tpl, fn)
		for _, action := range []string{"ec2:TerminateInstances"} {
			found := allowing(stmts, action)
			mayManage := fn == FnReaper
			if !mayManage && len(found) > 0 {
				t.Errorf("%s may %s", fn, action)
			}
			if mayManage && len(found) == 0 {
				t.Errorf("%s may not %s", fn, action)
			}
			for _, s := range found {
				if got := conditionValue(s, "StringEquals", "aws:ResourceTag/joist.sh/cluster"); got != "hoon-cluster" {
					t.Errorf("%s: %s without the resource-tag condition: %v", fn, action, s["Condition"])
				}
			}
		}
		// Every destructive EC2 action (Terminate*, Delete*, Stop*,
		// Modify*, Cancel*) needs the cluster's resource tag, whichever
		// it is and whoever holds it.
		for _, st := range stmts {
			for _, a := range actions(st) {
				if !strings.HasPrefix(a, "ec2:") {
					continue
				}
				verb := strings.TrimPrefix(a, "ec2:")
				destructive := false
				for _, p := range []string{"Terminate", "Delete", "Stop", "Modify", "Cancel", "Reboot", "Detach"} {
					destructive = destructive || strings.HasPrefix(verb, p)
				}
				if destructive && conditionValue(st, "StringEquals", "aws:ResourceTag/joist.sh/cluster") != "hoon-cluster" {
					t.Errorf("%s: %s without the cluster's resource-tag condition: %v", fn, a, st["Condition"])
				}
			}
		}
		// Tagging existing resources is also scoped to the cluster's own.
		for _, s := range allowing(stmts, "ec2:CreateTags") {
			if conditionValue(s, "StringEquals", "aws:ResourceTag/joist.sh/cluster") != "hoon-cluster" &&
				conditionValue(s, "StringEquals", "aws:RequestTag/joist.sh/cluster") != "hoon-cluster" {
				t.Errorf("%s: CreateTags without a cluster tag condition: %v", fn, s)
			}
		}
	}
}

func TestLaunchNeedsClusterRequestTag(t *testing.T) {
	st, tpl := base(t)
	for _, fn := range FunctionNames {
		stmts := statements(t, st, tpl, fn)
		mayLaunch := fn == FnProvisioner || fn == FnReaper || fn == FnInterruption
		for _, action := range []string{"ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateLaunchTemplate", "iam:PassRole", "pricing:GetProducts"} {
			found := allowing(stmts, action)
			if mayLaunch != (len(found) > 0) {
				t.Errorf("%s: %d statements allow %s; launch allowed: %v", fn, len(found), action, mayLaunch)
			}
		}
		for _, s := range allowing(stmts, "ec2:CreateLaunchTemplate") {
			if conditionValue(s, "StringEquals", "aws:RequestTag/joist.sh/cluster") != "hoon-cluster" {
				t.Errorf("%s: CreateLaunchTemplate without the request-tag condition: %v", fn, s["Condition"])
			}
		}
		// CreateFleet on anything an instance is made of must carry the
		// request tag; on the images, subnets and so on it launches from
		// it cannot, and it must not reach launch templates of others.
		for _, s := range allowing(stmts, "ec2:CreateFleet") {
			res := fmt.Sprint(s["Resource"])
			switch {
			case strings.Contains(res, ":instance/*"):
				if conditionValue(s, "StringEquals", "aws:RequestTag/joist.sh/cluster") != "hoon-cluster" {
					t.Errorf("%s: CreateFleet creates instances without the request-tag condition", fn)
				}
			case strings.Contains(res, ":launch-template/*"):
				if conditionValue(s, "StringEquals", "aws:ResourceTag/joist.sh/cluster") != "hoon-cluster" {
					t.Errorf("%s: CreateFleet uses launch templates without the resource-tag condition", fn)
				}
			}
		}
		for _, s := range allowing(stmts, "iam:PassRole") {
			if !strings.Contains(fmt.Sprint(s["Resource"]), ":role/KarpenterNodeRole-hoon-cluster") {
				t.Errorf("%s: PassRole on %v, want the node role only", fn, s["Resource"])
			}
			if !strings.Contains(fmt.Sprint(s["Condition"]), "iam:PassedToService:[ec2.amazonaws.com ec2.amazonaws.com.cn]") {
				t.Errorf("%s: PassRole not limited to EC2", fn)
			}
		}
		if len(allowing(stmts, "eks:DescribeCluster")) != 1 {
			t.Errorf("%s: no eks:DescribeCluster", fn)
		}
		for _, s := range append(allowing(stmts, "ssm:GetParametersByPath"), allowing(stmts, "ssm:GetParameter")...) {
			res := fmt.Sprint(s["Resource"])
			if !strings.Contains(res, ":parameter/joist/hoon-cluster") && !strings.Contains(res, "::parameter/aws/service/*") {
				t.Errorf("%s: SSM read on %s", fn, res)
			}
		}
		// Nothing but named Describe actions and Pricing (which have no
		// resource-level permissions) is allowed on *; the interruption
		// function's health check adds DescribeInstanceStatus, in the
		// cluster's region.
		for _, s := range stmts {
			if s["Resource"] != "*" {
				continue
			}
			for _, a := range actions(s) {
				if a == "ec2:DescribeInstanceStatus" && fn == FnInterruption {
					if !strings.Contains(fmt.Sprint(s["Condition"]), "aws:RequestedRegion") {
						t.Errorf("%s: %s without the region condition", fn, a)
					}
					continue
				}
				if !slices.Contains(iampolicy.RegionalDescribeActions, a) && a != "pricing:GetProducts" {
					t.Errorf("%s: %s allowed on *", fn, a)
				}
			}
		}
	}
}

func TestForwarderAccess(t *testing.T) {
	st, tpl := base(t)
	busArn := getAtt(logicalID(t, st, st.Bus))
	check(t, "forwarder policy: PutEvents on the bus only", func() {
		tpl.HasResourceProperties(jsii.String("AWS::IAM::ManagedPolicy"), like(
			"PolicyDocument", like("Statement", []interface{}{like(
				"Effect", "Allow", "Action", "events:PutEvents", "Resource", busArn,
			)}),
		))
	})
	check(t, "forwarder role: EKS Pod Identity of joist/joist-forwarder in this cluster", func() {
		tpl.HasResourceProperties(jsii.String("AWS::IAM::Role"), like(
			"AssumeRolePolicyDocument", like("Statement", []interface{}{like(
				"Principal", obj("Service", "pods.eks.amazonaws.com"),
				"Action", []interface{}{"sts:AssumeRole", "sts:TagSession"},
				"Condition", like("StringEquals", like(
					"aws:RequestTag/eks-cluster-name", "hoon-cluster",
					"aws:RequestTag/kubernetes-namespace", ForwarderNamespace,
					"aws:RequestTag/kubernetes-service-account", ForwarderServiceAccount,
				)),
			)}),
		))
	})
}

func TestOutputs(t *testing.T) {
	_, tpl := base(t)
	want := []string{
		"EventBusName", "EventBusArn", "PendingQueueUrl", "PendingDeadLetterQueueUrl",
		"ReadyQueueUrl", "ReadyDeadLetterQueueUrl", "InterruptionQueueUrl", "InterruptionDeadLetterQueueUrl",
		"ProvisionerFunctionName", "BinderFunctionName", "ReaperFunctionName", "InterruptionFunctionName", "InstallerFunctionName",
		"ProvisionerRoleArn", "BinderRoleArn", "ReaperRoleArn", "InterruptionRoleArn", "InstallerRoleArn",
		"ProvisionerLogGroupName", "BinderLogGroupName", "ReaperLogGroupName", "InterruptionLogGroupName", "InstallerLogGroupName",
		"ForwarderPolicyArn", "ForwarderRoleArn", "AlarmTopicArn",
	}
	for _, id := range want {
		check(t, "output "+id, func() { tpl.HasOutput(jsii.String(id), like("Value", assertions.Match_AnyValue())) })
	}
	if got := len(*tpl.FindOutputs(jsii.String("*"), nil)); got != len(want) {
		t.Errorf("%d outputs, want %d", got, len(want))
	}
}

func TestStackNameAndTags(t *testing.T) {
	st, _ := base(t)
	if got := *st.Stack.StackName(); got != "joist-hoon-cluster" {
		t.Errorf("stack name %q, want joist-hoon-cluster", got)
	}
	if got := StackName("my_cluster"); got != "joist-my-cluster" {
		t.Errorf("StackName(my_cluster) = %q", got)
	}
	if got := *st.Stack.Region(); got != "ap-northeast-2" {
		t.Errorf("region %q", got)
	}
}

// TestOptionalContext: endpoint, CA and Kubernetes version reach the
// functions; access entries go away when opted out.
func TestOptionalContext(t *testing.T) {
	cfg := baseConfig(placeholderAssets(t))
	cfg.ClusterEndpoint = "https://ABCDEF.gr7.ap-northeast-2.eks.amazonaws.com"
	cfg.ClusterCA = "LS0tLS1CRUdJTi=="
	cfg.KubernetesVersion = "1.31"
	cfg.SpecSource = SpecSourceCRD
	cfg.AccessEntries = true
	cfg.LogRetentionDays = 7
	cfg.ServiceCIDR = "172.20.0.0/16"
	cfg.ClusterDNSIP = "172.20.0.10"
	cfg.Zones = "ap-northeast-2a,ap-northeast-2c"
	cfg.LogLevel = LogLevelDebug
	cfg.PreferencePolicy, cfg.MinValuesPolicy = "Ignore", "BestEffort"
	cfg.SchedulerConfig = spreadConfig
	cfg.ReservedENIs = "1"
	cfg.FeatureGates = "NodeRepair=true,SpotToSpotConsolidation=true"
	st, tpl := synth(t, cfg)
	check(t, "env", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), like(
			"Environment", like("Variables", like(
				"CLUSTER_ENDPOINT", cfg.ClusterEndpoint,
				"CLUSTER_CA", cfg.ClusterCA,
				"KUBERNETES_VERSION", "1.31",
				"SPEC_SOURCE", "crd",
				"CLUSTER_SERVICE_CIDR", "172.20.0.0/16",
				"CLUSTER_DNS_IP", "172.20.0.10",
				"JOIST_ZONES", "ap-northeast-2a,ap-northeast-2c",
				"LOG_LEVEL", "debug",
				"JOIST_PREFERENCE_POLICY", "Ignore",
				"JOIST_MIN_VALUES_POLICY", "BestEffort",
				"JOIST_SCHEDULER_CONFIG", spreadConfig,
				"JOIST_FEATURE_GATES", "NodeRepair=true,SpotToSpotConsolidation=true",
				"JOIST_RESERVED_ENIS", "1",
			)),
			// Lambda would otherwise drop the debug lines.
			"LoggingConfig", like("ApplicationLogLevel", "DEBUG"),
		))
	})
	check(t, "retention", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::Logs::LogGroup"), like("RetentionInDays", 7))
	})
	// Default spread constraints need the planning roles to read Services
	// and controllers: the installer is told to grant them.
	check(t, "installer grants the default spread reads", func() {
		tpl.HasResourceProperties(jsii.String("Custom::JoistInstall"), like("DefaultSpread", "true"))
	})
	check(t, "access entries", func() {
		tpl.ResourceCountIs(jsii.String("AWS::EKS::AccessEntry"), jsii.Number(len(FunctionNames)))
	})
	check(t, "provisioner access entry", func() {
		tpl.HasResourceProperties(jsii.String("AWS::EKS::AccessEntry"), like(
			"ClusterName", "hoon-cluster",
			"PrincipalArn", getAtt(logicalID(t, st, st.Roles[FnProvisioner])),
			"KubernetesGroups", []interface{}{FunctionGroup(FnProvisioner)},
			"Type", "STANDARD",
		))
	})
	off := baseConfig(placeholderAssets(t))
	off.AccessEntries = false
	_, offTpl := synth(t, off)
	check(t, "no access entries when opted out", func() {
		offTpl.ResourceCountIs(jsii.String("AWS::EKS::AccessEntry"), jsii.Number(0))
	})
}

func TestNodeRoleArn(t *testing.T) {
	cfg := baseConfig(placeholderAssets(t))
	cfg.NodeRole = "arn:aws:iam::123456789012:role/nodes/MyNodes"
	st, tpl := synth(t, cfg)
	found := allowing(statements(t, st, tpl, FnProvisioner), "iam:PassRole")
	if len(found) != 1 || found[0]["Resource"] != cfg.NodeRole {
		t.Errorf("PassRole statements %v, want one on %s", found, cfg.NodeRole)
	}
}

func TestMissingAssets(t *testing.T) {
	dir := placeholderAssets(t)
	if err := os.Remove(filepath.Join(dir, FnReaper, "bootstrap")); err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	_, err := New(app, "JoistStack", baseConfig(dir))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(FnReaper, "bootstrap")) {
		t.Fatalf("New with a missing bootstrap: err = %v, want one naming it", err)
	}
}

// TestCheckAssets: the five functions' bootstraps are all that is
// needed.
func TestCheckAssets(t *testing.T) {
	if got, want := FunctionNames, []string{FnProvisioner, FnBinder, FnReaper, FnInterruption, FnInstaller}; !reflect.DeepEqual(got, want) {
		t.Errorf("FunctionNames = %v, want %v", got, want)
	}
	dir := placeholderAssets(t)
	if err := CheckAssets(dir); err != nil {
		t.Errorf("CheckAssets with every bootstrap: %v", err)
	}
	for _, name := range FunctionNames {
		os.Remove(filepath.Join(dir, name, "bootstrap"))
	}
	err := CheckAssets(dir)
	for _, name := range FunctionNames {
		if err == nil || !strings.Contains(err.Error(), filepath.Join(name, "bootstrap")) {
			t.Errorf("CheckAssets of an empty dir = %v, want it to name %s", err, name)
		}
	}
}

func TestConfigFromContext(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{
		Outdir: jsii.String(t.TempDir()),
		Context: &map[string]interface{}{
			CtxClusterName:      "c1",
			CtxLogRetentionDays: "14",
		},
	})
	cfg, err := ConfigFromContext(app)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		ClusterName:            "c1",
		SpecSource:             SpecSourceSSM,
		AssetDir:               DefaultAssetDir,
		NodeRole:               "KarpenterNodeRole-c1",
		DefaultInstanceProfile: "KarpenterNodeInstanceProfile-c1",
		LogRetentionDays:       14,
		LogLevel:               LogLevelInfo,
		AccessEntries:          true, // opt out, not in
		SourceDir:              ".",
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("ConfigFromContext = %+v, want %+v", cfg, want)
	}
	app.Node().SetContext(jsii.String(CtxAccessEntries), "false")
	app.Node().SetContext(jsii.String(CtxForwarderImage), "123.dkr.ecr.us-west-2.amazonaws.com/fwd:1")
	if cfg, err = ConfigFromContext(app); err != nil || cfg.AccessEntries || cfg.ForwarderImage != "123.dkr.ecr.us-west-2.amazonaws.com/fwd:1" {
		t.Errorf("with accessEntries=false and a forwarder image: %+v, %v", cfg, err)
	}
	// The scheduler config in cdk.json may be an object: the functions
	// get it as JSON.
	app.Node().SetContext(jsii.String(CtxSchedulerConfig), map[string]interface{}{"podTopologySpread": map[string]interface{}{
		"defaultConstraints": []interface{}{map[string]interface{}{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}}}})
	if cfg, err = ConfigFromContext(app); err != nil || !cfg.defaultSpread() || cfg.Validate() != nil {
		t.Errorf("scheduler config object: %q, %v, %v", cfg.SchedulerConfig, err, cfg.Validate())
	}
	app.Node().SetContext(jsii.String(CtxVpcID), "vpc-0123456789abcdef0")
	app.Node().SetContext(jsii.String(CtxSubnetIDs), "subnet-0123456789abcdef0, subnet-0123456789abcdef1")
	app.Node().SetContext(jsii.String(CtxClusterSecurityGroupID), "sg-0123456789abcdef0")
	app.Node().SetContext(jsii.String(CtxVpcEndpoints), "true")
	if cfg, err = ConfigFromContext(app); err != nil || !cfg.InVPC() || !cfg.VpcEndpoints || cfg.ClusterSecurityGroupID != "sg-0123456789abcdef0" ||
		!reflect.DeepEqual(cfg.SubnetIDs, []string{"subnet-0123456789abcdef0", "subnet-0123456789abcdef1"}) || cfg.Validate() != nil {
		t.Errorf("VPC mode context: %+v, %v, %v", cfg, err, cfg.Validate())
	}
}

// TestInstall: the installer runs as a custom resource with the cluster,
// region, bus and the forwarder image (built by deploy from the
// Dockerfile, or given); its access entry is the only cluster admin, and
// the forwarder's service account is associated with its role.
func TestInstall(t *testing.T) {
	st, tpl := base(t)
	check(t, "custom resource", func() {
		tpl.HasResourceProperties(jsii.String("Custom::JoistInstall"), like(
			"ServiceToken", getAtt(logicalID(t, st, st.Functions[FnInstaller])),
			"Cluster", "hoon-cluster",
			"Region", "ap-northeast-2",
			"ForwarderImage", assertions.Match_AnyValue(),
			"CRDs", "false",
		))
	})
	check(t, "no default spread reads without a scheduler config", func() {
		tpl.HasResourceProperties(jsii.String("Custom::JoistInstall"), like("DefaultSpread", assertions.Match_Absent()))
	})
	check(t, "installer access entry", func() {
		tpl.HasResourceProperties(jsii.String("AWS::EKS::AccessEntry"), like(
			"PrincipalArn", getAtt(logicalID(t, st, st.Roles[FnInstaller])),
			"Username", "joist:installer",
			"AccessPolicies", []interface{}{like("AccessScope", like("Type", "cluster"))},
		))
	})
	entries := tpl.FindResources(jsii.String("AWS::EKS::AccessEntry"), nil)
	admins := 0
	for _, e := range *entries {
		if props, ok := (*e)["Properties"].(map[string]interface{}); ok && props["AccessPolicies"] != nil {
			admins++
		}
	}
	if admins != 1 {
		t.Errorf("%d access entries carry access policies, want only the installer's", admins)
	}
	check(t, "pod identity", func() {
		tpl.HasResourceProperties(jsii.String("AWS::EKS::PodIdentityAssociation"), like(
			"Namespace", ForwarderNamespace, "ServiceAccount", ForwarderServiceAccount,
			"RoleArn", getAtt(logicalID(t, st, st.ForwarderRole)),
		))
	})
	check(t, "the custom resource waits for the installer's access", func() {
		tpl.HasResource(jsii.String("Custom::JoistInstall"), like("DependsOn", assertions.Match_AnyValue()))
	})

	cfg := baseConfig(placeholderAssets(t))
	cfg.ForwarderImage = "123.dkr.ecr.ap-northeast-2.amazonaws.com/joist-forwarder:v1"
	_, given := synth(t, cfg)
	check(t, "a given image", func() {
		given.HasResourceProperties(jsii.String("Custom::JoistInstall"), like("ForwarderImage", cfg.ForwarderImage))
	})
	cfg.SpecSource = SpecSourceCRD
	_, crdMode := synth(t, cfg)
	check(t, "CRD mode installs the CRDs", func() {
		crdMode.HasResourceProperties(jsii.String("Custom::JoistInstall"), like("CRDs", "true"))
	})
}

func TestValidate(t *testing.T) {
	ok := baseConfig("build/lambda")
	if err := ok.Validate(); err != nil {
		t.Fatalf("base config: %v", err)
	}
	for name, mutate := range map[string]func(*Config){
		"no cluster":            func(c *Config) { c.ClusterName = "" },
		"bad cluster":           func(c *Config) { c.ClusterName = "-x" },
		"long cluster":          func(c *Config) { c.ClusterName = strings.Repeat("a", 101) },
		"spec source":           func(c *Config) { c.SpecSource = "s3" },
		"endpoint scheme":       func(c *Config) { c.ClusterEndpoint, c.ClusterCA = "http://x", "ca" },
		"endpoint without CA":   func(c *Config) { c.ClusterEndpoint = "https://x" },
		"CA without endpoint":   func(c *Config) { c.ClusterCA = "ca" },
		"k8s version":           func(c *Config) { c.KubernetesVersion = "v1.31.2" },
		"no asset dir":          func(c *Config) { c.AssetDir = "" },
		"no node role":          func(c *Config) { c.NodeRole = "" },
		"retention":             func(c *Config) { c.LogRetentionDays = 10 },
		"service CIDR":          func(c *Config) { c.ServiceCIDR = "172.20.0.0" },
		"DNS IP":                func(c *Config) { c.ClusterDNSIP = "dns" },
		"zones":                 func(c *Config) { c.Zones = "a, b" },
		"log level":             func(c *Config) { c.LogLevel = "trace" },
		"preference policy":     func(c *Config) { c.PreferencePolicy = "ignore" },
		"minValues policy":      func(c *Config) { c.MinValuesPolicy = "Loose" },
		"scheduler config":      func(c *Config) { c.SchedulerConfig = "podTopologySpread: {defaultConstraints: [{maxSkew: 0}]}" },
		"reserved ENIs":         func(c *Config) { c.ReservedENIs = "-1" },
		"reserved ENIs, a word": func(c *Config) { c.ReservedENIs = "one" },
		"unknown feature gate":  func(c *Config) { c.FeatureGates = "NodeRepare=true" },
		"feature gate value":    func(c *Config) { c.FeatureGates = "NodeRepair=on" },
		"subnets without a VPC": func(c *Config) { c.SubnetIDs = []string{"subnet-0123456789abcdef0"} },
		"VPC without subnets":   func(c *Config) { c.VpcID = "vpc-0123456789abcdef0" },
		"bad VPC id":            func(c *Config) { c.VpcID, c.SubnetIDs = "vpc-x", []string{"subnet-0123456789abcdef0"} },
		"bad subnet id":         func(c *Config) { c.VpcID, c.SubnetIDs = "vpc-0123456789abcdef0", []string{"sn-1"} },
		"bad cluster SG": func(c *Config) {
			c.VpcID, c.SubnetIDs, c.ClusterSecurityGroupID = "vpc-0123456789abcdef0", []string{"subnet-0123456789abcdef0"}, "x"
		},
		"cluster SG, no VPC": func(c *Config) { c.ClusterSecurityGroupID = "sg-0123456789abcdef0" },
		"endpoints, no VPC":  func(c *Config) { c.VpcEndpoints = true },
		"cluster too long for rule names": func(c *Config) {
			c.ClusterName = strings.Repeat("a", 46)
		},
	} {
		c := ok
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
	// The longest cluster name whose rule names fit in 64 characters.
	longest := ok
	longest.ClusterName = strings.Repeat("a", 45)
	if err := longest.Validate(); err != nil {
		t.Errorf("45-character cluster name: %v", err)
	}
	if n := len(PendingRuleName(longest.ClusterName)); n != maxRuleNameLen {
		t.Errorf("pending rule name of a 45-character cluster is %d long, want exactly %d", n, maxRuleNameLen)
	}
}

// TestEventContract checks the stack's copy of Joist's event source and
// detail types against the product's events package, which the forwarder
// and the functions use. The infra module cannot import it without taking
// on the product's dependency graph, so it reads the source.
func TestEventContract(t *testing.T) {
	path := filepath.Join("..", "..", "events", "events.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("reading the event contract: %v", err)
	}
	consts := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if i < len(vs.Values) {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					consts[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
		return true
	})
	for name, want := range map[string]string{
		"Source":                  EventSource,
		"DetailTypePendingPods":   DetailTypePendingPods,
		"DetailTypeNodeReady":     DetailTypeNodeReady,
		"DetailTypeNodesDeleting": DetailTypeNodesDeleting,
		"DetailTypeNodesEmptied":  DetailTypeNodesEmptied,
	} {
		if got, ok := consts[name]; !ok || got != want {
			t.Errorf("events.%s = %q (found: %v), stack uses %q", name, got, ok, want)
		}
	}
}

// TestNamesMatchTestGround checks the stack's queue and rule names, and
// the DLQs' maxReceiveCount, against the test ground, which creates the
// same messaging on the AWS emulator (test/testenv/bus.go). The infra
// module does not import it, so it reads the source: every piece the
// test ground joins to "joist-" + cluster must be a string literal there.
func TestNamesMatchTestGround(t *testing.T) {
	path := filepath.Join("..", "..", "test", "testenv", "bus.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("reading the test ground: %v", err)
	}
	lits := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			v, _ := strconv.Unquote(lit.Value)
			lits[v] = true
		}
		return true
	})
	const c = "CLUSTER"
	prefix := "joist-" + c
	if !lits["joist-"] {
		t.Errorf("%s has no \"joist-\" prefix", path)
	}
	for _, name := range []string{
		PendingQueueName(c), ReadyQueueName(c), PendingRuleName(c), NodeReadyRuleName(c), ReaperWakeRuleName(c),
	} {
		suffix, ok := strings.CutPrefix(name, prefix)
		if !ok || !lits[suffix] {
			t.Errorf("stack name %q: %s has no literal %q", name, path, suffix)
		}
	}
	if suffix := strings.TrimPrefix(DeadLetterQueueName("q"), "q"); !lits[suffix] {
		t.Errorf("DLQ suffix %q not in %s", suffix, path)
	}
	if BusName(c) != prefix {
		t.Errorf("BusName(%q) = %q, want %q", c, BusName(c), prefix)
	}
	for name, n := range map[string]int{"pending": pendingMaxReceiveCount, "ready": readyMaxReceiveCount} {
		want := fmt.Sprintf(`"maxReceiveCount":"%d"`, n)
		found := false
		for l := range lits {
			found = found || strings.Contains(l, want)
		}
		if !found {
			t.Errorf("%s maxReceiveCount %d: %s has no %s", name, n, path, want)
		}
	}
}

// TestTemplateIsJSON guards against a token that escaped resolution: the
// synthesized template must not contain "${Token[".
func TestTemplateIsJSON(t *testing.T) {
	_, tpl := base(t)
	b, err := json.Marshal(tpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "${Token[") {
		t.Errorf("unresolved token in the template")
	}
}

// TestManifestsMatchStack: the Kubernetes manifests name the same
// namespace, service account and group as the IAM trust policy and the
// access entries; a rename on one side only would lock Joist out.
func TestManifestsMatchStack(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "k8s", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	rbac, fwd := read("rbac.yaml"), read("forwarder.yaml")
	var groups []string
	for _, fn := range FunctionNames {
		if fn == FnInstaller {
			continue // cluster admin through its access policy, no group
		}
		groups = append(groups, "kind: Group\n  name: "+FunctionGroup(fn)+"\n")
	}
	for _, want := range groups {
		if !strings.Contains(rbac, want) {
			t.Errorf("rbac.yaml lacks %q", want)
		}
	}
	for _, want := range []string{
		"kind: Namespace\nmetadata:\n  name: " + ForwarderNamespace + "\n",
		"kind: ServiceAccount\nmetadata:\n  name: " + ForwarderServiceAccount + "\n  namespace: " + ForwarderNamespace + "\n",
		"serviceAccountName: " + ForwarderServiceAccount + "\n",
		"value: " + BusName("${CLUSTER_NAME}") + "\n",
	} {
		if !strings.Contains(fwd, want) {
			t.Errorf("forwarder.yaml lacks %q", want)
		}
	}
}

// TestSpecsFromFolder: -c specs=DIR stores each object as the parameter
// `joist specs push` would write; a bad spec stops the synth with the
// validator's message naming the object and field.
func TestSpecsFromFolder(t *testing.T) {
	dir := t.TempDir()
	good := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-hoon-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: hoon-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: hoon-cluster}}]
`
	if err := os.WriteFile(filepath.Join(dir, "pools.yaml"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(placeholderAssets(t))
	cfg.SpecsDir = dir
	_, tpl := synth(t, cfg)
	for _, name := range []string{"/joist/hoon-cluster/nodepool/default", "/joist/hoon-cluster/ec2nodeclass/default"} {
		check(t, "parameter "+name, func() {
			tpl.HasResourceProperties(jsii.String("AWS::SSM::Parameter"), like("Name", name, "Tier", "Intelligent-Tiering"))
		})
	}

	bad := strings.Replace(good, "operator: In", "operator: Within", 1)
	if err := os.WriteFile(filepath.Join(dir, "pools.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	_, err := New(app, "JoistStack", cfg)
	if err == nil || !strings.Contains(err.Error(), "NodePool") || !strings.Contains(err.Error(), "requirements") {
		t.Errorf("a bad spec: err = %v, want the validator's message naming the NodePool's requirements", err)
	}
	crd := baseConfig(placeholderAssets(t))
	crd.SpecsDir, crd.SpecSource = dir, SpecSourceCRD
	if err := crd.Validate(); err == nil {
		t.Error("specs with spec source crd: no error")
	}
}

// TestOperations: an alarm on each DLQ, each function's errors and
// throttles, lasting unschedulable pods and an interruption backlog, all
// sent to the stack's topic (or the one given); and a dashboard.
func TestOperations(t *testing.T) {
	st, tpl := base(t)
	want := 3 + 2*len(FunctionNames) + 2
	check(t, "alarms", func() { tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(want)) })
	topic := logicalID(t, st, st.AlarmTopic.(constructs.IConstruct))
	check(t, "every alarm notifies the topic", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::CloudWatch::Alarm"), like("AlarmActions", []interface{}{map[string]interface{}{"Ref": topic}}))
	})
	check(t, "DLQ alarm", func() {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), like(
			"MetricName", "ApproximateNumberOfMessagesVisible", "Threshold", 0,
			"Dimensions", []interface{}{like("Value", like("Fn::GetAtt", []interface{}{logicalID(t, st, st.InterruptionDLQ), "QueueName"}))},
		))
	})
	check(t, "unschedulable pods alarm", func() {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), like("Namespace", MetricsNamespace, "MetricName", "joist_pods_unschedulable", "EvaluationPeriods", 15))
	})
	check(t, "dashboard", func() { tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Dashboard"), jsii.Number(1)) })
	check(t, "the dashboard has no Tags (CloudFormation refuses them)", func() {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Dashboard"), like("Tags", assertions.Match_Absent()))
	})

	cfg := baseConfig(placeholderAssets(t))
	cfg.AlarmTopicArn = "arn:aws:sns:ap-northeast-2:123456789012:oncall"
	_, given := synth(t, cfg)
	check(t, "no topic of its own", func() { given.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(0)) })
	check(t, "alarms to the given topic", func() {
		given.AllResourcesProperties(jsii.String("AWS::CloudWatch::Alarm"), like("AlarmActions", []interface{}{cfg.AlarmTopicArn}))
	})
}

// TestVPCMode: with -c vpcId and -c subnetIds every function runs in those
// subnets with the stack's security group, which the cluster's security
// group admits on 443 and which alone may reach the interface endpoints;
// the roles may attach ENIs. Without them no function is in a VPC.
func TestVPCMode(t *testing.T) {
	_, plain := base(t)
	for id, fn := range resources(t, plain, "AWS::Lambda::Function") {
		if vc, ok := props(fn)["VpcConfig"]; ok {
			t.Errorf("function %s is in a VPC without vpc context: %v", id, vc)
		}
	}
	if n := len(resources(t, plain, "AWS::EC2::VPCEndpoint")); n != 0 {
		t.Errorf("%d VPC endpoints without vpc context", n)
	}

	cfg := baseConfig(placeholderAssets(t))
	cfg.VpcID = "vpc-0123456789abcdef0"
	cfg.SubnetIDs = []string{"subnet-0123456789abcdef0", "subnet-0123456789abcdef1"}
	cfg.ClusterSecurityGroupID = "sg-0123456789abcdef0"
	cfg.VpcEndpoints = true
	st, tpl := synth(t, cfg)
	sg := map[string]interface{}{"Fn::GetAtt": []interface{}{logicalID(t, st, st.Network.SecurityGroup), "GroupId"}}
	fns := resources(t, tpl, "AWS::Lambda::Function")
	if len(fns) != len(FunctionNames) {
		t.Fatalf("%d functions", len(fns))
	}
	for id, fn := range fns {
		vc, _ := props(fn)["VpcConfig"].(map[string]interface{})
		if !reflect.DeepEqual(vc["SubnetIds"], []interface{}{"subnet-0123456789abcdef0", "subnet-0123456789abcdef1"}) {
			t.Errorf("function %s subnets %v", id, vc["SubnetIds"])
		}
		if !reflect.DeepEqual(vc["SecurityGroupIds"], []interface{}{sg}) {
			t.Errorf("function %s security groups %v, want the stack's %v", id, vc["SecurityGroupIds"], sg)
		}
	}
	for _, fn := range FunctionNames {
		r := resources(t, tpl, "AWS::IAM::Role")[logicalID(t, st, st.Roles[fn])]
		if !strings.Contains(fmt.Sprint(props(r)["ManagedPolicyArns"]), "service-role/AWSLambdaVPCAccessExecutionRole") {
			t.Errorf("%s role cannot attach ENIs: %v", fn, props(r)["ManagedPolicyArns"])
		}
	}
	check(t, "the cluster's group admits the functions on 443", func() {
		tpl.HasResourceProperties(jsii.String("AWS::EC2::SecurityGroupIngress"), like(
			"GroupId", "sg-0123456789abcdef0", "IpProtocol", "tcp", "FromPort", 443, "ToPort", 443,
			"SourceSecurityGroupId", sg,
		))
	})
	eps := resources(t, tpl, "AWS::EC2::VPCEndpoint")
	var services []string
	for id, ep := range eps {
		p := props(ep)
		services = append(services, fmt.Sprint(p["ServiceName"]))
		if p["PrivateDnsEnabled"] != true || p["VpcEndpointType"] != "Interface" || p["VpcId"] != "vpc-0123456789abcdef0" {
			t.Errorf("endpoint %s: %v", id, p)
		}
	}
	for _, svc := range []string{".ec2", ".ssm", ".eks"} {
		if !strings.Contains(strings.Join(services, " "), svc) {
			t.Errorf("no %s endpoint among %v", svc, services)
		}
	}
	if len(eps) != 3 {
		t.Errorf("%d endpoints, want ec2, ssm and eks: %v", len(eps), services)
	}
	// Only the functions' group reaches the endpoints.
	for id, r := range resources(t, tpl, "AWS::EC2::SecurityGroup") {
		for _, in := range asList(props(r)["SecurityGroupIngress"]) {
			if m, _ := in.(map[string]interface{}); m["CidrIp"] != nil {
				t.Errorf("group %s admits a CIDR: %v", id, m)
			}
		}
	}
	check(t, "output", func() { tpl.HasOutput(jsii.String("FunctionSecurityGroupId"), like()) })
}

func asList(v interface{}) []interface{} { l, _ := v.([]interface{}); return l }

// TestTeardown: with -c teardown=true the stack has Custom::JoistTeardown,
// served by the installer, which CloudFormation deletes before anything
// the reaper needs (it depends on the reaper, its schedule, the access
// entries and the install), and the installer may wait Lambda's longest;
// without it, neither.
func TestTeardown(t *testing.T) {
	st, plain := base(t)
	if n := len(resources(t, plain, "Custom::JoistTeardown")); n != 0 {
		t.Errorf("%d teardown resources without -c teardown", n)
	}
	installerID := logicalID(t, st, st.Functions[FnInstaller])
	if got := props(resources(t, plain, "AWS::Lambda::Function")[installerID])["Timeout"]; got != float64(300) {
		t.Errorf("installer timeout %v without teardown, want 300", got)
	}

	cfg := baseConfig(placeholderAssets(t))
	cfg.Teardown = true
	st, tpl := synth(t, cfg)
	crs := resources(t, tpl, "Custom::JoistTeardown")
	if len(crs) != 1 {
		t.Fatalf("%d teardown resources, want 1", len(crs))
	}
	var cr map[string]interface{}
	for _, r := range crs {
		cr = r
	}
	installerID = logicalID(t, st, st.Functions[FnInstaller])
	if got := props(cr)["ServiceToken"]; !reflect.DeepEqual(got, getAtt(installerID)) || props(cr)["Cluster"] != "hoon-cluster" {
		t.Errorf("teardown properties %v", props(cr))
	}
	deps := fmt.Sprint(cr["DependsOn"])
	want := []string{logicalID(t, st, st.Functions[FnReaper]), logicalID(t, st, st.Roles[FnReaper])}
	for id, r := range resources(t, tpl, "AWS::Events::Rule") {
		if n, _ := props(r)["ScheduleExpression"].(string); n != "" || strings.HasPrefix(id, "ReaperWake") {
			want = append(want, id)
		}
	}
	for id := range resources(t, tpl, "AWS::EKS::AccessEntry") {
		want = append(want, id)
	}
	for id := range resources(t, tpl, "Custom::JoistInstall") {
		want = append(want, id)
	}
	for _, id := range want {
		if !strings.Contains(deps, id) {
			t.Errorf("teardown does not depend on %s: it could be deleted while the teardown waits on it", id)
		}
	}
	if got := props(resources(t, tpl, "AWS::Lambda::Function")[installerID])["Timeout"]; got != float64(teardownTimeoutSeconds) {
		t.Errorf("installer timeout %v with teardown, want %d", got, teardownTimeoutSeconds)
	}
}

// spreadConfig is a scheduler config with a default zonal spread.
const spreadConfig = "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]}"
