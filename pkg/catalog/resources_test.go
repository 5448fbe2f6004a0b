package catalog

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/model"
)

func mustLookup(t *testing.T, name string) *InstanceType {
	t.Helper()
	it, ok := Lookup(name)
	if !ok {
		t.Fatalf("instance type %s is not in the catalog", name)
	}
	return it
}

func ptr[T any](v T) *T { return &v }

// Figures from Karpenter's published instance-type reference (AL2023, no
// blockDeviceMappings: "the resources available after the instance overhead
// has been subtracted"), which is computed by the same code path as its
// scheduler's allocatable.
func TestAllocatableMatchesKarpenterPublishedFigures(t *testing.T) {
	tests := []struct {
		name   string
		cpu    string
		memory string
		pods   int64
		extra  map[corev1.ResourceName]int64
	}{
		// general purpose
		{"m5.large", "1930m", "6903Mi", 29, map[corev1.ResourceName]int64{ResourceAWSPodENI: 9}},
		{"c5.large", "1930m", "3114Mi", 29, map[corev1.ResourceName]int64{ResourceAWSPodENI: 9}},
		{"c1.medium", "1930m", "1122Mi", 12, nil},
		// 36 vCPUs: every cpu reservation range is used
		{"c4.8xlarge", "35840m", "53903Mi", 234, nil},
		// burstable, including the smallest memory in the catalog
		{"t3.nano", "1930m", "74Mi", 4, nil},
		{"t3.large", "1930m", "6837Mi", 35, nil},
		{"t3a.small", "1930m", "1451Mi", 8, nil},
		{"t3.2xlarge", "7910m", "29317Mi", 58, nil},
		{"t2.small", "940m", "1418Mi", 11, nil},
		// arm64 (Graviton): 64MiB of CMA memory comes off first
		{"a1.medium", "940m", "1392Mi", 8, map[corev1.ResourceName]int64{ResourceAWSPodENI: 10}},
		{"a1.large", "1930m", "3055Mi", 29, map[corev1.ResourceName]int64{ResourceAWSPodENI: 9}},
		{"a1.4xlarge", "15890m", "27322Mi", 234, nil},
		// bare metal
		{"a1.metal", "15890m", "27322Mi", 234, nil},
		{"m5d.metal", "95690m", "355262Mi", 737, map[corev1.ResourceName]int64{ResourceAWSPodENI: 107}},
		// high pod density
		{"m5d.16xlarge", "63770m", "234021Mi", 737, map[corev1.ResourceName]int64{ResourceAWSPodENI: 107}},
		// GPU
		{"g6.xlarge", "3920m", "14162Mi", 58, map[corev1.ResourceName]int64{ResourceNVIDIAGPU: 1, ResourceAWSPodENI: 18}},
		{"g6.48xlarge", "191450m", "718987Mi", 737, map[corev1.ResourceName]int64{ResourceNVIDIAGPU: 8, ResourceEFA: 1}},
		{"g6e.12xlarge", "47810m", "360157Mi", 292, map[corev1.ResourceName]int64{ResourceNVIDIAGPU: 4, ResourceEFA: 1}},
		{"g6e.24xlarge", "95690m", "721682Mi", 492, map[corev1.ResourceName]int64{ResourceNVIDIAGPU: 4, ResourceEFA: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mustLookup(t, tc.name).Allocatable(nil)
			if got := a.Cpu().String(); got != tc.cpu {
				t.Errorf("cpu = %s, want %s", got, tc.cpu)
			}
			if got := a.Memory().String(); got != tc.memory {
				t.Errorf("memory = %s, want %s", got, tc.memory)
			}
			if got := a.StorageEphemeral().String(); got != "17Gi" {
				t.Errorf("ephemeral-storage = %s, want 17Gi", got)
			}
			if got := a.Pods().Value(); got != tc.pods {
				t.Errorf("pods = %d, want %d", got, tc.pods)
			}
			for name, want := range tc.extra {
				q := a[name]
				if got := q.Value(); got != want {
					t.Errorf("%s = %d, want %d", name, got, want)
				}
			}
		})
	}
}

func TestMaxPodsMatchesPublishedDensityForEveryType(t *testing.T) {
	checked := 0
	for _, it := range All() {
		if it.PublishedMaxPods == 0 {
			continue
		}
		checked++
		if got := it.MaxPods(nil); got != it.PublishedMaxPods {
			t.Errorf("%s: MaxPods = %d, published %d", it.Name, got, it.PublishedMaxPods)
		}
	}
	if checked < 1300 {
		t.Fatalf("only %d types have a published pod density; the data looks truncated", checked)
	}
}

