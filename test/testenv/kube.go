package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// KubeEnv is a running kube-apiserver with etcd.
type KubeEnv struct {
	Config *rest.Config
	Client kubernetes.Interface
	// Kubeconfig is a file for a system:masters user, for programs run
	// beside the test (functions, kube-scheduler, the forwarder).
	Kubeconfig string
	env        *envtest.Environment
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
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

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
	env := &envtest.Environment{ErrorIfCRDPathMissing: false}
	env.ControlPlane.GetAPIServer().Path = apiserver
	env.ControlPlane.Etcd = &envtest.Etcd{Path: etcd}
	if crds := filepath.Join(RepoRoot(), "config", "crds"); dirExists(crds) {
		env.CRDDirectoryPaths = []string{crds}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, err
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
	dir, err := os.MkdirTemp("", "joist-kube-")
	if err != nil {
		return nil, err
	}
	onStop(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &KubeEnv{Config: cfg, Client: client, Kubeconfig: path, env: env}, nil
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
