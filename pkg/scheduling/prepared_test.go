package scheduling

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/model"
)

// randomTypes is a catalog with ties of price and name order unlike list
// order, two architectures, three categories, spot and on-demand in three
// zones (some missing), and some types without a capacity list.
func randomTypes(rnd *rand.Rand) []*InstanceType {
	var out []*InstanceType
	n := 5 + rnd.Intn(40)
	for i := 0; i < n; i++ {
		cpu := int64(1 + rnd.Intn(8))
		alloc := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu*1000-100, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(1+rnd.Intn(8))<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(int64(1+rnd.Intn(30)), resource.DecimalSI),
		}
		if rnd.Intn(4) == 0 {
			alloc["example.com/fpga"] = *resource.NewQuantity(1, resource.DecimalSI)
		}
		it := &InstanceType{
			Name: fmt.Sprintf("t%d.x", rnd.Intn(n)), // duplicate names happen
			Labels: map[string]string{
				corev1.LabelArchStable:                []string{"amd64", "arm64"}[rnd.Intn(2)],
				"karpenter.k8s.aws/instance-category": []string{"c", "m", "r"}[rnd.Intn(3)],
			},
			Allocatable: alloc,
		}
		if rnd.Intn(3) > 0 {
			it.Capacity = alloc.DeepCopy()
			it.Capacity[corev1.ResourceCPU] = *resource.NewQuantity(cpu, resource.DecimalSI)
		}
		for _, z := range []string{"z-1a", "z-1b", "z-1c"} {
			for _, ct := range []string{model.CapacityTypeOnDemand, model.CapacityTypeSpot} {
				if rnd.Intn(4) > 0 {
					it.Offerings = append(it.Offerings, Offering{Zone: z, CapacityType: ct, Price: float64(1+rnd.Intn(6)) / 4})
				}
			}
		}
		out = append(out, it)
	}
	return out
}

// wantTypes is the pool's types as the simulator defines them, computed
// the plain way (every type's labels, resources and offerings read again,
// one stable sort): what prepareTypes must give from the prepared list.
func wantTypes(s *solver, ps *poolState, list []*InstanceType) []string {
	type row struct {
		it       *InstanceType
		minPrice float64
		desc     string
	}
	var rows []row
	for _, it := range list {
		if !ps.typeReqs.matchesLabels(it.Labels) {
			continue
		}
		net, capv, ds := s.dims.fromList(it.Allocatable), s.dims.fromList(it.Capacity), s.dims.zero()
		if len(it.Capacity) == 0 {
			capv = net.clone()
		}
		var offers []offer
		var zm, cm uint64
		minPrice := 0.0
		for _, o := range it.Offerings {
			if s.in.Unavailable != nil && s.in.Unavailable(it.Name, o.Zone, o.CapacityType) {
				continue
			}
			z, c := s.world.zoneIdx[o.Zone], s.world.ctIdx[o.CapacityType]
			if !maskHas(ps.zoneMask, z) || !maskHas(ps.ctMask, c) {
				continue
			}
			offers = append(offers, offer{zone: z, ct: c, price: o.Price})
			zm |= maskOf(z)
			cm |= maskOf(c)
			if len(offers) == 1 || o.Price < minPrice {
				minPrice = o.Price
			}
		}
		if len(offers) == 0 {
			continue
		}
		for _, d := range s.daemonSetsFor(ps) {
			if d.compatibleWithType(s, ps, it.Labels) {
				ds.add(d.req)
			}
		}
		net.sub(ds)
		if net[dimPods] <= 0 || net[dimCPU] <= 0 {
			continue
		}
		rows = append(rows, row{it, minPrice, fmt.Sprintf("%s %v net=%v cap=%v ds=%v offers=%v zm=%b cm=%b", it.Name, minPrice, net, capv, ds, offers, zm, cm)})
	}
	byName := append([]row(nil), rows...)
	sort.SliceStable(byName, func(i, j int) bool { return byName[i].it.Name < byName[j].it.Name })
	rank := map[*InstanceType]int{}
	for r, x := range byName {
		rank[x.it] = r
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].minPrice != rows[j].minPrice {
			return rows[i].minPrice < rows[j].minPrice
		}
		return rows[i].it.Name < rows[j].it.Name
	})
	var out []string
	for _, x := range rows {
		out = append(out, fmt.Sprintf("%s rank=%d", x.desc, rank[x.it]))
	}
	return out
}

func gotTypes(ps *poolState) []string {
	var out []string
	for _, t := range ps.types {
		out = append(out, fmt.Sprintf("%s %v net=%v cap=%v ds=%v offers=%v zm=%b cm=%b rank=%d", t.it.Name, t.minPrice, t.net, t.capv, t.ds, t.offers, t.zoneMask, t.ctMask, t.nameRank))
	}
	return out
}

