package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/joist-dev/joist/pkg/forwarder"
	"github.com/joist-dev/joist/pkg/iampolicy"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/rbac"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/specs"
	"github.com/joist-dev/joist/pkg/specstore"
	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/iamsim"
	"github.com/joist-dev/joist/test/kubeletsim"
)

// GroundOptions shape one scenario's test ground.
type GroundOptions struct {
	// Cluster names the simulated EKS cluster; each test uses its own so
	// SSM paths, buses, queues and EC2 tags never mix.
	Cluster string
	// Namespace holds the scenario's pods (created, and emptied at Close).
	Namespace string
	Zones     []string
	// K8sVersion is the cluster's Kubernetes minor version (default 1.32,
	// the last with AL2 AMIs, which the seed's AWSNodeTemplates use).
	K8sVersion string
	// VPCCluster is the cluster name the simulated VPC's discovery tags
	// carry (subnets karpenter.sh/discovery/<name>, security group
	// aws:eks:cluster-name=<name>). Default: the seed's hoon-cluster, so the
	// seed's node templates find them whatever the scenario's cluster is.
	VPCCluster string
	// SpecSource is where the functions read specs: "ssm" (default) or
	// "crd" (the objects are created in the API server).
	SpecSource string
	// Specs is YAML with the scenario's spec objects, pushed to SSM under
	// /joist/<cluster>/ as `joist specs push` would.
	Specs []byte
	// ReadyDelay is how long a registered node stays NotReady.
	ReadyDelay time.Duration
	// AllowRefusals lets the scenario's functions be refused by IAM or
	// RBAC (a test of the refusal itself); otherwise any refusal fails it.
	AllowRefusals bool
	// NoForwarder leaves the forwarder out (as when it cannot run).
	NoForwarder bool
	// Logs receives the functions' and simulators' logs (default: stderr
	// when JOIST_TEST_VERBOSE is set, else discarded).
	Logs io.Writer
	// ExtraEnv is added to every function's environment.
	ExtraEnv map[string]string
	// OnBatch, when set, hears every batch a poller hands a function.
	OnBatch func(function string, ids, failed []string, err error)
	// ReaperEvery runs the reaper (the safety net) on this period, as the
	// CDK stack's rate(1 minute) schedule does, and the forwarder's
	// wake-ups invoke it too (the stack's reaper wake rule); 0 runs no
	// reaper.
	ReaperEvery time.Duration
	// HealthEvery invokes the interruption function with the schedule's
	// event on this period, as the CDK stack's rate(1 minute) health-check
	// schedule does; 0 runs no health check.
	HealthEvery time.Duration
	// WrapPut, when set, wraps the forwarder's EventBridge client (to
	// duplicate or drop what it puts).
	WrapPut func(forwarder.PutEventsAPI) forwarder.PutEventsAPI
	// KubeletSkip names instances whose kubelet never registers.
	KubeletSkip func(instanceID string) bool
	// KubeletKeepsGoneNodes leaves the nodes of instances that stopped
	// running to others (kubeletsim.Sim.KeepGone).
	KubeletKeepsGoneNodes bool
	// VisibilityTimeout is the queues' visibility timeout in seconds
	// (default 60): how long a failed batch waits for redelivery.
	VisibilityTimeout int
	// Policy, when set, changes the IAM policy a principal gets (to prove
	// a statement is needed); it receives iampolicy.For's.
	Policy func(principal string, p iampolicy.Policy) iampolicy.Policy
}

// Ground is a whole Joist loop on the local test ground: the API server,
// kumo, the EC2 simulator, the bus with its rules and queues, the
// provisioner and binder bootstraps under aws-lambda-rie fed by pollers,
// the forwarder, and the kubelet simulator.
type Ground struct {
	started     time.Time
	authMu      sync.Mutex
	iamRefused  []string
	Opts        GroundOptions
	Kube        *KubeEnv
	Kumo        *KumoEnv
	EC2         *ec2sim.Sim
	EC2URL      string
	AWS         aws.Config // kumo for everything, the EC2 simulator for EC2
	Msg         *Messaging
	Provisioner *Function
	Binder      *Function
	Reaper      *Function
	// ReaperWoken is a second execution environment of the reaper, for
	// the forwarder's wake-ups: Lambda runs an asynchronous invoke
	// beside a scheduled run still looping, not after it.
	ReaperWoken *Function
	// Interruption consumes the interruption queue.
	Interruption *Function
	Kubelet      *kubeletsim.Sim
	// Env is the functions' environment.
	Env map[string]string
	Log *slog.Logger

	ec2srv *httptest.Server
	front  *httptest.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
	rie    string
	build  func(string) (string, error)
	fnMu   sync.Mutex
	extra  []*Function
	// applied undoes ApplySpecs.
	applied []func()
}

