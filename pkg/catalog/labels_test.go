package catalog

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/joist-dev/joist/pkg/model"
)

func TestLabelsMatchKarpenterPublishedLabels(t *testing.T) {
	tests := []struct {
		name string
		want map[string]string
	}{
		{"m5.large", map[string]string{
			"node.kubernetes.io/instance-type":             "m5.large",
			"kubernetes.io/arch":                           "amd64",
			"kubernetes.io/os":                             "linux",
			"karpenter.k8s.aws/instance-category":          "m",
			"karpenter.k8s.aws/instance-family":            "m5",
			"karpenter.k8s.aws/instance-generation":        "5",
			"karpenter.k8s.aws/instance-size":              "large",
			"karpenter.k8s.aws/instance-cpu":               "2",
			"karpenter.k8s.aws/instance-cpu-manufacturer":  "intel",
			"karpenter.k8s.aws/instance-memory":            "8192",
			"karpenter.k8s.aws/instance-hypervisor":        "nitro",
			"karpenter.k8s.aws/instance-network-bandwidth": "750",
			"karpenter.k8s.aws/instance-ebs-bandwidth":     "4750",
			"karpenter.k8s.aws/instance-capability-flex":   "false",
		}},
		{"a1.medium", map[string]string{
			"node.kubernetes.io/instance-type":             "a1.medium",
			"kubernetes.io/arch":                           "arm64",
			"kubernetes.io/os":                             "linux",
			"karpenter.k8s.aws/instance-category":          "a",
			"karpenter.k8s.aws/instance-family":            "a1",
			"karpenter.k8s.aws/instance-generation":        "1",
			"karpenter.k8s.aws/instance-size":              "medium",
			"karpenter.k8s.aws/instance-cpu":               "1",
			"karpenter.k8s.aws/instance-cpu-manufacturer":  "aws",
			"karpenter.k8s.aws/instance-memory":            "2048",
			"karpenter.k8s.aws/instance-hypervisor":        "nitro",
			"karpenter.k8s.aws/instance-network-bandwidth": "500",
			"karpenter.k8s.aws/instance-ebs-bandwidth":     "3500",
			"karpenter.k8s.aws/instance-capability-flex":   "false",
		}},
		{"g6.2xlarge", map[string]string{
			"node.kubernetes.io/instance-type":             "g6.2xlarge",
			"kubernetes.io/arch":                           "amd64",
			"kubernetes.io/os":                             "linux",
			"karpenter.k8s.aws/instance-category":          "g",
			"karpenter.k8s.aws/instance-family":            "g6",
			"karpenter.k8s.aws/instance-generation":        "6",
			"karpenter.k8s.aws/instance-size":              "2xlarge",
			"karpenter.k8s.aws/instance-cpu":               "8",
			"karpenter.k8s.aws/instance-cpu-manufacturer":  "amd",
			"karpenter.k8s.aws/instance-memory":            "32768",
			"karpenter.k8s.aws/instance-hypervisor":        "nitro",
			"karpenter.k8s.aws/instance-network-bandwidth": "5000",
			"karpenter.k8s.aws/instance-ebs-bandwidth":     "5000",
			"karpenter.k8s.aws/instance-local-nvme":        "450",
			"karpenter.k8s.aws/instance-gpu-name":          "l4",
			"karpenter.k8s.aws/instance-gpu-manufacturer":  "nvidia",
			"karpenter.k8s.aws/instance-gpu-count":         "1",
			"karpenter.k8s.aws/instance-gpu-memory":        "22888",
			"karpenter.k8s.aws/instance-capability-flex":   "false",
		}},
		{"inf2.xlarge", map[string]string{
			"node.kubernetes.io/instance-type":                    "inf2.xlarge",
			"kubernetes.io/arch":                                  "amd64",
			"kubernetes.io/os":                                    "linux",
			"karpenter.k8s.aws/instance-category":                 "inf",
			"karpenter.k8s.aws/instance-family":                   "inf2",
			"karpenter.k8s.aws/instance-generation":               "2",
			"karpenter.k8s.aws/instance-size":                     "xlarge",
			"karpenter.k8s.aws/instance-cpu":                      "4",
			"karpenter.k8s.aws/instance-cpu-manufacturer":         "amd",
			"karpenter.k8s.aws/instance-memory":                   "16384",
			"karpenter.k8s.aws/instance-hypervisor":               "nitro",
			"karpenter.k8s.aws/instance-network-bandwidth":        "2083",
			"karpenter.k8s.aws/instance-ebs-bandwidth":            "10000",
			"karpenter.k8s.aws/instance-accelerator-name":         "inferentia2",
			"karpenter.k8s.aws/instance-accelerator-manufacturer": "aws",
			"karpenter.k8s.aws/instance-accelerator-count":        "1",
			"karpenter.k8s.aws/instance-capability-flex":          "false",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustLookup(t, tc.name).Labels()
			if !maps.Equal(got, tc.want) {
				for k, v := range tc.want {
					if gv, ok := got[k]; !ok || gv != v {
						t.Errorf("%s = %q (present %v), want %q", k, gv, ok, v)
					}
				}
				for k, v := range got {
					if _, ok := tc.want[k]; !ok {
						t.Errorf("unexpected %s = %q", k, v)
					}
				}
			}
		})
	}
}

