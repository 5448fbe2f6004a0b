package scale

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/specs"
	"github.com/joist-dev/joist/pkg/specstore"
	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Measured is one pass's cost.
type Measured struct {
	Size        Size
	FillSeconds float64
	Pass        passReport
	PeakRSS     int64 // bytes
	Requests    int64 // answered by the API server during the pass
	Bytes       int64 // response bytes the API server sent during the pass
}

type passReport struct {
	WallSeconds   float64 `json:"wallSeconds"`
	PeakHeapBytes uint64  `json:"peakHeapBytes"`
	AllocBytes    uint64  `json:"allocBytes"`
	Pending       int     `json:"pending"`
	Launched      int     `json:"launched"`
	Nominated     int     `json:"nominated"`
	Unschedulable int     `json:"unschedulable"`
	Retired       int     `json:"retired"`
	PeakRSSBytes  int64   `json:"peakRSSBytes"`
	Error         string  `json:"error,omitempty"`
	// CPUSeconds is the pass process's user and system time (rusage):
	// unlike wall time, not inflated by a busy machine.
	CPUSeconds float64 `json:"-"`
}

// world is a filled cluster ready for a pass.
type world struct {
	kube  *testenv.KubeEnv
	admin kubernetes.Interface
	sim   *ec2sim.Sim
	ec2   string
	nodes []string
	// bin is the pass's program (default: built from this tree).
	bin string
}

func fill(t testing.TB, s Size) (*world, float64) {
	t.Helper()
	ctx := context.Background()
	kube := testenv.Kube(t)
	region := "ap-northeast-2"
	opts := ec2sim.Options{Region: region, Zones: []string{region + "a", region + "b", region + "c", region + "d"}, InstanceTypes: testenv.CatalogInstanceTypes(region)}
	// JOIST_SCALE_FLEET_LATENCY (a Go duration, e.g. 1s) makes every
	// CreateFleet take that long, as an instant fleet on AWS does: the
	// launching pass's row then shows what its launches cost.
	if v := os.Getenv("JOIST_SCALE_FLEET_LATENCY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("JOIST_SCALE_FLEET_LATENCY=%q: %v", v, err)
		}
		opts.CallLatency = map[string]time.Duration{"CreateFleet": d}
	}
	sim, srv := ec2sim.NewServer(opts)
	t.Cleanup(srv.Close)
	sim.SeedDefault(Cluster)
	ami := sim.AddImage(ec2sim.ImageSpec{Name: "bench-al2023-x86_64", Architecture: "x86_64"})
	applySpecs(t, kube, Specs(ami))
	cfg := *kube.Config
	cfg.QPS, cfg.Burst = 5000, 5000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	admin, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	g := &Generator{Kube: admin, EC2: sim, Etcd: kube.EtcdURL}
	if os.Getenv("JOIST_SCALE_FILL") == "api" { // every object through the API server
		g.Etcd = ""
	}
	nodes, err := g.Fill(ctx, s)
	if err != nil {
		t.Fatalf("fill %v: %v", s, err)
	}
	// The API server's (consistent) list sees every object written.
	for _, c := range []struct {
		what string
		n    int
		list func() (metav1.ListInterface, error)
	}{
		{"nodes", s.Nodes, func() (metav1.ListInterface, error) {
			return admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
		}},
		{"pods", s.Pods + s.Pending, func() (metav1.ListInterface, error) {
			return admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
		}},
	} {
		l, err := c.list()
		if err != nil {
			t.Fatalf("list %s: %v", c.what, err)
		}
		got := 1
		if r := l.GetRemainingItemCount(); r != nil {
			got += int(*r)
		}
		if got != c.n {
			t.Fatalf("the API server lists %d %s, want %d", got, c.what, c.n)
		}
	}
	filled := time.Since(start).Seconds()
	// The API server answers consistent lists from its watch cache once
	// the cache has caught up with etcd (else, after 3 s, from etcd: a
	// pending-pods list then decodes every pod). A busy API server's cache
	// is up to date (EKS's is); wait until the pending-pods list is quick.
	for deadline := time.Now().Add(10 * time.Minute); ; {
		t0 := time.Now()
		_, err := admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=,status.phase=Pending", Limit: 500})
		if err == nil && time.Since(t0) < 2*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server's pending-pods list still takes %s (%v)", time.Since(t0), err)
		}
	}
	return &world{kube: kube, admin: admin, sim: sim, ec2: srv.URL, nodes: nodes}, filled
}

