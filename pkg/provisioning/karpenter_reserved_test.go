package provisioning

import (
	"context"
	"fmt"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
)

// TestKarpenterReservedInstanceTypes ports the "Reserved Instance Types"
// cases of Karpenter v1.15's scheduling suite
// (pkg/controllers/provisioning/scheduling/suite_test.go): a small (2
// vCPU) and a medium (3 vCPU) type each with one instance reserved in
// zone a, a large (6 vCPU) type without. Karpenter reserves pessimistically
// (a NodeClaim that could be several types holds a unit of each type's
// reservation) and so places one pod into reserved capacity per
// scheduling loop, the rest the next loops; Joist gives each node one
// reservation and fills them all in one pass. Each case's want is where
// Karpenter's pods end after all its loops, which Joist reaches in one
// (where Joist ends elsewhere on purpose, the case says so).
func TestKarpenterReservedInstanceTypes(t *testing.T) {
	small := launch.Reservation{ID: "r-small", InstanceType: "small.t", Zone: "us-east-1a", Type: "default", Available: 1}
	medium := launch.Reservation{ID: "r-medium", InstanceType: "medium.t", Zone: "us-east-1a", Type: "default", Available: 1}
	terms := []model.CapacityReservationTerm{{Tags: map[string]string{"k": "v"}}}
	np := func(name string, weight int32, class string) *model.Pool {
		return &model.Pool{Name: name, API: model.APIV1, NodeClass: class, Weight: weight}
	}
	for _, c := range []struct {
		name    string
		pools   []*model.Pool
		classes map[string][]launch.Reservation
		pods    []*corev1.Pod
		want    []string
	}{
		{
			// Karpenter: small reserved, then medium reserved, then small
			// on demand, one per loop.
			name:    "shouldn't fallback to on-demand or spot when compatible reserved offerings are available",
			pools:   []*model.Pool{np("default", 0, "a")},
			classes: map[string][]launch.Reservation{"a": {small, medium}},
			pods:    times(3, func(int) *corev1.Pod { return kpod(1800, nil, "", nil) }),
			want:    []string{"default:medium.t/reserved/r-medium x1", "default:small.t/on-demand/ x1", "default:small.t/reserved/r-small x1"},
		},
		{
			// One reservation both pools' classes select: one pod in it, the
			// other pool's pod on demand.
			name:    "should correctly track reservations shared across nodepools",
			pools:   []*model.Pool{np("np-1", 0, "a"), np("np-2", 0, "a")},
			classes: map[string][]launch.Reservation{"a": {small}},
			pods: times(2, func(i int) *corev1.Pod {
				return kpod(0, map[string][]string{model.LabelInstanceType: {"small.t"}, model.LabelNodePool: {fmt.Sprintf("np-%d", i+1)}}, "", nil)
			}),
			want: []string{"np-1:small.t/reserved/r-small x1", "np-2:small.t/on-demand/ x1"},
		},
		{
			name:    "should correctly track reservations for multiple nodepools with distinct reservations for the same instance pool",
			pools:   []*model.Pool{np("np-1", 0, "a"), np("np-2", 0, "b")},
			classes: map[string][]launch.Reservation{"a": {small}, "b": {{ID: "r-distinct", InstanceType: "small.t", Zone: "us-east-1a", Available: 1}}},
			pods: times(2, func(i int) *corev1.Pod {
				return kpod(0, map[string][]string{model.LabelInstanceType: {"small.t"}, model.LabelNodePool: {fmt.Sprintf("np-%d", i+1)}}, corev1.LabelHostname, nil)
			}),
			want: []string{"np-1:small.t/reserved/r-small x1", "np-2:small.t/reserved/r-distinct x1"},
		},
		{
			// Karpenter: two, then one, then one on demand.
			name:    "should correctly track multiple reservations for the same instance pool",
			pools:   []*model.Pool{np("default", 0, "a")},
			classes: map[string][]launch.Reservation{"a": {small, medium, {ID: "r-small-2", InstanceType: "small.t", Zone: "us-east-1a", Available: 2}}},
			pods: times(4, func(int) *corev1.Pod {
				return kpod(0, map[string][]string{model.LabelInstanceType: {"small.t"}}, corev1.LabelHostname, nil)
			}),
			want: []string{"default:small.t/on-demand/ x1", "default:small.t/reserved/r-small x1", "default:small.t/reserved/r-small-2 x1", "default:small.t/reserved/r-small-2 x1"},
		},
		{
			// Differs on purpose. Karpenter puts the second pod on demand in
			// the heavier pool rather than into the lighter pool's
			// reservation; Joist uses the reservation, which the account
			// pays for anyway, as it uses any capacity there is before it
			// buys more (pool weights order the nodes it buys).
			name:    "shouldn't fallback to a lower weight NodePool if a reserved offering is available",
			pools:   []*model.Pool{np("np-primary", 100, "a"), np("np-fallback", 50, "b")},
			classes: map[string][]launch.Reservation{"a": {small}, "b": {{ID: "r-fallback", InstanceType: "small.t", Zone: "us-east-1a", Available: 1}}},
			pods: times(2, func(int) *corev1.Pod {
				return kpod(0, map[string][]string{model.LabelInstanceType: {"small.t"}}, corev1.LabelHostname, nil)
			}),
			want: []string{"np-fallback:small.t/reserved/r-fallback x1", "np-primary:small.t/reserved/r-small x1"},
		},
		{
			// Both pods prefer np-1: the second goes on demand in np-1
			// rather than into np-2's reservation (the preference is kept).
			name:    "shouldn't relax preferences when a pod fails to schedule due to a reserved offering error",
			pools:   []*model.Pool{np("np-1", 0, "a"), np("np-2", 0, "b")},
			classes: map[string][]launch.Reservation{"a": {small}, "b": {{ID: "r-distinct", InstanceType: "small.t", Zone: "us-east-1a", Available: 1}}},
			pods: times(2, func(int) *corev1.Pod {
				return kpod(0, map[string][]string{model.LabelInstanceType: {"small.t"}}, corev1.LabelHostname, map[string]string{model.LabelNodePool: "np-1"})
			}),
			want: []string{"np-1:small.t/on-demand/ x1", "np-1:small.t/reserved/r-small x1"},
		},
		{
			// Two pods that require reserved capacity in zone a and each
			// other's zone: both on the one reserved node.
			name:    "should handle multiple pods on reserved nodes",
			pools:   []*model.Pool{np("np-1", 0, "a")},
			classes: map[string][]launch.Reservation{"a": {small}},
			pods: times(2, func(int) *corev1.Pod {
				p := kpod(0, map[string][]string{model.LabelInstanceType: {"small.t"}, model.LabelNodePool: {"np-1"},
					model.LabelCapacityType: {model.CapacityTypeReserved}, model.LabelZone: {"us-east-1a"}}, "", nil)
				p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "test"}}, TopologyKey: model.LabelZone}}}
				return p
			}),
			want: []string{"np-1:small.t/reserved/r-small x2"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAPIServer(t)
			for i, p := range c.pods {
				p.Name = fmt.Sprintf("p%d", i)
				a.pod(p)
			}
			l := &reservingLauncher{byClass: c.classes}
			var classes []*model.NodeClass
			for name := range c.classes {
				classes = append(classes, &model.NodeClass{Name: name, CapacityReservationSelector: terms})
			}
			p := reservingProvisioner(a, l, c.pools, classes...)
			p.Catalog = karpenterReservedCatalog()
			res, err := p.Reconcile(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Unschedulable) != 0 {
				t.Fatalf("unschedulable: %v", res.Unschedulable)
			}
			var got []string
			for _, inst := range res.Launched {
				n := 0
				for _, pod := range c.pods {
					live, err := a.Kube.CoreV1().Pods("default").Get(context.Background(), pod.Name, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if pods.PlannedInstance(live) == inst.ID {
						n++
					}
				}
				got = append(got, fmt.Sprintf("%s:%s/%s/%s x%d", inst.Pool, inst.InstanceType, inst.CapacityType, inst.ReservationID, n))
			}
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("launched %q, want %q", got, c.want)
			}
		})
	}
}

