package scheduling

import (
	"math/rand"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// TestNewNodesShareOnlyEqualOptions checks that new nodes sharing option
// lists (sharedOpts) get what each would get alone: one pod per node
// (hostname anti-affinity) of a few sizes, some pinned to a zone, on
// random catalogs, so some nodes have the same options and others not.
func TestNewNodesShareOnlyEqualOptions(t *testing.T) {
	shared, distinct := 0, 0
	for seed := int64(1); seed <= 40; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		list := randomTypes(rnd)
		var pods []*corev1.Pod
		for i := 0; i < 12; i++ {
			p := cpuPod(i, int64(500*(1+rnd.Intn(3))))
			p.Labels = map[string]string{"app": "x"}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}}}
			if i%3 == 0 {
				// Pinned to a zone: the same types, other offerings.
				p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: []string{"z-1a", "z-1b", "z-1c"}[rnd.Intn(3)]}
			}
			pods = append(pods, p)
		}
		in := Input{Pods: pods, Pools: []*model.Pool{{Name: "all"}}, InstanceTypes: list}
		s := newSolver(&in)
		s.setup()
		s.pack()
		lists := map[*InstanceTypeOption]bool{}
		for _, b := range s.bins {
			if b.node != nil || len(b.entries) == 0 {
				continue
			}
			got, gotErr := s.newNode(b, nil)
			saved := s.optLists
			s.optLists = nil
			want, wantErr := s.newNode(b, nil)
			s.optLists = saved
			if !reflect.DeepEqual(got, want) || gotErr != wantErr {
				t.Fatalf("seed %d: node with shared lists\n%+v\nalone\n%+v", seed, got, want)
			}
			if len(got.InstanceTypeOptions) > 0 {
				lists[&got.InstanceTypeOptions[0]] = true
				if cap(got.InstanceTypeOptions) != len(got.InstanceTypeOptions) {
					t.Fatalf("seed %d: a shared list has room to append into", seed)
				}
			}
		}
		nodes := 0
		for _, b := range s.bins {
			if b.node == nil && len(b.entries) > 0 {
				nodes++
			}
		}
		shared += nodes - len(lists)
		if len(lists) > 1 {
			distinct++
		}
	}
	if shared == 0 || distinct == 0 {
		t.Errorf("%d nodes shared a list, %d solves had several: both must happen", shared, distinct)
	}
}
