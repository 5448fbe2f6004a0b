// Command karpenter runs Karpenter's scheduler (sigs.k8s.io/karpenter v1.15.0,
// pkg/controllers/provisioning/scheduling) on the cases Joist's benchtable
// dumps, and prints its nodes, $/h and times per case. With -joist it runs
// Joist on the same case in turns with Karpenter (a `benchtable -case`
// process per turn) and prints one table of both. `make bench-karpenter`
// runs it:
//
//	go run ./pkg/scheduling/internal/benchtable -dump /tmp/joist-karpenter
//	go build -o bin/benchtable ./pkg/scheduling/internal/benchtable
//	cd test/karpenter && GOTOOLCHAIN=auto go run . -dump /tmp/joist-karpenter -joist ../../bin/benchtable
//
// This is a module of its own so that Karpenter and its dependencies stay
// out of the product's go.mod; Karpenter v1.15.0 needs Go 1.26.9, which
// GOTOOLCHAIN=auto fetches from the module proxy.
//
// Karpenter is given what its provisioner would give the scheduler: the
// NodePools ordered by weight, each pool's instance types (the dump's, with
// Joist's allocatable as capacity less overhead and its offerings and
// prices), the DaemonSets' pods and each pod's volume requirements, and
// the provisioner's options (strict reserved capacity, one worker, the
// default minValues policy, preferences respected, a one-minute timeout on
// Solve). A run is timed from NewTopology to the end of Solve, as the
// provisioner's pass spends it; the volume lookups (API reads in a cluster)
// are made once per case, outside the time.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	ksched "sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/logging"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	"sigs.k8s.io/karpenter/pkg/scheduling"
	"sigs.k8s.io/karpenter/pkg/utils/daemonset"
	nodepoolutils "sigs.k8s.io/karpenter/pkg/utils/nodepool"
)

func main() {
	dump := flag.String("dump", "", "folder written by `benchtable -dump` (required)")
	only := flag.String("cases", "", "comma-separated case names (folders of the dump); all of cases.txt when empty")
	runs := flag.Int("runs", 3, "runs per solver and case, in turns; the fastest CPU time is reported")
	joist := flag.String("joist", "", "benchtable binary: also run Joist on each case, in turns with Karpenter, and print both")
	timeout := flag.Duration("timeout", time.Minute, "Solve's timeout (the provisioner's is one minute)")
	slow := flag.Duration("slow", 20*time.Second, "after a Karpenter run slower than this, do not repeat it")
	flag.Parse()
	log.SetLogger(logging.NopLogger)
	if *dump == "" {
		fmt.Fprintln(os.Stderr, "karpenter: -dump is required")
		os.Exit(2)
	}
	cases, err := readIndex(*dump, *only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "karpenter:", err)
		os.Exit(1)
	}
	if err := run(cases, *dump, *runs, *joist, *timeout, *slow); err != nil {
		fmt.Fprintln(os.Stderr, "karpenter:", err)
		os.Exit(1)
	}
}

// indexEntry is one line of cases.txt.
type indexEntry struct {
	Name, Shape string
	Pods        int
}

func readIndex(dir, only string) ([]indexEntry, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cases.txt"))
	if err != nil {
		return nil, fmt.Errorf("read the dump's index: %w", err)
	}
	want := map[string]bool{}
	for _, c := range strings.Split(only, ",") {
		if c = strings.TrimSpace(c); c != "" {
			want[c] = true
		}
	}
	var out []indexEntry
	found := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s line %d: want `case shape pods`, got %q", filepath.Join(dir, "cases.txt"), i+1, line)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("%s line %d: pods: %w", filepath.Join(dir, "cases.txt"), i+1, err)
		}
		if len(want) == 0 || want[f[0]] {
			out = append(out, indexEntry{f[0], f[1], n})
			found[f[0]] = true
		}
	}
	for c := range want {
		if !found[c] {
			return nil, fmt.Errorf("case %s is not in %s", c, filepath.Join(dir, "cases.txt"))
		}
	}
	return out, nil
}

