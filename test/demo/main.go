// Command demo runs the seed scenario on the local test ground and
// narrates it: two nginx pods pending → event on the bus → the
// provisioner's plan and CreateFleet → the node registers and turns
// Ready → the binder binds both pods. It cleans up after itself.
// With -interruption it narrates a spot interruption instead, handled
// replacement-first (interruption.go).
//
//	make demo                (builds the test programs first)
//	make demo-interruption
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joist-dev/joist/pkg/workload"
	"github.com/joist-dev/joist/test/testenv"
)

// logPath is where the functions', simulators' and client libraries' logs
// go, so the narration stays readable.
var logPath = filepath.Join(os.TempDir(), "joist-demo.log")

// scenarioTimeout bounds the scenario itself, from the first pod created:
// on any machine it takes seconds; the clock starts only once everything
// is built and started, however long that took.
const scenarioTimeout = 5 * time.Minute

func main() {
	interruption := flag.Bool("interruption", false, "narrate a spot interruption handled replacement-first instead of the seed scenario")
	flag.Parse()
	if err := run(*interruption); err != nil {
		testenv.Stop()
		fmt.Fprintf(os.Stderr, "\nThe demo failed: %v\n", err)
		fmt.Fprintf(os.Stderr, "  The functions' and simulators' logs are in %s.\n", logPath)
		fmt.Fprintln(os.Stderr, "  A first run on a cold machine builds and starts a lot; if a start timed out, `make demo` again starts warm.")
		os.Exit(1)
	}
}

// quietLibraries sends klog (client-go's logger, and envtest's through it)
// to the demo's log file:
// its lines about watches ending with a canceled context are the normal
// sound of the demo stopping, not news for the reader.
func quietLibraries(w *os.File) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(w)
	ctrllog.SetLogger(klog.NewKlogr()) // envtest's logger, else it complains on stderr
}

// buildFunctions builds the functions' bootstraps before anything starts,
// one line each: on a cold machine the first build downloads and compiles
// the AWS SDK and client-go (minutes); later ones take about a second.
func buildFunctions() error {
	fmt.Println("  building the functions (first run on a cold machine: minutes for the first, less for the rest; warm: ~10 s each, linking)")
	for _, name := range []string{"provisioner", "binder", "reaper", "interruption"} {
		start := time.Now()
		fmt.Printf("    %-13s ", name)
		if _, err := testenv.Build(name); err != nil {
			fmt.Println("failed")
			return fmt.Errorf("build function %s: %w", name, err)
		}
		fmt.Printf("%.0fs\n", time.Since(start).Seconds())
	}
	return nil
}

type narrator struct {
	mu    sync.Mutex
	start time.Time
	seen  map[string]bool
}

func (n *narrator) say(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Printf("  %6.2fs  %s\n", time.Since(n.start).Seconds(), fmt.Sprintf(format, args...))
}

func (n *narrator) once(key, format string, args ...any) {
	n.mu.Lock()
	if n.seen[key] {
		n.mu.Unlock()
		return
	}
	n.seen[key] = true
	n.mu.Unlock()
	n.say(format, args...)
}