func TestMaxPodsHonoursKubeletSettings(t *testing.T) {
	m5 := mustLookup(t, "m5.large")       // 2 vCPU, ENI-limited 29
	m5x := mustLookup(t, "m5.24xlarge")   // 96 vCPU, ENI-limited 737
	noENI := mustLookup(t, "cc2.8xlarge") // no ENI data in any source
	tests := []struct {
		name string
		it   *InstanceType
		k    *model.Kubelet
		want int64
	}{
		{"nil kubelet uses ENI-limited density", m5, nil, 29},
		{"empty kubelet uses ENI-limited density", m5, &model.Kubelet{}, 29},
		{"maxPods overrides, even above ENI density", m5, &model.Kubelet{MaxPods: ptr[int32](110)}, 110},
		{"maxPods overrides below ENI density", m5x, &model.Kubelet{MaxPods: ptr[int32](250)}, 250},
		{"podsPerCore caps ENI density", m5, &model.Kubelet{PodsPerCore: ptr[int32](10)}, 20},
		{"podsPerCore above density changes nothing", m5, &model.Kubelet{PodsPerCore: ptr[int32](20)}, 29},
		{"podsPerCore caps maxPods", m5, &model.Kubelet{MaxPods: ptr[int32](110), PodsPerCore: ptr[int32](5)}, 10},
		{"podsPerCore 0 is ignored", m5, &model.Kubelet{PodsPerCore: ptr[int32](0)}, 29},
		{"no ENI data and no maxPods gives no pods", noENI, nil, 0},
		{"no ENI data with maxPods uses maxPods", noENI, &model.Kubelet{MaxPods: ptr[int32](58)}, 58},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.it.MaxPods(tc.k); got != tc.want {
				t.Errorf("MaxPods = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCapacityAdvertisesExtendedResourcesLikeKarpenter(t *testing.T) {
	tests := []struct {
		name string
		want map[corev1.ResourceName]int64
	}{
		{"m5.large", map[corev1.ResourceName]int64{ResourceAWSPodENI: 9}},
		{"g4ad.xlarge", map[corev1.ResourceName]int64{ResourceAMDGPU: 1, ResourceAWSPodENI: 12}},
		{"g5.xlarge", map[corev1.ResourceName]int64{ResourceNVIDIAGPU: 1, ResourceAWSPodENI: 4}},
		// fractional GPU: a GPU name but no whole GPU to advertise
		{"g6f.large", map[corev1.ResourceName]int64{ResourceAWSPodENI: 10}},
		{"inf1.xlarge", map[corev1.ResourceName]int64{ResourceAWSNeuron: 1, ResourceAWSNeuronCore: 4, ResourceAWSPodENI: 38}},
		{"inf2.xlarge", map[corev1.ResourceName]int64{ResourceAWSNeuron: 1, ResourceAWSNeuronCore: 2, ResourceAWSPodENI: 18}},
		{"trn1.32xlarge", map[corev1.ResourceName]int64{ResourceAWSNeuron: 16, ResourceAWSNeuronCore: 32, ResourceEFA: 8, ResourceAWSPodENI: 82}},
		{"trn2.48xlarge", map[corev1.ResourceName]int64{ResourceAWSNeuron: 16, ResourceAWSNeuronCore: 128, ResourceEFA: 16}},
		{"dl1.24xlarge", map[corev1.ResourceName]int64{ResourceHabanaGaudi: 8, ResourceAWSPodENI: 62}},
		// qualcomm accelerators have no device plugin resource in Karpenter
		{"dl2q.24xlarge", map[corev1.ResourceName]int64{ResourceEFA: 1, ResourceAWSPodENI: 107}},
		{"p5.48xlarge", map[corev1.ResourceName]int64{ResourceNVIDIAGPU: 8, ResourceEFA: 32, ResourceAWSPodENI: 120}},
	}
	base := map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true, corev1.ResourceEphemeralStorage: true, corev1.ResourcePods: true}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLookup(t, tc.name).Capacity(nil)
			for name, q := range c {
				if base[name] {
					continue
				}
				want, ok := tc.want[name]
				if !ok {
					t.Errorf("unexpected %s = %s", name, q.String())
					continue
				}
				if q.Value() != want {
					t.Errorf("%s = %d, want %d", name, q.Value(), want)
				}
			}
			for name := range tc.want {
				if _, ok := c[name]; !ok {
					t.Errorf("missing %s", name)
				}
			}
		})
	}
}