// result is one solver's figures on one case (fastest of its runs).
type result struct {
	Pods, Placed, Nodes int
	Price               float64
	Wall, CPU           float64
	Runs                int
	TimedOut            bool
	// FirstError is one unplaced pod and Karpenter's reason.
	FirstError string
}

// joistLine is what `benchtable -case` prints.
type joistLine struct {
	Pods   int     `json:"pods"`
	Placed int     `json:"placed"`
	Nodes  int     `json:"nodes"`
	Price  float64 `json:"pricePerHour"`
	Wall   float64 `json:"wallSeconds"`
	CPU    float64 `json:"cpuSeconds"`
}

func run(cases []indexEntry, dir string, runs int, joist string, timeout, slow time.Duration) error {
	fmt.Printf("load average at start: %s\n\n", loadAvg())
	if joist == "" {
		fmt.Println("| case | pods | Karpenter placed | nodes | $/h | solve s | cpu s | runs |")
		fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	} else {
		fmt.Println("| shape | pods | Joist nodes | Joist $/h | Joist s (cpu) | Karpenter placed | Karpenter nodes | Karpenter $/h | Karpenter s (cpu) | Karpenter ÷ Joist (cpu) |")
		fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	}
	for _, c := range cases {
		kc, err := loadCase(filepath.Join(dir, c.Name))
		if err != nil {
			return fmt.Errorf("case %s: %w", c.Name, err)
		}
		k := result{Wall: math.Inf(1), CPU: math.Inf(1)}
		j := result{Wall: math.Inf(1), CPU: math.Inf(1)}
		for i := 0; i < max(runs, 1); i++ {
			if joist != "" {
				jl, err := runJoist(joist, filepath.Join(dir, c.Name))
				if err != nil {
					return fmt.Errorf("case %s: joist: %w", c.Name, err)
				}
				j.Pods, j.Placed, j.Nodes, j.Price = jl.Pods, jl.Placed, jl.Nodes, jl.Price
				j.Wall, j.CPU = min(j.Wall, jl.Wall), min(j.CPU, jl.CPU)
				j.Runs++
			}
			r, err := kc.solve(timeout)
			if err != nil {
				return fmt.Errorf("case %s: karpenter: %w", c.Name, err)
			}
			k.Pods, k.Placed, k.Nodes, k.Price, k.TimedOut, k.FirstError = r.Pods, r.Placed, r.Nodes, r.Price, r.TimedOut, r.FirstError
			k.Wall, k.CPU = min(k.Wall, r.Wall), min(k.CPU, r.CPU)
			k.Runs++
			if time.Duration(r.Wall*float64(time.Second)) > slow && (joist == "" || j.Runs > 0) {
				break
			}
		}
		if k.Placed < k.Pods {
			fmt.Fprintf(os.Stderr, "%s: Karpenter left %d pods unplaced, one: %s\n", c.Name, k.Pods-k.Placed, r0(k.FirstError))
		}
		placed := strconv.Itoa(k.Placed)
		if k.TimedOut {
			placed += " (timed out)"
		}
		if joist == "" {
			fmt.Printf("| %s | %d | %s | %d | %.2f | %.4f | %.4f | %d |\n", c.Name, k.Pods, placed, k.Nodes, k.Price, k.Wall, k.CPU, k.Runs)
			continue
		}
		jPlaced := ""
		if j.Placed != j.Pods {
			jPlaced = fmt.Sprintf(" (%d placed)", j.Placed)
		}
		fmt.Printf("| %s | %d | %d%s | %.2f | %.4f (%.4f) | %s | %d | %.2f | %.3f (%.3f) | %s |\n",
			c.Shape, c.Pods, j.Nodes, jPlaced, j.Price, j.Wall, j.CPU, placed, k.Nodes, k.Price, k.Wall, k.CPU, ratio(k.CPU, j.CPU))
	}
	fmt.Printf("\nload average at end: %s\n", loadAvg())
	return nil
}