// StartFunction starts another instance of a function with the ground's
// environment (a second provisioner for overlap tests, say). The ground
// stops it at Close.
func (g *Ground) StartFunction(name string) (*Function, error) {
	bin, err := g.build(name)
	if err != nil {
		return nil, err
	}
	env, err := g.FunctionEnv(name)
	if err != nil {
		return nil, err
	}
	f, err := RunFunction(g.rie, name, bin, env, g.Opts.Logs)
	if err != nil {
		return nil, err
	}
	g.fnMu.Lock()
	g.extra = append(g.extra, f)
	g.fnMu.Unlock()
	return f, nil
}

// FunctionEnv is a function's environment: the ground's, with the
// function's own AWS identity and Kubernetes identity.
func (g *Ground) FunctionEnv(name string) (map[string]string, error) {
	env := make(map[string]string, len(g.Env)+2)
	for k, v := range g.Env {
		env[k] = v
	}
	env["AWS_ACCESS_KEY_ID"] = AccessKey(name)
	kc, err := g.Kube.FunctionKubeconfig(name)
	if err != nil {
		return nil, err
	}
	env["JOIST_KUBECONFIG"] = kc
	return env, nil
}

// RestartProvisioner replaces the provisioner's process, as Lambda starts
// a fresh execution environment after one died.
func (g *Ground) RestartProvisioner() error {
	f, err := g.StartFunction("provisioner")
	if err != nil {
		return err
	}
	g.fnMu.Lock()
	old := g.Provisioner
	g.Provisioner = f
	g.fnMu.Unlock()
	old.Stop()
	return nil
}

func (g *Ground) invokeProvisioner(ctx context.Context, payload []byte) ([]byte, error) {
	g.fnMu.Lock()
	f := g.Provisioner
	g.fnMu.Unlock()
	return f.Invoke(ctx, payload)
}

// ScheduledEvent is the payload EventBridge's scheduler sends a function.
var ScheduledEvent = []byte(`{"version":"0","id":"tick","detail-type":"Scheduled Event","source":"aws.events","account":"000000000000","region":"` + Region + `","resources":[],"detail":{}}`)

// schedule invokes a function with the schedule's event every period, as
// an EventBridge rate rule does, until the ground closes. OnBatch hears
// each invocation as a batch of one "tick".
func (g *Ground) schedule(ctx context.Context, name string, every time.Duration, f *Function) {
	g.run(ctx, func(ctx context.Context) {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_, err := f.Invoke(ctx, ScheduledEvent)
			if g.Opts.OnBatch != nil {
				g.Opts.OnBatch(name, []string{"tick"}, nil, err)
			}
		}
	})
}

// NewGround builds a ground for a test; it is torn down when the test ends.
func NewGround(t testing.TB, o GroundOptions) *Ground {
	t.Helper()
	kube := Kube(t)
	kumo := Kumo(t)
	rie := Tool(t, "aws-lambda-rie")
	if o.Logs == nil && os.Getenv("JOIST_TEST_VERBOSE") == "" {
		// Kept, and shown only when the test fails.
		buf := &LogBuffer{}
		o.Logs = buf
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("test ground logs:\n%s", buf.String())
			}
		})
	}
	g, err := StartGround(context.Background(), kube, kumo, rie, o, Build)
	if err != nil {
		t.Fatalf("test ground: %v", err)
	}
	t.Cleanup(g.Close)
	if !o.AllowRefusals {
		// Registered after Close, so it runs before it, while the functions
		// still run.
		t.Cleanup(func() {
			if r := g.IAMRefused(); len(r) > 0 {
				t.Errorf("IAM refused calls of Joist's functions (a permission the code needs is missing from pkg/iampolicy):\n  %s", strings.Join(r, "\n  "))
			}
			r, err := g.RBACRefused()
			if err != nil {
				t.Errorf("read the audit log: %v", err)
			} else if len(r) > 0 {
				t.Errorf("RBAC refused requests of Joist's identities (a verb the code needs is missing from pkg/rbac):\n  %s", strings.Join(r, "\n  "))
			}
		})
	}
	return g
}