func applySpecs(t testing.TB, kube *testenv.KubeEnv, manifests string) {
	t.Helper()
	objs, err := specs.Decode([]byte(manifests), "bench specs")
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		for _, r := range specstore.Resources {
			if r.Kind != o.Kind {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(o.Raw); err != nil {
				t.Fatalf("%s: %v", o, err)
			}
			if _, err := dyn.Resource(r.GVR).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s: %v", o, err)
			}
		}
	}
}

// passBinary builds test/scale/pass.
func passBinary(t testing.TB) string { return build(t, "pass", "./test/scale/pass") }

// build builds a command of the module into build/scale.
func build(t testing.TB, name, pkg string) string {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(), "build", "scale")
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the pass: %v\n%s", err, out)
	}
	return bin
}

// apiTotals are sums over the API server's metrics (/metrics).
type apiTotals struct {
	requests int64 // apiserver_request_total, every verb and resource
	bytes    int64 // apiserver_response_sizes_sum: response bytes
	// lists answered from the watch cache and from etcd
	// (apiserver_storage_list_total by its storage label), and
	// consistent reads the cache could not answer in time, handed to etcd
	// (apiserver_watch_cache_consistent_read_total{fallback="true"}).
	cacheLists, etcdLists, fallbacks int64
	// cpu is the API server's own CPU time (process_cpu_seconds_total):
	// it shares the machine's cores with the pass, and encoding and
	// gzipping the pages is part of what a read costs.
	cpu float64
}

func (a apiTotals) minus(b apiTotals) apiTotals {
	return apiTotals{a.requests - b.requests, a.bytes - b.bytes, a.cacheLists - b.cacheLists, a.etcdLists - b.etcdLists, a.fallbacks - b.fallbacks, a.cpu - b.cpu}
}

func apiServerTotals(ctx context.Context, c kubernetes.Interface) (apiTotals, error) {
	var t apiTotals
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return t, fmt.Errorf("read the API server's metrics: %w", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "process_cpu_seconds_total "):
			v, err := strconv.ParseFloat(strings.TrimPrefix(line, "process_cpu_seconds_total "), 64)
			if err != nil {
				return t, fmt.Errorf("metrics line %q: %w", line, err)
			}
			t.cpu = v
			continue
		case strings.HasPrefix(line, "apiserver_request_total{"):
			dst = &t.requests
		case strings.HasPrefix(line, "apiserver_response_sizes_sum{"):
			dst = &t.bytes
		case strings.HasPrefix(line, "apiserver_storage_list_total{") && strings.Contains(line, `storage="watchcache"`):
			dst = &t.cacheLists
		case strings.HasPrefix(line, "apiserver_storage_list_total{") && strings.Contains(line, `storage="etcd"`):
			dst = &t.etcdLists
		case strings.HasPrefix(line, "apiserver_watch_cache_consistent_read_total{") && strings.Contains(line, `fallback="true"`):
			dst = &t.fallbacks
		default:
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return t, fmt.Errorf("metrics line %q: %w", line, err)
		}
		*dst += int64(v)
	}
	return t, sc.Err()
}