func run(interruption bool) error {
	defer testenv.Stop()
	tools := testenv.ToolsDir()
	bin := func(name string) (string, error) {
		p := filepath.Join(tools, name)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s not built: run `make tools` (make demo does)", p)
		}
		return p, nil
	}
	apiserver, err := bin("kube-apiserver")
	if err != nil {
		return err
	}
	etcd, err := bin("etcd")
	if err != nil {
		return err
	}
	kumoBin, err := bin("kumo")
	if err != nil {
		return err
	}
	rie, err := bin("aws-lambda-rie")
	if err != nil {
		return err
	}
	seed, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "seed", "seed.yaml"))
	if err != nil {
		return err
	}
	logs, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logs.Close()
	quietLibraries(logs)

	if err := buildFunctions(); err != nil {
		return err
	}
	fmt.Printf("  starting etcd + kube-apiserver (cold: up to a minute; waiting up to %s) ...\n", testenv.StartTimeout)
	start := time.Now()
	kube, err := testenv.StartKube(apiserver, etcd)
	if err != nil {
		return err
	}
	fmt.Printf("    up in %.0fs\n", time.Since(start).Seconds())
	fmt.Printf("  starting kumo, the AWS emulator (a few seconds; waiting up to %s) ...\n", testenv.StartTimeout)
	start = time.Now()
	kumo, err := testenv.StartKumo(kumoBin)
	if err != nil {
		return err
	}
	fmt.Printf("    up in %.0fs\n", time.Since(start).Seconds())
	fmt.Println("  starting the EC2 simulator, the queues and the functions under aws-lambda-rie (seconds) ...")
	if interruption {
		return interruptionDemo(kube, kumo, rie, logs)
	}
	fmt.Println("Joist demo: the seed's nginx Deployment on a cluster with no nodes")
	n := &narrator{seen: map[string]bool{}}
	groundCtx, stopGround := context.WithCancel(context.Background())
	defer stopGround()
	g, err := testenv.StartGround(groundCtx, kube, kumo, rie, testenv.GroundOptions{
		Cluster: "hoon-cluster", Namespace: "default", Specs: seed, ReadyDelay: 2 * time.Second, Logs: logs,
		// The reaper's schedule: rate(1 minute) in AWS, faster here.
		ReaperEvery: reaperEvery,
		OnBatch: func(fn string, ids, failed []string, err error) {
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return // the demo is ending
				}
				n.say("λ %s failed: %v", fn, err)
				return
			}
			n.say("λ %s invoked with %d message(s) (%d failed)", fn, len(ids), len(failed))
		},
	}, testenv.Build)
	if err != nil {
		return fmt.Errorf("start the test ground: %w", err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(groundCtx, scenarioTimeout)
	defer cancel()
	fmt.Println("  specs stored in SSM under /joist/hoon-cluster/ (Provisioners service + management, their AWSNodeTemplates)")
	fmt.Println()

	pods, err := seedPods(seed)
	if err != nil {
		return err
	}
	n.start = time.Now()
	for _, p := range pods {
		if _, err := g.CreatePending(ctx, p); err != nil {
			return fmt.Errorf("create pod %s: %w", p.Name, err)
		}
		n.say("pod %s pending (PodScheduled=False, Unschedulable)", p.Name)
	}

	for ctx.Err() == nil {
		for _, i := range g.EC2.Instances() {
			n.once("launch/"+i.ID, "CreateFleet launched %s: %s in %s (%s) for pool %q", i.ID, i.InstanceType, i.Zone, i.CapacityType, i.Tags["joist.sh/nodepool"])
		}
		list, err := g.Kube.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		bound := 0
		for _, p := range list.Items {
			if id := p.Annotations["joist.sh/instance-id"]; id != "" {
				n.once("nominated/"+p.Name, "pod %s nominated for %s", p.Name, id)
			}
			if p.Spec.NodeName != "" {
				bound++
				n.once("bound/"+p.Name, "pod %s bound to %s", p.Name, p.Spec.NodeName)
			}
		}
		nodes, err := g.Kube.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, node := range nodes.Items {
			n.once("node/"+node.Name, "node %s registered (labels nodeType=%s, taints %s)", node.Name, node.Labels["nodeType"], taints(node.Spec.Taints))
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					n.once("ready/"+node.Name, "node %s Ready → node-ready event", node.Name)
				}
			}
		}
		evs, err := g.Kube.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Source.Component == "joist" {
				n.once("event/"+e.Name, "Event %s/%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
		if bound == len(pods) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("waited %s for both nginx pods to be bound to a node Joist launched; they were not", scenarioTimeout)
	}
	fmt.Println()
	if calls := g.EC2.CreateFleetOperations(); len(calls) > 0 {
		fmt.Printf("pod Unschedulable → CreateFleet: %.2fs (forwarder debounce 0.3 s + the pending queue's 1 s batching window + plan and launch)\n", calls[0].At.Sub(n.start).Seconds())
	}
	fmt.Printf("scale-up done: %d instance(s), both pods bound in %.1fs.\n", len(g.EC2.Instances()), time.Since(n.start).Seconds())
	fmt.Println()
	if err := scaleDown(ctx, g, n, pods); err != nil {
		return err
	}
	fmt.Printf("Function logs: %s\n", logPath)
	fmt.Println("cleaning up ...")
	return nil
}

// reaperEvery is the demo reaper's period.
const reaperEvery = 10 * time.Second

// scaleDown is the guide's second half: the Deployment scaled to zero,
// the service node empty, and ttlSecondsAfterEmpty (30 s) later the
// reaper retires it and its instance is terminated.
func scaleDown(ctx context.Context, g *testenv.Ground, n *narrator, pods []*corev1.Pod) error {
	fmt.Printf("Scaling nginx-karpenter to 0 replicas (the reaper runs every %s here, every minute in AWS)\n", reaperEvery)
	n.start = time.Now()
	n.seen = map[string]bool{}
	for _, p := range pods {
		if err := g.Kube.Client.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		n.say("pod %s deleted", p.Name)
	}
	var emptied time.Time
	for ctx.Err() == nil {
		list, err := g.Kube.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 && emptied.IsZero() {
			emptied = time.Now()
			n.say("the service node holds no pods")
		}
		nodes, err := g.Kube.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, node := range nodes.Items {
			if ts := node.Annotations["karpenter.sh/emptiness-timestamp"]; ts != "" {
				n.once("empty/"+node.Name, "reaper stamped node %s karpenter.sh/emptiness-timestamp=%s (ttlSecondsAfterEmpty: 30)", node.Name, ts)
			}
			for _, t := range node.Spec.Taints {
				if t.Key == "karpenter.sh/disrupted" {
					n.once("tainted/"+node.Name, "node %s tainted karpenter.sh/disrupted:NoSchedule and deleted; the finalizer karpenter.sh/termination holds it while it drains", node.Name)
				}
			}
		}
		evs, err := g.Kube.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Source.Component == "joist" && (e.Reason == "Terminating" || e.Reason == "Evicted" || e.Reason == "DisruptionBlocked") {
				n.once("event/"+e.Name, "Event %s/%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
		gone := true
		for _, i := range g.EC2.Instances() {
			if i.State == "running" || i.State == "pending" {
				gone = false
				continue
			}
			n.once("terminated/"+i.ID, "instance %s is %s", i.ID, i.State)
		}
		if gone && len(nodes.Items) == 0 {
			n.say("node deleted; no instance left running")
			fmt.Println()
			fmt.Printf("scale-down done: the empty node's instance ended %.1fs after the node emptied (TTL 30 s; the emptiness is noticed at the reaper's next pass)\n", time.Since(emptied).Seconds())
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("waited until %s into the scenario for the emptied node to be retired; it was not", scenarioTimeout)
}

func taints(ts []corev1.Taint) string {
	var s []string
	for _, t := range ts {
		s = append(s, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// seedPods expands the seed's Deployment as its ReplicaSet would.
func seedPods(seed []byte) ([]*corev1.Pod, error) {
	w, err := workload.Read(seed, "seed.yaml")
	if err != nil {
		return nil, err
	}
	return testenv.NewPods(w.Pods), nil
}
