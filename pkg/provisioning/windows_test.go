package provisioning

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
)

// windowsCatalog is reservedCatalog's r9.large and r9.xlarge (amd64) and a
// cheaper arm64 r9g.large, which no Windows AMI runs on.
func windowsCatalog() *catalog.Catalog {
	large := &catalog.InstanceType{Name: "r9.large", Family: "r9", Category: "r", Generation: 9, Size: "large", Arch: "amd64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, MaxENIsDefaultCard: 3, IPv4PerENI: 10}
	xlarge := &catalog.InstanceType{Name: "r9.xlarge", Family: "r9", Category: "r", Generation: 9, Size: "xlarge", Arch: "amd64", VCPU: 4, MemoryMiB: 16384, MaxENIs: 4, MaxENIsDefaultCard: 4, IPv4PerENI: 15}
	graviton := &catalog.InstanceType{Name: "r9g.large", Family: "r9g", Category: "r", Generation: 9, Size: "large", Arch: "arm64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, MaxENIsDefaultCard: 3, IPv4PerENI: 10}
	offers := func(price float64) []catalog.Offering {
		return []catalog.Offering{{Zone: "us-east-1a", CapacityType: "on-demand", Price: price}, {Zone: "us-east-1b", CapacityType: "on-demand", Price: price}}
	}
	return catalog.New("us-east-1", []string{"us-east-1a", "us-east-1b"}, []*catalog.InstanceType{large, xlarge, graviton},
		map[string][]catalog.Offering{"r9.large": offers(0.10), "r9.xlarge": offers(0.20), "r9g.large": offers(0.08)})
}

// TestReconcile_PlansWindowsPodsOntoWindowsNodes: a pod selecting
// kubernetes.io/os=windows is launched in the pool whose class is Windows
// (an alias-only windows2022 class), on amd64 types only, and nominated
// with the instance's os=windows and build; a pod selecting linux is not
// planned onto the Windows pool even when that pool weighs more and sets
// no os requirement of its own. A Windows pool's instance on its way and a
// reservation its class selects take Windows pods as Windows nodes, and
// take no Linux pod.
//
// On the real API server: the pass reads and nominates the pods there.
func TestReconcile_PlansWindowsPodsOntoWindowsNodes(t *testing.T) {
	windows := &model.NodeClass{Name: "windows", API: model.APIV1, AMISelector: []model.SelectorTerm{{Alias: "windows2022@latest"}},
		CapacityReservationSelector: []model.CapacityReservationTerm{{Tags: map[string]string{"os": "windows"}}}}
	linux := &model.NodeClass{Name: "linux", API: model.APIV1, AMIFamily: "AL2023"}
	pools := []*model.Pool{
		{Name: "windows", API: model.APIV1, NodeClass: "windows", Weight: 50},
		{Name: "linux", API: model.APIV1, NodeClass: "linux"},
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	onItsWay := launch.Instance{ID: "i-win", InstanceType: "r9.large", Zone: "us-east-1a", CapacityType: "on-demand", Pool: "windows", NodeClass: "windows",
		State: "pending", LaunchTime: now.Add(-time.Minute), Tags: map[string]string{launch.TagCluster: "test"}}
	reservation := launch.Reservation{ID: "cr-win", InstanceType: "r9.large", Zone: "us-east-1b", Type: "default", MatchCriteria: "targeted", Available: 1}
	for _, c := range []struct {
		name     string
		os       []string // each pod's kubernetes.io/os selector
		inFlight []launch.Instance
		res      []launch.Reservation
		// want is each launch as pool/type/capacity type; nominated
		// is each pod's instance.
		want      []string
		nominated map[string]string
	}{
		{
			name: "a Windows pod and a Linux pod get a node each, in their pools",
			os:   []string{"windows", "linux"},
			want: []string{"linux/r9g.large/on-demand", "windows/r9.large/on-demand"},
		},
		{
			name: "a Windows pool's instance on its way takes the Windows pod, not the Linux one",
			os:   []string{"windows", "linux"}, inFlight: []launch.Instance{onItsWay},
			want: []string{"linux/r9g.large/on-demand"}, nominated: map[string]string{"p0": "i-win"},
		},
		{
			name: "a Windows class's reservation takes the Windows pod, not the Linux one",
			os:   []string{"linux", "windows"}, res: []launch.Reservation{reservation},
			want: []string{"linux/r9g.large/on-demand", "windows/r9.large/reserved"},
		},
		{
			name: "a Windows class's reservation of an arm64 type is no room for Windows",
			os:   []string{"windows"}, res: []launch.Reservation{{ID: "cr-arm", InstanceType: "r9g.large", Zone: "us-east-1b", Type: "default", MatchCriteria: "targeted", Available: 1}},
			want: []string{"windows/r9.large/on-demand"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAPIServer(t)
			for i, os := range c.os {
				pod := pendingPod(fmt.Sprintf("p%d", i), "1500m")
				pod.Spec.NodeSelector = map[string]string{corev1.LabelOSStable: os}
				a.pod(pod)
			}
			l := &reservingLauncher{inFlight: c.inFlight, byClass: map[string][]launch.Reservation{"windows": c.res}}
			p := reservingProvisioner(a, l, pools, windows, linux)
			p.Catalog = windowsCatalog()
			res, err := p.Reconcile(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Unschedulable) != 0 {
				t.Fatalf("unschedulable: %v", res.Unschedulable)
			}
			var got []string
			for _, r := range l.requests {
				o := r.Options[0]
				got = append(got, r.Pool.Name+"/"+o.InstanceType+"/"+o.CapacityType)
				if r.Pool.Name != "windows" {
					continue
				}
				if r.Class != windows {
					t.Errorf("the Windows pool launched with class %+v", r.Class)
				}
				for _, o := range r.Options {
					if o.Arch != "amd64" {
						t.Errorf("a Windows node may be %s (%s)", o.InstanceType, o.Arch)
					}
				}
			}
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("launched %v, want %v", got, c.want)
			}
			for i, os := range c.os {
				name := fmt.Sprintf("p%d", i)
				pod, err := a.cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				id := pod.Annotations[pods.AnnotationInstance]
				if want := c.nominated[name]; want != "" && id != want {
					t.Errorf("%s (%s) nominated to %q, want %s", name, os, id, want)
				}
				for _, x := range append(res.Launched, c.inFlight...) {
					if x.ID == id && (x.Pool == "windows") != (os == "windows") {
						t.Errorf("%s (%s) went to pool %s", name, os, x.Pool)
					}
				}
				if id == "" {
					t.Errorf("%s (%s) was not nominated", name, os)
				}
				if os == "windows" {
					if l := pods.InstanceLabels(pod); l[corev1.LabelOSStable] != "windows" {
						t.Errorf("%s nominated with instance labels %v, want os windows", name, l)
					}
				}
			}
		})
	}
}