// StartGround builds a ground from running parts; the demo calls it too.
func StartGround(ctx context.Context, kube *KubeEnv, kumo *KumoEnv, rie string, o GroundOptions, build func(string) (string, error)) (*Ground, error) {
	if o.Cluster == "" {
		o.Cluster = "hoon-cluster"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if len(o.Zones) == 0 {
		o.Zones = []string{Region + "a", Region + "b", Region + "c", Region + "d"}
	}
	if o.K8sVersion == "" {
		o.K8sVersion = "1.32"
	}
	if o.Logs == nil {
		o.Logs = io.Discard
		if os.Getenv("JOIST_TEST_VERBOSE") != "" {
			o.Logs = os.Stderr
		}
	}
	g := &Ground{started: time.Now(), Opts: o, Kube: kube, Kumo: kumo, Log: slog.New(slog.NewTextHandler(o.Logs, nil)).With("ground", o.Cluster)}
	ctx, g.cancel = context.WithCancel(ctx)
	ok := false
	defer func() {
		if !ok {
			g.Close()
		}
	}()

	// EC2: Joist's own simulator, seeded with the cluster's VPC.
	g.EC2, g.ec2srv = ec2sim.NewServer(ec2sim.Options{Region: Region, Zones: o.Zones, InstanceTypes: CatalogInstanceTypes(Region)})
	g.EC2URL = g.ec2srv.URL
	if o.VPCCluster == "" {
		o.VPCCluster = "hoon-cluster"
	}
	g.EC2.SeedDefault(o.VPCCluster)
	g.AWS = kumo.AWSConfig()
	front, err := newIAMFront(kumo.Endpoint)
	if err != nil {
		return nil, err
	}
	g.front = httptest.NewServer(front)
	g.enforceIAM(front)

	// The AMI parameters EKS publishes, pointing at simulator images.
	if err := g.seedAMIs(ctx); err != nil {
		return nil, err
	}
	if o.SpecSource == "" {
		o.SpecSource = "ssm"
	}
	if len(o.Specs) > 0 {
		push := g.PushSpecs
		if o.SpecSource == "crd" {
			push = g.ApplySpecs
		}
		if err := push(ctx, o.Specs); err != nil {
			return nil, err
		}
	}
	sc, err := scheduling.ParseSchedulerConfig(o.ExtraEnv["JOIST_SCHEDULER_CONFIG"])
	if err != nil {
		return nil, err
	}
	if err := kube.installRBAC(ctx, o.Cluster, rbac.Features{DefaultSpread: len(sc.Defaults()) > 0}); err != nil {
		return nil, err
	}
	if ns := o.Namespace; ns != "default" {
		_, _ = kube.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	}
	if o.VisibilityTimeout == 0 {
		o.VisibilityTimeout = 60
	}
	if g.Msg, err = SetupMessagingWith(ctx, g.AWS, o.Cluster, o.VisibilityTimeout); err != nil {
		return nil, err
	}

	env := map[string]string{
		"CLUSTER_NAME":             o.Cluster,
		"AWS_REGION":               Region,
		"AWS_ACCESS_KEY_ID":        "test",
		"AWS_SECRET_ACCESS_KEY":    "test",
		"AWS_ENDPOINT_URL":         g.front.URL,
		"AWS_ENDPOINT_URL_EC2":     g.EC2URL,
		"JOIST_ZONES":              strings.Join(o.Zones, ","),
		"KUBERNETES_VERSION":       o.K8sVersion,
		"CLUSTER_ENDPOINT":         kube.Config.Host,
		"CLUSTER_CA":               "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
		"SPEC_SOURCE":              o.SpecSource,
		"DEFAULT_INSTANCE_PROFILE": "KarpenterNodeInstanceProfile-" + o.Cluster,
	}
	for k, v := range o.ExtraEnv {
		env[k] = v
	}
	g.Env = env
	g.rie, g.build = rie, build
	fns := []struct {
		name string
		dst  **Function
	}{{"provisioner", &g.Provisioner}, {"binder", &g.Binder}, {"interruption", &g.Interruption}}
	if o.ReaperEvery > 0 {
		fns = append(fns, struct {
			name string
			dst  **Function
		}{"reaper", &g.Reaper})
	}
	for _, fn := range fns {
		f, err := g.StartFunction(fn.name)
		if err != nil {
			return nil, err
		}
		*fn.dst = f
	}
	if g.Reaper != nil {
		if g.ReaperWoken, err = g.StartFunction("reaper"); err != nil {
			return nil, err
		}
		sq := sqs.NewFromConfig(g.AWS)
		g.run(ctx, func(ctx context.Context) {
			// OnBatch hears "wake" when a woken run begins (it may loop
			// for most of a minute) and "woken" with its outcome.
			(&AsyncInvoker{SQS: sq, QueueURL: g.Msg.ReaperWake.URL, Invoke: g.ReaperWoken.Invoke, Log: g.Log,
				OnStart: func() {
					if o.OnBatch != nil {
						o.OnBatch("reaper", []string{"wake"}, nil, nil)
					}
				},
				OnInvoke: func(err error) {
					if o.OnBatch != nil {
						o.OnBatch("reaper", []string{"woken"}, nil, err)
					}
				}}).Run(ctx)
		})
		g.schedule(ctx, "reaper", o.ReaperEvery, g.Reaper)
	}
	if o.HealthEvery > 0 {
		g.schedule(ctx, "interruption", o.HealthEvery, g.Interruption)
	}

	sq := sqs.NewFromConfig(g.AWS)
	onBatch := func(fn string) func(ids, failed []string, err error) {
		if o.OnBatch == nil {
			return nil
		}
		return func(ids, failed []string, err error) { o.OnBatch(fn, ids, failed, err) }
	}
	// The event-source mappings the CDK stack sets: the provisioner's
	// batching window is its debounce; the binder takes events at once.
	g.run(ctx, func(ctx context.Context) {
		(&Poller{SQS: sq, QueueURL: g.Msg.Pending.URL, QueueARN: g.Msg.Pending.ARN, BatchSize: 10, Window: time.Second, Invoke: g.invokeProvisioner, Log: g.Log, OnBatch: onBatch("provisioner")}).Run(ctx)
	})
	// AWS's EC2 events: the simulator's go on the default bus, whose
	// rules (the stack's) route them to the interruption queue.
	eb := eventbridge.NewFromConfig(g.AWS)
	g.EC2.SetEventSink(func(e ec2sim.Event) {
		detail, _ := json.Marshal(e.Detail)
		_, err := eb.PutEvents(context.WithoutCancel(ctx), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
			EventBusName: aws.String("default"), Source: aws.String(e.Source), DetailType: aws.String(e.DetailType),
			Resources: e.Resources, Detail: aws.String(string(detail)),
		}}})
		if err != nil {
			g.Log.Warn("ec2sim: put event on the default bus", "detailType", e.DetailType, "error", err)
		}
	})
	g.run(ctx, func(ctx context.Context) {
		(&Poller{SQS: sq, QueueURL: g.Msg.Interruption.URL, QueueARN: g.Msg.Interruption.ARN, BatchSize: 10, Window: 0, Invoke: g.Interruption.Invoke, Log: g.Log, OnBatch: onBatch("interruption")}).Run(ctx)
	})
	g.run(ctx, func(ctx context.Context) {
		(&Poller{SQS: sq, QueueURL: g.Msg.Ready.URL, QueueARN: g.Msg.Ready.ARN, BatchSize: 10, Window: 0, Invoke: g.Binder.Invoke, Log: g.Log, OnBatch: onBatch("binder")}).Run(ctx)
	})

	g.Kubelet = &kubeletsim.Sim{
		Kube: kube.Client, EC2: ec2.NewFromConfig(g.AWS, func(eo *ec2.Options) { eo.BaseEndpoint = aws.String(g.EC2URL) }),
		Cluster: o.Cluster, Region: Region, ReadyDelay: o.ReadyDelay, Log: g.Log, Skip: o.KubeletSkip, KeepGone: o.KubeletKeepsGoneNodes,
	}
	g.run(ctx, g.Kubelet.Run)

	if !o.NoForwarder {
		var put forwarder.PutEventsAPI = eventbridge.NewFromConfig(g.As(iampolicy.Forwarder))
		if o.WrapPut != nil {
			put = o.WrapPut(put)
		}
		fwConfig, err := kube.ForwarderConfig()
		if err != nil {
			return nil, err
		}
		fwClient, err := kubernetes.NewForConfig(fwConfig)
		if err != nil {
			return nil, err
		}
		fw, err := forwarder.New(forwarder.Options{
			Client: fwClient, Cluster: o.Cluster, Bus: g.Msg.Bus, Put: put,
			Logger: slog.New(slog.NewJSONHandler(o.Logs, nil)).With("component", "forwarder"),
		})
		if err != nil {
			return nil, err
		}
		g.run(ctx, func(ctx context.Context) { _ = fw.Run(ctx) })
	}
	ok = true
	return g, nil
}

