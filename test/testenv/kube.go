package testenv

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// KubeEnv is a running kube-apiserver with etcd.
type KubeEnv struct {
	Config *rest.Config
	Client kubernetes.Interface
	// Kubeconfig is a file for a system:masters user, for programs run
	// beside the test (functions, kube-scheduler, the forwarder).
	Kubeconfig string
	// AuditLog is the API server's audit log (JSON lines) of the requests
	// Joist's identities made (see rbacAuditPolicy).
	AuditLog string
	// EtcdURL is etcd's client address (the API server stores under
	// /registry): the scale benchmark writes bulk objects there directly.
	EtcdURL string
	env     *envtest.Environment
	dir     string

	idMu       sync.Mutex
	identities map[string]string // user → kubeconfig path
}

var (
	kubeOnce sync.Once
	kubeEnv  *KubeEnv
	kubeErr  error
	stops    []func()
	stopsMu  sync.Mutex
)

func onStop(f func()) {
	stopsMu.Lock()
	defer stopsMu.Unlock()
	stops = append(stops, f)
}

// Stop stops everything started so far (for programs that are not tests;
// tests use Main).
func Stop() {
	stopsMu.Lock()
	defer stopsMu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	stops = nil
}

// Main runs a package's tests and then stops whatever the tests started.
// Call it from TestMain in every package that uses this one:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// afterAll run, before anything stops, when every test of the package ran
// (no -run, -skip or -short) and passed: checks over the whole run, such
// as the unused-permission checks. Their errors fail the run.
func Main(m *testing.M, afterAll ...func() error) {
	code := m.Run()
	if code == 0 && wholeRun() {
		for _, check := range afterAll {
			if err := check(); err != nil {
				fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
				code = 1
			}
		}
	}
	Stop()
	os.Exit(code)
}

func wholeRun() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
}

var (
	freshMu sync.Mutex
	fresh   = map[string]int{}
)

// Fresh returns base the first time the test process asks for it and
// base-2, base-3, ... after: the names of the namespaces, nodes and leases
// a test creates on the package's one API server. A test run again in the
// same process (go test -count=N, to look for flakes) then does not meet
// its last run's objects: namespaces in particular stay (envtest runs no
// namespace controller, so a deleted one stays Terminating).
func Fresh(base string) string {
	freshMu.Lock()
	defer freshMu.Unlock()
	fresh[base]++
	if n := fresh[base]; n > 1 {
		return fmt.Sprintf("%s-%d", base, n)
	}
	return base
}

// RemoveNode removes a node a test made, its finalizers dropped first (no
// controller here would finish a Joist or Karpenter node's termination),
// so that later tests and a test run again (go test -count=N) do not meet
// it. A node already gone is fine.
func RemoveNode(ctx context.Context, c kubernetes.Interface, name string) error {
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read node %s: %w", name, err)
	}
	if len(n.Finalizers) > 0 {
		n.Finalizers = nil
		if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("drop the finalizers of node %s: %w", name, err)
		}
	}
	if err := c.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	return nil
}

// RemoveNamespace removes a namespace a test made, with its pods, as the
// namespace controller (which envtest does not run) would once it emptied
// it: the pods go at once (their finalizers dropped, and no kubelet to
// end them gracefully), then the namespace is deleted and its finalizer
// dropped. Without it, namespaces of earlier runs pile up on the
// package's API server (and a deleted one stays terminating, its name
// taken). Other objects in it are the caller's to remove first.
func RemoveNamespace(ctx context.Context, c kubernetes.Interface, name string) error {
	pods, err := c.CoreV1().Pods(name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the pods of namespace %s: %w", name, err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; len(p.Finalizers) > 0 {
			p.Finalizers = nil
			if _, err := c.CoreV1().Pods(name).Update(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("drop the finalizers of pod %s/%s: %w", name, p.Name, err)
			}
		}
	}
	zero := int64(0)
	if err := c.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("remove the pods of namespace %s: %w", name, err)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read namespace %s: %w", name, err)
	}
	ns.Spec.Finalizers = nil
	if _, err := c.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalize namespace %s: %w", name, err)
	}
	return nil
}