func TestLabelsOmitOrEmptyWhereKarpenterDoes(t *testing.T) {
	tests := []struct {
		name    string
		typ     string
		key     string
		present bool
		value   string
	}{
		{"bare metal has an empty hypervisor label", "m5d.metal", LabelInstanceHypervisor, true, ""},
		{"xen hypervisor", "c4.large", LabelInstanceHypervisor, true, "xen"},
		{"unknown hypervisor is left out", "cc2.8xlarge", LabelInstanceHypervisor, false, ""},
		{"unknown network bandwidth is left out", "t2.small", LabelInstanceNetworkBandwidth, false, ""},
		{"no NVMe, no local-nvme label", "m5.large", LabelInstanceLocalNVMe, false, ""},
		{"NVMe size in GB", "m5d.large", LabelInstanceLocalNVMe, true, "75"},
		{"no GPU, no GPU labels", "m5.large", LabelInstanceGPUName, false, ""},
		{"fractional GPU has a GPU count of 0", "g6f.large", LabelInstanceGPUCount, true, "0"},
		{"GPU memory is per GPU", "g6.48xlarge", LabelInstanceGPUMemory, true, "22888"},
		{"AMD GPU", "g4ad.xlarge", LabelInstanceGPUManufacturer, true, "amd"},
		{"non-Neuron accelerator", "dl2q.24xlarge", LabelInstanceAcceleratorName, true, "qualcomm-ai100"},
		{"flex types are flagged", "c7i-flex.large", LabelInstanceCapabilityFlex, true, "true"},
		{"high-memory category and generation", "u-6tb1.metal", LabelInstanceGeneration, true, "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := mustLookup(t, tc.typ).Labels()[tc.key]
			if ok != tc.present || v != tc.value {
				t.Errorf("%s = %q (present %v), want %q (present %v)", tc.key, v, ok, tc.value, tc.present)
			}
		})
	}
}

func TestLabelsAreValidKubernetesLabelsForEveryType(t *testing.T) {
	known := map[string]bool{}
	for _, k := range TypeLabelKeys {
		known[k] = true
	}
	for _, it := range All() {
		for k, v := range it.Labels() {
			if !known[k] {
				t.Errorf("%s: label %s is not in TypeLabelKeys", it.Name, k)
			}
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				t.Errorf("%s: key %s: %v", it.Name, k, errs)
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("%s: %s=%q: %v", it.Name, k, v, errs)
			}
		}
	}
}

// TestLabelsForWindows: a node of a Windows class is labelled as Karpenter
// labels it (kubernetes.io/os=windows, node.kubernetes.io/windows-build
// of its version), arm64 types run no Windows class, and Linux classes
// (and nil) keep Labels() exactly.
func TestLabelsForWindows(t *testing.T) {
	m5, graviton := mustLookup(t, "m5.large"), mustLookup(t, "m6g.large")
	for _, c := range []struct {
		name      string
		nc        *model.NodeClass
		os, build string
		arm64     bool
	}{
		{"nil", nil, "linux", "", true},
		{"AL2023", &model.NodeClass{AMIFamily: "AL2023"}, "linux", "", true},
		{"Bottlerocket", &model.NodeClass{AMIFamily: "Bottlerocket"}, "linux", "", true},
		{"Windows2019", &model.NodeClass{AMIFamily: "Windows2019"}, "windows", "10.0.17763", false},
		{"Windows2022", &model.NodeClass{AMIFamily: "Windows2022"}, "windows", "10.0.20348", false},
		{"Windows2025", &model.NodeClass{AMIFamily: "Windows2025"}, "windows", "10.0.26100", false},
		{"windows2022 alias", &model.NodeClass{AMISelector: []model.SelectorTerm{{Alias: "windows2022@latest"}}}, "windows", "10.0.20348", false},
	} {
		l := m5.LabelsFor(c.nc)
		build, hasBuild := l[corev1.LabelWindowsBuild]
		if l[corev1.LabelOSStable] != c.os || build != c.build || hasBuild != (c.build != "") {
			t.Errorf("%s: os %q build %q (present %t), want %q %q", c.name, l[corev1.LabelOSStable], build, hasBuild, c.os, c.build)
		}
		if c.build == "" && !maps.Equal(l, m5.Labels()) {
			t.Errorf("%s: LabelsFor %v differs from Labels %v", c.name, l, m5.Labels())
		}
		if !m5.Runs(c.nc) || graviton.Runs(c.nc) != c.arm64 {
			t.Errorf("%s: runs on m5.large %t, on m6g.large %t (want true, %t)", c.name, m5.Runs(c.nc), graviton.Runs(c.nc), c.arm64)
		}
		for k, v := range l {
			if !slices.Contains(TypeLabelKeys, k) {
				t.Errorf("%s: label %s=%s is not in TypeLabelKeys", c.name, k, v)
			}
		}
	}
	if LabelKey(&model.NodeClass{AMIFamily: "Windows2019"}) == LabelKey(&model.NodeClass{AMIFamily: "Windows2022"}) || LabelKey(nil) != LabelKey(&model.NodeClass{AMIFamily: "AL2"}) {
		t.Errorf("LabelKey: 2019 %q, 2022 %q, nil %q, AL2 %q", LabelKey(&model.NodeClass{AMIFamily: "Windows2019"}), LabelKey(&model.NodeClass{AMIFamily: "Windows2022"}), LabelKey(nil), LabelKey(&model.NodeClass{AMIFamily: "AL2"}))
	}
}
