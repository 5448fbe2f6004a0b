// Package eksauth authenticates Joist's functions and forwarder to the EKS
// API server.
//
// EKS accepts a bearer token that is a presigned STS GetCallerIdentity URL
// (the aws-iam-authenticator format): the API server calls the URL and so
// learns the caller's IAM identity, which an EKS access entry maps to
// Kubernetes groups. Lambda functions have an IAM role but no kubeconfig,
// exec plugin or AWS CLI, so this package makes those tokens itself and
// keeps a rest.Config supplied with a fresh one.
//
// It is an adapter: it talks to STS (only to sign, no network call), to the
// EKS API (DescribeCluster, when the endpoint is not configured) and builds
// client-go configuration.
package eksauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

const (
	// TokenPrefix starts every EKS bearer token; the rest is the presigned
	// URL in unpadded base64url.
	TokenPrefix = "k8s-aws-v1."

	// ClusterIDHeader names the cluster inside the signature, so a token
	// made for one cluster is refused by every other.
	ClusterIDHeader = "x-k8s-aws-id"

	// presignExpiresSeconds is sent as X-Amz-Expires. STS ignores it (a
	// presigned GetCallerIdentity URL is good for 15 minutes after
	// X-Amz-Date whatever it says) but old authenticators insist on a value
	// between 0 and 60, so everyone sends 60.
	presignExpiresSeconds = 60

	// tokenLifetime is how long EKS accepts the token after signing.
	tokenLifetime = 15 * time.Minute

	// refreshMargin is how long before the real expiry a token is replaced,
	// to absorb clock skew and requests that are slow to reach the server.
	refreshMargin = time.Minute
)

// Token returns an EKS bearer token for cluster, signed with cfg's
// credentials for cfg's region, and the time after which it should no
// longer be used (a minute before EKS would refuse it).
//
// Signing happens locally; Token makes no network call unless cfg's
// credential provider needs one.
func Token(ctx context.Context, cfg aws.Config, cluster string) (string, time.Time, error) {
	if cluster == "" {
		return "", time.Time{}, errors.New("eksauth: cluster name is required to sign a token")
	}
	if cfg.Region == "" {
		return "", time.Time{}, errors.New("eksauth: AWS region is required to sign a token (set AWS_REGION)")
	}
	// Taken before signing so the expiry is never later than the truth.
	signedAt := time.Now()

	presigner := sts.NewPresignClient(sts.NewFromConfig(cfg))
	req, err := presigner.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, withClusterID(cluster))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("eksauth: presign sts:GetCallerIdentity for cluster %q: %w", cluster, err)
	}
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL))
	return token, signedAt.Add(tokenLifetime - refreshMargin), nil
}

// withClusterID adds the cluster header and X-Amz-Expires to the request
// before the presigner signs it. The SDK's v4 presigner lists every header
// present at signing time in X-Amz-SignedHeaders and hoists X-Amz-*
// headers into the query string, which is exactly what EKS verifies.
func withClusterID(cluster string) func(*sts.PresignOptions) {
	return func(po *sts.PresignOptions) {
		po.ClientOptions = append(po.ClientOptions, func(o *sts.Options) {
			o.APIOptions = append(o.APIOptions,
				smithyhttp.SetHeaderValue(ClusterIDHeader, cluster),
				smithyhttp.SetHeaderValue("X-Amz-Expires", strconv.Itoa(presignExpiresSeconds)),
			)
		})
	}
}

// TokenSource hands out a cached EKS token and signs a new one when the
// cached one is within a minute of expiry. It is safe for concurrent use.
type TokenSource struct {
	cfg     aws.Config
	cluster string
	clock   clock.PassiveClock

	mu      sync.Mutex
	token   string
	expires time.Time
}

// NewTokenSource returns a TokenSource for cluster. clk may be nil (then
// the real clock); tests pass a fake clock to force a refresh.
func NewTokenSource(cfg aws.Config, cluster string, clk clock.PassiveClock) *TokenSource {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &TokenSource{cfg: cfg, cluster: cluster, clock: clk}
}

// Token returns the cached token, or a new one if the cached one is due for
// refresh.
func (s *TokenSource) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && s.clock.Now().Before(s.expires) {
		return s.token, nil
	}
	token, expires, err := Token(ctx, s.cfg, s.cluster)
	if err != nil {
		return "", err
	}
	// Token's expiry is measured on the real clock; re-base it on ours so a
	// fake clock in tests and the real one in production agree.
	s.token, s.expires = token, s.clock.Now().Add(time.Until(expires))
	return s.token, nil
}

// invalidate drops the cached token if it is still token, so the next
// request signs a new one. The transport calls it when the API server
// answers 401 (credentials rotated or revoked early); the guard keeps a
// late 401 from discarding a newer token.
func (s *TokenSource) invalidate(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == token {
		s.token, s.expires = "", time.Time{}
	}
}