// SharedKube is the package's API server if a test started it, else nil.
func SharedKube() *KubeEnv { return kubeEnv }

// Kube returns the package's shared API server, starting it on first use.
// CRDs under config/crds are installed when that folder exists.
func Kube(tb testing.TB) *KubeEnv {
	tb.Helper()
	apiserver := Tool(tb, "kube-apiserver")
	etcd := Tool(tb, "etcd")
	kubeOnce.Do(func() { kubeEnv, kubeErr = StartKube(apiserver, etcd) })
	if kubeErr != nil {
		tb.Fatalf("start kube-apiserver: %v", kubeErr)
	}
	return kubeEnv
}

// StartKube starts etcd and kube-apiserver from the given programs. They
// are stopped by Main, or by Stop for programs that are not tests.
func StartKube(apiserver, etcd string) (*KubeEnv, error) {
	dir, err := os.MkdirTemp("", "joist-kube-")
	if err != nil {
		return nil, err
	}
	onStop(func() { _ = os.RemoveAll(dir) })
	policy, audit := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(rbacAuditPolicy), 0o600); err != nil {
		return nil, err
	}
	// A cold, busy machine starts etcd and kube-apiserver slowly: wait for
	// them generously (envtest's default is 20 s each); a fast one is not
	// slowed, the wait ends when they answer.
	env := &envtest.Environment{ErrorIfCRDPathMissing: false, ControlPlaneStartTimeout: StartTimeout, ControlPlaneStopTimeout: time.Minute}
	api := env.ControlPlane.GetAPIServer()
	api.Path = apiserver
	// RBAC is envtest's default authorizer; the audit log records what
	// Joist's identities asked for, for the unused-rule check.
	api.Configure().Set("audit-policy-file", policy).Set("audit-log-path", audit).Set("audit-log-format", "json")
	env.ControlPlane.Etcd = &envtest.Etcd{Path: etcd}
	if crds := filepath.Join(RepoRoot(), "config", "crds"); dirExists(crds) {
		env.CRDDirectoryPaths = []string{crds}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start etcd and kube-apiserver (waited up to %s for them to answer): %w", StartTimeout, err)
	}
	onStop(func() { _ = env.Stop() })
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "joist-test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("add admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &KubeEnv{Config: cfg, Client: client, Kubeconfig: path, AuditLog: audit, EtcdURL: env.ControlPlane.Etcd.URL.String(), env: env, dir: dir, identities: map[string]string{}}, nil
}

// Identity returns a kubeconfig file for a user in groups (a client
// certificate, as EKS maps an IAM role to a user and groups): RBAC
// decides what it may do. One file per user, made on first use.
func (k *KubeEnv) Identity(user string, groups ...string) (string, error) {
	k.idMu.Lock()
	defer k.idMu.Unlock()
	if p, ok := k.identities[user]; ok {
		return p, nil
	}
	u, err := k.env.ControlPlane.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		return "", fmt.Errorf("add user %s: %w", user, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("kubeconfig of %s: %w", user, err)
	}
	p := filepath.Join(k.dir, "kubeconfig-"+strings.NewReplacer(":", "-", "/", "-").Replace(user))
	if err := os.WriteFile(p, kc, 0o600); err != nil {
		return "", err
	}
	k.identities[user] = p
	return p, nil
}

// IdentityConfig is Identity as a client config.
func (k *KubeEnv) IdentityConfig(user string, groups ...string) (*rest.Config, error) {
	p, err := k.Identity(user, groups...)
	if err != nil {
		return nil, err
	}
	return clientcmd.BuildConfigFromFlags("", p)
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// RoundTripFunc is an http.RoundTripper made of a function: tests wrap a
// client's transport with it (rest.Config.Wrap) to see or alter the
// requests a client sends to the API server.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