// enforceIAM registers every principal's policy with the EC2 simulator and
// the IAM front, and the node instance profile with its role.
func (g *Ground) enforceIAM(front *iamFront) {
	params := IAMParams(g.Opts.Cluster)
	g.EC2.EnforceIAM()
	g.EC2.SetPrincipal(HarnessKey, nil)
	front.setPrincipal(HarnessKey, nil)
	for _, principal := range iampolicy.Principals() {
		pol := iampolicy.MustFor(principal, params)
		if g.Opts.Policy != nil {
			pol = g.Opts.Policy(principal, pol)
		}
		g.EC2.SetPrincipal(AccessKey(principal), &pol)
		front.setPrincipal(AccessKey(principal), &pol)
	}
	g.EC2.AddInstanceProfile("KarpenterNodeInstanceProfile-"+g.Opts.Cluster, params.NodeRoleARN)
	g.EC2.OnAuthorize(func(a ec2sim.AuthRecord) { g.recordAuth(a.Principal, a.Request, a.Decision) })
	front.record = g.recordAuth
}

// recordAuth keeps a decision in the package's ledger and the ground's
// refusals.
func (g *Ground) recordAuth(principal string, r iamsim.Request, d iamsim.Decision) {
	recordAuth(principal, r, d)
	if !d.Allowed {
		g.authMu.Lock()
		g.iamRefused = append(g.iamRefused, fmt.Sprintf("%s: %s on %s", principal, r.Action, r.Resource))
		g.authMu.Unlock()
	}
}

