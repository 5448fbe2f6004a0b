// Package wiring builds what a Joist function needs from its environment
// variables: the AWS configuration, the Kubernetes client (EKS token or a
// local kubeconfig), the spec source, the catalog and the launcher. Every
// function's main calls it and hands the result to its handler, so the
// functions themselves stay thin.
package wiring

import (
	"context"
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/catalog/live"
	"github.com/joist-dev/joist/pkg/eksauth"
	"github.com/joist-dev/joist/pkg/garbage"
	"github.com/joist-dev/joist/pkg/interruption"
	"github.com/joist-dev/joist/pkg/interruption/handler"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/provisioning"
	"github.com/joist-dev/joist/pkg/rbac"
	"github.com/joist-dev/joist/pkg/reaping"
	"github.com/joist-dev/joist/pkg/specstore"
	"github.com/joist-dev/joist/pkg/termination"
)

// Env is a function's configuration and clients.
type Env struct {
	Cluster string
	Region  string
	AWS     aws.Config
	Kube    *kube.Client
	Log     *slog.Logger
	EC2     *ec2.Client
	EKS     *eks.Client
	SSM     *ssm.Client
	// CacheTTL is how long the launcher reuses what it looked up (AMIs,
	// subnets, groups): JOIST_CACHE_TTL, default launch.DefaultCacheTTL.
	CacheTTL time.Duration
	// Dynamic reads the spec CRDs (SPEC_SOURCE=crd).
	Dynamic dynamic.Interface
	// Mapper maps kinds to resources for server-side apply (lazy: it asks
	// the API server's discovery on first use).
	Mapper meta.RESTMapper
}

// Logger is the JSON logger every function uses; it carries the cluster
// and, inside an invocation, the Lambda request id.
func Logger(cluster string) *slog.Logger {
	level := slog.LevelInfo
	if strings.EqualFold(get(SettingLogLevel), "debug") {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level})).With("cluster", cluster)
}

// WithRequest adds the invocation's request id to a logger.
func WithRequest(ctx context.Context, log *slog.Logger) *slog.Logger {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return log.With("requestId", lc.AwsRequestID)
	}
	return log
}

// The Kubernetes client's rate limit for a function's invocation.
const (
	KubeQPS   = 50
	KubeBurst = 100
)

// setMemoryLimit tells the Go runtime the function's memory size (less a
// tenth for the runtime's own and the Lambda agent's), so the garbage
// collector works harder near it instead of letting the heap double past
// it (docs/scale.md). GOMEMLIMIT, when set, wins.
func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	mb, err := strconv.Atoi(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"))
	if err != nil || mb <= 0 {
		return
	}
	debug.SetMemoryLimit(int64(mb) << 20 / 10 * 9)
}

// Load reads the environment. It fails on what is missing, naming it.
func Load(ctx context.Context) (*Env, error) {
	// Every setting read once here, so a conflict between a JOIST_ name
	// and its old one fails the cold start, naming both.
	for _, s := range Settings {
		if _, err := s.Get(os.LookupEnv); err != nil {
			return nil, err
		}
	}
	cluster := get(SettingCluster)
	if cluster == "" {
		return nil, fmt.Errorf("read setting %s: not set (nor its old name %s)", SettingCluster.Name, SettingCluster.Old)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("AWS_REGION is not set")
	}
	rc, err := eksauth.FromSettings(ctx, os.Getenv(eksauth.EnvKubeconfig), cluster, get(SettingEndpoint), get(SettingCA))
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	// client-go's default of 5 requests a second would make a pass's
	// writes (nominations, Events, binds) the slowest part of scale-up and
	// let a few hundred repeated Events fill a pass. One decider runs at a
	// time, so the API server sees one such client per cluster.
	rc.QPS, rc.Burst = KubeQPS, KubeBurst
	// JOIST_KUBE_COMPRESSION=off asks the API server for uncompressed
	// responses (docs/scale.md measures both).
	rc.DisableCompression = os.Getenv("JOIST_KUBE_COMPRESSION") == "off"
	setMemoryLimit()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes discovery client: %w", err)
	}
	cacheTTL, err := SettingCacheTTL.Duration(os.LookupEnv, launch.DefaultCacheTTL)
	if err != nil {
		return nil, err
	}
	return &Env{
		Cluster: cluster,
		Region:  cfg.Region,
		AWS:     cfg,
		Kube:    kube.New(cs),
		Log:     Logger(cluster),
		// Throttling and 5xx are retried with backoff and jitter, tuned
		// for CreateFleet's bursts.
		EC2:      ec2.NewFromConfig(cfg, launch.EC2Options),
		EKS:      eks.NewFromConfig(cfg),
		SSM:      ssm.NewFromConfig(cfg),
		Dynamic:  dyn,
		CacheTTL: cacheTTL,
		Mapper:   restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
	}, nil
}