func r0(s string) string {
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}

func ratio(k, j float64) string {
	if j <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f×", k/j)
}

// runJoist solves a case once in a benchtable process.
func runJoist(bin, dir string) (joistLine, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, "-case", dir, "-runs", "1")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return joistLine{}, fmt.Errorf("%s -case %s: %w: %s", bin, dir, err, strings.TrimSpace(errb.String()))
	}
	var l joistLine
	if err := json.Unmarshal(out.Bytes(), &l); err != nil {
		return joistLine{}, fmt.Errorf("%s -case %s printed %q: %w", bin, dir, out.String(), err)
	}
	return l, nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// The dump's files (written by pkg/scheduling/internal/benchtable/dump.go).
type dumpWorkload struct {
	Region                 string                          `json:"region"`
	Pods                   []*corev1.Pod                   `json:"pods"`
	DaemonSets             []*appsv1.DaemonSet             `json:"daemonSets"`
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim `json:"persistentVolumeClaims"`
	PersistentVolumes      []*corev1.PersistentVolume      `json:"persistentVolumes"`
	StorageClasses         []*storagev1.StorageClass       `json:"storageClasses"`
}

type dumpType struct {
	Name        string              `json:"Name"`
	Labels      map[string]string   `json:"Labels"`
	Capacity    corev1.ResourceList `json:"Capacity"`
	Allocatable corev1.ResourceList `json:"Allocatable"`
	Offerings   []struct {
		Zone         string  `json:"Zone"`
		CapacityType string  `json:"CapacityType"`
		Price        float64 `json:"Price"`
		Unavailable  bool    `json:"Unavailable"`
	} `json:"Offerings"`
}

type dumpTypes struct {
	Default []dumpType            `json:"default"`
	Pools   map[string][]dumpType `json:"pools"`
}