// IAMRefused lists the AWS requests of this ground's functions that IAM
// refused ("principal: action on resource").
func (g *Ground) IAMRefused() []string {
	g.authMu.Lock()
	defer g.authMu.Unlock()
	return slices.Clone(g.iamRefused)
}

// RBACRefused lists the Kubernetes requests of Joist's identities that
// RBAC refused since this ground started (tests run one at a time).
func (g *Ground) RBACRefused() ([]string, error) {
	reqs, err := g.Kube.AuditRequests()
	if err != nil {
		return nil, err
	}
	var since []AuditRequest
	for _, r := range reqs {
		if !r.At.Before(g.started) {
			since = append(since, r)
		}
	}
	return RBACRefused(since), nil
}

// As is the ground's AWS configuration with a principal's identity: kumo
// through the IAM front, and the EC2 simulator.
func (g *Ground) As(principal string) aws.Config {
	cfg := g.AWS.Copy()
	cfg.BaseEndpoint = aws.String(g.front.URL)
	cfg.Credentials = credentials.NewStaticCredentialsProvider(AccessKey(principal), "test", "")
	return cfg
}

func (g *Ground) run(ctx context.Context, f func(context.Context)) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f(ctx)
	}()
}

// Close stops everything the ground started and removes its pods and
// nodes, so the next scenario in the package starts clean.
func (g *Ground) Close() {
	if g.cancel != nil {
		g.cancel()
	}
	g.wg.Wait()
	g.fnMu.Lock()
	for _, f := range append([]*Function{g.Binder}, g.extra...) {
		if f != nil {
			f.Stop()
		}
	}
	g.fnMu.Unlock()
	if g.ec2srv != nil {
		g.ec2srv.Close()
	}
	if g.front != nil {
		g.front.Close()
	}
	ctx := context.Background()
	for _, undo := range g.applied {
		undo()
	}
	if g.Kube != nil {
		zero := int64(0)
		_ = g.Kube.Client.CoreV1().Pods(g.Opts.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		// Finalizers (karpenter.sh/termination) would keep the nodes for
		// the next scenario: drop them first.
		if nodes, err := g.Kube.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "joist.sh/simulated=true"}); err == nil {
			for i := range nodes.Items {
				n := &nodes.Items[i]
				if len(n.Finalizers) > 0 {
					n.Finalizers = nil
					_, _ = g.Kube.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
				}
			}
		}
		_ = g.Kube.Client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "joist.sh/simulated=true"})
	}
}

