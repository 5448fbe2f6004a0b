package provisioning

import (
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

func TestNodeLabels_LeavesOutWhatTheKubeletSetsItself(t *testing.T) {
	got := nodeLabels(map[string]string{
		"nodeType": "service-2023", model.LabelProvisionerName: "service", model.LabelCapacityType: "on-demand",
		model.LabelInstanceType: "t3.large", model.LabelZone: "ap-northeast-2a", model.LabelRegion: "ap-northeast-2",
		model.LabelArch: "amd64", model.LabelOS: "linux", model.LabelHostname: "x",
	})
	want := map[string]string{"nodeType": "service-2023", model.LabelProvisionerName: "service", model.LabelCapacityType: "on-demand"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("nodeLabels = %v, want %v", got, want)
	}
}

func TestPoolLabels_FixedRequirementsLabelsAndPoolName(t *testing.T) {
	p := &model.Pool{Name: "service", API: model.APIV1Alpha5, Labels: map[string]string{"nodeType": "service-2023"},
		Requirements: []model.Requirement{
			{Key: model.LabelCapacityType, Operator: "In", Values: []string{"on-demand"}},
			{Key: model.LabelZone, Operator: "In", Values: []string{"a", "c"}},
			{Key: "team", Operator: "Exists"},
		}}
	want := map[string]string{"nodeType": "service-2023", model.LabelCapacityType: "on-demand", model.LabelProvisionerName: "service"}
	if got := poolLabels(p); !reflect.DeepEqual(got, want) {
		t.Fatalf("poolLabels = %v, want %v", got, want)
	}
}

func TestWithoutStartupTaints(t *testing.T) {
	pool := &model.Pool{StartupTaints: []corev1.Taint{{Key: "cilium", Effect: corev1.TaintEffectNoSchedule}}}
	in := []corev1.Taint{
		{Key: "service", Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "cilium", Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
	}
	got := withoutStartupTaints(in, pool)
	if len(got) != 1 || got[0].Key != "service" {
		t.Fatalf("withoutStartupTaints = %v, want only the pool's real taint", got)
	}
}

// The options carry the pod capacity of the catalog the plan was made
// with, under the pool's kubelet settings, else the node class's: the
// launch would otherwise look the type up in the embedded catalog.
func TestLaunchOptions_CarryThePlansPodCapacity(t *testing.T) {
	cat, err := catalog.Offline("ap-northeast-2", []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	n := scheduling.NewNode{Zones: []string{"ap-northeast-2a"}, CapacityTypes: []string{"on-demand"},
		InstanceTypeOptions: []scheduling.InstanceTypeOption{{Name: "m5.large"}}}
	none := func(string, string, string) bool { return false }
	forty, thirty := int32(40), int32(30)
	for _, tc := range []struct {
		name string
		pool *model.Pool
		nc   *model.NodeClass
		want int64
	}{
		{"defaults: the ENI-limited density", &model.Pool{}, &model.NodeClass{}, 29},
		{"the pool's kubelet", &model.Pool{Kubelet: &model.Kubelet{MaxPods: &forty}}, &model.NodeClass{Kubelet: &model.Kubelet{MaxPods: &thirty}}, 40},
		{"the node class's kubelet when the pool has none", &model.Pool{}, &model.NodeClass{Kubelet: &model.Kubelet{MaxPods: &thirty}}, 30},
	} {
		opts := launchOptions(cat, n, tc.pool, tc.nc, nil, none)
		if len(opts) != 1 || opts[0].MaxPods != tc.want {
			t.Errorf("%s: options %+v, want one with MaxPods %d", tc.name, opts, tc.want)
		}
	}
}

func TestLaunchOptions_EveryAllowedAvailableOffering(t *testing.T) {
	cat, err := catalog.Offline("ap-northeast-2", []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	n := scheduling.NewNode{
		Zones: []string{"ap-northeast-2a", "ap-northeast-2c"}, CapacityTypes: []string{"on-demand"},
		InstanceTypeOptions: []scheduling.InstanceTypeOption{{Name: "t3.large"}, {Name: "t3.xlarge"}, {Name: "no-such.type"}},
	}
	unavailable := func(it, z, ct string) bool { return it == "t3.large" && z == "ap-northeast-2a" }
	var got []string
	for _, o := range launchOptions(cat, n, &model.Pool{}, &model.NodeClass{}, nil, unavailable) {
		if o.Arch != "amd64" || o.Variant != "standard" || o.Price <= 0 {
			t.Errorf("option %+v: want amd64, standard, a price", o)
		}
		if ct, _ := cat.Lookup(o.InstanceType); o.MaxPods != ct.MaxPodsFor(nil, &model.NodeClass{}) || o.MaxPods == 0 {
			t.Errorf("option %+v: want the catalog's pod capacity %d", o, ct.MaxPodsFor(nil, &model.NodeClass{}))
		}
		got = append(got, o.InstanceType+"/"+o.Zone+"/"+o.CapacityType)
	}
	sort.Strings(got)
	want := []string{
		"t3.large/ap-northeast-2c/on-demand",
		"t3.xlarge/ap-northeast-2a/on-demand",
		"t3.xlarge/ap-northeast-2c/on-demand",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("launchOptions = %v, want %v (zones and capacity types of the node, unavailable ones left out)", got, want)
	}
}

// TestSolveUnavailable_NilWhileNothingIsMarked: the simulator is told of
// offerings out of capacity only when one is marked and not expired, so
// warm solves keep what the prepared catalog holds.
func TestSolveUnavailable_NilWhileNothingIsMarked(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	live := func(string, string, string) bool { return true }
	expired := catalog.NewUnavailable(time.Minute)
	expired.Mark(now.Add(-time.Hour), "m5.large", "us-east-1a", "spot")
	marked := catalog.NewUnavailable(time.Minute)
	marked.Mark(now, "m5.large", "us-east-1a", "spot")
	for _, c := range []struct {
		name string
		u    *catalog.Unavailable
		told bool
	}{
		{"no set", nil, false},
		{"empty set", catalog.NewUnavailable(time.Minute), false},
		{"only expired marks", expired, false},
		{"a mark that holds", marked, true},
	} {
		p := &Provisioner{Unavailable: c.u}
		if got := p.solveUnavailable(now, live) != nil; got != c.told {
			t.Errorf("%s: simulator told of unavailable offerings %v, want %v", c.name, got, c.told)
		}
	}
}