func TestCapacityMemorySubtractsVMOverheadAndGravitonCMA(t *testing.T) {
	tests := []struct {
		name string
		want string
	}{
		// 8192 − ceil(8192×7.5%)=615 → 7577
		{"m5.large", "7577Mi"},
		// arm64: 8192 − 64 = 8128, − ceil(609.6)=610 → 7518
		{"m6g.large", "7518Mi"},
		// 512 − ceil(38.4)=39 → 473
		{"t3.nano", "473Mi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLookup(t, tc.name).Capacity(nil)
			if got := c.Memory().String(); got != tc.want {
				t.Errorf("memory capacity = %s, want %s", got, tc.want)
			}
			if got := c.StorageEphemeral().String(); got != "20Gi" {
				t.Errorf("ephemeral-storage capacity = %s, want the default 20Gi root volume", got)
			}
		})
	}
}

func TestKubeReservedCPUFollowsTheEKSRanges(t *testing.T) {
	tests := []struct {
		cores int64
		want  int64
	}{
		{0, 0},
		{1, 60},
		{2, 70},
		{3, 75},
		{4, 80},
		{8, 90},
		{48, 190},
		{96, 310},
		{192, 550},
	}
	for _, tc := range tests {
		if got := kubeReservedMilliCPU(tc.cores * 1000); got != tc.want {
			t.Errorf("%d cores: %dm reserved, want %dm", tc.cores, got, tc.want)
		}
	}
}

func TestOverheadHonoursKubeletOverrides(t *testing.T) {
	m5 := mustLookup(t, "m5.large")
	q := resource.MustParse
	tests := []struct {
		name string
		k    *model.Kubelet
		// expected allocatable
		cpu, memory, storage string
		pods                 int64
	}{
		{
			name: "defaults",
			k:    nil,
			cpu:  "1930m", memory: "6903Mi", storage: "17Gi", pods: 29,
		},
		{
			// AL2023 sizes the memory reservation from ENI-limited pods,
			// so raising maxPods adds pods but not reserved memory.
			name: "maxPods override keeps the ENI-limited memory reservation",
			k:    &model.Kubelet{MaxPods: ptr[int32](110)},
			cpu:  "1930m", memory: "6903Mi", storage: "17Gi", pods: 110,
		},
		{
			name: "kubeReserved replaces the defaults key by key",
			k:    &model.Kubelet{KubeReserved: map[string]string{"cpu": "200m", "memory": "1Gi"}},
			// 7577Mi − 1024Mi − 100Mi
			cpu: "1800m", memory: "6453Mi", storage: "17Gi", pods: 29,
		},
		{
			name: "systemReserved adds to kube-reserved",
			k:    &model.Kubelet{SystemReserved: map[string]string{"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi"}},
			cpu:  "1830m", memory: "6803Mi", storage: "16Gi", pods: 29,
		},
		{
			name: "evictionHard quantity replaces the memory threshold",
			k:    &model.Kubelet{EvictionHard: map[string]string{EvictionMemoryAvailable: "500Mi"}},
			cpu:  "1930m", memory: "6503Mi", storage: "17Gi", pods: 29,
		},
		{
			// 10% of 7577Mi rounded up to a byte
			name: "evictionHard percentage is of memory capacity",
			k:    &model.Kubelet{EvictionHard: map[string]string{EvictionMemoryAvailable: "10%"}},
			cpu:  "1930m", memory: "", storage: "17Gi", pods: 29,
		},
		{
			name: "evictionHard 100% disables the threshold",
			k:    &model.Kubelet{EvictionHard: map[string]string{EvictionMemoryAvailable: "100%"}},
			cpu:  "1930m", memory: "7003Mi", storage: "17Gi", pods: 29,
		},
		{
			name: "evictionHard nodefs percentage is of the root volume",
			k:    &model.Kubelet{EvictionHard: map[string]string{EvictionNodeFSAvailable: "5%"}},
			cpu:  "1930m", memory: "6903Mi", storage: "", pods: 29,
		},
		{
			name: "evictionSoft does not change allocatable",
			k:    &model.Kubelet{EvictionSoft: map[string]string{EvictionMemoryAvailable: "1Gi", EvictionNodeFSAvailable: "50%"}},
			cpu:  "1930m", memory: "6903Mi", storage: "17Gi", pods: 29,
		},
		{
			name: "unparseable values fall back to the defaults",
			k:    &model.Kubelet{KubeReserved: map[string]string{"cpu": "lots"}, EvictionHard: map[string]string{EvictionMemoryAvailable: "x%"}},
			cpu:  "1930m", memory: "6903Mi", storage: "17Gi", pods: 29,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := m5.Allocatable(tc.k)
			if got := a.Cpu().String(); got != tc.cpu {
				t.Errorf("cpu = %s, want %s", got, tc.cpu)
			}
			if tc.memory != "" {
				if got := a.Memory().String(); got != tc.memory {
					t.Errorf("memory = %s, want %s", got, tc.memory)
				}
			}
			if tc.storage != "" {
				if got := a.StorageEphemeral().String(); got != tc.storage {
					t.Errorf("ephemeral-storage = %s, want %s", got, tc.storage)
				}
			}
			if got := a.Pods().Value(); got != tc.pods {
				t.Errorf("pods = %d, want %d", got, tc.pods)
			}
		})
	}

	t.Run("percentages are rounded up to whole bytes", func(t *testing.T) {
		capMem := m5.Capacity(nil)[corev1.ResourceMemory]
		o := m5.Overhead(&model.Kubelet{EvictionHard: map[string]string{EvictionMemoryAvailable: "10%", EvictionNodeFSAvailable: "5%"}})
		wantMem := (capMem.Value() + 9) / 10
		if got := o.EvictionThreshold.Memory().Value(); got != wantMem {
			t.Errorf("memory threshold = %d, want %d", got, wantMem)
		}
		wantStorage := (DefaultEphemeralStorage*5 + 99) / 100
		if got := o.EvictionThreshold.StorageEphemeral().Value(); got != wantStorage {
			t.Errorf("nodefs threshold = %d, want %d", got, wantStorage)
		}
	})

	t.Run("overhead parts add up to capacity minus allocatable", func(t *testing.T) {
		k := &model.Kubelet{SystemReserved: map[string]string{"memory": "300Mi"}}
		total := m5.Overhead(k).Total()
		c, a := m5.Capacity(k), m5.Allocatable(k)
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			diff := c[name]
			diff.Sub(a[name])
			if diff.Cmp(total[name]) != 0 {
				t.Errorf("%s: capacity − allocatable = %s, overhead total = %s", name, diff.String(), total.Name(name, resource.DecimalSI).String())
			}
		}
		sys := m5.Overhead(k).SystemReserved
		if want := q("300Mi"); sys.Memory().Cmp(want) != 0 {
			t.Errorf("system-reserved memory = %s, want 300Mi", sys.Memory())
		}
	})
}