// PushSpecs stores every spec object in manifests as its own SSM
// parameter under /joist/<cluster>/ (other kinds are ignored).
func (g *Ground) PushSpecs(ctx context.Context, manifests []byte) error {
	objs, err := specs.Decode(manifests, "specs")
	if err != nil {
		return err
	}
	store := &specstore.SSMStore{Client: ssm.NewFromConfig(g.AWS), Cluster: g.Opts.Cluster, Logger: g.Log}
	_, _, err = store.Push(ctx, objs, specstore.PushOptions{})
	return err
}

// ApplySpecs creates every spec object in manifests as an object of
// Joist's CRDs (config/crds), removed again at Close.
func (g *Ground) ApplySpecs(ctx context.Context, manifests []byte) error {
	objs, err := specs.Decode(manifests, "specs")
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(g.Kube.Config)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.Ignored {
			continue
		}
		for _, r := range specstore.Resources {
			if r.Kind != o.Kind {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(o.Raw); err != nil {
				return fmt.Errorf("%s: %w", o, err)
			}
			if _, err := dyn.Resource(r.GVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create %s: %w", o, err)
			}
			g.applied = append(g.applied, func() { _ = dyn.Resource(r.GVR).Delete(context.Background(), o.Name, metav1.DeleteOptions{}) })
		}
	}
	return nil
}

// seedAMIs publishes the EKS AMI parameters (kumo does not serve AWS's
// public ones) for the ground's Kubernetes version, each naming an image
// registered in the EC2 simulator.
func (g *Ground) seedAMIs(ctx context.Context) error {
	s := ssm.NewFromConfig(g.AWS)
	v := g.Opts.K8sVersion
	params := map[string]string{}
	for _, arch := range []struct{ k8s, aws string }{{"amd64", "x86_64"}, {"arm64", "arm64"}} {
		suffix := map[string]string{"amd64": "", "arm64": "-arm64"}[arch.k8s]
		params[fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/recommended/image_id", v, suffix)] = "amazon-eks-node-" + v + "-" + arch.aws
		for _, variant := range []string{"standard", "nvidia", "neuron"} {
			params[fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/recommended/image_id", v, arch.aws, variant)] = "amazon-eks-node-al2023-" + arch.aws + "-" + variant + "-" + v
		}
		params[fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/%s/latest/image_id", v, arch.aws)] = "bottlerocket-aws-k8s-" + v + "-" + arch.aws
		params[fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s-nvidia/%s/latest/image_id", v, arch.aws)] = "bottlerocket-aws-k8s-" + v + "-nvidia-" + arch.aws
	}
	params[fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2-gpu/recommended/image_id", v)] = "amazon-eks-gpu-node-" + v + "-x86_64"
	// The EKS optimized Windows Server Core AMIs (x86_64 only), named as
	// AWS names them: the kubelet simulator reads the version from the name.
	for _, w := range model.WindowsServers {
		name := "Windows_Server-" + w.Version + "-English-Core-EKS_Optimized-" + v
		params["/aws/service/ami-windows-latest/"+name+"/image_id"] = name
	}
	for name, imageName := range params {
		arch := "x86_64"
		if strings.Contains(imageName, "arm64") {
			arch = "arm64"
		}
		id := g.EC2.AddImage(ec2sim.ImageSpec{Name: imageName, Architecture: arch, OwnerAlias: "amazon", CreationDate: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)})
		if _, err := s.PutParameter(ctx, &ssm.PutParameterInput{
			Name: aws.String(name), Value: aws.String(id), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true),
		}); err != nil {
			return fmt.Errorf("seed AMI parameter %s: %w", name, err)
		}
	}
	return nil
}

// LogBuffer collects logs from several writers at once.
type LogBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

// String is everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// NewPods turns pods read from manifests (pkg/workload) into objects to
// create: deep copies with no UID, status or namespace of their own.
func NewPods(ps []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(ps))
	for _, p := range ps {
		c := p.DeepCopy()
		c.UID, c.ResourceVersion, c.Namespace = "", "", ""
		c.Status = corev1.PodStatus{}
		out = append(out, c)
	}
	return out
}

// CreatePending creates p in the ground's namespace and marks it
// PodScheduled=False/Unschedulable, as kube-scheduler does when no node
// fits (the test ground runs no scheduler unless a test starts one).
func (g *Ground) CreatePending(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	p = p.DeepCopy()
	p.Namespace = g.Opts.Namespace
	created, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create pod %s: %w", p.Name, err)
	}
	created.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/0 nodes are available", LastTransitionTime: metav1.Now(),
	}}
	updated, err := g.Kube.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("mark pod %s unschedulable: %w", p.Name, err)
	}
	return updated, nil
}