// TestPreparedPoolTypes checks each pool's types, prepared from a
// PreparedTypes shared by several solves, against the plain definition:
// with offerings out of capacity (which reorder the cheapest-first list),
// a node in a zone the catalog does not offer (other zone indices),
// DaemonSets on one architecture, per-pool lists and pools restricted to
// some zones, capacity types and categories; and the frontier, kept by
// the prepared list, against one found again.
func TestPreparedPoolTypes(t *testing.T) {
	kept, selective := 0, 0
	for seed := int64(1); seed <= 150; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		shared, own := randomTypes(rnd), randomTypes(rnd)
		in := Input{InstanceTypes: shared, PoolInstanceTypes: map[string][]*InstanceType{"own": own},
			Prepared: []*PreparedTypes{PrepareTypes(shared), PrepareTypes(own)}}
		in.Pools = []*model.Pool{
			{Name: "all"},
			// Like "all" but with a limit: the same types, every one on
			// its frontier.
			{Name: "capped", Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}},
			{Name: "own", Requirements: []model.Requirement{{Key: corev1.LabelArchStable, Operator: "In", Values: []string{"amd64"}}}},
			{Name: "narrow", Requirements: []model.Requirement{
				{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"z-1b", "z-1c"}},
				{Key: model.LabelCapacityType, Operator: "In", Values: []string{model.CapacityTypeOnDemand}},
				{Key: "karpenter.k8s.aws/instance-category", Operator: "NotIn", Values: []string{"r"}},
			}},
		}
		if rnd.Intn(2) == 0 {
			out := map[string]bool{}
			for _, it := range shared {
				if rnd.Intn(3) == 0 {
					out[it.Name+"/z-1a"] = true
				}
			}
			in.Unavailable = func(typ, zone, _ string) bool { return out[typ+"/"+zone] }
		}
		if rnd.Intn(2) == 0 {
			in.Nodes = []*Node{{Name: "n", Labels: map[string]string{corev1.LabelTopologyZone: "z-0"}}}
		}
		if rnd.Intn(2) == 0 {
			ds := &appsv1.DaemonSet{}
			ds.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
			ds.Spec.Template.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}}}
			in.DaemonSets = []*appsv1.DaemonSet{ds}
		}
		// The second round finds the price orders and pool types kept; the
		// third runs another DaemonSet, which must not get them, and the
		// fourth finds those of the third.
		for round := 0; round < 4; round++ {
			if round == 2 {
				ds := &appsv1.DaemonSet{}
				ds.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "amd64"}
				ds.Spec.Template.Spec.Containers = []corev1.Container{{
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")}},
					Ports:     []corev1.ContainerPort{{HostPort: 9100, ContainerPort: 9100, Protocol: corev1.ProtocolTCP}}}}
				in.DaemonSets = []*appsv1.DaemonSet{ds}
			}
			s := newSolver(&in)
			s.setup()
			for _, ps := range s.pools {
				list := in.InstanceTypes
				if ps.pool.Name == "own" {
					list = own
				}
				want, got := wantTypes(s, ps, list), gotTypes(ps)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d round %d pool %s:\ngot  %q\nwant %q", seed, round, ps.pool.Name, got, want)
				}
				// A class's type requirements read by the prepared label
				// columns select the types their labels do.
				for q := 0; q < 8; q++ {
					r := randomTypeReqs(rnd, list)
					byCols, byLabels := s.matchTypes(ps, r, true), s.matchTypes(ps, r, false)
					if !reflect.DeepEqual(byCols, byLabels) {
						t.Fatalf("seed %d round %d pool %s: %s by columns %v, by labels %v", seed, round, ps.pool.Name, describeReqs(r), byCols, byLabels)
					}
					n := 0
					for i := range ps.types {
						if byLabels.has(i) {
							n++
						}
					}
					if n > 0 && n < len(ps.types) {
						selective++
					}
				}
				withDS := false
				for _, tp := range ps.types {
					withDS = withDS || tp.ds[dimCPU] > 0
				}
				if wantPorts := round >= 2 && withDS; wantPorts != (len(ps.dsPorts) > 0) {
					t.Fatalf("seed %d round %d pool %s: DaemonSet host ports %v", seed, round, ps.pool.Name, ps.dsPorts)
				}
				for i, tp := range ps.types {
					if tp.idx != i || ps.byName[tp.nameRank] != i || !ps.allTypes.has(i) || ps.allIdx[i] != i {
						t.Fatalf("seed %d round %d pool %s: type %d has index %d, name rank %d", seed, round, ps.pool.Name, i, tp.idx, tp.nameRank)
					}
				}
				fresh := &poolState{types: ps.types, hasLimits: ps.hasLimits, limit: ps.limit, frontierBits: newBitset(len(ps.types))}
				s.buildFrontier(fresh)
				if !reflect.DeepEqual(ps.frontier, fresh.frontier) || !reflect.DeepEqual(ps.frontierBits, fresh.frontierBits) {
					t.Fatalf("seed %d round %d pool %s: frontier %v, want %v", seed, round, ps.pool.Name, ps.frontier, fresh.frontier)
				}
			}
			if len(s.prepared) != 2 || s.prepared[0] != in.Prepared[0] || s.prepared[1] != in.Prepared[1] {
				t.Fatalf("seed %d: the input's prepared lists were not used", seed)
			}
		}
		kept += len(in.Prepared[0].poolTypes) + len(in.Prepared[1].poolTypes)
	}
	if kept == 0 {
		t.Error("no pool types were kept: the test never reused them")
	}
	if selective == 0 {
		t.Error("no type requirement selected some types and not others")
	}
}