func TestAllocatableNeverGoesBelowZero(t *testing.T) {
	a := mustLookup(t, "t3.nano").Allocatable(&model.Kubelet{KubeReserved: map[string]string{"memory": "1Gi", "cpu": "3"}})
	if a.Memory().Sign() != 0 || a.Cpu().Sign() != 0 {
		t.Errorf("allocatable cpu %s memory %s, want both 0", a.Cpu(), a.Memory())
	}
}

func TestAllocatableIsPositiveForEveryTypeWithPods(t *testing.T) {
	for _, it := range All() {
		a := it.Allocatable(nil)
		if it.MaxPods(nil) == 0 {
			continue
		}
		if a.Cpu().Sign() <= 0 || a.Memory().Sign() <= 0 || a.StorageEphemeral().Sign() <= 0 {
			t.Errorf("%s: allocatable cpu %s memory %s storage %s", it.Name, a.Cpu(), a.Memory(), a.StorageEphemeral())
		}
	}
}

func TestValidateKubeletReportsWhatSizingCannotRead(t *testing.T) {
	tests := []struct {
		name    string
		k       *model.Kubelet
		wantErr []string
	}{
		{"nil is valid", nil, nil},
		{"good values are valid", &model.Kubelet{
			KubeReserved:   map[string]string{"cpu": "100m", "memory": "1Gi"},
			SystemReserved: map[string]string{"ephemeral-storage": "1Gi"},
			EvictionHard:   map[string]string{EvictionMemoryAvailable: "5%", EvictionNodeFSAvailable: "1Gi"},
			EvictionSoft:   map[string]string{EvictionMemoryAvailable: "100%"},
			MaxPods:        ptr[int32](110),
		}, nil},
		{"bad quantity", &model.Kubelet{KubeReserved: map[string]string{"memory": "lots"}}, []string{"kubeReserved[memory]"}},
		{"negative reservation", &model.Kubelet{SystemReserved: map[string]string{"cpu": "-1"}}, []string{"systemReserved[cpu]", "negative"}},
		{"percentage over 100", &model.Kubelet{EvictionHard: map[string]string{EvictionNodeFSAvailable: "120%"}}, []string{"evictionHard[nodefs.available]", "outside"}},
		{"bad soft threshold", &model.Kubelet{EvictionSoft: map[string]string{EvictionMemoryAvailable: "abc"}}, []string{"evictionSoft[memory.available]"}},
		{"negative maxPods", &model.Kubelet{MaxPods: ptr[int32](-1)}, []string{"maxPods"}},
		{"negative podsPerCore", &model.Kubelet{PodsPerCore: ptr[int32](-2)}, []string{"podsPerCore"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateKubelet(tc.k)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one mentioning %v", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
