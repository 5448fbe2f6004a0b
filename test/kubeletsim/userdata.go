package kubeletsim

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Registration is what a node's bootstrap tells its kubelet: the labels
// and taints it registers with and its max pods, and the cluster it
// joins. The simulator reads it back from the user data, as a real node
// would act on it, and refuses what a real kubelet refuses.
type Registration struct {
	// Format is how the node was told: "AL2" (bootstrap.sh in a MIME
	// archive), "AL2023" (NodeConfig in a MIME archive), "Bottlerocket"
	// (TOML) or "Windows" (Start-EKSBootstrap.ps1 in a PowerShell block).
	Format  string
	Labels  map[string]string
	Taints  []corev1.Taint
	MaxPods int64
	// Cluster details the bootstrap names.
	ClusterName          string
	APIServerEndpoint    string
	CertificateAuthority string
	// ServiceCIDR is AL2023's spec.cluster.cidr.
	ServiceCIDR string
	// ClusterDNS is AL2's --dns-cluster-ip, Windows' -DNSClusterIP.
	ClusterDNS string
	// KubeletFlags are the kubelet flags other than labels, taints and max
	// pods (AL2's --kubelet-extra-args, AL2023's kubelet.flags, Windows'
	// -KubeletExtraArgs).
	KubeletFlags []string
	// KubeletConfig is AL2023's merged kubelet.config.
	KubeletConfig map[string]any
	// Parts are the content types of a MIME archive's parts, in order.
	Parts []string
	// Volumes are the launch template's EBS volumes (set by the
	// simulator, not read from the user data): the node's ephemeral
	// storage is the family's ephemeral device's.
	Volumes []model.BlockDeviceMapping
}

// ParseUserData reads base64 user data in any of the formats Joist writes:
// a MIME archive with an AL2 bootstrap.sh script or AL2023 NodeConfigs
// (merged in order, later ones winning, as nodeadm does), Bottlerocket
// TOML, or a Windows <powershell> block running Start-EKSBootstrap.ps1.
// It fails when there is no bootstrap to read, and when the labels are
// ones a kubelet refuses to start with.
func ParseUserData(b64 string) (*Registration, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("user data is not base64: %w", err)
	}
	s := string(raw)
	var reg *Registration
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "MIME-Version:") || strings.HasPrefix(t, "Content-Type:") {
		reg, err = parseMIME(t)
	} else if strings.HasPrefix(t, "<powershell>") {
		reg, err = parseWindows(t)
	} else {
		reg, err = parseBottlerocket(s)
	}
	if err != nil {
		return nil, err
	}
	if err := validateKubeletLabels(reg.Labels); err != nil {
		return nil, err
	}
	return reg, nil
}

func parseMIME(s string) (*Registration, error) {
	msg, err := mail.ReadMessage(strings.NewReader(s))
	if err != nil {
		return nil, fmt.Errorf("read MIME: %w", err)
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("MIME content type: %w", err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var reg *Registration
	var parts []string
	var configs [][]byte
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("MIME part: %w", err)
		}
		body, _ := io.ReadAll(part)
		ct := part.Header.Get("Content-Type")
		parts = append(parts, ct)
		switch {
		case strings.HasPrefix(ct, "application/node.eks.aws"):
			configs = append(configs, body)
		case strings.HasPrefix(ct, "text/x-shellscript") && strings.Contains(string(body), "/etc/eks/bootstrap.sh"):
			r, err := parseBootstrap(string(body))
			if err != nil {
				return nil, err
			}
			reg = r
		}
	}
	if len(configs) > 0 {
		r, err := parseNodeConfigs(configs)
		if err != nil {
			return nil, err
		}
		reg = r
	}
	if reg == nil {
		return nil, fmt.Errorf("no bootstrap part in MIME user data (parts: %s)", strings.Join(parts, ", "))
	}
	reg.Parts = parts
	return reg, nil
}

