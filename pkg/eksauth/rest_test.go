package eksauth

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// apiServer is a TLS server that answers /version like kube-apiserver and
// records the Authorization header of each request. Tokens listed in
// refuse get 401.
type apiServer struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []string
	refuse map[string]bool
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{refuse: map[string]bool{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		s.mu.Lock()
		s.seen = append(s.seen, auth)
		refused := s.refuse[auth]
		s.mu.Unlock()
		if refused {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// caData is the server's certificate as DescribeCluster would report the
// cluster CA: base64 of PEM.
func (s *apiServer) caData() string {
	p := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return base64.StdEncoding.EncodeToString(p)
}

func (s *apiServer) lastAuth(t *testing.T) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		t.Fatal("server saw no request")
	}
	return s.seen[len(s.seen)-1]
}

func serverVersion(t *testing.T, cfg *rest.Config) error {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("NewForConfig: %v", err)
	}
	_, err = cs.Discovery().ServerVersion()
	return err
}

func TestRESTConfigSendsEKSTokenAndRefreshesItBeforeExpiry(t *testing.T) {
	srv := newAPIServer(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	cfg, err := RESTConfig(context.Background(), Options{
		Cluster:  "prod",
		Endpoint: srv.URL,
		CA:       srv.caData(),
		AWS:      rotatingConfig(),
		Clock:    clk,
	})
	if err != nil {
		t.Fatalf("RESTConfig: %v", err)
	}

	if err := serverVersion(t, cfg); err != nil {
		t.Fatalf("first request (TLS verified against the CA): %v", err)
	}
	first := srv.lastAuth(t)
	if !strings.HasPrefix(first, "Bearer "+TokenPrefix) {
		t.Fatalf("Authorization = %q, want an EKS bearer token", first)
	}

	clk.Step(10 * time.Minute)
	if err := serverVersion(t, cfg); err != nil {
		t.Fatal(err)
	}
	if got := srv.lastAuth(t); got != first {
		t.Error("token changed before it was due for refresh")
	}

	clk.Step(5 * time.Minute)
	if err := serverVersion(t, cfg); err != nil {
		t.Fatal(err)
	}
	if got := srv.lastAuth(t); got == first || !strings.HasPrefix(got, "Bearer "+TokenPrefix) {
		t.Errorf("15 minutes on, Authorization = %q, want a new EKS token", got)
	}
}

func TestRESTConfigSignsANewTokenAfterA401(t *testing.T) {
	srv := newAPIServer(t)
	cfg, err := RESTConfig(context.Background(), Options{
		Cluster: "prod", Endpoint: srv.URL, CA: srv.caData(), AWS: rotatingConfig(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := serverVersion(t, cfg); err != nil {
		t.Fatal(err)
	}
	revoked := srv.lastAuth(t)
	srv.mu.Lock()
	srv.refuse[revoked] = true
	srv.mu.Unlock()

	if err := serverVersion(t, cfg); err == nil {
		t.Fatal("request with the refused token succeeded")
	}
	if err := serverVersion(t, cfg); err != nil {
		t.Fatalf("request after the 401: %v", err)
	}
	if got := srv.lastAuth(t); got == revoked {
		t.Error("the refused token was presented again")
	}
}

func TestRESTConfigRejectsIncompleteOptions(t *testing.T) {
	srv := newAPIServer(t)
	good := Options{Cluster: "prod", Endpoint: srv.URL, CA: srv.caData(), AWS: staticConfig("us-east-1", "")}
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{name: "no cluster", mutate: func(o *Options) { o.Cluster = "" }, wantErr: "cluster name"},
		{name: "no endpoint", mutate: func(o *Options) { o.Endpoint = "" }, wantErr: "endpoint"},
		{name: "no CA", mutate: func(o *Options) { o.CA = "" }, wantErr: "missing"},
		{name: "CA not base64", mutate: func(o *Options) { o.CA = "%%%" }, wantErr: "not base64"},
		{name: "CA without a certificate", mutate: func(o *Options) { o.CA = base64.StdEncoding.EncodeToString([]byte("hello")) }, wantErr: "no PEM certificate"},
		{name: "no region to sign with", mutate: func(o *Options) { o.AWS.Region = "" }, wantErr: "region"},
		{name: "unreadable kubeconfig", mutate: func(o *Options) { o.KubeconfigPath = "/nonexistent/kubeconfig" }, wantErr: "kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.mutate(&o)
			_, err := RESTConfig(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestRESTConfigInsecureNeedsNoCA(t *testing.T) {
	srv := newAPIServer(t)
	cfg, err := RESTConfig(context.Background(), Options{
		Cluster: "prod", Endpoint: srv.URL, Insecure: true, AWS: staticConfig("us-east-1", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := serverVersion(t, cfg); err != nil {
		t.Fatal(err)
	}
	if got := srv.lastAuth(t); !strings.HasPrefix(got, "Bearer "+TokenPrefix) {
		t.Errorf("Authorization = %q", got)
	}
}

// writeKubeconfig writes a kubeconfig for server with a static token.
func writeKubeconfig(t *testing.T, srv *apiServer, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`, srv.URL, srv.caData(), token)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRESTConfigPrefersKubeconfigOverToken(t *testing.T) {
	srv := newAPIServer(t)
	cfg, err := RESTConfig(context.Background(), Options{
		Cluster: "prod", KubeconfigPath: writeKubeconfig(t, srv, "static-token"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := serverVersion(t, cfg); err != nil {
		t.Fatal(err)
	}
	if got := srv.lastAuth(t); got != "Bearer static-token" {
		t.Errorf("Authorization = %q, want the kubeconfig's token", got)
	}
}

// hermeticAWSEnv keeps the default credential chain away from the
// machine's files and instance metadata.
func hermeticAWSEnv(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_PROFILE":                 "",
		"AWS_REGION":                  "us-west-2",
		"AWS_ACCESS_KEY_ID":           "AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY":       "secret",
		"AWS_SESSION_TOKEN":           "",
		EnvKubeconfig:                 "",
		EnvClusterName:                "",
		EnvClusterEndpoint:            "",
		EnvClusterCA:                  "",
	} {
		t.Setenv(k, v)
	}
}

func TestFromEnv(t *testing.T) {
	srv := newAPIServer(t)
	var described []string
	eksAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		described = append(described, r.URL.Path)
		if r.URL.Path != "/clusters/prod" {
			w.Header().Set("X-Amzn-Errortype", "ResourceNotFoundException")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"No cluster found"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"cluster":{"name":"prod","status":"ACTIVE","endpoint":%q,"certificateAuthority":{"data":%q}}}`, srv.URL, srv.caData())
	}))
	t.Cleanup(eksAPI.Close)

	tests := []struct {
		name         string
		env          map[string]string
		wantAuth     string // prefix of the Authorization header sent
		wantDescribe bool
		wantErr      string
	}{
		{
			name:     "kubeconfig for local runs wins and sends its own credentials",
			env:      map[string]string{EnvKubeconfig: writeKubeconfig(t, srv, "local"), EnvClusterName: "prod"},
			wantAuth: "Bearer local",
		},
		{
			name:     "endpoint and CA from the environment need no DescribeCluster",
			env:      map[string]string{EnvClusterName: "prod", EnvClusterEndpoint: srv.URL, EnvClusterCA: srv.caData(), "AWS_ENDPOINT_URL_EKS": eksAPI.URL},
			wantAuth: "Bearer " + TokenPrefix,
		},
		{
			name:         "missing endpoint is looked up with DescribeCluster",
			env:          map[string]string{EnvClusterName: "prod", "AWS_ENDPOINT_URL_EKS": eksAPI.URL},
			wantAuth:     "Bearer " + TokenPrefix,
			wantDescribe: true,
		},
		{
			name:    "unknown cluster fails with the EKS error",
			env:     map[string]string{EnvClusterName: "other", "AWS_ENDPOINT_URL_EKS": eksAPI.URL},
			wantErr: `describe cluster "other"`,
		},
		{
			name:    "no cluster name",
			env:     map[string]string{},
			wantErr: EnvClusterName,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hermeticAWSEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			described = nil

			cfg, err := FromEnv(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromEnv: %v", err)
			}
			if err := serverVersion(t, cfg); err != nil {
				t.Fatal(err)
			}
			if got := srv.lastAuth(t); !strings.HasPrefix(got, tt.wantAuth) {
				t.Errorf("Authorization = %q, want prefix %q", got, tt.wantAuth)
			}
			if got := len(described) > 0; got != tt.wantDescribe {
				t.Errorf("DescribeCluster called = %v (%v), want %v", got, described, tt.wantDescribe)
			}
		})
	}
}
