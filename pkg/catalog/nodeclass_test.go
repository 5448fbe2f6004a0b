package catalog

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

func bdm(device, size string, root bool) model.BlockDeviceMapping {
	return model.BlockDeviceMapping{DeviceName: device, RootVolume: root, EBS: &model.EBS{VolumeSize: size}}
}

func TestNoNodeClassMeansAL2023Defaults(t *testing.T) {
	al2023 := &model.NodeClass{AMIFamily: "AL2023"}
	k := &model.Kubelet{MaxPods: ptr[int32](50), SystemReserved: map[string]string{"memory": "200Mi"}}
	for _, it := range All() {
		if !reflect.DeepEqual(it.Allocatable(k), it.AllocatableFor(k, nil)) ||
			!reflect.DeepEqual(it.Allocatable(k), it.AllocatableFor(k, al2023)) {
			t.Fatalf("%s: Allocatable differs from AllocatableFor with no node class or AL2023", it.Name)
		}
	}
}

func TestNodeClassChangesEphemeralStorage(t *testing.T) {
	tests := []struct {
		name     string
		typ      string
		nc       *model.NodeClass
		capacity string
		alloc    string
	}{
		{"default root volume", "m5.large", &model.NodeClass{AMIFamily: "AL2023"}, "20Gi", "17Gi"},
		{"root volume mapping", "m5.large", &model.NodeClass{AMIFamily: "AL2023", BlockDeviceMappings: []model.BlockDeviceMapping{bdm("/dev/xvda", "100Gi", true)}}, "100Gi", "89Gi"},
		{"root flag wins over the device name", "m5.large", &model.NodeClass{AMIFamily: "AL2", BlockDeviceMappings: []model.BlockDeviceMapping{bdm("/dev/xvda", "30Gi", false), bdm("/dev/xvdz", "200Gi", true)}}, "200Gi", "179Gi"},
		{"family device without the root flag", "m5.large", &model.NodeClass{AMIFamily: "AL2", BlockDeviceMappings: []model.BlockDeviceMapping{bdm("/dev/xvda", "50Gi", false)}}, "50Gi", "44Gi"},
		{"other devices leave the default", "m5.large", &model.NodeClass{AMIFamily: "AL2023", BlockDeviceMappings: []model.BlockDeviceMapping{bdm("/dev/xvdb", "500Gi", false)}}, "20Gi", "17Gi"},
		{"unparseable size leaves the default", "m5.large", &model.NodeClass{AMIFamily: "AL2023", BlockDeviceMappings: []model.BlockDeviceMapping{bdm("/dev/xvda", "big", true)}}, "20Gi", "17Gi"},
		{"Bottlerocket keeps pods on xvdb", "m5.large", &model.NodeClass{AMIFamily: "Bottlerocket", BlockDeviceMappings: []model.BlockDeviceMapping{bdm("/dev/xvda", "4Gi", false), bdm("/dev/xvdb", "60Gi", false)}}, "60Gi", "53Gi"},
		{"Bottlerocket default data volume", "m5.large", &model.NodeClass{AMIFamily: "Bottlerocket", BlockDeviceMappings: []model.BlockDeviceMapping{bdm("/dev/xvda", "10Gi", false)}}, "20Gi", "17Gi"},
		{"Custom uses the last mapping", "m5.large", &model.NodeClass{AMIFamily: "Custom", BlockDeviceMappings: []model.BlockDeviceMapping{bdm("/dev/xvda", "30Gi", false), bdm("/dev/sdf", "40Gi", false)}}, "40Gi", "35Gi"},
		{"Windows defaults to 50Gi", "m5.large", &model.NodeClass{AMIFamily: "Windows2022"}, "50Gi", "44Gi"},
		// 75 GB of NVMe: 75e9 − 1Gi − 7.5e9
		{"RAID0 uses the NVMe instance store", "m5d.large", &model.NodeClass{AMIFamily: "AL2023", InstanceStorePolicy: "RAID0"}, "75G", "66426258176"},
		{"RAID0 without NVMe keeps the root volume", "m5.large", &model.NodeClass{AMIFamily: "AL2023", InstanceStorePolicy: "RAID0"}, "20Gi", "17Gi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it := mustLookup(t, tc.typ)
			c, a := it.CapacityFor(nil, tc.nc), it.AllocatableFor(nil, tc.nc)
			if got := c.StorageEphemeral().String(); got != tc.capacity {
				t.Errorf("capacity %s, want %s", got, tc.capacity)
			}
			if got := a.StorageEphemeral().String(); got != tc.alloc {
				t.Errorf("allocatable %s, want %s", got, tc.alloc)
			}
		})
	}
}