// kcase is one case ready for Karpenter.
type kcase struct {
	ctx        context.Context
	kube       client.Client
	pods       []*corev1.Pod
	dsPods     []*corev1.Pod
	nodePools  []*v1.NodePool
	types      map[string][]*cloudprovider.InstanceType
	volumeReqs map[types.UID][]scheduling.Requirements
	opts       []ksched.Options
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func loadCase(dir string) (*kcase, error) {
	var wl dumpWorkload
	var dt dumpTypes
	if err := readJSON(filepath.Join(dir, "workload.json"), &wl); err != nil {
		return nil, err
	}
	if err := readJSON(filepath.Join(dir, "instancetypes.json"), &dt); err != nil {
		return nil, err
	}
	nodePools, err := readNodePools(filepath.Join(dir, "nodepools.yaml"))
	if err != nil {
		return nil, err
	}
	// As the provisioner does: templates are tried in weight order.
	nodepoolutils.OrderByWeight(nodePools)

	// The AWS provider makes its instance labels well known (its
	// apis/v1 init); do the same for every such label the types carry.
	var awsKeys []string
	seen := map[string]bool{}
	for _, list := range append([][]dumpType{dt.Default}, mapValues(dt.Pools)...) {
		for _, t := range list {
			for k := range t.Labels {
				if !seen[k] && !v1.WellKnownLabels.Has(k) {
					seen[k] = true
					awsKeys = append(awsKeys, k)
				}
			}
		}
	}
	sort.Strings(awsKeys)
	v1.WellKnownLabels.Insert(awsKeys...)

	conv := func(list []dumpType) ([]*cloudprovider.InstanceType, error) {
		out := make([]*cloudprovider.InstanceType, 0, len(list))
		for _, t := range list {
			it, err := instanceType(t, wl.Region, awsKeys)
			if err != nil {
				return nil, fmt.Errorf("%s: instance type %s: %w", filepath.Join(dir, "instancetypes.json"), t.Name, err)
			}
			out = append(out, it)
		}
		return out, nil
	}
	def, err := conv(dt.Default)
	if err != nil {
		return nil, err
	}
	its := map[string][]*cloudprovider.InstanceType{}
	for _, np := range nodePools {
		its[np.Name] = def
		if own, ok := dt.Pools[np.Name]; ok {
			if its[np.Name], err = conv(own); err != nil {
				return nil, err
			}
		}
	}

	opts := &options.Options{}
	fs := &options.FlagSet{FlagSet: flag.NewFlagSet("karpenter", flag.ContinueOnError)}
	opts.AddFlags(fs)
	if err := opts.Parse(fs); err != nil {
		return nil, fmt.Errorf("karpenter's default options: %w", err)
	}
	ctx := injection.WithControllerName(options.ToContext(context.Background(), opts), "provisioner")

	var objs []client.Object
	for _, o := range wl.PersistentVolumeClaims {
		objs = append(objs, o)
	}
	for _, o := range wl.PersistentVolumes {
		objs = append(objs, o)
	}
	for _, o := range wl.StorageClasses {
		objs = append(objs, o)
	}
	kube := clusterScoped{fakecr.NewClientBuilder().WithObjects(objs...).Build()}

	c := &kcase{ctx: ctx, kube: kube, pods: wl.Pods, nodePools: nodePools, types: its,
		volumeReqs: map[types.UID][]scheduling.Requirements{},
		opts: []ksched.Options{
			ksched.DisableReservedCapacityFallback,
			ksched.NumConcurrentReconciles(int(math.Ceil(float64(opts.CPURequests) / 1000.0))),
			ksched.MinValuesPolicy(opts.MinValuesPolicy),
		}}
	if opts.PreferencePolicy == options.PreferencePolicyIgnore {
		c.opts = append(c.opts, ksched.IgnorePreferences)
	}
	for _, ds := range wl.DaemonSets {
		c.dsPods = append(c.dsPods, daemonset.PodForDaemonSet(ds))
	}
	vt := ksched.NewVolumeTopology(kube)
	for _, p := range wl.Pods {
		reqs, err := vt.GetRequirements(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: volume requirements: %w", p.Namespace, p.Name, err)
		}
		if len(reqs) > 0 {
			c.volumeReqs[p.UID] = reqs
		}
	}
	return c, nil
}

// clusterScoped reads cluster-scoped objects without a namespace, as the
// API server does: Karpenter gets a pod's PersistentVolume with the pod's
// namespace in the key, and the fake client, knowing no scopes, would look
// for it there.
type clusterScoped struct{ client.Client }

func (c clusterScoped) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	switch obj.(type) {
	case *corev1.PersistentVolume, *storagev1.StorageClass, *corev1.Node, *corev1.Namespace:
		key.Namespace = ""
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func mapValues(m map[string][]dumpType) [][]dumpType {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]dumpType, 0, len(m))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

func readNodePools(path string) ([]*v1.NodePool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*v1.NodePool
	for i, doc := range strings.Split(string(b), "\n---\n") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---")
		if strings.TrimSpace(doc) == "" {
			continue
		}
		np := &v1.NodePool{}
		if err := yaml.UnmarshalStrict([]byte(doc), np); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		np.UID = types.UID("nodepool-" + np.Name)
		out = append(out, np)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no NodePool", path)
	}
	return out, nil
}

