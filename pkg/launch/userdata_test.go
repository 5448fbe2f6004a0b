package launch

import (
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/test/kubeletsim"
)

var update = flag.Bool("update", false, "rewrite the golden files of the user-data tests")

func ptr[T any](v T) *T { return &v }

var goldenCluster = Cluster{
	Name: "hoon-cluster", Endpoint: "https://ABCD.gr7.ap-northeast-2.eks.amazonaws.com",
	CA: "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==", Version: "1.32", ServiceCIDR: "10.100.0.0/16",
}

// goldenNode carries labels the kubelet must not be given (its own zone
// label, a kubernetes.io label) next to the pool's.
func goldenNode() Node {
	return Node{
		Labels: map[string]string{
			"team": "web", "karpenter.sh/nodepool": "web", "karpenter.sh/capacity-type": "on-demand",
			"topology.kubernetes.io/zone": "ap-northeast-2a", "example.kubernetes.io/forbidden": "x", "node.kubernetes.io/role": "web",
		},
		Taints: []corev1.Taint{
			taint("dedicated", "web", corev1.TaintEffectNoSchedule),
			taint("example.com/booting", "", corev1.TaintEffectNoExecute),
		},
		MaxPods: 35,
		Kubelet: &model.Kubelet{
			SystemReserved:              map[string]string{"cpu": "100m", "memory": "100Mi"},
			KubeReserved:                map[string]string{"cpu": "200m"},
			EvictionHard:                map[string]string{"memory.available": "5%"},
			ImageGCHighThresholdPercent: ptr(int32(85)), CPUCFSQuota: ptr(false),
		},
	}
}

// wantLabels are goldenNode's labels a kubelet accepts.
var wantLabels = map[string]string{
	"team": "web", "karpenter.sh/nodepool": "web", "karpenter.sh/capacity-type": "on-demand", "node.kubernetes.io/role": "web",
}

var wantTaints = []corev1.Taint{
	taint("dedicated", "web", corev1.TaintEffectNoSchedule),
	taint("example.com/booting", "", corev1.TaintEffectNoExecute),
}

const userShell = "#!/bin/bash\necho 'custom setup' > /etc/motd\n"

const userMIME = "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"==BOUNDARY==\"\r\n\r\n" +
	"--==BOUNDARY==\r\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\r\n\r\n#!/bin/bash\necho first\r\n" +
	"--==BOUNDARY==\r\nContent-Type: text/cloud-config; charset=\"us-ascii\"\r\n\r\npackages:\n- jq\r\n" +
	"--==BOUNDARY==--\r\n"

const userNodeConfig = `apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 7
      shutdownGracePeriod: 30s
    flags:
    - --v=4
`

const userTOML = `[settings.kubernetes]
cluster-name = "someone-else"
allowed-unsafe-sysctls = ["net.core.somaxconn"]

[settings.kubernetes.node-labels]
"user.example.com/kept" = "yes"
team = "overridden"

[settings.host-containers.admin]
enabled = true
`

const userPowerShell = "Set-TimeZone -Id 'UTC'\n"

