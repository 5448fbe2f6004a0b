// Package wiring builds what a Joist function needs from its environment
// variables: the AWS configuration, the Kubernetes client (EKS token or a
// local kubeconfig), the spec source, the catalog and the launcher. Every
// function's main calls it and hands the result to its handler, so the
// functions themselves stay thin.
package wiring

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/client-go/kubernetes"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/eksauth"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/provisioning"
	"github.com/joist-dev/joist/pkg/specstore"
)

// Env is a function's configuration and clients.
type Env struct {
	Cluster string
	Region  string
	AWS     aws.Config
	Kube    *kube.Client
	Log     *slog.Logger
	EC2     *ec2.Client
	SSM     *ssm.Client
}

// Logger is the JSON logger every function uses; it carries the cluster
// and, inside an invocation, the Lambda request id.
func Logger(cluster string) *slog.Logger {
	level := slog.LevelInfo
	if strings.EqualFold(os.Getenv("LOG_LEVEL"), "debug") {
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

// Load reads the environment. It fails on what is missing, naming it.
func Load(ctx context.Context) (*Env, error) {
	cluster := os.Getenv("CLUSTER_NAME")
	if cluster == "" {
		return nil, fmt.Errorf("CLUSTER_NAME is not set")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("AWS_REGION is not set")
	}
	rc, err := eksauth.FromEnv(ctx)
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Env{
		Cluster: cluster,
		Region:  cfg.Region,
		AWS:     cfg,
		Kube:    kube.New(cs),
		Log:     Logger(cluster),
		EC2:     ec2.NewFromConfig(cfg),
		SSM:     ssm.NewFromConfig(cfg),
	}, nil
}

// Catalog is the offline catalog for the function's region and zones
// (JOIST_ZONES, comma-separated; default: the region's a, b, c).
func (e *Env) Catalog() (*catalog.Catalog, error) {
	var zones []string
	if z := os.Getenv("JOIST_ZONES"); z != "" {
		zones = strings.Split(z, ",")
	}
	return catalog.Offline(e.Region, zones)
}

// Launcher is the EC2 launcher for the cluster.
func (e *Env) Launcher() *launch.Launcher {
	version := os.Getenv("KUBERNETES_VERSION")
	if version == "" {
		version = "1.32"
	}
	return &launch.Launcher{
		EC2: e.EC2, SSM: e.SSM, Log: e.Log,
		Cluster: launch.Cluster{
			Name:            e.Cluster,
			Endpoint:        os.Getenv("CLUSTER_ENDPOINT"),
			CA:              os.Getenv("CLUSTER_CA"),
			Version:         version,
			ServiceCIDR:     os.Getenv("CLUSTER_SERVICE_CIDR"),
			DNSClusterIP:    os.Getenv("CLUSTER_DNS_IP"),
			InstanceProfile: os.Getenv("DEFAULT_INSTANCE_PROFILE"),
		},
	}
}

// Specs reads the cluster's specs from the source $SPEC_SOURCE names (ssm,
// the default, or crd).
func (e *Env) Specs() (func(context.Context) (*model.Spec, error), error) {
	store, err := specstore.New(specstore.Config{
		Source: os.Getenv("SPEC_SOURCE"), Cluster: e.Cluster, SSM: e.SSM, Logger: e.Log,
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (*model.Spec, error) { return specstore.Read(ctx, store) }, nil
}

// Reconciler builds the provisioner's reconcile from the environment. The
// catalog, launcher (with its launch-template cache) and unavailable
// offerings live across warm invocations; each call gets the invocation's
// logger.
func (e *Env) Reconciler() (func(ctx context.Context) (*provisioning.Result, error), error) {
	specs, err := e.Specs()
	if err != nil {
		return nil, fmt.Errorf("spec source: %w", err)
	}
	cat, err := e.Catalog()
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	unavailable := catalog.NewUnavailable(0)
	launcher := e.Launcher()
	return func(ctx context.Context) (*provisioning.Result, error) {
		p := &provisioning.Provisioner{
			Cluster: e.Cluster, Kube: e.Kube, Specs: specs, Catalog: cat,
			Launcher: launcher, Log: WithRequest(ctx, e.Log), Unavailable: unavailable,
		}
		return p.Reconcile(ctx)
	}, nil
}