// shellWords splits a shell command line into words, honouring single and
// double quotes, backslash escapes and backslash-newline continuations.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++ // continuation
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated double quote in %q", s)
			}
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// parseBootstrap reads the /etc/eks/bootstrap.sh command of an AL2 script,
// continuation lines included.
func parseBootstrap(script string) (*Registration, error) {
	logical := strings.Split(strings.ReplaceAll(script, "\\\n", " "), "\n")
	for _, line := range logical {
		if !strings.Contains(line, "/etc/eks/bootstrap.sh") {
			continue
		}
		words, err := shellWords(line)
		if err != nil {
			return nil, fmt.Errorf("bootstrap.sh line: %w", err)
		}
		reg := &Registration{Format: "AL2", Labels: map[string]string{}}
		start := -1
		for i, w := range words {
			if w == "/etc/eks/bootstrap.sh" {
				start = i + 1
				break
			}
		}
		if start < 0 || start >= len(words) {
			return nil, fmt.Errorf("bootstrap.sh without a cluster name")
		}
		reg.ClusterName = words[start]
		for i := start + 1; i < len(words); i++ {
			flag := words[i]
			if !strings.HasPrefix(flag, "--") || i+1 >= len(words) {
				continue
			}
			i++
			v := words[i]
			switch flag {
			case "--apiserver-endpoint":
				reg.APIServerEndpoint = v
			case "--b64-cluster-ca":
				reg.CertificateAuthority = v
			case "--dns-cluster-ip":
				reg.ClusterDNS = v
			case "--kubelet-extra-args":
				if err := reg.extraArgs("--kubelet-extra-args", v); err != nil {
					return nil, err
				}
			}
		}
		return reg, nil
	}
	return nil, fmt.Errorf("no /etc/eks/bootstrap.sh command in the script")
}

func (r *Registration) flag(f string) error {
	k, v, _ := strings.Cut(f, "=")
	v = strings.Trim(v, `"`)
	switch k {
	case "--node-labels":
		for _, kv := range splitList(v) {
			lk, lv, _ := strings.Cut(kv, "=")
			r.Labels[lk] = lv
		}
	case "--register-with-taints":
		for _, t := range splitList(v) {
			taint, err := parseTaint(t)
			if err != nil {
				return err
			}
			r.Taints = append(r.Taints, taint)
		}
	case "--max-pods":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("--max-pods %q: %w", v, err)
		}
		r.MaxPods = n
	default:
		r.KubeletFlags = append(r.KubeletFlags, f)
	}
	return nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func parseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("taint %q has no effect", s)
	}
	k, v, _ := strings.Cut(kv, "=")
	switch corev1.TaintEffect(effect) {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return corev1.Taint{}, fmt.Errorf("taint %q: unknown effect %q", s, effect)
	}
	return corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)}, nil
}

