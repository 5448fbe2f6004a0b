// Command forwarder runs in the cluster (a one-replica Deployment) and puts
// Joist's pending-pods and node-ready events on the cluster's EventBridge
// bus. All logic lives in pkg/forwarder; this only wires configuration.
//
// Configuration comes from flags, each defaulting to an environment
// variable so the Deployment manifest can use either:
//
//	--cluster      CLUSTER_NAME                       (required)
//	--bus          EVENT_BUS_NAME                     (required; name or ARN)
//	--kubeconfig   KUBECONFIG                         (empty: in-cluster)
//	--region       AWS_REGION                         (empty: SDK default chain)
//	--health-addr  JOIST_HEALTH_ADDR, default :8081   (empty: no health server)
//
// AWS credentials come from the SDK's default chain (EKS Pod Identity or
// IRSA in the cluster); AWS_ENDPOINT_URL points it at an emulator locally.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/joist-dev/joist/pkg/forwarder"
)

// settings is the parsed command line.
type settings struct {
	cluster, bus, kubeconfig, region, healthAddr string
	debounce, maxWait, resync                    time.Duration
}

// parse reads flags over environment defaults; lookupEnv is os.LookupEnv
// outside tests.
func parse(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) (settings, error) {
	getenv := func(k string) string { v, _ := lookupEnv(k); return v }
	var s settings
	fs := flag.NewFlagSet("forwarder", flag.ContinueOnError)
	fs.SetOutput(stderr)
	health := ":8081"
	if v, ok := lookupEnv("JOIST_HEALTH_ADDR"); ok { // set but empty disables
		health = v
	}
	fs.StringVar(&s.cluster, "cluster", getenv("CLUSTER_NAME"), "EKS cluster name carried in every event (env CLUSTER_NAME)")
	fs.StringVar(&s.bus, "bus", getenv("EVENT_BUS_NAME"), "EventBridge bus name or ARN (env EVENT_BUS_NAME)")
	fs.StringVar(&s.kubeconfig, "kubeconfig", getenv("KUBECONFIG"), "kubeconfig file; empty for the in-cluster service account (env KUBECONFIG)")
	fs.StringVar(&s.region, "region", getenv("AWS_REGION"), "AWS region; empty for the SDK's default chain (env AWS_REGION)")
	fs.StringVar(&s.healthAddr, "health-addr", health, "address of /healthz and /readyz; empty to disable (env JOIST_HEALTH_ADDR)")
	fs.DurationVar(&s.debounce, "debounce", forwarder.DefaultDebounce, "quiet time after the last change before sending")
	fs.DurationVar(&s.maxWait, "max-wait", forwarder.DefaultMaxWait, "longest a change waits under constant churn")
	fs.DurationVar(&s.resync, "resync", forwarder.DefaultResync, "how often every pending pod is sent again")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if s.cluster == "" {
		return s, errors.New("--cluster (or CLUSTER_NAME) is required")
	}
	if s.bus == "" {
		return s, errors.New("--bus (or EVENT_BUS_NAME) is required")
	}
	return s, nil
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	klog.SetSlogLogger(log) // client-go's own logs in the same JSON stream
	s, err := parse(os.Args[1:], os.LookupEnv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		log.Error("bad configuration", slog.Any("error", err))
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, s, log); err != nil {
		log.Error("forwarder failed", slog.Any("error", err))
		os.Exit(1)
	}
}

func run(ctx context.Context, s settings, log *slog.Logger) error {
	var kcfg *rest.Config
	var err error
	if s.kubeconfig != "" {
		kcfg, err = clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	} else {
		kcfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("kubernetes configuration: %w", err)
	}
	kcfg.UserAgent = "joist-forwarder"
	client, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}

	var loadOpts []func(*config.LoadOptions) error
	if s.region != "" {
		loadOpts = append(loadOpts, config.WithRegion(s.region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return fmt.Errorf("AWS configuration: %w", err)
	}

	f, err := forwarder.New(forwarder.Options{
		Client:   client,
		Cluster:  s.cluster,
		Bus:      s.bus,
		Put:      eventbridge.NewFromConfig(awsCfg),
		Debounce: s.debounce,
		MaxWait:  s.maxWait,
		Resync:   s.resync,
		Logger:   log,
	})
	if err != nil {
		return err
	}
	if s.healthAddr != "" {
		srv := &http.Server{Addr: s.healthAddr, Handler: health(f), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("health server failed", slog.Any("error", err))
			}
		}()
		defer srv.Close()
	}
	return f.Run(ctx)
}

// health serves /healthz (the process is up) and /readyz (the caches are
// synced, so pending pods are being watched).
func health(f interface{ Synced() bool }) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !f.Synced() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}
