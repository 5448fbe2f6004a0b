package kubeletsim

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Registration is what a node's bootstrap tells its kubelet: the labels
// and taints it registers with and its max pods. The simulator reads it
// back from the user data, as a real node would act on it.
type Registration struct {
	Labels  map[string]string
	Taints  []corev1.Taint
	MaxPods int64
}

// ParseUserData reads base64 user data in any of the formats Joist writes:
// a MIME archive with an AL2 bootstrap.sh script or an AL2023 NodeConfig,
// or Bottlerocket TOML.
func ParseUserData(b64 string) (*Registration, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("user data is not base64: %w", err)
	}
	s := string(raw)
	if strings.HasPrefix(s, "MIME-Version:") {
		return parseMIME(s)
	}
	return parseBottlerocket(s)
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
		switch {
		case strings.HasPrefix(ct, "application/node.eks.aws"):
			r, err := parseNodeConfig(body)
			if err != nil {
				return nil, err
			}
			reg = r
		case strings.HasPrefix(ct, "text/x-shellscript") && strings.Contains(string(body), "/etc/eks/bootstrap.sh"):
			r, err := parseBootstrap(string(body))
			if err != nil {
				return nil, err
			}
			reg = r
		}
	}
	if reg == nil {
		return nil, fmt.Errorf("no bootstrap part in MIME user data")
	}
	return reg, nil
}

var extraArgs = regexp.MustCompile(`--kubelet-extra-args '([^']*)'`)

func parseBootstrap(script string) (*Registration, error) {
	reg := &Registration{Labels: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(script))
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "/etc/eks/bootstrap.sh") {
			continue
		}
		m := extraArgs.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, f := range strings.Fields(m[1]) {
			if err := reg.flag(f); err != nil {
				return nil, err
			}
		}
	}
	return reg, nil
}

func (r *Registration) flag(f string) error {
	k, v, _ := strings.Cut(f, "=")
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
	return corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)}, nil
}

func parseNodeConfig(b []byte) (*Registration, error) {
	var nc struct {
		Kind string `json:"kind"`
		Spec struct {
			Kubelet struct {
				Config struct {
					MaxPods            int64          `json:"maxPods"`
					RegisterWithTaints []corev1.Taint `json:"registerWithTaints"`
				} `json:"config"`
				Flags []string `json:"flags"`
			} `json:"kubelet"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &nc); err != nil {
		return nil, fmt.Errorf("NodeConfig: %w", err)
	}
	if nc.Kind != "NodeConfig" {
		return nil, fmt.Errorf("NodeConfig part has kind %q", nc.Kind)
	}
	reg := &Registration{Labels: map[string]string{}, Taints: nc.Spec.Kubelet.Config.RegisterWithTaints, MaxPods: nc.Spec.Kubelet.Config.MaxPods}
	for _, f := range nc.Spec.Kubelet.Flags {
		if err := reg.flag(f); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

func parseBottlerocket(s string) (*Registration, error) {
	var doc struct {
		Settings struct {
			Kubernetes struct {
				NodeLabels map[string]string   `toml:"node-labels"`
				NodeTaints map[string][]string `toml:"node-taints"`
				MaxPods    int64               `toml:"max-pods"`
			} `toml:"kubernetes"`
		} `toml:"settings"`
	}
	if _, err := toml.Decode(s, &doc); err != nil {
		return nil, fmt.Errorf("Bottlerocket TOML: %w", err)
	}
	k := doc.Settings.Kubernetes
	reg := &Registration{Labels: map[string]string{}, MaxPods: k.MaxPods}
	for key, v := range k.NodeLabels {
		reg.Labels[key] = v
	}
	for key, vals := range k.NodeTaints {
		for _, ve := range vals {
			v, effect, _ := strings.Cut(ve, ":")
			reg.Taints = append(reg.Taints, corev1.Taint{Key: key, Value: v, Effect: corev1.TaintEffect(effect)})
		}
	}
	return reg, nil
}