// parseNodeConfigs merges AL2023 NodeConfig documents in order, as nodeadm
// does: later kubelet config keys and cluster details win, flags add up.
func parseNodeConfigs(docs [][]byte) (*Registration, error) {
	reg := &Registration{Format: "AL2023", Labels: map[string]string{}, KubeletConfig: map[string]any{}}
	var flags []string
	for _, b := range docs {
		for _, doc := range strings.Split(string(b), "\n---") {
			var probe map[string]any
			if err := yaml.Unmarshal([]byte(doc), &probe); err != nil {
				return nil, fmt.Errorf("NodeConfig: %w", err)
			}
			if len(probe) == 0 {
				continue // only comments or separators
			}
			var nc struct {
				Kind string `json:"kind"`
				Spec struct {
					Cluster struct {
						Name                 string `json:"name"`
						APIServerEndpoint    string `json:"apiServerEndpoint"`
						CertificateAuthority string `json:"certificateAuthority"`
						CIDR                 string `json:"cidr"`
					} `json:"cluster"`
					Kubelet struct {
						Config map[string]any `json:"config"`
						Flags  []string       `json:"flags"`
					} `json:"kubelet"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal([]byte(doc), &nc); err != nil {
				return nil, fmt.Errorf("NodeConfig: %w", err)
			}
			if nc.Kind != "NodeConfig" {
				return nil, fmt.Errorf("NodeConfig part has kind %q", nc.Kind)
			}
			c := nc.Spec.Cluster
			if c.Name != "" {
				reg.ClusterName = c.Name
			}
			if c.APIServerEndpoint != "" {
				reg.APIServerEndpoint = c.APIServerEndpoint
			}
			if c.CertificateAuthority != "" {
				reg.CertificateAuthority = c.CertificateAuthority
			}
			if c.CIDR != "" {
				reg.ServiceCIDR = c.CIDR
			}
			for k, v := range nc.Spec.Kubelet.Config {
				reg.KubeletConfig[k] = v
			}
			flags = append(flags, nc.Spec.Kubelet.Flags...)
		}
	}
	for _, f := range flags {
		if err := reg.flag(f); err != nil {
			return nil, err
		}
	}
	if mp, ok := reg.KubeletConfig["maxPods"]; ok {
		n, ok := mp.(float64)
		if !ok {
			return nil, fmt.Errorf("NodeConfig kubelet.config.maxPods is %T, not a number", mp)
		}
		reg.MaxPods = int64(n)
	}
	if ts, ok := reg.KubeletConfig["registerWithTaints"]; ok {
		b, _ := yaml.Marshal(ts)
		var taints []corev1.Taint
		if err := yaml.UnmarshalStrict(b, &taints); err != nil {
			return nil, fmt.Errorf("NodeConfig kubelet.config.registerWithTaints: %w", err)
		}
		reg.Taints = taints
	}
	if reg.ClusterName == "" || reg.APIServerEndpoint == "" || reg.CertificateAuthority == "" || reg.ServiceCIDR == "" {
		return nil, fmt.Errorf("NodeConfig lacks cluster details nodeadm needs (name %q, apiServerEndpoint %q, certificateAuthority set %t, cidr %q)",
			reg.ClusterName, reg.APIServerEndpoint, reg.CertificateAuthority != "", reg.ServiceCIDR)
	}
	return reg, nil
}

func parseBottlerocket(s string) (*Registration, error) {
	var doc struct {
		Settings struct {
			Kubernetes struct {
				ClusterName        string              `toml:"cluster-name"`
				APIServer          string              `toml:"api-server"`
				ClusterCertificate string              `toml:"cluster-certificate"`
				NodeLabels         map[string]string   `toml:"node-labels"`
				NodeTaints         map[string][]string `toml:"node-taints"`
				MaxPods            int64               `toml:"max-pods"`
			} `toml:"kubernetes"`
		} `toml:"settings"`
	}
	if _, err := toml.Decode(s, &doc); err != nil {
		return nil, fmt.Errorf("decode Bottlerocket TOML: %w", err)
	}
	k := doc.Settings.Kubernetes
	if k.ClusterName == "" {
		return nil, errors.New("the Bottlerocket settings lack settings.kubernetes.cluster-name")
	}
	reg := &Registration{Format: "Bottlerocket", Labels: map[string]string{}, MaxPods: k.MaxPods,
		ClusterName: k.ClusterName, APIServerEndpoint: k.APIServer, CertificateAuthority: k.ClusterCertificate}
	for key, v := range k.NodeLabels {
		reg.Labels[key] = v
	}
	keys := make([]string, 0, len(k.NodeTaints))
	for key := range k.NodeTaints {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		for _, ve := range k.NodeTaints[key] {
			v, effect, _ := strings.Cut(ve, ":")
			reg.Taints = append(reg.Taints, corev1.Taint{Key: key, Value: v, Effect: corev1.TaintEffect(effect)})
		}
	}
	return reg, nil
}

// kubeletLabels are the kubernetes.io labels a kubelet may set on its own
// node (k8s.io/kubernetes/pkg/kubelet/apis).
var kubeletLabels = map[string]bool{
	corev1.LabelHostname: true, corev1.LabelTopologyZone: true, corev1.LabelTopologyRegion: true,
	corev1.LabelFailureDomainBetaZone: true, corev1.LabelFailureDomainBetaRegion: true,
	corev1.LabelInstanceType: true, corev1.LabelInstanceTypeStable: true,
	corev1.LabelOSStable: true, corev1.LabelArchStable: true,
	"beta.kubernetes.io/os": true, "beta.kubernetes.io/arch": true,
}

// validateKubeletLabels refuses what a kubelet refuses to start with:
// malformed labels, and labels in the kubernetes.io or k8s.io namespaces
// other than its own and the node.kubernetes.io and kubelet.kubernetes.io
// namespaces.
func validateKubeletLabels(labels map[string]string) error {
	var bad []string
	for k, v := range labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("invalid node label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("invalid node label %s=%q: %s", k, v, strings.Join(errs, "; "))
		}
		ns, _, ok := strings.Cut(k, "/")
		if !ok || kubeletLabels[k] {
			continue
		}
		in := func(d string) bool { return ns == d || strings.HasSuffix(ns, "."+d) }
		if (in("kubernetes.io") || in("k8s.io")) && !in("kubelet.kubernetes.io") && !in("node.kubernetes.io") {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: %v (the kubelet would not start)", bad)
	}
	return nil
}

// eksBootstrapScript is where the EKS Windows AMIs keep their bootstrap.
const eksBootstrapScript = `$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1`

// parseWindows reads the Start-EKSBootstrap.ps1 call of a Windows node's
// PowerShell user data, as EC2Launch runs it: one <powershell> block in
// which a variable is set to the EKS bootstrap script and then invoked
// with -EKSClusterName and the other parameters.
func parseWindows(s string) (*Registration, error) {
	body, ok := strings.CutSuffix(strings.TrimPrefix(s, "<powershell>"), "</powershell>")
	if !ok {
		return nil, errors.New("PowerShell user data without its closing </powershell>")
	}
	script := ""
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if v, rest, ok := strings.Cut(line, "="); ok && strings.HasPrefix(v, "[string]$") && strings.Trim(strings.TrimSpace(rest), `"`) == eksBootstrapScript {
			script = strings.TrimSpace(strings.TrimPrefix(v, "[string]"))
			continue
		}
		if script == "" || !strings.HasPrefix(line, "& "+script+" ") {
			continue
		}
		words, err := psWords(strings.TrimPrefix(line, "& "+script+" "))
		if err != nil {
			return nil, fmt.Errorf("Start-EKSBootstrap.ps1 call: %w", err)
		}
		reg := &Registration{Format: "Windows", Labels: map[string]string{}}
		for i := 0; i < len(words); i += 2 {
			if !strings.HasPrefix(words[i], "-") || i+1 >= len(words) {
				return nil, fmt.Errorf("Start-EKSBootstrap.ps1 call: %q is not a parameter with a value", words[i])
			}
			v := words[i+1]
			switch words[i] {
			case "-EKSClusterName":
				reg.ClusterName = v
			case "-APIServerEndpoint":
				reg.APIServerEndpoint = v
			case "-Base64ClusterCA":
				reg.CertificateAuthority = v
			case "-DNSClusterIP":
				reg.ClusterDNS = v
			case "-KubeletExtraArgs":
				if err := reg.extraArgs("-KubeletExtraArgs", v); err != nil {
					return nil, err
				}
			default:
				return nil, fmt.Errorf("Start-EKSBootstrap.ps1 has no parameter %s", words[i])
			}
		}
		if reg.ClusterName == "" {
			return nil, errors.New("Start-EKSBootstrap.ps1 is called without -EKSClusterName")
		}
		return reg, nil
	}
	return nil, errors.New("no Start-EKSBootstrap.ps1 call in the PowerShell user data")
}

// psWords splits a PowerShell argument list into words: single-quoted
// strings are verbatim (a doubled quote is one quote), other words end
// at a space.
func psWords(s string) ([]string, error) {
	var words []string
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '\'':
			var w strings.Builder
			i++
			for {
				if i >= len(s) {
					return nil, fmt.Errorf("unterminated single quote in %q", s)
				}
				if s[i] == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						w.WriteByte('\'')
						i += 2
						continue
					}
					i++
					break
				}
				w.WriteByte(s[i])
				i++
			}
			words = append(words, w.String())
		default:
			j := strings.IndexAny(s[i:], " \t")
			if j < 0 {
				j = len(s) - i
			}
			words = append(words, s[i:i+j])
			i += j
		}
	}
	return words, nil
}

// extraArgs reads the kubelet flags a bootstrap passes through (AL2's
// --kubelet-extra-args, Windows' -KubeletExtraArgs), named param.
func (reg *Registration) extraArgs(param, v string) error {
	args, err := shellWords(v)
	if err != nil {
		return fmt.Errorf("%s: %w", param, err)
	}
	for _, f := range args {
		if err := reg.flag(f); err != nil {
			return err
		}
	}
	return nil
}
