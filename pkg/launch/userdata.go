package launch

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"sort"
	"strconv"
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
	Taints []corev1.Taint
	// MaxPods is passed to the kubelet when positive; otherwise the AMI
	// computes its own.
	MaxPods int64
	Kubelet *model.Kubelet
	// InstanceStorePolicy "RAID0" turns local NVMe disks into the node's
	// ephemeral storage.
	InstanceStorePolicy string
}

// MIME content types of user-data parts.
const (
	ContentTypeShell      = `text/x-shellscript; charset="us-ascii"`
	ContentTypeNodeConfig = "application/node.eks.aws"
)

// mimeBoundary separates the parts of the MIME archives Joist writes; a
// part that contains it gets a longer one.
const mimeBoundary = "//JOIST//"

// UserData renders the node's bootstrap for an AMI family, merged with the
// user's own user data, base64-encoded as EC2 wants it. The output is a
// pure function of its input (labels, taints and settings are sorted), so
// equal nodes share one launch template.
//
//   - AL2 and Ubuntu: a MIME archive whose last part runs
//     /etc/eks/bootstrap.sh; the user's data comes first (its parts if it is
//     MIME, else as one shell script).
//   - AL2023: a MIME archive with the user's parts first (a bare NodeConfig
//     or shell script becomes one part), then Joist's NodeConfig, so that
//     nodeadm, which merges NodeConfigs in order, lets Joist's labels,
//     taints and kubelet settings win.
//   - Bottlerocket: the user's TOML with Joist's settings.kubernetes keys
//     set over it.
//   - Windows2019, Windows2022, Windows2025: a PowerShell script, the
//     user's lines first, then Start-EKSBootstrap.ps1 with the kubelet
//     flags AL2's bootstrap.sh is given, as Karpenter writes it.
//   - Custom: the user's data as given; the image must join by itself.
func UserData(family string, c Cluster, n Node, custom *string) (string, error) {
	user := ""
	if custom != nil {
		user = *custom
	}
	var out string
	var err error
	switch family {
	case FamilyAL2, FamilyUbuntu, "":
		out, err = al2(c, n, user)
	case FamilyAL2023:
		out, err = al2023(c, n, user)
	case FamilyBottlerocket:
		out, err = bottlerocket(c, n, user)
	case FamilyCustom:
		out = user
	default:
		if _, ok := model.WindowsServerOf(family); !ok {
			return "", fmt.Errorf("amiFamily %q: Joist renders user data for AL2, AL2023, Bottlerocket, Ubuntu, Windows2019, Windows2022, Windows2025 and Custom only", family)
		}
		out = windows(c, n, user)
	}
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString([]byte(out)), nil
}

// Labels the kubelet sets itself from the instance; passing them in
// --node-labels is redundant at best.
var kubeletOwnLabels = map[string]bool{
	corev1.LabelHostname:                true,
	corev1.LabelTopologyZone:            true,
	corev1.LabelTopologyRegion:          true,
	corev1.LabelFailureDomainBetaZone:   true,
	corev1.LabelFailureDomainBetaRegion: true,
	corev1.LabelInstanceType:            true,
	corev1.LabelInstanceTypeStable:      true,
	corev1.LabelArchStable:              true,
	corev1.LabelOSStable:                true,
	"beta.kubernetes.io/arch":           true,
	"beta.kubernetes.io/os":             true,
}

// KubeletLabels splits labels into those a kubelet accepts in
// --node-labels (or NodeConfig flags, or Bottlerocket node-labels) and
// those it must not be given: the labels it sets itself from the
// instance, and labels in the kubernetes.io and k8s.io namespaces other
// than node.kubernetes.io and kubelet.kubernetes.io, with which a kubelet
// refuses to start (and node-restriction.kubernetes.io, which the
// NodeRestriction admission plugin rejects). Karpenter drops the same.
func KubeletLabels(labels map[string]string) (kept map[string]string, dropped []string) {
	kept = map[string]string{}
	for k, v := range labels {
		if kubeletOwnLabels[k] || !kubeletMaySet(k) {
			dropped = append(dropped, k)
			continue
		}
		kept[k] = v
	}
	sort.Strings(dropped)
	return kept, dropped
}

func kubeletMaySet(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	restricted := func(domain string) bool { return ns == domain || strings.HasSuffix(ns, "."+domain) }
	if !restricted("kubernetes.io") && !restricted("k8s.io") {
		return true
	}
	if restricted("node-restriction.kubernetes.io") {
		return false
	}
	return restricted("node.kubernetes.io") || restricted("kubelet.kubernetes.io")
}

