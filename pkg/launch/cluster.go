package launch

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
)

// clusterTTL is how long what EKS said about the cluster is reused. A
// control-plane upgrade changes the version, which changes the AMI
// parameters; ten minutes of launching the previous version's AMIs is what
// Karpenter's version cache allows too, and they still join.
const clusterTTL = 10 * time.Minute

// DescribeCluster reads a cluster's join details from EKS: Kubernetes
// version, endpoint, certificate authority and IPv4 service range.
func DescribeCluster(ctx context.Context, api EKSAPI, name string) (Cluster, error) {
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(name)})
	if err != nil {
		return Cluster{}, fmt.Errorf("cluster %q: eks:DescribeCluster: %w", name, err)
	}
	c := out.Cluster
	if c == nil {
		return Cluster{}, fmt.Errorf("cluster %q: eks:DescribeCluster returned no cluster", name)
	}
	got := Cluster{Name: name, Version: aws.ToString(c.Version), Endpoint: aws.ToString(c.Endpoint)}
	if c.CertificateAuthority != nil {
		got.CA = aws.ToString(c.CertificateAuthority.Data)
	}
	if c.KubernetesNetworkConfig != nil {
		got.ServiceCIDR = aws.ToString(c.KubernetesNetworkConfig.ServiceIpv4Cidr)
	}
	return got, nil
}

// KubernetesVersion returns the cluster's Kubernetes minor version, from
// configuration when set, otherwise from EKS.
func (l *Launcher) KubernetesVersion(ctx context.Context) (string, error) {
	c, err := l.ClusterInfo(ctx)
	if err != nil {
		return "", err
	}
	return c.Version, nil
}

// ClusterInfo returns Cluster with what configuration left empty
// (version, endpoint, CA, service range) filled in from EKS. It asks EKS
// only when something is missing, and at most every ten minutes.
func (l *Launcher) ClusterInfo(ctx context.Context) (Cluster, error) {
	c := l.Cluster
	if c.Version != "" && c.Endpoint != "" && c.CA != "" && c.ServiceCIDR != "" {
		return c, nil
	}
	now := l.now()
	l.mu.Lock()
	if l.cluster != nil && now.Before(l.clusterUntil) {
		got := *l.cluster
		l.mu.Unlock()
		return got, nil
	}
	l.mu.Unlock()
	if l.EKS == nil {
		if c.Version == "" {
			return c, fmt.Errorf("cluster %q: the Kubernetes version is not configured (KUBERNETES_VERSION) and there is no EKS client to ask", c.Name)
		}
		// Endpoint, CA and service range are checked by the AMI family
		// that needs them, with a message naming the setting.
		return c, nil
	}
	eksInfo, err := DescribeCluster(ctx, l.EKS, c.Name)
	if err != nil {
		if c.Version == "" {
			return c, err
		}
		// Enough to pick AMIs; the family that needs the rest says so.
		// Remembered like an answer, so every launch does not ask again.
		l.log().Warn("could not complete the cluster's details from EKS", "error", err.Error())
		eksInfo = Cluster{}
	}
	if c.Version == "" {
		c.Version = eksInfo.Version
	}
	if c.Endpoint == "" {
		c.Endpoint = eksInfo.Endpoint
	}
	if c.CA == "" {
		c.CA = eksInfo.CA
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = eksInfo.ServiceCIDR
	}
	l.mu.Lock()
	l.cluster = &c
	l.clusterUntil = now.Add(clusterTTL)
	l.mu.Unlock()
	return c, nil
}

// minorAtLeast tells whether a Kubernetes version such as "1.33" (or
// "v1.33.1") is at least 1.<minor>.
func minorAtLeast(version string, minor int) bool {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	m, err := strconv.Atoi(parts[1])
	return err == nil && parts[0] == "1" && m >= minor
}