// Catalog returns the instance catalog for the function's region and
// zones (JOIST_ZONES, comma-separated). JOIST_CATALOG=live (what the CDK
// stack sets) asks EC2 and the Pricing API, cached across warm invocations
// and falling back to the embedded data; JOIST_CATALOG=embedded, the
// default, uses only the embedded data (tests, the demo).
func (e *Env) Catalog() (func(context.Context) (*catalog.Catalog, error), error) {
	var zones []string
	if z := get(SettingZones); z != "" {
		zones = strings.Split(z, ",")
	}
	mode, err := SettingCatalog.oneOf(os.LookupEnv, "embedded", "embedded", "live")
	if err != nil {
		return nil, err
	}
	switch mode {
	case "embedded":
		cat, err := catalog.Offline(e.Region, zones)
		if err != nil {
			return nil, err
		}
		return func(context.Context) (*catalog.Catalog, error) { return cat, nil }, nil
	case "live":
		pc := pricing.NewFromConfig(e.AWS, func(o *pricing.Options) { o.Region = live.PricingRegion(e.Region) })
		prov, err := live.New(e.EC2, pc, live.Options{Region: e.Region, Zones: zones})
		if err != nil {
			return nil, err
		}
		return prov.Catalog, nil
	default:
		return nil, fmt.Errorf("read setting %s=%q: want live or embedded", SettingCatalog.Name, mode)
	}
}

// Launcher is the EC2 launcher for the cluster. What configuration leaves
// empty (Kubernetes version, endpoint, CA, service range) the launcher
// reads from eks:DescribeCluster.
func (e *Env) Launcher() *launch.Launcher {
	return &launch.Launcher{
		EC2: e.EC2, SSM: e.SSM, EKS: e.EKS, Log: e.Log, CacheTTL: e.CacheTTL,
		Cluster: launch.Cluster{
			Name:            e.Cluster,
			Endpoint:        get(SettingEndpoint),
			CA:              get(SettingCA),
			Version:         get(SettingVersion),
			ServiceCIDR:     get(SettingServiceCIDR),
			DNSClusterIP:    get(SettingDNSClusterIP),
			InstanceProfile: get(SettingInstanceProfile),
		},
	}
}