// karpenterReservedCatalog has Karpenter's fake small (2 vCPU, 2 GiB),
// medium (3, 3 GiB) and large (6, 6 GiB) types, on demand in two zones,
// priced by their resources.
func karpenterReservedCatalog() *catalog.Catalog {
	var types []*catalog.InstanceType
	offers := map[string][]catalog.Offering{}
	for _, s := range []struct {
		name string
		cpu  int64
	}{{"small.t", 2}, {"medium.t", 3}, {"large.t", 6}} {
		types = append(types, &catalog.InstanceType{Name: s.name, Family: s.name[:len(s.name)-2], Category: "t", Generation: 9, Size: "x", Arch: "amd64",
			VCPU: s.cpu, MemoryMiB: s.cpu * 1024, MaxENIs: 4, MaxENIsDefaultCard: 4, IPv4PerENI: 15})
		price := float64(s.cpu) * 0.05
		offers[s.name] = []catalog.Offering{{Zone: "us-east-1a", CapacityType: "on-demand", Price: price}, {Zone: "us-east-1b", CapacityType: "on-demand", Price: price}}
	}
	return catalog.New("us-east-1", []string{"us-east-1a", "us-east-1b"}, types, offers)
}

func times(n int, f func(int) *corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// kpod is a pending pod labelled app=test requesting milliCPU, with the
// required node terms given (key In values), a required anti-affinity to
// the other app=test pods over antiKey (none when empty), and preferred
// node terms (key In value).
func kpod(milliCPU int64, required map[string][]string, antiKey string, preferred map[string]string) *corev1.Pod {
	p := pendingPod("", "0")
	p.Labels = map[string]string{"app": "test"}
	if milliCPU > 0 {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(milliCPU, resource.DecimalSI)
	}
	p.Spec.Affinity = &corev1.Affinity{}
	if len(required) > 0 {
		var exprs []corev1.NodeSelectorRequirement
		for k, vs := range required {
			exprs = append(exprs, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: vs})
		}
		sort.Slice(exprs, func(i, j int) bool { return exprs[i].Key < exprs[j].Key })
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: exprs}}}}
	}
	for k, v := range preferred {
		if p.Spec.Affinity.NodeAffinity == nil {
			p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}}}})
	}
	if antiKey != "" {
		p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "test"}}, TopologyKey: antiKey}}}
	}
	return p
}
