package launch

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/pkg/model"
)

// Node is what a new node must register with.
type Node struct {
	Labels map[string]string
	// Taints are the pool's taints and startup taints.
	Taints  []corev1.Taint
	MaxPods int64
	Kubelet *model.Kubelet
}

// mimeBoundary separates the parts of the MIME archives Joist writes.
const mimeBoundary = "//JOIST//"

// UserData renders the node's bootstrap for an AMI family, merged with the
// user's own user data (run first, as Karpenter does), base64-encoded as
// EC2 wants it.
func UserData(family string, c Cluster, n Node, custom *string) (string, error) {
	var out string
	var err error
	switch family {
	case FamilyAL2, "":
		out = al2(c, n, custom)
	case FamilyAL2023:
		out, err = al2023(c, n, custom)
	case FamilyBottlerocket:
		out, err = bottlerocket(c, n, custom)
	case FamilyCustom:
		if custom != nil {
			out = *custom
		}
	default:
		return "", fmt.Errorf("amiFamily %q: unsupported", family)
	}
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString([]byte(out)), nil
}

func sortedLabels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

func taintStrings(ts []corev1.Taint) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
	}
	return out
}

func mime(parts ...[2]string) string {
	var b strings.Builder
	b.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" + mimeBoundary + "\"\n\n")
	for _, p := range parts {
		b.WriteString("--" + mimeBoundary + "\nContent-Type: " + p[0] + "\n\n" + p[1])
		if !strings.HasSuffix(p[1], "\n") {
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("--" + mimeBoundary + "--\n")
	return b.String()
}

// kubeletFlags are the kubelet command-line flags for sizing settings.
func kubeletFlags(n Node) []string {
	flags := []string{"--node-labels=" + sortedLabels(n.Labels)}
	if len(n.Taints) > 0 {
		flags = append(flags, "--register-with-taints="+strings.Join(taintStrings(n.Taints), ","))
	}
	if n.MaxPods > 0 {
		flags = append(flags, fmt.Sprintf("--max-pods=%d", n.MaxPods))
	}
	if k := n.Kubelet; k != nil {
		for flag, m := range map[string]map[string]string{"--system-reserved": k.SystemReserved, "--kube-reserved": k.KubeReserved} {
			if len(m) > 0 {
				flags = append(flags, flag+"="+sortedLabels(m))
			}
		}
		if len(k.EvictionHard) > 0 {
			flags = append(flags, "--eviction-hard="+sortedPairs(k.EvictionHard, "<"))
		}
	}
	sort.Strings(flags[1:])
	return flags
}

func sortedPairs(m map[string]string, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + sep + m[k]
	}
	return strings.Join(parts, ",")
}

func al2(c Cluster, n Node, custom *string) string {
	var sh strings.Builder
	sh.WriteString("#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	fmt.Fprintf(&sh, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s' --b64-cluster-ca '%s'", c.Name, c.Endpoint, c.CA)
	if c.DNSClusterIP != "" {
		fmt.Fprintf(&sh, " --dns-cluster-ip '%s'", c.DNSClusterIP)
	}
	if n.MaxPods > 0 {
		sh.WriteString(" --use-max-pods false")
	}
	fmt.Fprintf(&sh, " --kubelet-extra-args '%s'\n", strings.Join(kubeletFlags(n), " "))
	var parts [][2]string
	if custom != nil && *custom != "" {
		parts = append(parts, [2]string{"text/x-shellscript; charset=\"us-ascii\"", *custom})
	}
	parts = append(parts, [2]string{"text/x-shellscript; charset=\"us-ascii\"", sh.String()})
	return mime(parts...)
}

func al2023(c Cluster, n Node, custom *string) (string, error) {
	kubeletConfig := map[string]any{}
	if n.MaxPods > 0 {
		kubeletConfig["maxPods"] = n.MaxPods
	}
	if len(n.Taints) > 0 {
		kubeletConfig["registerWithTaints"] = n.Taints
	}
	if k := n.Kubelet; k != nil {
		for key, v := range k.Extra {
			kubeletConfig[key] = v
		}
		if len(k.ClusterDNS) > 0 {
			kubeletConfig["clusterDNS"] = k.ClusterDNS
		}
		if len(k.SystemReserved) > 0 {
			kubeletConfig["systemReserved"] = k.SystemReserved
		}
		if len(k.KubeReserved) > 0 {
			kubeletConfig["kubeReserved"] = k.KubeReserved
		}
		if len(k.EvictionHard) > 0 {
			kubeletConfig["evictionHard"] = k.EvictionHard
		}
	}
	nc := map[string]any{
		"apiVersion": "node.eks.aws/v1alpha1",
		"kind":       "NodeConfig",
		"spec": map[string]any{
			"cluster": map[string]any{
				"name":                 c.Name,
				"apiServerEndpoint":    c.Endpoint,
				"certificateAuthority": c.CA,
				"cidr":                 c.ServiceCIDR,
			},
			"kubelet": map[string]any{
				"config": kubeletConfig,
				"flags":  []string{"--node-labels=" + sortedLabels(n.Labels)},
			},
		},
	}
	y, err := yaml.Marshal(nc)
	if err != nil {
		return "", fmt.Errorf("render NodeConfig: %w", err)
	}
	var parts [][2]string
	if custom != nil && *custom != "" {
		parts = append(parts, [2]string{"text/x-shellscript; charset=\"us-ascii\"", *custom})
	}
	parts = append(parts, [2]string{"application/node.eks.aws", "---\n" + string(y)})
	return mime(parts...), nil
}

func bottlerocket(c Cluster, n Node, custom *string) (string, error) {
	doc := map[string]any{}
	if custom != nil && *custom != "" {
		if _, err := toml.Decode(*custom, &doc); err != nil {
			return "", fmt.Errorf("spec.userData: not valid TOML for Bottlerocket: %w", err)
		}
	}
	settings, _ := doc["settings"].(map[string]any)
	if settings == nil {
		settings = map[string]any{}
	}
	k8s, _ := settings["kubernetes"].(map[string]any)
	if k8s == nil {
		k8s = map[string]any{}
	}
	k8s["cluster-name"] = c.Name
	k8s["api-server"] = c.Endpoint
	k8s["cluster-certificate"] = c.CA
	k8s["node-labels"] = n.Labels
	taints := map[string]any{}
	for _, t := range n.Taints {
		taints[t.Key] = []string{t.Value + ":" + string(t.Effect)}
	}
	if len(taints) > 0 {
		k8s["node-taints"] = taints
	}
	if n.MaxPods > 0 {
		k8s["max-pods"] = n.MaxPods
	}
	if c.DNSClusterIP != "" {
		k8s["cluster-dns-ip"] = c.DNSClusterIP
	}
	if k := n.Kubelet; k != nil {
		if len(k.SystemReserved) > 0 {
			k8s["system-reserved"] = k.SystemReserved
		}
		if len(k.KubeReserved) > 0 {
			k8s["kube-reserved"] = k.KubeReserved
		}
		if len(k.EvictionHard) > 0 {
			k8s["eviction-hard"] = k.EvictionHard
		}
	}
	settings["kubernetes"] = k8s
	doc["settings"] = settings
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(doc); err != nil {
		return "", fmt.Errorf("render Bottlerocket settings: %w", err)
	}
	return b.String(), nil
}