// instanceType builds what the AWS provider would: requirements from the
// type's labels, its offerings' zones and capacity types and the region
// (and DoesNotExist for the AWS labels it lacks), the capacity, and as
// overhead what separates capacity from Joist's allocatable.
func instanceType(t dumpType, region string, awsKeys []string) (*cloudprovider.InstanceType, error) {
	reqs := scheduling.NewRequirements()
	for k, v := range t.Labels {
		reqs.Add(scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, v))
	}
	for _, k := range awsKeys {
		if !reqs.Has(k) {
			reqs.Add(scheduling.NewRequirement(k, corev1.NodeSelectorOpDoesNotExist))
		}
	}
	var zones, capacityTypes []string
	offerings := make(cloudprovider.Offerings, 0, len(t.Offerings))
	for _, o := range t.Offerings {
		zones = append(zones, o.Zone)
		capacityTypes = append(capacityTypes, o.CapacityType)
		offerings = append(offerings, &cloudprovider.Offering{
			Requirements: scheduling.NewLabelRequirements(map[string]string{
				v1.CapacityTypeLabelKey:  o.CapacityType,
				corev1.LabelTopologyZone: o.Zone,
			}),
			Price:     o.Price,
			Available: !o.Unavailable,
		})
	}
	if len(offerings) == 0 {
		return nil, errors.New("no offerings")
	}
	reqs.Add(scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...))
	reqs.Add(scheduling.NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityTypes...))
	reqs.Add(scheduling.NewRequirement(corev1.LabelTopologyRegion, corev1.NodeSelectorOpIn, region))
	if !reqs.Has(corev1.LabelInstanceTypeStable) {
		reqs.Add(scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, t.Name))
	}
	overhead := corev1.ResourceList{}
	for name, c := range t.Capacity {
		a, ok := t.Allocatable[name]
		if !ok {
			a = resource.Quantity{}
		}
		d := c.DeepCopy()
		d.Sub(a)
		if d.Sign() > 0 {
			overhead[name] = d
		}
	}
	return &cloudprovider.InstanceType{
		Name: t.Name, Requirements: reqs, Offerings: offerings, Capacity: t.Capacity,
		Overhead: &cloudprovider.InstanceTypeOverhead{KubeReserved: overhead},
	}, nil
}

// solve runs Karpenter's scheduler once on fresh copies of the pods.
func (c *kcase) solve(timeout time.Duration) (result, error) {
	pods := make([]*corev1.Pod, len(c.pods))
	for i, p := range c.pods {
		pods[i] = p.DeepCopy() // Solve relaxes preferences in place
	}
	clk := clock.RealClock{}
	cluster := state.NewCluster(clk, c.kube, fake.NewCloudProvider())
	recorder := events.NewRecorder(&record.FakeRecorder{})
	runtime.GC()
	c0 := cpuTime()
	start := time.Now()
	topology, err := ksched.NewTopology(c.ctx, c.kube, cluster, nil, c.nodePools, c.types, pods, c.opts...)
	if err != nil {
		return result{}, fmt.Errorf("topology: %w", err)
	}
	s := ksched.NewScheduler(c.ctx, c.kube, c.nodePools, cluster, nil, topology, c.types, c.dsPods, recorder, clk, c.volumeReqs, nil, c.opts...)
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	res, err := s.Solve(ctx, pods)
	wall := time.Since(start)
	cpu := cpuTime() - c0
	timedOut := errors.Is(err, context.DeadlineExceeded)
	if err != nil && !timedOut {
		return result{}, fmt.Errorf("solve: %w", err)
	}
	r := result{Pods: len(pods), Nodes: len(res.NewNodeClaims), Wall: wall.Seconds(), CPU: cpu.Seconds(), TimedOut: timedOut}
	for p, err := range res.PodErrors {
		r.FirstError = fmt.Sprintf("%s/%s: %v", p.Namespace, p.Name, err)
		break
	}
	for _, nc := range res.NewNodeClaims {
		r.Placed += len(nc.Pods)
		r.Price += cheapest(nc)
	}
	return r, nil
}

// cheapest is a NodeClaim's price as Joist prices its nodes: the cheapest
// available offering, among its instance type options, that its
// requirements (zone, capacity type) allow.
func cheapest(nc *ksched.NodeClaim) float64 {
	best := math.Inf(1)
	for _, it := range nc.InstanceTypeOptions {
		if ofs := it.Offerings.Available().Compatible(nc.Requirements); len(ofs) > 0 {
			best = min(best, ofs.Cheapest().Price)
		}
	}
	if math.IsInf(best, 1) {
		return 0
	}
	return best
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
