package eksauth

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
)

// Options says how to reach one cluster's API server.
//
// Either KubeconfigPath is set (local runs and the test ground, where the
// API server is envtest's and there is no IAM), or Cluster, Endpoint and CA
// are, and requests carry an EKS token signed with AWS's credentials.
type Options struct {
	// Cluster is the EKS cluster name; it is signed into every token.
	Cluster string
	// Endpoint is the API server URL, as DescribeCluster reports it.
	Endpoint string
	// CA is the cluster's certificate authority as DescribeCluster reports
	// it: base64 of PEM.
	CA string
	// AWS supplies the region and the credentials tokens are signed with.
	AWS aws.Config

	// KubeconfigPath, when set, wins over everything above: the config is
	// read from that kubeconfig file and no token is made.
	KubeconfigPath string
	// Insecure skips verification of the API server's certificate. Only
	// for local experiments; CA is then not required.
	Insecure bool

	// Clock is the clock the token cache uses to decide when to refresh
	// (nil: the real one). Tests move a k8s.io/utils/clock/testing clock
	// forward to force a refresh.
	Clock clock.PassiveClock
}

// RESTConfig returns a client-go configuration for the cluster that Options
// describes. With a token, the configuration's transport puts a cached
// token on every request and signs a new one a minute before the old one
// expires, so a long-lived client (the forwarder, a warm Lambda) never
// presents an expired token.
//
// A first token is signed here, so missing credentials or region fail now
// rather than on the first request.
func RESTConfig(ctx context.Context, o Options) (*rest.Config, error) {
	if o.KubeconfigPath != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.KubeconfigPath)
		if err != nil {
			return nil, fmt.Errorf("eksauth: load kubeconfig %s: %w", o.KubeconfigPath, err)
		}
		if o.Insecure {
			cfg.TLSClientConfig.Insecure = true
			cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = nil, ""
		}
		return cfg, nil
	}

	if o.Cluster == "" {
		return nil, errors.New("eksauth: cluster name is required")
	}
	if o.Endpoint == "" {
		return nil, fmt.Errorf("eksauth: API server endpoint of cluster %q is required", o.Cluster)
	}
	cfg := &rest.Config{Host: o.Endpoint}
	if o.Insecure {
		cfg.TLSClientConfig.Insecure = true
	} else {
		ca, err := decodeCA(o.CA)
		if err != nil {
			return nil, fmt.Errorf("eksauth: certificate authority of cluster %q: %w", o.Cluster, err)
		}
		cfg.TLSClientConfig.CAData = ca
	}

	src := NewTokenSource(o.AWS, o.Cluster, o.Clock)
	if _, err := src.Token(ctx); err != nil {
		return nil, err
	}
	cfg.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return &bearerTransport{src: src, next: next}
	}
	return cfg, nil
}

// decodeCA turns DescribeCluster's certificateAuthority.data into PEM and
// checks that it holds a certificate: an empty or mangled CA would
// otherwise surface later as an opaque TLS error against the API server.
func decodeCA(data string) ([]byte, error) {
	if data == "" {
		return nil, errors.New("missing (set CA, or Insecure for local experiments)")
	}
	pem, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, errors.New("holds no PEM certificate")
	}
	return pem, nil
}

// bearerTransport sets Authorization from the token source on each request.
type bearerTransport struct {
	src  *TokenSource
	next http.RoundTripper
}

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := t.src.Token(req.Context())
	if err != nil {
		return nil, err
	}
	// A RoundTripper must not change the caller's request.
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		// Perhaps the credentials behind it were revoked; do not keep
		// presenting the same token for another 14 minutes.
		t.src.invalidate(token)
	}
	return resp, err
}

// WrappedRoundTripper lets client-go's debugging wrappers see through.
func (t *bearerTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// Environment variables FromEnv reads.
const (
	EnvKubeconfig      = "JOIST_KUBECONFIG"
	EnvClusterName     = "CLUSTER_NAME"
	EnvClusterEndpoint = "CLUSTER_ENDPOINT"
	EnvClusterCA       = "CLUSTER_CA"
)

// FromEnv builds the configuration a Joist function uses, from its
// environment:
//
//   - JOIST_KUBECONFIG, a kubeconfig file path, for local runs against
//     envtest; nothing else is read.
//   - Otherwise CLUSTER_NAME (required), CLUSTER_ENDPOINT and CLUSTER_CA
//     (base64 PEM) with AWS credentials and region from the default chain.
//     When the endpoint or CA is empty they come from eks:DescribeCluster,
//     which costs the function that permission and a call per cold start;
//     the CDK stack sets both so that path is only a fallback.
func FromEnv(ctx context.Context) (*rest.Config, error) {
	return FromSettings(ctx, os.Getenv(EnvKubeconfig), os.Getenv(EnvClusterName), os.Getenv(EnvClusterEndpoint), os.Getenv(EnvClusterCA))
}

// FromSettings is FromEnv with the values given (pkg/wiring reads them
// under their JOIST_ names or their old ones).
func FromSettings(ctx context.Context, kubeconfig, cluster, endpoint, ca string) (*rest.Config, error) {
	if kubeconfig != "" {
		return RESTConfig(ctx, Options{KubeconfigPath: kubeconfig})
	}
	if cluster == "" {
		return nil, fmt.Errorf("eksauth: set %s (or %s for a local kubeconfig)", EnvClusterName, EnvKubeconfig)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("eksauth: load AWS configuration: %w", err)
	}
	if endpoint == "" || ca == "" {
		var err error
		endpoint, ca, err = DescribeEndpoint(ctx, eks.NewFromConfig(awsCfg), cluster)
		if err != nil {
			return nil, err
		}
	}
	return RESTConfig(ctx, Options{Cluster: cluster, Endpoint: endpoint, CA: ca, AWS: awsCfg})
}

// DescribeClusterAPI is the part of the EKS client DescribeEndpoint uses.
type DescribeClusterAPI interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, optFns ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// DescribeEndpoint returns the API server endpoint and CA (base64 PEM) of
// cluster.
func DescribeEndpoint(ctx context.Context, api DescribeClusterAPI, cluster string) (endpoint, ca string, err error) {
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(cluster)})
	if err != nil {
		return "", "", fmt.Errorf("eksauth: describe cluster %q: %w", cluster, err)
	}
	c := out.Cluster
	if c == nil || aws.ToString(c.Endpoint) == "" || c.CertificateAuthority == nil || aws.ToString(c.CertificateAuthority.Data) == "" {
		status := ""
		if c != nil {
			status = string(c.Status)
		}
		return "", "", fmt.Errorf("eksauth: cluster %q has no endpoint or CA yet (status %q)", cluster, status)
	}
	return aws.ToString(c.Endpoint), aws.ToString(c.CertificateAuthority.Data), nil
}