func TestNodeClassFamilyChangesPodsAndReservedMemory(t *testing.T) {
	m5 := mustLookup(t, "m5.large") // 7577Mi memory capacity, 29 ENI-limited pods
	tests := []struct {
		name   string
		nc     *model.NodeClass
		k      *model.Kubelet
		pods   int64
		memory string
	}{
		{"AL2023 sizes memory from ENI pods despite maxPods", &model.NodeClass{AMIFamily: "AL2023"}, &model.Kubelet{MaxPods: ptr[int32](110)}, 110, "6903Mi"},
		// 7577 − (11×110 + 255) − 100
		{"Bottlerocket sizes memory from maxPods", &model.NodeClass{AMIFamily: "Bottlerocket"}, &model.Kubelet{MaxPods: ptr[int32](110)}, 110, "6012Mi"},
		{"Bottlerocket ignores podsPerCore", &model.NodeClass{AMIFamily: "Bottlerocket"}, &model.Kubelet{PodsPerCore: ptr[int32](5)}, 29, "6903Mi"},
		{"AL2 honours podsPerCore", &model.NodeClass{AMIFamily: "AL2"}, &model.Kubelet{PodsPerCore: ptr[int32](5)}, 10, "6903Mi"},
		{"Windows has 110 pods and sizes memory from them", &model.NodeClass{AMIFamily: "Windows2022"}, nil, 110, "6012Mi"},
		{"a windows2025 alias without amiFamily is Windows", &model.NodeClass{AMISelector: []model.SelectorTerm{{Alias: "windows2025@latest"}}}, nil, 110, "6012Mi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := m5.AllocatableFor(tc.k, tc.nc)
			if got := a.Pods().Value(); got != tc.pods {
				t.Errorf("pods %d, want %d", got, tc.pods)
			}
			if got := m5.MaxPodsFor(tc.k, tc.nc); got != tc.pods {
				t.Errorf("MaxPodsFor %d, want %d", got, tc.pods)
			}
			if got := a.Memory().String(); got != tc.memory {
				t.Errorf("memory %s, want %s", got, tc.memory)
			}
		})
	}
	if q := m5.CapacityFor(nil, &model.NodeClass{AMIFamily: "Windows2019"})[ResourcePrivateIPv4Address]; q.Value() != 9 {
		t.Errorf("Windows private IPv4 addresses %d, want 9", q.Value())
	}
	if _, ok := m5.Capacity(nil)[ResourcePrivateIPv4Address]; ok {
		t.Error("Linux nodes advertise private IPv4 addresses")
	}
}

func TestNodeClassEFAOnlyInterfaces(t *testing.T) {
	p5 := mustLookup(t, "p5.48xlarge") // 2 ENIs on card 0, 50 IPv4 each, 32 EFA
	tests := []struct {
		name string
		nis  []model.NetworkInterface
		pods int64
		efa  int64
		// mem is kube-reserved memory: 11Mi per ENI-limited pod (less
		// the EFA-only interfaces on card 0, as Karpenter v1.15) + 255Mi.
		mem string
	}{
		{"none listed: the type's EFA count", nil, 100, 32, "1355Mi"},
		{"EFA-only on other cards leave pods alone", []model.NetworkInterface{
			{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: "interface"},
			{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: "efa-only"},
			{NetworkCardIndex: 2, DeviceIndex: 0, InterfaceType: "efa-only"},
		}, 100, 2, "1355Mi"},
		{"EFA-only on card 0 takes an ENI from pods", []model.NetworkInterface{
			{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: "interface"},
			{NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: "efa-only"},
		}, 51, 1, "816Mi"},
		{"only a primary interface: no EFA", []model.NetworkInterface{
			{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: "interface"},
		}, 100, 0, "1355Mi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc := &model.NodeClass{AMIFamily: "AL2023", NetworkInterfaces: tc.nis}
			c := p5.CapacityFor(nil, nc)
			if got := c.Pods().Value(); got != tc.pods {
				t.Errorf("pods %d, want %d", got, tc.pods)
			}
			efa := c[ResourceEFA]
			if got := efa.Value(); got != tc.efa {
				t.Errorf("efa %d, want %d", got, tc.efa)
			}
			if got := p5.OverheadFor(nil, nc).KubeReserved[corev1.ResourceMemory]; got.String() != tc.mem {
				t.Errorf("kube-reserved memory %s, want %s", got.String(), tc.mem)
			}
		})
	}
}

// TestReservedENIs: the operator's reserved ENIs (Karpenter's
// RESERVED_ENIS, for VPC CNI custom networking) leave the default card's
// ENIs that carry pods: m5.large has 3 ENIs of 10 addresses, so 29 pods,
// 20 with one reserved, none with all three; an explicit maxPods and
// Windows' fixed 110 do not change; kube-reserved memory stays sized on
// the ENI-limited pods, as Karpenter's.
func TestReservedENIs(t *testing.T) {
	m5 := mustLookup(t, "m5.large")
	maxPods := int32(50)
	for _, tc := range []struct {
		name     string
		family   string
		reserved int64
		kubelet  *model.Kubelet
		pods     int64
	}{
		{"none reserved", "AL2023", 0, nil, 29},
		{"one reserved", "AL2023", 1, nil, 20},
		{"two reserved", "AL2", 2, nil, 11},
		{"every ENI reserved", "AL2023", 3, nil, 0},
		{"more than the type has", "AL2023", 5, nil, 0},
		{"an explicit maxPods wins", "AL2023", 1, &model.Kubelet{MaxPods: &maxPods}, 50},
		{"Windows has 110 whatever", "Windows2022", 1, nil, 110},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &model.NodeClass{AMIFamily: tc.family, ReservedENIs: tc.reserved}
			if got := m5.MaxPodsFor(tc.kubelet, nc); got != tc.pods {
				t.Errorf("max pods %d, want %d", got, tc.pods)
			}
			if c := m5.CapacityFor(tc.kubelet, nc); c.Pods().Value() != tc.pods {
				got := c.Pods().Value()
				t.Errorf("pod capacity %d, want %d", got, tc.pods)
			}
			if tc.family != "AL2023" {
				return
			}
			if got := m5.OverheadFor(tc.kubelet, nc).KubeReserved[corev1.ResourceMemory]; got.String() != "574Mi" {
				t.Errorf("kube-reserved memory %s, want 574Mi (29 ENI-limited pods)", got.String())
			}
		})
	}
}
