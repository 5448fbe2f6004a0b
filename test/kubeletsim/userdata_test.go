package kubeletsim

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestParseUserDataWindows reads Start-EKSBootstrap.ps1 calls: the one
// Karpenter v1.15 writes (its flags quoted, an empty taint list), and
// refuses PowerShell user data a Windows node could not join with.
func TestParseUserDataWindows(t *testing.T) {
	const call = "[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n& $EKSBootstrapScriptFile "
	karpenter := "<powershell>\n" + call + `-EKSClusterName 'c' -APIServerEndpoint 'https://x' -Base64ClusterCA 'Q0E=' -KubeletExtraArgs '--node-labels="karpenter.sh/nodepool=win,team=a" --register-with-taints="os=windows:NoSchedule" --max-pods=110 --pods-per-core=4' -DNSClusterIP '10.100.0.10'` + "\n</powershell>"
	reg, err := ParseUserData(b64(karpenter))
	if err != nil {
		t.Fatal(err)
	}
	want := &Registration{Format: "Windows", Labels: map[string]string{"karpenter.sh/nodepool": "win", "team": "a"},
		Taints:  []corev1.Taint{{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoSchedule}},
		MaxPods: 110, ClusterName: "c", APIServerEndpoint: "https://x", CertificateAuthority: "Q0E=", ClusterDNS: "10.100.0.10",
		KubeletFlags: []string{"--pods-per-core=4"}}
	if !reflect.DeepEqual(reg, want) {
		t.Errorf("read %+v\nwant %+v", reg, want)
	}
	quoted := "<powershell>\n" + call + `-EKSClusterName 'it''s' -KubeletExtraArgs '--register-with-taints=""'` + "\n</powershell>"
	if reg, err := ParseUserData(b64(quoted)); err != nil || reg.ClusterName != "it's" || len(reg.Taints) != 0 {
		t.Errorf("'' in a verbatim string, empty taints: %+v, %v", reg, err)
	}
	for _, c := range []struct{ name, data, wantErr string }{
		{"no closing tag", "<powershell>\n" + call + "-EKSClusterName 'c'\n", "</powershell>"},
		{"no bootstrap call", "<powershell>\nWrite-Host hi\n</powershell>", "no Start-EKSBootstrap.ps1 call"},
		{"the call without the script", "<powershell>\n& $EKSBootstrapScriptFile -EKSClusterName 'c'\n</powershell>", "no Start-EKSBootstrap.ps1 call"},
		{"no cluster name", "<powershell>\n" + call + "-APIServerEndpoint 'https://x'\n</powershell>", "without -EKSClusterName"},
		{"an unknown parameter", "<powershell>\n" + call + "-EKSClusterName 'c' -Bogus 'x'\n</powershell>", "no parameter -Bogus"},
		{"an unterminated string", "<powershell>\n" + call + "-EKSClusterName 'c\n</powershell>", "unterminated"},
		{"a label the kubelet refuses", "<powershell>\n" + call + "-EKSClusterName 'c' -KubeletExtraArgs '--node-labels=example.kubernetes.io/x=y'\n</powershell>", "kubelet would not start"},
	} {
		if _, err := ParseUserData(b64(c.data)); err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.wantErr)
		}
	}
}
