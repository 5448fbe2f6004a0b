package fromcatalog

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

func TestInstanceTypes(t *testing.T) {
	cat, err := catalog.Offline("us-east-1", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	types := InstanceTypes(cat, nil)
	if len(types) != len(cat.Types()) {
		t.Fatalf("%d types, catalog has %d", len(types), len(cat.Types()))
	}
	var m5 = types[0]
	for _, it := range types {
		if it.Name == "m5.large" {
			m5 = it
		}
	}
	if m5.Name != "m5.large" || m5.Labels[corev1.LabelInstanceTypeStable] != "m5.large" {
		t.Fatalf("m5.large: %+v", m5)
	}
	capCPU, allocCPU := m5.Capacity[corev1.ResourceCPU], m5.Allocatable[corev1.ResourceCPU]
	if allocCPU.Cmp(capCPU) >= 0 {
		t.Errorf("allocatable cpu %s not below capacity %s", allocCPU.String(), capCPU.String())
	}
	zones := map[string]bool{}
	for _, o := range m5.Offerings {
		zones[o.Zone] = true
		if o.Price <= 0 {
			t.Errorf("offering %+v has no price", o)
		}
	}
	if !zones["us-east-1a"] || !zones["us-east-1b"] || len(zones) != 2 {
		t.Errorf("zones %v", zones)
	}
}

func TestForPoolsSharesListsByKubelet(t *testing.T) {
	cat, err := catalog.Offline("us-east-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	ten := int32(10)
	pools := []*model.Pool{
		{Name: "plain"},
		{Name: "small-a", Kubelet: &model.Kubelet{MaxPods: &ten}},
		{Name: "small-b", Kubelet: &model.Kubelet{MaxPods: &ten}},
	}
	shared, per := ForPools(cat, pools, nil)
	if _, ok := per["plain"]; ok || len(shared) == 0 {
		t.Errorf("default pool got its own list")
	}
	a, b := per["small-a"], per["small-b"]
	if len(a) == 0 || &a[0] != &b[0] {
		t.Errorf("equal kubelets should share one list")
	}
	pods := a[0].Allocatable[corev1.ResourcePods]
	if pods.Value() != 10 {
		t.Errorf("maxPods override not applied: %s", pods.String())
	}
}

// TestForPoolsSizesNodesByTheirNodeClass: a pool's node class changes its
// nodes' size as Karpenter's do (a bigger root volume is more
// ephemeral-storage; Bottlerocket ignores podsPerCore), so its pool
// gets lists of its own; classes that size nodes as the default does (a
// default AL2023 class, or none) share the default list, and classes
// that size alike share one.
func TestForPoolsSizesNodesByTheirNodeClass(t *testing.T) {
	cat, err := catalog.Offline("us-east-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	vol := func(size string) []model.BlockDeviceMapping {
		return []model.BlockDeviceMapping{{DeviceName: "/dev/xvda", RootVolume: true, EBS: &model.EBS{VolumeSize: size}}}
	}
	classes := map[string]*model.NodeClass{
		"default":      {Name: "default", AMIFamily: "AL2023", BlockDeviceMappings: vol("20Gi")},
		"big":          {Name: "big", AMIFamily: "AL2023", BlockDeviceMappings: vol("200Gi")},
		"big-too":      {Name: "big-too", AMIFamily: "AL2", BlockDeviceMappings: vol("200Gi")},
		"bottlerocket": {Name: "bottlerocket", AMIFamily: "Bottlerocket"},
	}
	pools := []*model.Pool{
		{Name: "none"}, {Name: "default", NodeClass: "default"},
		{Name: "big", NodeClass: "big"}, {Name: "big-too", NodeClass: "big-too"},
		{Name: "bottlerocket", NodeClass: "bottlerocket"},
	}
	shared, per := ForPools(cat, pools, classes)
	for _, name := range []string{"none", "default"} {
		if _, ok := per[name]; ok {
			t.Errorf("pool %s got a list of its own; its nodes are sized as the default", name)
		}
	}
	big, bigToo, br := per["big"], per["big-too"], per["bottlerocket"]
	if len(big) == 0 || len(bigToo) == 0 || &big[0] != &bigToo[0] {
		t.Fatalf("classes sizing nodes alike should share one list")
	}
	find := func(list []*scheduling.InstanceType, name string) *scheduling.InstanceType {
		for _, it := range list {
			if it.Name == name {
				return it
			}
		}
		t.Fatalf("no %s", name)
		return nil
	}
	def, b, r := find(shared, "m5.large"), find(big, "m5.large"), find(br, "m5.large")
	want := map[string]corev1.ResourceList{}
	for name, nc := range map[string]*model.NodeClass{"default": nil, "big": classes["big"], "bottlerocket": classes["bottlerocket"]} {
		ct, _ := cat.Lookup("m5.large")
		want[name] = ct.AllocatableFor(nil, nc)
	}
	for name, it := range map[string]*scheduling.InstanceType{"default": def, "big": b, "bottlerocket": r} {
		for _, res := range []corev1.ResourceName{corev1.ResourceEphemeralStorage, corev1.ResourceMemory, corev1.ResourcePods} {
			got, w := it.Allocatable[res], want[name][res]
			if got.Cmp(w) != 0 {
				t.Errorf("%s m5.large allocatable %s = %s, want %s", name, res, got.String(), w.String())
			}
		}
	}
	de, be := def.Allocatable[corev1.ResourceEphemeralStorage], b.Allocatable[corev1.ResourceEphemeralStorage]
	if be.Cmp(de) <= 0 {
		t.Errorf("a 200Gi root volume gives %s ephemeral-storage, the default %s", be.String(), de.String())
	}
}

// TestPreparedOncePerCatalog checks that the lists of one catalog are
// prepared once and handed to the simulator with the input, that another
// catalog (a refreshed live one) gets its own, and that the cache keeps
// only the newest maxPrepared.
func TestPreparedOncePerCatalog(t *testing.T) {
	cat, err := catalog.Offline("us-east-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	ten := int32(10)
	pools := []*model.Pool{{Name: "plain"}, {Name: "small", Kubelet: &model.Kubelet{MaxPods: &ten}}}
	in := Input(cat, Cluster{Pools: pools})
	again := Input(cat, Cluster{Pools: pools})
	if len(in.Prepared) != 2 || in.Prepared[0] != again.Prepared[0] || in.Prepared[1] != again.Prepared[1] {
		t.Fatalf("the same catalog was prepared again: %p %p", in.Prepared, again.Prepared)
	}
	if got := in.Prepared[0].Types(); len(got) == 0 || &got[0] != &in.InstanceTypes[0] {
		t.Errorf("prepared list is not the input's shared list")
	}
	if got, own := in.Prepared[1].Types(), in.PoolInstanceTypes["small"]; len(got) == 0 || &got[0] != &own[0] {
		t.Errorf("prepared list is not the pool's own list")
	}
	fresh, err := catalog.Offline("us-east-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if Prepared(fresh, nil) == in.Prepared[0] {
		t.Fatalf("a new catalog got the old one's types")
	}
	for i := 0; i < maxPrepared; i++ {
		c, err := catalog.Offline("us-east-1", nil)
		if err != nil {
			t.Fatal(err)
		}
		Prepared(c, nil)
	}
	if Prepared(cat, nil) == in.Prepared[0] {
		t.Errorf("the cache kept more than %d lists", maxPrepared)
	}
}

// TestForPoolsLabelsWindowsNodes: a Windows pool's list has
// kubernetes.io/os=windows and its version's
// node.kubernetes.io/windows-build on every type, no arm64 type (the EKS
// Windows AMIs are x86_64 only) and Windows' 110 pods; Windows versions
// do not share a list (their builds differ, their sizes do not), an
// alias-only class is Windows too, and Linux pools keep linux and every
// type.
func TestForPoolsLabelsWindowsNodes(t *testing.T) {
	cat, err := catalog.Offline("us-east-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]*model.NodeClass{
		"w2019":   {Name: "w2019", AMIFamily: "Windows2019"},
		"w2022":   {Name: "w2022", AMIFamily: "Windows2022"},
		"alias":   {Name: "alias", AMISelector: []model.SelectorTerm{{Alias: "windows2022@latest"}}},
		"al2023":  {Name: "al2023", AMIFamily: "AL2023"},
		"w2025-k": {Name: "w2025-k", AMIFamily: "Windows2025"},
	}
	ten := int32(10)
	pools := []*model.Pool{
		{Name: "w2019", NodeClass: "w2019"}, {Name: "w2022", NodeClass: "w2022"}, {Name: "alias", NodeClass: "alias"},
		{Name: "linux", NodeClass: "al2023"}, {Name: "w2025-k", NodeClass: "w2025-k", Kubelet: &model.Kubelet{MaxPods: &ten}},
	}
	shared, per := ForPools(cat, pools, classes)
	if _, ok := per["linux"]; ok {
		t.Errorf("the AL2023 pool got a list of its own")
	}
	w19, w22, alias, w25 := per["w2019"], per["w2022"], per["alias"], per["w2025-k"]
	if len(w19) == 0 || len(w22) == 0 || len(w25) == 0 || &w19[0] == &w22[0] {
		t.Fatalf("Windows 2019 and 2022 share a list, or one is empty (%d, %d, %d)", len(w19), len(w22), len(w25))
	}
	if len(alias) == 0 || &alias[0] != &w22[0] {
		t.Errorf("windows2022@latest without amiFamily did not share Windows2022's list")
	}
	var amd64 int
	for _, it := range shared {
		if it.Labels[corev1.LabelOSStable] != "linux" || it.Labels[corev1.LabelWindowsBuild] != "" {
			t.Fatalf("Linux %s labelled %v", it.Name, it.Labels)
		}
		if it.Labels[corev1.LabelArchStable] == "amd64" {
			amd64++
		}
	}
	for name, c := range map[string]struct {
		list  []*scheduling.InstanceType
		build string
		pods  int64
	}{"w2019": {w19, "10.0.17763", 110}, "w2022": {w22, "10.0.20348", 110}, "w2025-k": {w25, "10.0.26100", 10}} {
		if len(c.list) != amd64 {
			t.Errorf("%s: %d types, the catalog has %d amd64 ones", name, len(c.list), amd64)
		}
		for _, it := range c.list {
			if it.Labels[corev1.LabelOSStable] != "windows" || it.Labels[corev1.LabelWindowsBuild] != c.build || it.Labels[corev1.LabelArchStable] != "amd64" {
				t.Fatalf("%s: %s labelled os %q build %q arch %q", name, it.Name, it.Labels[corev1.LabelOSStable], it.Labels[corev1.LabelWindowsBuild], it.Labels[corev1.LabelArchStable])
			}
			if it.Name == "m5.large" {
				if p := it.Capacity[corev1.ResourcePods]; p.Value() != c.pods {
					t.Errorf("%s: m5.large has %d pods, want %d", name, p.Value(), c.pods)
				}
			}
		}
	}
}