func joinPairs(m map[string]string, sep string) string {
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

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// sortedTaints orders taints by key, value and effect, duplicates removed.
func sortedTaints(ts []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(ts))
	seen := map[string]bool{}
	for _, t := range ts {
		s := taintString(t)
		if !seen[s] {
			seen[s] = true
			out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
	}
	sort.Slice(out, func(i, j int) bool { return taintString(out[i]) < taintString(out[j]) })
	return out
}

// clusterDNS is the DNS IP the node's pods use: the kubelet setting, else
// the cluster's.
func clusterDNS(c Cluster, k *model.Kubelet) string {
	if k != nil && len(k.ClusterDNS) > 0 {
		return k.ClusterDNS[0]
	}
	return c.DNSClusterIP
}

// kubeletArgs are the kubelet flags AL2's bootstrap.sh passes through
// --kubelet-extra-args (and Windows' Start-EKSBootstrap.ps1 through
// -KubeletExtraArgs): labels and taints first, then sizing and eviction,
// each list sorted.
func kubeletArgs(n Node) []string {
	labels, _ := KubeletLabels(n.Labels)
	var args []string
	if len(labels) > 0 {
		args = append(args, "--node-labels="+joinPairs(labels, "="))
	}
	if ts := sortedTaints(n.Taints); len(ts) > 0 {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = taintString(t)
		}
		args = append(args, "--register-with-taints="+strings.Join(s, ","))
	}
	if n.MaxPods > 0 {
		args = append(args, fmt.Sprintf("--max-pods=%d", n.MaxPods))
	}
	k := n.Kubelet
	if k == nil {
		return args
	}
	if k.PodsPerCore != nil {
		args = append(args, fmt.Sprintf("--pods-per-core=%d", *k.PodsPerCore))
	}
	for _, m := range []struct {
		flag, sep string
		v         map[string]string
	}{
		{"--system-reserved", "=", k.SystemReserved},
		{"--kube-reserved", "=", k.KubeReserved},
		{"--eviction-hard", "<", k.EvictionHard},
		{"--eviction-soft", "<", k.EvictionSoft},
		{"--eviction-soft-grace-period", "=", k.EvictionSoftGracePeriod},
	} {
		if len(m.v) > 0 {
			args = append(args, m.flag+"="+joinPairs(m.v, m.sep))
		}
	}
	if k.EvictionMaxPodGracePeriod != nil {
		args = append(args, fmt.Sprintf("--eviction-max-pod-grace-period=%d", *k.EvictionMaxPodGracePeriod))
	}
	if k.ImageGCHighThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-high-threshold=%d", *k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-low-threshold=%d", *k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		args = append(args, fmt.Sprintf("--cpu-cfs-quota=%t", *k.CPUCFSQuota))
	}
	return args
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func al2(c Cluster, n Node, user string) (string, error) {
	var sh strings.Builder
	sh.WriteString("#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	sh.WriteString("/etc/eks/bootstrap.sh " + shellQuote(c.Name))
	if c.Endpoint != "" {
		sh.WriteString(" --apiserver-endpoint " + shellQuote(c.Endpoint))
	}
	if c.CA != "" {
		sh.WriteString(" --b64-cluster-ca " + shellQuote(c.CA))
	}
	if dns := clusterDNS(c, n.Kubelet); dns != "" {
		if ip := net.ParseIP(dns); ip != nil && ip.To4() == nil {
			sh.WriteString(" \\\n--ip-family ipv6")
		}
		sh.WriteString(" \\\n--dns-cluster-ip " + shellQuote(dns))
	}
	if n.Kubelet != nil && n.Kubelet.ContainerRuntime != "" {
		sh.WriteString(" \\\n--container-runtime " + shellQuote(n.Kubelet.ContainerRuntime))
	}
	if n.MaxPods > 0 {
		// Joist sizes the node with this number; stop bootstrap.sh from
		// computing its own.
		sh.WriteString(" \\\n--use-max-pods false")
	}
	if args := kubeletArgs(n); len(args) > 0 {
		sh.WriteString(" \\\n--kubelet-extra-args " + shellQuote(strings.Join(args, " ")))
	}
	if strings.EqualFold(n.InstanceStorePolicy, "RAID0") {
		sh.WriteString(" \\\n--local-disks raid0")
	}
	sh.WriteString("\n")
	parts, err := userParts(user, false)
	if err != nil {
		return "", err
	}
	parts = append(parts, mimePart{contentType: ContentTypeShell, body: sh.String()})
	return writeMIME(parts), nil
}

// psQuote quotes s as a PowerShell single-quoted (verbatim) string.
func psQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// windows is the EKS Windows AMIs' bootstrap as Karpenter writes it: one
// <powershell> block running the user's lines, then
// Start-EKSBootstrap.ps1, which registers the kubelet with the cluster
// and the flags of -KubeletExtraArgs (labels, taints, max pods, reserved
// resources, eviction: AL2's --kubelet-extra-args).
func windows(c Cluster, n Node, user string) string {
	var ps strings.Builder
	ps.WriteString("<powershell>\n")
	if user != "" {
		ps.WriteString(user)
		if !strings.HasSuffix(user, "\n") {
			ps.WriteString("\n")
		}
	}
	ps.WriteString(`[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"` + "\n")
	ps.WriteString("& $EKSBootstrapScriptFile -EKSClusterName " + psQuote(c.Name))
	if c.Endpoint != "" {
		ps.WriteString(" -APIServerEndpoint " + psQuote(c.Endpoint))
	}
	if c.CA != "" {
		ps.WriteString(" -Base64ClusterCA " + psQuote(c.CA))
	}
	if args := kubeletArgs(n); len(args) > 0 {
		ps.WriteString(" -KubeletExtraArgs " + psQuote(strings.Join(args, " ")))
	}
	if dns := clusterDNS(c, n.Kubelet); dns != "" {
		ps.WriteString(" -DNSClusterIP " + psQuote(dns))
	}
	ps.WriteString("\n</powershell>")
	return ps.String()
}

func al2023(c Cluster, n Node, user string) (string, error) {
	for _, f := range []struct{ v, what string }{
		{c.Endpoint, "API server endpoint (CLUSTER_ENDPOINT)"},
		{c.CA, "certificate authority (CLUSTER_CA)"},
		{c.ServiceCIDR, "service CIDR (CLUSTER_SERVICE_CIDR)"},
	} {
		if f.v == "" {
			return "", fmt.Errorf("amiFamily AL2023: the cluster's %s is not configured and EKS did not give it; nodeadm cannot join without it", f.what)
		}
	}
	config := map[string]any{}
	k := n.Kubelet
	if k != nil {
		for key, v := range k.Extra {
			config[key] = v
		}
		if len(k.ClusterDNS) > 0 {
			config["clusterDNS"] = k.ClusterDNS
		}
		if k.PodsPerCore != nil {
			config["podsPerCore"] = *k.PodsPerCore
		}
		for key, m := range map[string]map[string]string{
			"systemReserved": k.SystemReserved, "kubeReserved": k.KubeReserved, "evictionHard": k.EvictionHard,
			"evictionSoft": k.EvictionSoft, "evictionSoftGracePeriod": k.EvictionSoftGracePeriod,
		} {
			if len(m) > 0 {
				config[key] = m
			}
		}
		if k.EvictionMaxPodGracePeriod != nil {
			config["evictionMaxPodGracePeriod"] = *k.EvictionMaxPodGracePeriod
		}
		if k.ImageGCHighThresholdPercent != nil {
			config["imageGCHighThresholdPercent"] = *k.ImageGCHighThresholdPercent
		}
		if k.ImageGCLowThresholdPercent != nil {
			config["imageGCLowThresholdPercent"] = *k.ImageGCLowThresholdPercent
		}
		if k.CPUCFSQuota != nil {
			config["cpuCFSQuota"] = *k.CPUCFSQuota
		}
	}
	if dns := clusterDNS(c, k); dns != "" && config["clusterDNS"] == nil {
		config["clusterDNS"] = []string{dns}
	}
	if n.MaxPods > 0 {
		config["maxPods"] = n.MaxPods
	}
	if ts := sortedTaints(n.Taints); len(ts) > 0 {
		config["registerWithTaints"] = ts
	}
	kubelet := map[string]any{}
	if len(config) > 0 {
		kubelet["config"] = config
	}
	if labels, _ := KubeletLabels(n.Labels); len(labels) > 0 {
		kubelet["flags"] = []string{"--node-labels=" + joinPairs(labels, "=")}
	}
	spec := map[string]any{
		"cluster": map[string]any{
			"name":                 c.Name,
			"apiServerEndpoint":    c.Endpoint,
			"certificateAuthority": c.CA,
			"cidr":                 c.ServiceCIDR,
		},
		"kubelet": kubelet,
	}
	if strings.EqualFold(n.InstanceStorePolicy, "RAID0") {
		spec["instance"] = map[string]any{"localStorage": map[string]any{"strategy": "RAID0"}}
	}
	y, err := yaml.Marshal(map[string]any{"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec})
	if err != nil {
		return "", fmt.Errorf("render NodeConfig: %w", err)
	}
	parts, err := userParts(user, true)
	if err != nil {
		return "", err
	}
	parts = append(parts, mimePart{contentType: ContentTypeNodeConfig, body: "# Joist's NodeConfig\n---\n" + string(y)})
	return writeMIME(parts), nil
}

func bottlerocket(c Cluster, n Node, user string) (string, error) {
	doc := map[string]any{}
	if strings.TrimSpace(user) != "" {
		if _, err := toml.Decode(user, &doc); err != nil {
			return "", fmt.Errorf("userData is not valid TOML for Bottlerocket: %w", err)
		}
	}
	settings, err := subTable(doc, "settings", "userData")
	if err != nil {
		return "", err
	}
	k8s, err := subTable(settings, "kubernetes", "userData settings")
	if err != nil {
		return "", err
	}
	k8s["cluster-name"] = c.Name
	if c.Endpoint != "" {
		k8s["api-server"] = c.Endpoint
	}
	if c.CA != "" {
		k8s["cluster-certificate"] = c.CA
	}
	if dns := clusterDNS(c, n.Kubelet); dns != "" {
		k8s["cluster-dns-ip"] = dns
	}
	// Labels and taints: the user's are kept, Joist's win per key.
	labels, err := stringTable(k8s, "node-labels")
	if err != nil {
		return "", err
	}
	kept, _ := KubeletLabels(n.Labels)
	for key, v := range kept {
		labels[key] = v
	}
	if len(labels) > 0 {
		k8s["node-labels"] = labels
	}
	taints := map[string]any{}
	if cur, ok := k8s["node-taints"].(map[string]any); ok {
		for key, v := range cur {
			taints[key] = v
		}
	}
	ours := map[string][]string{}
	for _, t := range sortedTaints(n.Taints) {
		ours[t.Key] = append(ours[t.Key], t.Value+":"+string(t.Effect))
	}
	for key, v := range ours {
		taints[key] = v
	}
	if len(taints) > 0 {
		k8s["node-taints"] = taints
	}
	if n.MaxPods > 0 {
		k8s["max-pods"] = n.MaxPods
	}
	if k := n.Kubelet; k != nil {
		for key, m := range map[string]map[string]string{
			"system-reserved": k.SystemReserved, "kube-reserved": k.KubeReserved, "eviction-hard": k.EvictionHard,
		} {
			if len(m) > 0 {
				k8s[key] = m
			}
		}
		// Bottlerocket has no podsPerCore, evictionSoft or soft grace
		// periods (Karpenter ignores them there too).
		if k.EvictionMaxPodGracePeriod != nil {
			k8s["eviction-max-pod-grace-period"] = int64(*k.EvictionMaxPodGracePeriod)
		}
		if k.ImageGCHighThresholdPercent != nil {
			k8s["image-gc-high-threshold-percent"] = strconv.Itoa(int(*k.ImageGCHighThresholdPercent))
		}
		if k.ImageGCLowThresholdPercent != nil {
			k8s["image-gc-low-threshold-percent"] = strconv.Itoa(int(*k.ImageGCLowThresholdPercent))
		}
		if k.CPUCFSQuota != nil {
			k8s["cpu-cfs-quota-enforced"] = *k.CPUCFSQuota
		}
	}
	if strings.EqualFold(n.InstanceStorePolicy, "RAID0") {
		cmds, err := subTable(settings, "bootstrap-commands", "userData settings")
		if err != nil {
			return "", err
		}
		cmds["000-mount-instance-storage"] = map[string]any{
			"commands": [][]string{
				{"apiclient", "ephemeral-storage", "init"},
				{"apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"},
			},
			"mode":      "always",
			"essential": true,
		}
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(doc); err != nil {
		return "", fmt.Errorf("render Bottlerocket settings: %w", err)
	}
	return b.String(), nil
}

// subTable returns doc[key] as a table, creating it when absent.
func subTable(doc map[string]any, key, where string) (map[string]any, error) {
	v, ok := doc[key]
	if !ok {
		t := map[string]any{}
		doc[key] = t
		return t, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: %s is a %T, not a table", where, key, v)
	}
	return t, nil
}

func stringTable(doc map[string]any, key string) (map[string]any, error) {
	t, err := subTable(doc, key, "userData settings.kubernetes")
	if err != nil {
		return nil, err
	}
	for k, v := range t {
		if _, ok := v.(string); !ok {
			return nil, fmt.Errorf("userData settings.kubernetes.%s.%s is a %T, not a string", key, k, v)
		}
	}
	delete(doc, key) // re-added by the caller when non-empty
	return t, nil
}

// mimePart is one part of a user-data archive: its headers (Content-Type
// first) and body, kept byte for byte from the user's archive.
type mimePart struct {
	contentType string
	// headers are the other header lines, already formatted.
	headers []string
	body    string
}

// isMIME tells whether user data is a MIME document rather than a bare
// script or config (the test Karpenter uses too).
func isMIME(s string) bool {
	t := strings.TrimSpace(s)
	return strings.HasPrefix(t, "MIME-Version:") || strings.HasPrefix(t, "Content-Type:")
}

// userParts splits the user's data into MIME parts: a multipart archive's
// parts as they are, a single-part MIME document as one part, anything
// else as one part whose type is guessed: a shell script, or (for
// AL2023, when it is a YAML object) a NodeConfig.
func userParts(user string, nodeConfigAllowed bool) ([]mimePart, error) {
	if strings.TrimSpace(user) == "" {
		return nil, nil
	}
	if !isMIME(user) {
		ct := ContentTypeShell
		if nodeConfigAllowed && !strings.HasPrefix(strings.TrimSpace(user), "#!") {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(user), &obj); err == nil && obj != nil {
				ct = ContentTypeNodeConfig
			}
		}
		return []mimePart{{contentType: ct, body: user}}, nil
	}
	msg, err := mail.ReadMessage(strings.NewReader(strings.TrimLeft(user, " \t\r\n")))
	if err != nil {
		return nil, fmt.Errorf("userData looks like MIME but its headers do not parse: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("userData MIME Content-Type: %w", err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		body, err := io.ReadAll(msg.Body)
		if err != nil {
			return nil, fmt.Errorf("userData MIME body: %w", err)
		}
		return []mimePart{{contentType: msg.Header.Get("Content-Type"), headers: otherHeaders(msg.Header), body: string(body)}}, nil
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var parts []mimePart
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("userData MIME part %d: %w", len(parts)+1, err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("userData MIME part %d: %w", len(parts)+1, err)
		}
		ct := p.Header.Get("Content-Type")
		if ct == "" {
			ct = "text/plain"
		}
		parts = append(parts, mimePart{contentType: ct, headers: otherHeaders(mail.Header(p.Header)), body: strings.ReplaceAll(string(body), "\r\n", "\n")})
	}
	return parts, nil
}

// otherHeaders formats a part's headers other than Content-Type (and the
// archive-level MIME-Version), sorted for a stable rendering.
func otherHeaders(h mail.Header) []string {
	var out []string
	for k, vs := range h {
		if strings.EqualFold(k, "Content-Type") || strings.EqualFold(k, "MIME-Version") {
			continue
		}
		for _, v := range vs {
			out = append(out, k+": "+v)
		}
	}
	sort.Strings(out)
	return out
}

// writeMIME renders parts as a multipart/mixed archive with LF line
// endings, as cloud-init and nodeadm read it.
func writeMIME(parts []mimePart) string {
	boundary := mimeBoundary
	for conflict := true; conflict; {
		conflict = false
		for _, p := range parts {
			if strings.Contains(p.body, "--"+boundary) {
				boundary += "JOIST//"
				conflict = true
				break
			}
		}
	}
	var b strings.Builder
	b.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" + boundary + "\"\n\n")
	for _, p := range parts {
		b.WriteString("--" + boundary + "\nContent-Type: " + p.contentType + "\n")
		for _, h := range p.headers {
			b.WriteString(h + "\n")
		}
		b.WriteString("\n" + p.body)
		if !strings.HasSuffix(p.body, "\n") {
			b.WriteString("\n")
		}
	}
	b.WriteString("--" + boundary + "--\n")
	return b.String()
}