// Specs reads the cluster's specs from the source $SPEC_SOURCE names (ssm,
// the default, or crd), every node class carrying the operator's
// $JOIST_RESERVED_ENIS and every kubelet setting its NodeClassCEL gate
// (FEATURE_GATES). While the teardown marker (rbac.TeardownName) exists
// they read as withdrawn: no pool, none declared.
func (e *Env) Specs() (func(context.Context) (*model.Spec, error), error) {
	store, err := specstore.New(specstore.Config{
		Source: get(SettingSpecSource), Cluster: e.Cluster, SSM: e.SSM, Logger: e.Log,
		Kube: e.Dynamic, Events: e.Kube.CoreV1(),
	})
	if err != nil {
		return nil, err
	}
	reserved, err := ReservedENIs(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	gates, err := ReadFeatureGates(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	ns := leaseNamespace()
	return func(ctx context.Context) (*model.Spec, error) {
		_, err := e.Kube.CoreV1().ConfigMaps(ns).Get(ctx, rbac.TeardownName(e.Cluster), metav1.GetOptions{})
		switch {
		case err == nil:
			e.Log.Info("teardown requested: every pool is withdrawn", "marker", ns+"/"+rbac.TeardownName(e.Cluster))
			return specstore.Withdrawn(), nil
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("read teardown marker %s/%s: %w", ns, rbac.TeardownName(e.Cluster), err)
		}
		spec, err := specstore.Read(ctx, store)
		return spec.WithReservedENIs(reserved).WithNodeClassCEL(gates.NodeClassCEL), err
	}, nil
}

// leaseNamespace is $JOIST_LEASE_NAMESPACE (or $LEASE_NAMESPACE),
// kube-system by default: the decider Lease's namespace, and the teardown
// marker's.
func leaseNamespace() string {
	if ns := get(SettingLeaseNamespace); ns != "" {
		return ns
	}
	return rbac.DefaultLeaseNamespace
}

// Provisioners builds, per invocation, the provisioner's reconcile from
// the environment. The catalog, launcher (with its launch-template cache)
// and unavailable offerings live across warm invocations; each
// Provisioner gets the invocation's logger and metrics.
func (e *Env) Provisioners() (func(ctx context.Context, m *metrics.Recorder) (*provisioning.Provisioner, error), error) {
	specs, err := e.Specs()
	if err != nil {
		return nil, fmt.Errorf("spec source: %w", err)
	}
	catalogFor, err := e.Catalog()
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	timeout, err := SettingRegistration.Duration(os.LookupEnv, provisioning.DefaultRegistrationTimeout)
	if err != nil {
		return nil, err
	}
	policy, err := Policies(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	schedulerConfig, err := SchedulerConfig(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	unavailable := catalog.NewUnavailable(0)
	launcher := e.Launcher()
	return func(ctx context.Context, m *metrics.Recorder) (*provisioning.Provisioner, error) {
		cat, err := catalogFor(ctx)
		if err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		return &provisioning.Provisioner{
			Cluster: e.Cluster, Kube: e.Kube, Specs: specs, Catalog: cat,
			Launcher: launcher, Log: WithRequest(ctx, e.Log), Unavailable: unavailable,
			Lock: e.Lease(ctx), RegistrationTimeout: timeout, Metrics: m, Policy: policy,
			SchedulerConfig: schedulerConfig, NodeClasses: launcher,
		}, nil
	}, nil
}

// Reconciler builds the provisioner's reconcile from the environment.
func (e *Env) Reconciler() (func(ctx context.Context, m *metrics.Recorder) (*provisioning.Result, error), error) {
	newProvisioner, err := e.Provisioners()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, m *metrics.Recorder) (*provisioning.Result, error) {
		p, err := newProvisioner(ctx, m)
		if err != nil {
			return nil, err
		}
		return p.Reconcile(ctx)
	}, nil
}

// Interruption builds, per invocation, the interruption function's
// handler (the queue's batches and the once-a-minute health check):
// EC2's instances and their health through the launcher, the replacement through the
// provisioner's Replace, and the node's retirement begun through the
// termination engine (marked and deleted, held by its finalizer): the
// reaper's loop drains it from its next pass, honouring PDBs, and ends the
// instance if AWS has not.
func (e *Env) Interruption() (func(ctx context.Context, m *metrics.Recorder) *handler.Handler, error) {
	newProvisioner, err := e.Provisioners()
	if err != nil {
		return nil, err
	}
	specs, err := e.Specs()
	if err != nil {
		return nil, fmt.Errorf("spec source: %w", err)
	}
	launcher := e.Launcher()
	return func(ctx context.Context, m *metrics.Recorder) *handler.Handler {
		// One engine, complete (EC2 included) though only Begin and
		// Release are called here: a later Step must not find it without.
		terminator := func() *termination.Terminator {
			return &termination.Terminator{Kube: e.Kube, EC2: launcher, Log: WithRequest(ctx, e.Log), Metrics: m}
		}
		return &handler.Handler{
			Cluster: e.Cluster, Kube: e.Kube, Instances: launcher, Health: launcher, Specs: specs,
			Replace: func(ctx context.Context, r provisioning.Retiring) (*provisioning.Result, error) {
				p, err := newProvisioner(ctx, m)
				if err != nil {
					return nil, err
				}
				return p.Replace(ctx, r)
			},
			Retire: func(ctx context.Context, node *corev1.Node) error {
				return terminator().Begin(ctx, node.Name, interruption.RetireReason)
			},
			// The instance is gone: the node goes at once, its finalizer
			// with it (nothing is left to drain).
			Release: func(ctx context.Context, node *corev1.Node) error {
				return terminator().Release(ctx, node.Name)
			},
			Log: WithRequest(ctx, e.Log), Metrics: m,
		}
	}, nil
}

// Collector is the reaper's garbage collection: instances whose node
// never registered or is gone ($JOIST_REGISTRATION_TIMEOUT, default 15m),
// Nodes whose instance is gone, and launch templates no live instance
// uses, older than $JOIST_TEMPLATE_MIN_AGE (default 10m). The caller sets
// Lock per invocation (LeaseLock).
func (e *Env) Collector() (*garbage.Collector, error) {
	timeout, err := SettingRegistration.Duration(os.LookupEnv, garbage.DefaultRegistrationTimeout)
	if err != nil {
		return nil, err
	}
	minAge, err := SettingTemplateMinAge.Duration(os.LookupEnv, garbage.DefaultTemplateMinAge)
	if err != nil {
		return nil, err
	}
	launcher := e.Launcher()
	return &garbage.Collector{EC2: launcher, Cluster: e.Cluster, Nodes: e.Kube, Log: e.Log, RegistrationTimeout: timeout,
		Release:   &termination.Terminator{Kube: e.Kube, Log: e.Log},
		Templates: launcher, TemplateMinAge: minAge}, nil
}

// LeaseLock is the decider lease of an invocation as a garbage.Lock.
func (e *Env) LeaseLock(ctx context.Context) garbage.Lock {
	lease := e.Lease(ctx)
	// Held around one cleanup only, not the whole invocation.
	lease.Duration = 30 * time.Second
	return func(ctx context.Context) (func(), error) {
		held, err := lease.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return func() {
			if err := held.Release(ctx, nil); err != nil {
				e.Log.Warn("release lease", "error", err.Error())
			}
		}, nil
	}
}

// Reaper builds the reaper's disruption loop: decisions from the specs,
// retirements through the termination engine with the launcher's
// tag-checked terminate. $JOIST_REAPER_LOOP (default 50s) bounds the loop
// and $JOIST_REAPER_INTERVAL (default 5s) spaces its passes. Each call
// gets the invocation's logger and lease.
func (e *Env) Reaper() (func(ctx context.Context, m *metrics.Recorder) *reaping.Reaper, error) {
	specs, err := e.Specs()
	if err != nil {
		return nil, fmt.Errorf("spec source: %w", err)
	}
	loop, err := SettingReaperLoop.Duration(os.LookupEnv, reaping.DefaultLoop)
	if err != nil {
		return nil, err
	}
	interval, err := SettingReaperInterval.Duration(os.LookupEnv, reaping.DefaultInterval)
	if err != nil {
		return nil, err
	}
	catalogFor, err := e.Catalog()
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	replacementTimeout, err := SettingReplacementLimit.Duration(os.LookupEnv, termination.DefaultReplacementTimeout)
	if err != nil {
		return nil, err
	}
	newProvisioner, err := e.Provisioners()
	if err != nil {
		return nil, err
	}
	policy, err := Policies(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	schedulerConfig, err := SchedulerConfig(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	gates, err := ReadFeatureGates(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	launcher := e.Launcher()
	return func(ctx context.Context, m *metrics.Recorder) *reaping.Reaper {
		log := WithRequest(ctx, e.Log)
		lease := e.Lease(ctx)
		// Replacement passes run inside the reaper's decision, which
		// holds the Lease already: the provisioner takes no lock of its own.
		replace := func(ctx context.Context, r provisioning.Retiring) (*provisioning.Result, error) {
			p, err := newProvisioner(ctx, m)
			if err != nil {
				return nil, err
			}
			p.Lock = nil
			return p.Replace(ctx, r)
		}
		// Held only around one decision, not the whole invocation.
		lease.Duration = 30 * time.Second
		return &reaping.Reaper{
			Kube: e.Kube, Specs: specs, Log: log, Lock: lease, Loop: loop, Interval: interval, Metrics: m,
			Replace: replace, ReplacementTimeout: replacementTimeout, Cloud: launcher, Cluster: e.Cluster, Catalog: catalogFor, Policy: policy,
			SchedulerConfig: schedulerConfig, NodeRepair: gates.NodeRepair, NoSpotToSpot: gates.NoSpotToSpot,
			Terminator: &termination.Terminator{Kube: e.Kube, EC2: launcher, Log: log, Metrics: m},
		}
	}, nil
}

// Lease is the cluster's decider lease (kube-system/joist-<cluster>, or
// $LEASE_NAMESPACE), held by this function's invocation.
func (e *Env) Lease(ctx context.Context) *kube.Lease {
	ns := leaseNamespace()
	holder := os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		holder += "/" + lc.AwsRequestID
	}
	// Held until the invocation's deadline: Lambda ends the function
	// then, so a live holder is never replaced and a crashed one frees
	// the lease as soon as it is surely dead.
	duration := 2 * time.Minute
	if dl, ok := ctx.Deadline(); ok {
		duration = time.Until(dl) + 5*time.Second
	}
	return &kube.Lease{
		Client: e.Kube, Namespace: ns, Name: "joist-" + e.Cluster, Holder: holder,
		Duration: duration,
		Wait:     5 * time.Second,
	}
}

// get is a setting's value; Load has already failed on a conflict.
func get(s Setting) string {
	v, _ := s.Get(os.LookupEnv)
	return v
}

// Metrics starts an invocation's metrics; Flush writes them as EMF lines
// on stdout, where CloudWatch Logs turns them into metrics.
func (e *Env) Metrics() *metrics.Recorder { return metrics.New(e.Cluster, nil) }

// Flush writes m to stdout, logging (never failing on) what it refused.
func (e *Env) Flush(m *metrics.Recorder) {
	if err := m.Flush(os.Stdout); err != nil {
		e.Log.Warn("metrics", "error", err.Error())
	}
}

// MustLoad is Load for a function's main: a function that cannot read its
// configuration logs why and exits, and Lambda reports the failed init.
func MustLoad(ctx context.Context, function string) *Env {
	env, err := Load(ctx)
	if err != nil {
		slog.Error(function+": configuration", "error", err.Error())
		os.Exit(1)
	}
	return env
}

// MustReconciler is Reconciler for a function's main.
func (e *Env) MustReconciler(function string) func(ctx context.Context, m *metrics.Recorder) (*provisioning.Result, error) {
	r, err := e.Reconciler()
	if err != nil {
		e.Log.Error(function+": "+err.Error(), "error", err.Error())
		os.Exit(1)
	}
	return r
}
