package scheduling

import (
	"math/rand"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/model"
)

// TestClassPoolTypesAreEachTypesCheck: the types a class may use in a
// pool (found word by word from the pool's types by zone and capacity
// type) are the types a check of each one gives: matching the class's
// labels, holding it, offered in one of its allowed zones and in one of
// its capacity types, and no DaemonSet binding its host port; and its
// offered zones and capacity types are theirs. Random types offered in
// some zones and capacity types only, pods pinned to a zone, a capacity
// type or both, some with a DaemonSet's host port.
func TestClassPoolTypesAreEachTypesCheck(t *testing.T) {
	zones := []string{"z-1a", "z-1b", "z-1c"}
	cts := []string{model.CapacityTypeOnDemand, model.CapacityTypeSpot}
	// A DaemonSet binding port 8080 on the arm64 types.
	ds := &appsv1.DaemonSet{}
	ds.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		Ports:     []corev1.ContainerPort{{HostPort: 8080, ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}
	checked := 0
	for seed := int64(1); seed <= 80; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		var pods []*corev1.Pod
		for i := 0; i < 4+rnd.Intn(12); i++ {
			p := cpuPod(i, int64(100+rnd.Intn(4000)))
			p.Labels = map[string]string{"i": string(rune('a' + i))}
			p.Spec.NodeSelector = map[string]string{}
			if rnd.Intn(2) == 0 {
				p.Spec.NodeSelector[corev1.LabelTopologyZone] = zones[rnd.Intn(3)]
			}
			if rnd.Intn(2) == 0 {
				p.Spec.NodeSelector[model.LabelCapacityType] = cts[rnd.Intn(2)]
			}
			if rnd.Intn(4) == 0 {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
			}
			pods = append(pods, p)
		}
		in := Input{Pods: pods, Pools: []*model.Pool{{Name: "all"}}, InstanceTypes: randomTypes(rnd)}
		if seed%2 == 0 {
			in.DaemonSets = []*appsv1.DaemonSet{ds}
		}
		s := newSolver(&in)
		s.setup()
		s.pack()
		for _, c := range s.classes {
			for _, l := range c.levels {
				for pi, cp := range l.pools {
					if cp.labelTypes == nil || cp.types == nil {
						continue
					}
					ps := s.pools[pi]
					want := newBitset(len(ps.types))
					var wz, wc uint64
					holding := s.typesHolding(ps, c.req)
					for i, pt := range ps.types {
						if !cp.labelTypes.has(i) || !holding.has(i) || pt.zoneMask&cp.zoneMask == 0 || pt.ctMask&cp.ctMask == 0 {
							continue
						}
						blocked := false
						for _, d := range ps.dsPorts {
							if _, clash := d.conflicts(c.ports); clash && d.types.has(i) {
								blocked = true
							}
						}
						if blocked {
							continue
						}
						want.set(i)
						wz |= pt.zoneMask & cp.zoneMask
						wc |= pt.ctMask & cp.ctMask
					}
					for w := range want {
						if want[w] != cp.types[w] {
							t.Fatalf("seed %d, class %d: types %b, want %b", seed, c.idx, cp.types, want)
						}
					}
					if cp.ok && (wz != cp.offerZones || wc != cp.offerCTs) {
						t.Fatalf("seed %d, class %d: offered zones %b and capacity types %b, want %b and %b", seed, c.idx, cp.offerZones, cp.offerCTs, wz, wc)
					}
					checked++
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d class pools checked", checked)
	}
}

// TestTypesHoldingIsEachTypesCheck: the types of a pool holding a request
// (typesHolding: a check of every type for a pool's first requests, then
// the pool's sets of types by amount of each resource) are the types
// whose every resource, net of DaemonSets, is at least the request's:
// requests of random sizes, of exactly a type's amounts, of nothing, and
// of more than any type has.
func TestTypesHoldingIsEachTypesCheck(t *testing.T) {
	checked := 0
	for seed := int64(1); seed <= 20; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		in := Input{Pods: []*corev1.Pod{cpuPod(0, 100)}, Pools: []*model.Pool{{Name: "all"}}, InstanceTypes: randomTypes(rnd)}
		s := newSolver(&in)
		s.setup()
		ps := s.pools[0]
		d := s.dims.n()
		var reqs []vec
		reqs = append(reqs, make(vec, d))
		for _, pt := range ps.types {
			reqs = append(reqs, pt.net.clone())
		}
		for range 8 * holdScanMax {
			pt := ps.types[rnd.Intn(len(ps.types))]
			r := make(vec, d)
			for i := range r {
				r[i] = rnd.Int63n(pt.net[i] + 2)
			}
			reqs = append(reqs, r)
		}
		over := make(vec, d)
		for _, pt := range ps.types {
			over[dimCPU] = max(over[dimCPU], pt.net[dimCPU]+1)
		}
		reqs = append(reqs, over)
		for _, req := range reqs {
			got := s.typesHolding(ps, req)
			for i, pt := range ps.types {
				if want := req.le(pt.net); got.has(i) != want {
					t.Fatalf("seed %d, request %v, type %d (%v): holds %v, want %v", seed, req, i, pt.net, got.has(i), want)
				}
			}
			checked++
		}
		if ps.holdIdx == nil {
			t.Fatalf("seed %d: %d requests did not reach the sets by amount", seed, len(reqs))
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d requests checked", checked)
	}
}