// TestUserDataGoldenAndParsedBack renders each family's user data, compares
// it with its golden file (go test -run TestUserData ./pkg/launch -update
// rewrites them) and reads it back the way the simulated kubelet does:
// the node must register with exactly the pool's acceptable labels and its
// taints, join the right cluster, and keep the user's own parts in order.
func TestUserDataGoldenAndParsedBack(t *testing.T) {
	tests := []struct {
		name       string
		family     string
		custom     *string
		wantFormat string
		wantParts  []string
		wantMax    int64
		check      func(t *testing.T, raw string, reg *kubeletsim.Registration)
	}{
		{name: "al2", family: FamilyAL2, wantFormat: "AL2", wantParts: []string{ContentTypeShell}, wantMax: 35,
			check: func(t *testing.T, raw string, reg *kubeletsim.Registration) {
				for _, want := range []string{"--use-max-pods false", "--system-reserved=cpu=100m,memory=100Mi", "--eviction-hard=memory.available<5%", "--image-gc-high-threshold=85", "--cpu-cfs-quota=false"} {
					if !strings.Contains(raw, want) {
						t.Errorf("bootstrap lacks %q", want)
					}
				}
			}},
		{name: "al2-with-shell", family: FamilyAL2, custom: ptr(userShell), wantFormat: "AL2", wantParts: []string{ContentTypeShell, ContentTypeShell}, wantMax: 35,
			check: func(t *testing.T, raw string, _ *kubeletsim.Registration) {
				if strings.Index(raw, "custom setup") > strings.Index(raw, "/etc/eks/bootstrap.sh") {
					t.Error("the user's script must run before bootstrap.sh")
				}
			}},
		{name: "al2-with-mime", family: FamilyAL2, custom: ptr(userMIME), wantFormat: "AL2", wantMax: 35,
			wantParts: []string{ContentTypeShell, `text/cloud-config; charset="us-ascii"`, ContentTypeShell}},
		{name: "al2023", family: FamilyAL2023, wantFormat: "AL2023", wantParts: []string{ContentTypeNodeConfig}, wantMax: 35,
			check: func(t *testing.T, _ string, reg *kubeletsim.Registration) {
				if reg.ServiceCIDR != "10.100.0.0/16" {
					t.Errorf("cidr = %q", reg.ServiceCIDR)
				}
				want := map[string]any{"cpu": "100m", "memory": "100Mi"}
				if !reflect.DeepEqual(reg.KubeletConfig["systemReserved"], want) {
					t.Errorf("systemReserved = %v, want %v", reg.KubeletConfig["systemReserved"], want)
				}
				if reg.KubeletConfig["cpuCFSQuota"] != false || reg.KubeletConfig["imageGCHighThresholdPercent"] != float64(85) {
					t.Errorf("kubelet config %v lacks cpuCFSQuota=false, imageGCHighThresholdPercent=85", reg.KubeletConfig)
				}
			}},
		{name: "al2023-with-nodeconfig", family: FamilyAL2023, custom: ptr(userNodeConfig), wantFormat: "AL2023", wantParts: []string{ContentTypeNodeConfig, ContentTypeNodeConfig}, wantMax: 35,
			check: func(t *testing.T, _ string, reg *kubeletsim.Registration) {
				// The user's settings are kept; where they collide with
				// Joist's (maxPods), Joist's NodeConfig, merged last, wins.
				if reg.KubeletConfig["shutdownGracePeriod"] != "30s" {
					t.Errorf("the user's shutdownGracePeriod was lost: %v", reg.KubeletConfig)
				}
				if !reflect.DeepEqual(reg.KubeletFlags, []string{"--v=4"}) {
					t.Errorf("flags = %v, want the user's --v=4", reg.KubeletFlags)
				}
			}},
		{name: "al2023-with-mime", family: FamilyAL2023, custom: ptr(userMIME), wantFormat: "AL2023", wantMax: 35,
			wantParts: []string{ContentTypeShell, `text/cloud-config; charset="us-ascii"`, ContentTypeNodeConfig}},
		{name: "al2023-with-shell", family: FamilyAL2023, custom: ptr(userShell), wantFormat: "AL2023", wantParts: []string{ContentTypeShell, ContentTypeNodeConfig}, wantMax: 35},
		{name: "bottlerocket", family: FamilyBottlerocket, wantFormat: "Bottlerocket", wantMax: 35},
		{name: "windows2022", family: "Windows2022", wantFormat: "Windows", wantMax: 35,
			check: func(t *testing.T, raw string, reg *kubeletsim.Registration) {
				want := []string{"--system-reserved=cpu=100m,memory=100Mi", "--kube-reserved=cpu=200m", "--eviction-hard=memory.available<5%", "--image-gc-high-threshold=85", "--cpu-cfs-quota=false"}
				if !reflect.DeepEqual(reg.KubeletFlags, want) {
					t.Errorf("kubelet flags %v, want %v", reg.KubeletFlags, want)
				}
			}},
		{name: "windows2019-with-powershell", family: "Windows2019", custom: ptr(userPowerShell), wantFormat: "Windows", wantMax: 35,
			check: func(t *testing.T, raw string, _ *kubeletsim.Registration) {
				if strings.Index(raw, "Set-TimeZone") > strings.Index(raw, "Start-EKSBootstrap.ps1") {
					t.Error("the user's lines must run before Start-EKSBootstrap.ps1")
				}
			}},
		{name: "bottlerocket-with-settings", family: FamilyBottlerocket, custom: ptr(userTOML), wantFormat: "Bottlerocket", wantMax: 35,
			check: func(t *testing.T, raw string, reg *kubeletsim.Registration) {
				var doc map[string]any
				if _, err := toml.Decode(raw, &doc); err != nil {
					t.Fatal(err)
				}
				k8s := doc["settings"].(map[string]any)["kubernetes"].(map[string]any)
				if !reflect.DeepEqual(k8s["allowed-unsafe-sysctls"], []any{"net.core.somaxconn"}) {
					t.Errorf("the user's allowed-unsafe-sysctls were lost: %v", k8s)
				}
				if _, ok := doc["settings"].(map[string]any)["host-containers"]; !ok {
					t.Error("the user's host-containers settings were lost")
				}
				if reg.Labels["user.example.com/kept"] != "yes" {
					t.Errorf("the user's own node label was lost: %v", reg.Labels)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b64, err := UserData(tc.family, goldenCluster, goldenNode(), tc.custom)
			if err != nil {
				t.Fatal(err)
			}
			rawB, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				t.Fatal(err)
			}
			raw := string(rawB)
			golden(t, filepath.Join("testdata", "userdata", tc.name+".golden"), raw)

			again, _ := UserData(tc.family, goldenCluster, goldenNode(), tc.custom)
			if again != b64 {
				t.Error("rendering the same node twice gave different user data (templates would multiply)")
			}

			reg, err := kubeletsim.ParseUserData(b64)
			if err != nil {
				t.Fatalf("the kubelet cannot read it: %v\n%s", err, raw)
			}
			if reg.Format != tc.wantFormat {
				t.Errorf("format = %s, want %s", reg.Format, tc.wantFormat)
			}
			wl := wantLabels
			if tc.name == "bottlerocket-with-settings" {
				wl = map[string]string{"user.example.com/kept": "yes"}
				for k, v := range wantLabels {
					wl[k] = v // Joist's team=web wins over the user's team=overridden
				}
			}
			if !reflect.DeepEqual(reg.Labels, wl) {
				t.Errorf("labels = %v, want %v", reg.Labels, wl)
			}
			if !reflect.DeepEqual(reg.Taints, wantTaints) {
				t.Errorf("taints = %v, want %v", reg.Taints, wantTaints)
			}
			if reg.MaxPods != tc.wantMax {
				t.Errorf("maxPods = %d, want %d", reg.MaxPods, tc.wantMax)
			}
			if reg.ClusterName != goldenCluster.Name || reg.APIServerEndpoint != goldenCluster.Endpoint || reg.CertificateAuthority != goldenCluster.CA {
				t.Errorf("joins %q at %q (CA %q), want the cluster's", reg.ClusterName, reg.APIServerEndpoint, reg.CertificateAuthority)
			}
			if tc.wantParts != nil && !reflect.DeepEqual(reg.Parts, tc.wantParts) {
				t.Errorf("MIME parts = %q, want %q", reg.Parts, tc.wantParts)
			}
			if tc.check != nil {
				tc.check(t, raw, reg)
			}
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run with -update if the change is intended):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func TestUserDataCustomFamilyIsTheUsersAsGiven(t *testing.T) {
	b64, err := UserData(FamilyCustom, goldenCluster, goldenNode(), ptr(userShell))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(b64)
	if string(raw) != userShell {
		t.Errorf("Custom user data = %q, want the user's %q", raw, userShell)
	}
	if b64, _ := UserData(FamilyCustom, goldenCluster, goldenNode(), nil); b64 != "" {
		t.Errorf("Custom with no user data = %q, want empty", b64)
	}
}

func TestUserDataRefusesWhatCannotJoin(t *testing.T) {
	noCIDR := goldenCluster
	noCIDR.ServiceCIDR = ""
	tests := []struct {
		name    string
		family  string
		cluster Cluster
		custom  *string
		wantErr string
	}{
		{"AL2023 without the service CIDR", FamilyAL2023, noCIDR, nil, "service CIDR (CLUSTER_SERVICE_CIDR)"},
		{"Bottlerocket user data that is not TOML", FamilyBottlerocket, goldenCluster, ptr("echo hello\n"), "not valid TOML"},
		{"Bottlerocket settings that are not a table", FamilyBottlerocket, goldenCluster, ptr("settings = 3\n"), "settings is a int64, not a table"},
		{"a family Joist cannot bootstrap", "Windows2030", goldenCluster, nil, `amiFamily "Windows2030"`},
		{"MIME user data whose headers are broken", FamilyAL2, goldenCluster, ptr("Content-Type: multipart/mixed; boundary=\"x\nbroken"), "MIME"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := UserData(tc.family, tc.cluster, goldenNode(), tc.custom)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}

func TestKubeletLabelsDropsWhatTheKubeletSetsOrRefuses(t *testing.T) {
	tests := []struct {
		key  string
		kept bool
	}{
		{"team", true},
		{"karpenter.sh/nodepool", true},
		{"karpenter.k8s.aws/instance-family", true},
		{"node.kubernetes.io/role", true},
		{"kubelet.kubernetes.io/thing", true},
		{"example.com/x", true},
		{"topology.kubernetes.io/zone", false},
		{"node.kubernetes.io/instance-type", false},
		{"kubernetes.io/arch", false},
		{"kubernetes.io/hostname", false},
		{"example.kubernetes.io/x", false},
		{"node-restriction.kubernetes.io/x", false},
		{"kops.k8s.io/instancegroup", false},
		{"k8s.io/x", false},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			kept, dropped := KubeletLabels(map[string]string{tc.key: "v"})
			if _, ok := kept[tc.key]; ok != tc.kept {
				t.Errorf("kept = %v, dropped = %v; want kept %t", kept, dropped, tc.kept)
			}
		})
	}
}

func TestUserDataIPv6ClusterDNSAndRAID0(t *testing.T) {
	n := goldenNode()
	n.Kubelet = &model.Kubelet{ClusterDNS: []string{"fd00::a"}}
	n.InstanceStorePolicy = "RAID0"
	for _, tc := range []struct {
		family string
		want   []string
	}{
		{FamilyAL2, []string{"--ip-family ipv6", "--dns-cluster-ip 'fd00::a'", "--local-disks raid0"}},
		{FamilyAL2023, []string{"- fd00::a", "strategy: RAID0"}},
		{FamilyBottlerocket, []string{`cluster-dns-ip = "fd00::a"`, "apiclient", "ephemeral-storage"}},
	} {
		t.Run(tc.family, func(t *testing.T) {
			b64, err := UserData(tc.family, goldenCluster, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := base64.StdEncoding.DecodeString(b64)
			for _, w := range tc.want {
				if !strings.Contains(string(raw), w) {
					t.Errorf("user data lacks %q:\n%s", w, raw)
				}
			}
		})
	}
}

// TestUserDataWindows: the EKS Windows AMIs are bootstrapped as Karpenter
// does it, byte for byte where Joist's kubelet flags are Karpenter's: one
// PowerShell block, the user's lines first, then Start-EKSBootstrap.ps1
// with the cluster, the kubelet flags (labels the kubelet accepts, taints,
// max pods, ...) and the cluster DNS; the simulated kubelet reads it back.
func TestUserDataWindows(t *testing.T) {
	node := Node{
		Labels:  map[string]string{"team": "web", "karpenter.sh/nodepool": "win", "kubernetes.io/os": "windows"},
		Taints:  []corev1.Taint{taint("os", "windows", corev1.TaintEffectNoSchedule)},
		MaxPods: 110,
	}
	withDNS := node
	withDNS.Kubelet = &model.Kubelet{ClusterDNS: []string{"10.100.0.10"}, EvictionHard: map[string]string{"memory.available": "500Mi"}}
	cluster := goldenCluster
	cluster.DNSClusterIP = "172.20.0.10"
	const head = "<powershell>\n"
	const call = "[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n" +
		"& $EKSBootstrapScriptFile -EKSClusterName 'hoon-cluster' -APIServerEndpoint 'https://ABCD.gr7.ap-northeast-2.eks.amazonaws.com' -Base64ClusterCA 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=='"
	for _, tc := range []struct {
		name    string
		family  string
		cluster Cluster
		node    Node
		custom  *string
		want    string
		dns     string
	}{
		{"the cluster's DNS", "Windows2022", cluster, node, nil,
			head + call + " -KubeletExtraArgs '--node-labels=karpenter.sh/nodepool=win,team=web --register-with-taints=os=windows:NoSchedule --max-pods=110' -DNSClusterIP '172.20.0.10'\n</powershell>", "172.20.0.10"},
		{"the kubelet's clusterDNS and eviction, and the user's lines", "Windows2025", cluster, withDNS, ptr("Install-WindowsFeature -Name Containers\n$x = 'it''s'"),
			head + "Install-WindowsFeature -Name Containers\n$x = 'it''s'\n" + call + " -KubeletExtraArgs '--node-labels=karpenter.sh/nodepool=win,team=web --register-with-taints=os=windows:NoSchedule --max-pods=110 --eviction-hard=memory.available<500Mi' -DNSClusterIP '10.100.0.10'\n</powershell>", "10.100.0.10"},
		{"no DNS known", "Windows2019", goldenCluster, node, ptr(""),
			head + call + " -KubeletExtraArgs '--node-labels=karpenter.sh/nodepool=win,team=web --register-with-taints=os=windows:NoSchedule --max-pods=110'\n</powershell>", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b64, err := UserData(tc.family, tc.cluster, tc.node, tc.custom)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := base64.StdEncoding.DecodeString(b64)
			if string(raw) != tc.want {
				t.Fatalf("user data:\n%s\nwant:\n%s", raw, tc.want)
			}
			reg, err := kubeletsim.ParseUserData(b64)
			if err != nil {
				t.Fatalf("the kubelet cannot read it: %v", err)
			}
			wantLabels := map[string]string{"team": "web", "karpenter.sh/nodepool": "win"}
			if reg.Format != "Windows" || !reflect.DeepEqual(reg.Labels, wantLabels) || !reflect.DeepEqual(reg.Taints, tc.node.Taints) || reg.MaxPods != 110 || reg.ClusterDNS != tc.dns {
				t.Errorf("read back as %s, labels %v, taints %v, max pods %d, DNS %q", reg.Format, reg.Labels, reg.Taints, reg.MaxPods, reg.ClusterDNS)
			}
		})
	}
}
