package eksauth

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// staticConfig is an AWS configuration that needs no environment: fixed
// region and static credentials.
func staticConfig(region, sessionToken string) aws.Config {
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", sessionToken),
	}
}

// allowedQuery is what aws-iam-authenticator (EKS's verifier) accepts in the
// presigned URL; any other parameter makes EKS refuse the token.
var allowedQuery = map[string]bool{
	"action": true, "version": true, "x-amz-algorithm": true, "x-amz-credential": true,
	"x-amz-date": true, "x-amz-expires": true, "x-amz-security-token": true,
	"x-amz-signature": true, "x-amz-signedheaders": true,
}

func TestTokenIsAPresignedGetCallerIdentityURLInAuthenticatorFormat(t *testing.T) {
	tests := []struct {
		name         string
		region       string
		sessionToken string
	}{
		{name: "long-term credentials", region: "us-west-2"},
		{name: "session credentials carry the security token", region: "eu-central-1", sessionToken: "SESSIONTOKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			token, expires, err := Token(context.Background(), staticConfig(tt.region, tt.sessionToken), "prod-cluster")
			if err != nil {
				t.Fatalf("Token: %v", err)
			}
			if !strings.HasPrefix(token, TokenPrefix) {
				t.Fatalf("token %q lacks prefix %q", token, TokenPrefix)
			}
			encoded := strings.TrimPrefix(token, TokenPrefix)
			if strings.ContainsAny(encoded, "=+/") {
				t.Errorf("token body %q is not unpadded base64url", encoded)
			}
			raw, err := base64.RawURLEncoding.DecodeString(encoded)
			if err != nil {
				t.Fatalf("token body is not base64url: %v", err)
			}
			u, err := url.Parse(string(raw))
			if err != nil {
				t.Fatalf("decoded token is not a URL: %v", err)
			}
			if u.Scheme != "https" || u.Host != "sts."+tt.region+".amazonaws.com" || (u.Path != "/" && u.Path != "") {
				t.Errorf("URL = %s, want https://sts.%s.amazonaws.com/", u, tt.region)
			}
			q := u.Query()
			want := map[string]string{
				"Action":              "GetCallerIdentity",
				"Version":             "2011-06-15",
				"X-Amz-Algorithm":     "AWS4-HMAC-SHA256",
				"X-Amz-Expires":       "60",
				"X-Amz-SignedHeaders": "host;x-k8s-aws-id",
			}
			for k, v := range want {
				if got := q.Get(k); got != v {
					t.Errorf("query %s = %q, want %q", k, got, v)
				}
			}
			cred := q.Get("X-Amz-Credential")
			if !regexp.MustCompile(`^AKIDEXAMPLE/\d{8}/` + tt.region + `/sts/aws4_request$`).MatchString(cred) {
				t.Errorf("X-Amz-Credential = %q", cred)
			}
			if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(q.Get("X-Amz-Signature")) {
				t.Errorf("X-Amz-Signature = %q", q.Get("X-Amz-Signature"))
			}
			if q.Get("X-Amz-Date") == "" {
				t.Error("X-Amz-Date missing")
			}
			if got := q.Get("X-Amz-Security-Token"); got != tt.sessionToken {
				t.Errorf("X-Amz-Security-Token = %q, want %q", got, tt.sessionToken)
			}
			for k := range q {
				if !allowedQuery[strings.ToLower(k)] {
					t.Errorf("query parameter %q would make EKS refuse the token", k)
				}
			}
			if lo, hi := before.Add(13*time.Minute), time.Now().Add(14*time.Minute); expires.Before(lo) || expires.After(hi) {
				t.Errorf("expires = %v, want about 14 minutes from now", expires)
			}
		})
	}
}

func TestTokenRefusesMissingClusterOrRegion(t *testing.T) {
	tests := []struct {
		name    string
		cfg     aws.Config
		cluster string
		wantErr string
	}{
		{name: "no cluster", cfg: staticConfig("us-east-1", ""), wantErr: "cluster name"},
		{name: "no region", cfg: staticConfig("", ""), cluster: "c", wantErr: "region"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Token(context.Background(), tt.cfg, tt.cluster)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestTokenSourceCachesUntilAMinuteBeforeExpiry(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	cfg := rotatingConfig()
	src := NewTokenSource(cfg, "c", clock)

	first, err := src.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	clock.SetTime(clock.Now().Add(13*time.Minute + 50*time.Second))
	if second, _ := src.Token(context.Background()); second != first {
		t.Error("token was replaced before it was due")
	}
	clock.SetTime(clock.Now().Add(15 * time.Second)) // past 14 minutes
	third, err := src.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if third == first {
		t.Error("token was not replaced 14 minutes after signing")
	}
}

// rotatingConfig returns an AWS configuration whose credentials change on
// every retrieval, so two tokens signed in the same second still differ and
// a test can tell a refreshed token from the cached one.
func rotatingConfig() aws.Config {
	var mu sync.Mutex
	n := 0
	return aws.Config{
		Region: "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			return aws.Credentials{AccessKeyID: fmt.Sprintf("AKID%08d", n), SecretAccessKey: "s"}, nil
		}),
	}
}