// pass runs one provisioner pass as its own process, as the provisioner
// function is configured (512 MB).
func (w *world) pass(t testing.TB, env ...string) (passReport, int64, apiTotals) {
	t.Helper()
	ctx := context.Background()
	bin := w.bin
	if bin == "" {
		bin = passBinary(t)
	}
	before, err := apiServerTotals(ctx, w.admin)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"CLUSTER_NAME=" + Cluster, "AWS_REGION=ap-northeast-2", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_ENDPOINT_URL=http://127.0.0.1:9", "AWS_ENDPOINT_URL_EC2=" + w.ec2,
		"JOIST_KUBECONFIG=" + w.kube.Kubeconfig, "JOIST_ZONES=ap-northeast-2a,ap-northeast-2b,ap-northeast-2c,ap-northeast-2d",
		"KUBERNETES_VERSION=1.32", "CLUSTER_ENDPOINT=" + w.kube.Config.Host, "CLUSTER_CA=LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
		"CLUSTER_SERVICE_CIDR=172.20.0.0/16", "CLUSTER_DNS_IP=172.20.0.10", "SPEC_SOURCE=crd",
		"DEFAULT_INSTANCE_PROFILE=KarpenterNodeInstanceProfile-" + Cluster, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"LOG_LEVEL=warn",
	}
	cmd.Env = append(cmd.Env, env...)
	for _, k := range []string{"JOIST_PASS_PROFILE", "GODEBUG", "GOGC", "JOIST_KUBE_COMPRESSION", "JOIST_SCALE_POD_PAGE_SIZE"} {
		if v := os.Getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	after, err := apiServerTotals(ctx, w.admin)
	if err != nil {
		t.Fatal(err)
	}
	var rep passReport
	found := false
	for _, line := range strings.Split(out.String(), "\n") {
		if j, ok := strings.CutPrefix(line, "JOIST-PASS "); ok {
			found = json.Unmarshal([]byte(j), &rep) == nil
		}
	}
	api := after.minus(before)
	// Less the first metrics read, counted once it was answered (the
	// second is not in the totals it returns; response sizes count
	// resource requests only).
	api.requests--
	if runErr != nil || !found || rep.Error != "" {
		t.Fatalf("pass failed: %v %s (API server: %+v)\n%s", runErr, rep.Error, api, out.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	rep.CPUSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	// The pass's own VmHWM: rusage's maxrss of a child starts from the
	// parent's RSS at fork.
	return rep, rep.PeakRSSBytes, api
}

// TestScalePass is the benchmark's correctness check on a small cluster:
// 4 full nodes with room for one burst pod each and 10 burst pods. One
// pass must nominate every pending pod, 4 onto the existing nodes (seen
// only by reading their bound pods, reduced, whole) and the other 6 onto
// 3 new nodes. The pass reads the pods 5 a page, so that, as a large
// cluster's reads are, its reads of more than a page are split by
// namespace (kube.EachPod).
func TestScalePass(t *testing.T) {
	s := Size{Nodes: 4, Pods: 4*2 + 40, Pending: 10}
	w, _ := fill(t, s)
	rep, rss, api := w.pass(t, "JOIST_SCALE_POD_PAGE_SIZE=5")
	reqs, bytes := api.requests, api.bytes
	t.Logf("%v: pass %.2fs, peak heap %.1f MB, peak RSS %.1f MB, %d requests, %.2f MB read, lists from cache %d, from etcd %d, consistent-read fallbacks %d",
		s, rep.WallSeconds, mb(rep.PeakHeapBytes), mb(uint64(rss)), reqs, mb(uint64(bytes)), api.cacheLists, api.etcdLists, api.fallbacks)
	if rep.Pending != s.Pending || rep.Nominated != s.Pending || rep.Unschedulable != 0 {
		t.Fatalf("pass: %+v; want all %d pending pods nominated", rep, s.Pending)
	}
	if rep.Launched != 3 {
		t.Errorf("launched %d instances, want 3 (4 of 10 burst pods fit beside the bound pods of the 4 nodes, 2 per new node)", rep.Launched)
	}
	existing := map[string]bool{}
	for _, i := range w.sim.Instances() {
		if i.LaunchTemplateID == "" { // added by the generator, not launched
			existing[i.ID] = true
		}
	}
	onExisting := map[string]int{}
	for i := 0; i < s.Pending; i++ {
		p, err := w.admin.CoreV1().Pods("app-0").Get(context.Background(), PendingName(i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		id := pods.PlannedInstance(p)
		if id == "" {
			t.Fatalf("pod %s not nominated", p.Name)
		}
		if existing[id] {
			onExisting[id]++
		}
	}
	if len(onExisting) != 4 {
		t.Errorf("burst pods on existing nodes: %v; want one on each of the 4 nodes", onExisting)
	}
	for id, n := range onExisting {
		if n != 1 {
			t.Errorf("instance %s got %d burst pods, has room for 1", id, n)
		}
	}
	// 48 bound pods and 10 pending, 5 a page: more than 15 lists (one a
	// read when the whole read fits in a page).
	if reqs < 30 || bytes <= 0 || rss <= 0 || rep.PeakHeapBytes == 0 || api.cacheLists+api.etcdLists < 15 {
		t.Errorf("measurements missing, or the pods not read 5 a page: requests %d, lists %d, bytes %d, rss %d, heap %d",
			reqs, api.cacheLists+api.etcdLists, bytes, rss, rep.PeakHeapBytes)
	}
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// BenchmarkScalePass fills the cluster JOIST_SCALE names
// (nodes,pods,pending; default 500,10000,20) and runs one pass: `make
// bench-scale` runs it once per size, each in a fresh API server.
func BenchmarkScalePass(b *testing.B) {
	s := Size{Nodes: 500, Pods: 10000, Pending: 20}
	if v := os.Getenv("JOIST_SCALE"); v != "" {
		if _, err := fmt.Sscanf(v, "%d,%d,%d", &s.Nodes, &s.Pods, &s.Pending); err != nil {
			b.Fatalf("JOIST_SCALE=%q: want nodes,pods,pending: %v", v, err)
		}
	}
	// JOIST_SCALE_PASSES names the rows to run (provisioner, reaper,
	// forwarder; default all): a change to one pass is measured without
	// waiting for the others.
	run := map[string]bool{"provisioner": true, "reaper": true, "forwarder": true}
	if v := os.Getenv("JOIST_SCALE_PASSES"); v != "" {
		run = map[string]bool{}
		for _, p := range strings.Split(v, ",") {
			run[strings.TrimSpace(p)] = true
		}
	}
	w, fillSeconds := fill(b, s)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if run["serve"] {
			// What the API server alone costs the bound-pod read, pages
			// read and not decoded (world.serve).
			for _, r := range []serveRead{
				{name: "gzip-500", gzip: true, limit: 500},
				{name: "plain-500", limit: 500},
				{name: "gzip-2000", gzip: true, limit: 2000},
				{name: "gzip-500-ns2", gzip: true, limit: 500, streams: 2},
				{name: "gzip-500-ns4", gzip: true, limit: 500, streams: 4},
			} {
				profile := ""
				if r.name == "gzip-500" {
					profile = os.Getenv("JOIST_SCALE_SERVE_PROFILE")
				}
				wall, api, read := w.serve(b, r, profile)
				fmt.Printf("| %d | %d | %d | serve %s | %.2f | | %.2f | | | | %.1f | %d | %d/%d/%d | | | |\n",
					s.Nodes, s.Pods, s.Pending, r.name, wall, api.cpu, mb(uint64(read)), api.requests, api.cacheLists, api.etcdLists, api.fallbacks)
			}
		}
		// The first passes plan the pending pods (their nominations are
		// taken back after each, so the next plans them again), with the
		// API server's responses gzip'd and not; the last finds them
		// planned onto live instances, the pass most events cause.
		// JOIST_SCALE_PASS_BINS (name=path,...) runs the passes of each
		// program in turn on the same cluster: builds of two commits
		// compared at one load.
		bins := []struct{ name, path string }{{"", ""}}
		if v := os.Getenv("JOIST_SCALE_PASS_BINS"); v != "" {
			bins = nil
			for _, nb := range strings.Split(v, ",") {
				name, path, _ := strings.Cut(nb, "=")
				bins = append(bins, struct{ name, path string }{name + ": ", path})
			}
		}
		for k, bin := range bins {
			w.bin = bin.path
			if k > 0 && run["provisioner"] {
				w.unplan(b, s.Pending) // planned by the program before
			}
			for _, p := range []struct{ kind, env string }{
				{"plans the pending pods, uncompressed", "JOIST_KUBE_COMPRESSION=off"},
				{"plans the pending pods", "JOIST_KUBE_COMPRESSION=on"},
				{"nothing to plan", "JOIST_KUBE_COMPRESSION=on"},
			} {
				if !run["provisioner"] {
					break
				}
				rep, rss, api := w.pass(b, p.env)
				fmt.Printf("| %d | %d | %d | %s%s | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f | %.1f | %d | %d/%d/%d | %d | %d | fill %.0fs |\n",
					s.Nodes, s.Pods, s.Pending, bin.name, p.kind, rep.WallSeconds, rep.CPUSeconds, api.cpu, mb(rep.PeakHeapBytes), mb(uint64(rss)), mb(rep.AllocBytes), mb(uint64(api.bytes)),
					api.requests, api.cacheLists, api.etcdLists, api.fallbacks, rep.Launched, rep.Nominated, fillSeconds)
				if p.kind == "plans the pending pods, uncompressed" {
					w.unplan(b, s.Pending)
				}
			}
			if run["reaper"] {
				rep, rss, api := w.pass(b, "JOIST_PASS_FUNCTION=reaper")
				fmt.Printf("| %d | %d | %d | %sreaper (disruption pass) | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f | %.1f | %d | %d/%d/%d | retired %d | | |\n",
					s.Nodes, s.Pods, s.Pending, bin.name, rep.WallSeconds, rep.CPUSeconds, api.cpu, mb(rep.PeakHeapBytes), mb(uint64(rss)), mb(rep.AllocBytes), mb(uint64(api.bytes)),
					api.requests, api.cacheLists, api.etcdLists, api.fallbacks, rep.Retired)
			}
		}
		if run["forwarder"] {
			sync, peak, now := w.forwarder(b)
			fmt.Printf("| %d | %d | %d | forwarder: informers synced | %.2f | | | | %.0f (now %.0f) | | | | | | | |\n",
				s.Nodes, s.Pods, s.Pending, sync, mb(uint64(peak)), mb(uint64(now)))
		}
	}
}

// forwarder starts the forwarder (cmd/forwarder) on the cluster and
// measures how long its informers take to sync, its peak RSS by then and
// its RSS once synced. Its EventBridge is unreachable (the puts fail and
// are retried; memory is what is measured).
func (w *world) forwarder(t testing.TB) (syncSeconds float64, peakRSS, rss int64) {
	t.Helper()
	bin := build(t, "forwarder", "./cmd/forwarder")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "KUBECONFIG=" + w.kube.Kubeconfig,
		"CLUSTER_NAME=" + Cluster, "EVENT_BUS_NAME=bench", "AWS_REGION=ap-northeast-2", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_ENDPOINT_URL=http://127.0.0.1:9", "JOIST_HEALTH_ADDR=" + addr}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	ready := func(ctx context.Context) (bool, error) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, nil // not listening yet
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Minute, true, ready); err != nil {
		t.Fatalf("forwarder not ready after %s: %v\n%s", time.Since(start), err, out.String())
	}
	syncSeconds = time.Since(start).Seconds()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "VmHWM:":
				peakRSS = v * 1024
			case "VmRSS:":
				rss = v * 1024
			}
		}
	}
	return syncSeconds, peakRSS, rss
}

// unplan takes the pending pods' nominations back, so the next pass
// plans them again.
func (w *world) unplan(t testing.TB, n int) {
	t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"` + pods.AnnotationInstance + `":null,"` + pods.AnnotationNominatedAt + `":null}}}`)
	for i := 0; i < n; i++ {
		if _, err := w.admin.CoreV1().Pods("app-0").Patch(context.Background(), PendingName(i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("unplan %s: %v", PendingName(i), err)
		}
	}
}