// randomTypeReqs is a class's type requirements over randomTypes' labels
// and names: In, NotIn, Exists, DoesNotExist, one to three of them.
func randomTypeReqs(rnd *rand.Rand, list []*InstanceType) *reqs {
	var in []corev1.NodeSelectorRequirement
	for n := 1 + rnd.Intn(3); n > 0; n-- {
		switch rnd.Intn(5) {
		case 0:
			in = append(in, corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{[]string{"amd64", "arm64"}[rnd.Intn(2)]}})
		case 1:
			in = append(in, corev1.NodeSelectorRequirement{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpNotIn, Values: []string{[]string{"c", "m", "r"}[rnd.Intn(3)]}})
		case 2:
			names := []string{list[rnd.Intn(len(list))].Name, list[rnd.Intn(len(list))].Name}
			in = append(in, corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: names})
		case 3:
			in = append(in, corev1.NodeSelectorRequirement{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpExists})
		default:
			in = append(in, corev1.NodeSelectorRequirement{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpDoesNotExist})
		}
	}
	r := newReqs()
	r.addNodeSelectorRequirements(in)
	return r
}

// TestSolveWithPreparedIsSolveWithout checks that a prepared list changes
// nothing in the plan, that a prepared form of another list is not used,
// and that solves sharing one PreparedTypes at once (go test -race) agree.
func TestSolveWithPreparedIsSolveWithout(t *testing.T) {
	rnd := rand.New(rand.NewSource(7))
	list := randomTypes(rnd)
	var pods []*corev1.Pod
	for i := 0; i < 40; i++ {
		p := &corev1.Pod{}
		p.Name, p.Namespace = fmt.Sprintf("p%02d", i), "default"
		p.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: *resource.NewMilliQuantity(int64(100+rnd.Intn(1500)), resource.DecimalSI)}}}}
		pods = append(pods, p)
	}
	plain := Input{Pods: pods, Pools: []*model.Pool{{Name: "all"}}, InstanceTypes: list}
	want := Solve(plain)
	if len(want.NewNodes) == 0 {
		t.Fatal("nothing planned")
	}
	// A list like it (same length, same types) but priced otherwise.
	dearer := make([]*InstanceType, len(list))
	for i, it := range list {
		c := *it
		c.Offerings = nil
		for _, o := range it.Offerings {
			o.Price *= float64(1 + i%3)
			c.Offerings = append(c.Offerings, o)
		}
		dearer[i] = &c
	}
	other := plain
	other.Prepared = []*PreparedTypes{PrepareTypes(randomTypes(rnd)), PrepareTypes(dearer)}
	if got := Solve(other); !reflect.DeepEqual(got, want) {
		t.Errorf("with other lists prepared: %+v, want %+v", got, want)
	}
	prepared := plain
	prepared.Prepared = []*PreparedTypes{PrepareTypes(list)}
	var wg sync.WaitGroup
	plans := make([]Plan, 4)
	for i := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			plans[i] = Solve(prepared)
		}()
	}
	wg.Wait()
	for i, got := range plans {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("solve %d with the list prepared: %+v, want %+v", i, got, want)
		}
	}
}

// TestKeptPoolTypesOldestGo checks that a full prepared list keeps the
// newest pool types (the pools solved now), dropping the oldest.
func TestKeptPoolTypesOldestGo(t *testing.T) {
	p := PrepareTypes(nil)
	for i := 0; i <= maxPoolTypes; i++ {
		p.keepPoolTypes(fmt.Sprint(i), &keptTypes{})
	}
	if _, ok := p.poolTypesOf(fmt.Sprint(maxPoolTypes)); !ok {
		t.Error("the newest pool types were not kept")
	}
	if _, ok := p.poolTypesOf("0"); ok {
		t.Error("the oldest pool types were not dropped")
	}
	if len(p.poolTypes) != maxPoolTypes || len(p.poolOrder) != maxPoolTypes {
		t.Errorf("%d pool types kept (%d in order), want %d", len(p.poolTypes), len(p.poolOrder), maxPoolTypes)
	}
}
