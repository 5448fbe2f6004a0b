package provisioning

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// reservingLauncher answers Reservations with the reservations of each
// node class and launches each request as its first option; a launch
// into a reservation in full is refused as EC2 refuses it (a capacity
// error naming the offering).
type reservingLauncher struct {
	byClass map[string][]launch.Reservation
	readErr error
	full    map[string]bool
	// denied are reservations a launch into fails with another error
	// (a missing permission).
	denied map[string]bool
	// inFlight are the cluster's instances, launched and not registered.
	inFlight []launch.Instance

	mu       sync.Mutex
	reads    []string
	requests []launch.Request
}

func (l *reservingLauncher) Instances(context.Context) ([]launch.Instance, error) {
	return l.inFlight, nil
}

func (l *reservingLauncher) Reservations(_ context.Context, nc *model.NodeClass) ([]launch.Reservation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads = append(l.reads, nc.Name)
	if l.readErr != nil {
		return nil, l.readErr
	}
	return l.byClass[nc.Name], nil
}

func (l *reservingLauncher) Launch(_ context.Context, r launch.Request) (*launch.Instance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := r.Options[0]
	for _, x := range r.Options {
		if x.Price < o.Price {
			o = x // the fleet's lowest price
		}
	}
	if o.ReservationID != "" && l.full[o.ReservationID] {
		return nil, &launch.CapacityError{Pool: r.Pool.Name, Codes: []string{"ReservationCapacityExceeded"},
			Offerings: []catalog.OfferingKey{{InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: o.CapacityType}}}
	}
	if o.ReservationID != "" && l.denied[o.ReservationID] {
		return nil, errors.New("UnauthorizedOperation: not authorized to perform ec2:CreateFleet on capacity-reservation/" + o.ReservationID)
	}
	l.requests = append(l.requests, r)
	inst := &launch.Instance{ID: fmt.Sprintf("i-%d", len(l.requests)), InstanceType: o.InstanceType, Zone: o.Zone,
		CapacityType: o.CapacityType, ReservationID: o.ReservationID, Pool: r.Pool.Name}
	if r.Class != nil {
		inst.NodeClass = r.Class.Name // as the launcher tags it
	}
	return inst, nil
}

// launched is what a pass launched, one "type/zone/capacity
// type/reservation ID" string per instance, sorted.
func launched(res *Result) []string {
	var out []string
	for _, i := range res.Launched {
		out = append(out, i.InstanceType+"/"+i.Zone+"/"+i.CapacityType+"/"+i.ReservationID)
	}
	sort.Strings(out)
	return out
}

// reservedCatalog has two types in two zones, on demand: r9.large (2
// vCPU, $0.10/h) and r9.xlarge (4 vCPU, $0.20/h).
func reservedCatalog() *catalog.Catalog {
	large := &catalog.InstanceType{Name: "r9.large", Family: "r9", Category: "r", Generation: 9, Size: "large", Arch: "amd64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, MaxENIsDefaultCard: 3, IPv4PerENI: 10}
	xlarge := &catalog.InstanceType{Name: "r9.xlarge", Family: "r9", Category: "r", Generation: 9, Size: "xlarge", Arch: "amd64", VCPU: 4, MemoryMiB: 16384, MaxENIs: 4, MaxENIsDefaultCard: 4, IPv4PerENI: 15}
	offers := func(price float64) []catalog.Offering {
		return []catalog.Offering{{Zone: "us-east-1a", CapacityType: "on-demand", Price: price}, {Zone: "us-east-1b", CapacityType: "on-demand", Price: price}}
	}
	return catalog.New("us-east-1", []string{"us-east-1a", "us-east-1b"}, []*catalog.InstanceType{large, xlarge},
		map[string][]catalog.Offering{"r9.large": offers(0.10), "r9.xlarge": offers(0.20)})
}

func reservingProvisioner(a *apiServer, l *reservingLauncher, pools []*model.Pool, classes ...*model.NodeClass) *Provisioner {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ncs := map[string]*model.NodeClass{}
	for _, nc := range classes {
		ncs[nc.Name] = nc
	}
	return &Provisioner{
		Cluster: "test", Kube: a.Kube, Catalog: reservedCatalog(), Clock: clocktesting.NewFakePassiveClock(now),
		Launcher: l,
		Specs: func(context.Context) (*model.Spec, error) {
			return &model.Spec{Pools: pools, NodeClasses: ncs}, nil
		},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// TestReconcile_FillsCapacityReservationsFirst: the instances the node
// classes' capacity reservations can still hold are planned before any
// instance is bought (the account pays for them anyway), each launched
// into its reservation; what they cannot hold is launched as usual.
//
// On the real API server: the pass reads and nominates the pods there.
func TestReconcile_FillsCapacityReservationsFirst(t *testing.T) {
	reserving := &model.NodeClass{Name: "reserving", CapacityReservationSelector: []model.CapacityReservationTerm{{Tags: map[string]string{"team": "a"}}}}
	plain := &model.NodeClass{Name: "plain"}
	crLarge := launch.Reservation{ID: "cr-large", InstanceType: "r9.large", Zone: "us-east-1b", Type: "default", MatchCriteria: "targeted", Available: 2}
	crXL := launch.Reservation{ID: "cr-xlarge", InstanceType: "r9.xlarge", Zone: "us-east-1a", Type: "capacity-block", MatchCriteria: "targeted", Available: 1}
	onDemand := []model.Requirement{{Key: model.LabelCapacityType, Operator: "In", Values: []string{"on-demand"}}}
	for _, c := range []struct {
		name     string
		pools    []*model.Pool
		classes  []*model.NodeClass
		res      []launch.Reservation
		full     map[string]bool
		denied   map[string]bool
		readErr  error
		pods     []string // cpu requests
		want     []string
		wantRead []string
		// unschedulable is how many pods the pass cannot serve.
		unschedulable int
	}{
		{
			name:    "a pod goes into the reservation, not onto a bought node",
			pools:   []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "reserving"}},
			classes: []*model.NodeClass{reserving}, res: []launch.Reservation{crLarge},
			pods: []string{"1500m"}, want: []string{"r9.large/us-east-1b/reserved/cr-large"}, wantRead: []string{"reserving"},
		},
		{
			name:    "what the reservations cannot hold is bought",
			pools:   []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "reserving"}},
			classes: []*model.NodeClass{reserving}, res: []launch.Reservation{crLarge, crXL},
			pods: []string{"1500m", "1500m", "1500m", "1500m", "1500m"},
			want: []string{
				"r9.large/us-east-1a/on-demand/",
				"r9.large/us-east-1b/reserved/cr-large", "r9.large/us-east-1b/reserved/cr-large",
				"r9.xlarge/us-east-1a/reserved/cr-xlarge",
			},
			wantRead: []string{"reserving"},
		},
		{
			name:    "an empty reservation is not used",
			pools:   []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "reserving"}},
			classes: []*model.NodeClass{reserving}, res: []launch.Reservation{{ID: "cr-none", InstanceType: "r9.large", Zone: "us-east-1b", Available: 0}},
			pods: []string{"1500m"}, want: []string{"r9.large/us-east-1a/on-demand/"}, wantRead: []string{"reserving"},
		},
		{
			// Karpenter's reserved_fallback_test.go: "a reserved-only pool
			// with a full reservation defers instead of launching
			// on-demand".
			name: "a reserved-only pool whose reservation is full launches nothing",
			pools: []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "reserving", Requirements: []model.Requirement{
				{Key: model.LabelCapacityType, Operator: "In", Values: []string{"reserved"}}}}},
			classes: []*model.NodeClass{reserving}, res: []launch.Reservation{{ID: "cr-full", InstanceType: "r9.large", Zone: "us-east-1b", Available: 0}},
			pods: []string{"1500m"}, wantRead: []string{"reserving"}, unschedulable: 1,
		},
		{
			name: "a reserved-only pool launches into its reservation",
			pools: []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "reserving", Requirements: []model.Requirement{
				{Key: model.LabelCapacityType, Operator: "In", Values: []string{"reserved"}}}}},
			classes: []*model.NodeClass{reserving}, res: []launch.Reservation{crLarge},
			pods: []string{"1500m", "1500m", "1500m"}, want: []string{"r9.large/us-east-1b/reserved/cr-large", "r9.large/us-east-1b/reserved/cr-large"},
			wantRead: []string{"reserving"}, unschedulable: 1,
		},
		{
			name:    "a pool that does not allow reserved capacity reads none",
			pools:   []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "reserving", Requirements: onDemand}},
			classes: []*model.NodeClass{reserving}, res: []launch.Reservation{crLarge},
			pods: []string{"1500m"}, want: []string{"r9.large/us-east-1a/on-demand/"},
		},
		{
			name: "a pool whose class selects no reservation does not use another class's",
			pools: []*model.Pool{
				{Name: "plain", API: model.APIV1, NodeClass: "plain", Weight: 10},
				{Name: "reserving", API: model.APIV1, NodeClass: "reserving", Taints: []corev1.Taint{{Key: "reserved", Effect: corev1.TaintEffectNoSchedule}}},
			},
			classes: []*model.NodeClass{reserving, plain}, res: []launch.Reservation{crLarge},
			pods: []string{"1500m"}, want: []string{"r9.large/us-east-1a/on-demand/"}, wantRead: []string{"reserving"},
		},
		{
			name:    "a reservation found full at launch is planned around in the same pass",
			pools:   []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "reserving"}},
			classes: []*model.NodeClass{reserving}, res: []launch.Reservation{crLarge}, full: map[string]bool{"cr-large": true},
			pods: []string{"1500m"}, want: []string{"r9.large/us-east-1a/on-demand/"}, wantRead: []string{"reserving"},
		},
		{
			name:    "a reservation a launch fails into for another reason is planned around in the same pass",
			pools:   []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "reserving"}},
			classes: []*model.NodeClass{reserving}, res: []launch.Reservation{crLarge}, denied: map[string]bool{"cr-large": true},
			pods: []string{"1500m"}, want: []string{"r9.large/us-east-1a/on-demand/"}, wantRead: []string{"reserving"},
		},
		{
			name:    "reservations that cannot be read leave the pass to plan without them",
			pools:   []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "reserving"}},
			classes: []*model.NodeClass{reserving}, readErr: errors.New("UnauthorizedOperation"),
			pods: []string{"1500m"}, want: []string{"r9.large/us-east-1a/on-demand/"}, wantRead: []string{"reserving"},
		},
		{
			// Room for one r9.large (2 vCPU) in the limits: the reservations
			// would hold both pods, past them.
			name:    "a pool's limits bound the reserved instances it is offered",
			pools:   []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "reserving", Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}},
			classes: []*model.NodeClass{reserving}, res: []launch.Reservation{crLarge, crXL},
			pods: []string{"1500m", "1500m"},
			want: []string{"r9.large/us-east-1b/reserved/cr-large"}, wantRead: []string{"reserving"}, unschedulable: 1,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAPIServer(t)
			for i, cpu := range c.pods {
				a.pod(pendingPod(fmt.Sprintf("p%d", i), cpu))
			}
			l := &reservingLauncher{byClass: map[string][]launch.Reservation{"reserving": c.res}, full: c.full, denied: c.denied, readErr: c.readErr}
			p := reservingProvisioner(a, l, c.pools, c.classes...)
			res, err := p.Reconcile(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Unschedulable) != c.unschedulable {
				t.Fatalf("unschedulable: %v, want %d pods", res.Unschedulable, c.unschedulable)
			}
			if got := launched(res); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("launched %v, want %v", got, c.want)
			}
			if fmt.Sprint(l.reads) != fmt.Sprint(c.wantRead) {
				t.Fatalf("reservations read for %v, want %v", l.reads, c.wantRead)
			}
			for _, r := range l.requests {
				o := r.Options[0]
				if o.ReservationID == "" {
					continue
				}
				want := map[string]string{model.LabelCapacityType: "reserved", model.LabelReservationID: o.ReservationID, model.LabelReservationType: o.ReservationType}
				for k, v := range want {
					if r.Labels[k] != v {
						t.Errorf("node in %s labelled %s=%q, want %q (labels %v)", o.ReservationID, k, r.Labels[k], v, r.Labels)
					}
				}
				if len(r.Options) != 1 || o.CapacityType != "reserved" || o.ReservationType == "" {
					t.Errorf("options %+v, want the reservation's one, with its type", r.Options)
				}
			}
		})
	}
}

// TestReservedNodes_GoToTheFirstPoolByWeight: a reservation two pools'
// classes select is offered as the heavier pool's nodes, with its labels
// and taints; one the pool's requirements exclude (its zone) is not.
func TestReservedNodes_GoToTheFirstPoolByWeight(t *testing.T) {
	nc := &model.NodeClass{Name: "nc", CapacityReservationSelector: []model.CapacityReservationTerm{{ID: "cr-1"}}}
	light := &model.Pool{Name: "light", API: model.APIV1, NodeClass: "nc", Weight: 1}
	heavy := &model.Pool{Name: "heavy", API: model.APIV1, NodeClass: "nc", Weight: 5, Labels: map[string]string{"tier": "gold"},
		Taints:       []corev1.Taint{{Key: "gold", Effect: corev1.TaintEffectNoSchedule}},
		Requirements: []model.Requirement{{Key: model.LabelZone, Operator: "In", Values: []string{"us-east-1a"}}}}
	c := &cluster{
		spec: &model.Spec{Pools: []*model.Pool{light, heavy}, NodeClasses: map[string]*model.NodeClass{"nc": nc}},
		reservations: map[string][]launch.Reservation{"nc": {
			{ID: "cr-1", InstanceType: "r9.large", Zone: "us-east-1a", Available: 3},
			{ID: "cr-2", InstanceType: "r9.large", Zone: "us-east-1b", Available: 1},
		}},
		reservedUsed: map[string]int{"cr-1": 1},
	}
	p := &Provisioner{Catalog: reservedCatalog()}
	never := func(string, string, string) bool { return false }
	nodes, slots := p.reservedNodes(c, nil, 10, never)
	var got []string
	for _, n := range nodes {
		got = append(got, n.Name+"@"+n.Pool+"/"+n.Labels[model.LabelZone]+"/"+n.Labels["tier"])
		if !n.InFlight || len(n.Pods) != 0 || n.Labels[model.LabelHostname] != n.Name || slots[n.Name].node != n {
			t.Errorf("node %s: %+v, want an empty in-flight node named as its slot", n.Name, n)
		}
	}
	// cr-1 has 2 left (one launched this pass) for heavy; cr-2's zone is
	// not heavy's, so it goes to light.
	want := []string{"cr-1-0@heavy/us-east-1a/gold", "cr-1-1@heavy/us-east-1a/gold", "cr-2-0@light/us-east-1b/"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reserved nodes %v, want %v", got, want)
	}
	if len(nodes[0].Taints) != 1 || nodes[0].Taints[0].Key != "gold" {
		t.Fatalf("taints %v, want heavy's", nodes[0].Taints)
	}
	if few, _ := p.reservedNodes(c, nil, 1, never); len(few) != 2 {
		t.Fatalf("with one pod to plan: %d nodes, want one per reservation", len(few))
	}
	// A pool of GPU types is not offered a reservation of a type without
	// GPUs: the type carries no GPU label for its requirement.
	gpu := &model.Pool{Name: "gpu", API: model.APIV1, NodeClass: "nc", Weight: 9, Requirements: []model.Requirement{
		{Key: "karpenter.k8s.aws/instance-gpu-name", Operator: "In", Values: []string{"a100"}}}}
	withGPU := &cluster{spec: &model.Spec{Pools: []*model.Pool{gpu, light}, NodeClasses: c.spec.NodeClasses}, reservations: c.reservations}
	for _, n := range func() []*scheduling.Node { n, _ := p.reservedNodes(withGPU, nil, 1, never); return n }() {
		if n.Pool != "light" {
			t.Fatalf("reserved node %s offered to pool %s, want light (gpu's types have GPUs)", n.Name, n.Pool)
		}
	}
	// A capacity block about to end takes nothing new.
	ending := &cluster{spec: c.spec, reservations: map[string][]launch.Reservation{"nc": {
		{ID: "cr-1", InstanceType: "r9.large", Zone: "us-east-1a", Type: launch.ReservationTypeCapacityBlock, Available: 3, End: time.Now().Add(30 * time.Minute)},
		{ID: "cr-2", InstanceType: "r9.large", Zone: "us-east-1b", Type: launch.ReservationTypeCapacityBlock, Available: 1, End: time.Now().Add(2 * time.Hour)},
	}}}
	if rest, _ := p.reservedNodes(ending, nil, 10, never); len(rest) != 1 || rest[0].Name != "cr-2-0" {
		t.Fatalf("with cr-1 a capacity block 30 minutes from its end: %d nodes, want only cr-2's", len(rest))
	}
	marked := func(t, z, ct string) bool { return z == "us-east-1a" && ct == model.CapacityTypeReserved }
	if rest, _ := p.reservedNodes(c, nil, 10, marked); len(rest) != 1 || rest[0].Name != "cr-2-0" {
		t.Fatalf("with cr-1's offering marked out of capacity: %d nodes, want only cr-2's", len(rest))
	}
}

// TestReservedLaunches_TakesOnlyTheReservedPlacements: placements on
// reserved slots become launches into their reservation (one option, the
// reservation's type and zone, no hostname label); the others stay.
func TestReservedLaunches_TakesOnlyTheReservedPlacements(t *testing.T) {
	pool := &model.Pool{Name: "p", API: model.APIV1}
	slot := reservedSlot{
		res:  launch.Reservation{ID: "cr-1", InstanceType: "r9.large", Zone: "us-east-1a"},
		pool: pool,
		node: &scheduling.Node{Name: "cr-1-0", Labels: map[string]string{model.LabelHostname: "cr-1-0", model.LabelReservationID: "cr-1", model.LabelReservationType: "default", model.LabelCapacityType: "reserved"}},
	}
	a, b := pendingPod("a", "1"), pendingPod("b", "1")
	kept, launches := reservedLaunches([]scheduling.Placement{{Node: "node-1", Pods: []*corev1.Pod{a}}, {Node: "cr-1-0", InFlight: true, Pods: []*corev1.Pod{b}}},
		map[string]reservedSlot{"cr-1-0": slot})
	if len(kept) != 1 || kept[0].Node != "node-1" {
		t.Fatalf("kept %+v, want node-1's placement only", kept)
	}
	if len(launches) != 1 {
		t.Fatalf("launches %+v, want one", launches)
	}
	n := launches[0]
	if n.Pool != "p" || len(n.Pods) != 1 || n.Pods[0] != b || len(n.InstanceTypeOptions) != 1 || n.InstanceTypeOptions[0].Name != "r9.large" ||
		fmt.Sprint(n.Zones) != "[us-east-1a]" || fmt.Sprint(n.CapacityTypes) != "[reserved]" {
		t.Fatalf("launch %+v, want pod b on one r9.large in us-east-1a, reserved", n)
	}
	want := map[string]string{model.LabelNodePool: "p", model.LabelCapacityType: "reserved", model.LabelReservationID: "cr-1", model.LabelReservationType: "default"}
	if fmt.Sprint(n.Labels) != fmt.Sprint(want) {
		t.Fatalf("labels %v, want %v: the pool's and the offering's, no hostname", n.Labels, want)
	}
	if slot.node.Labels[model.LabelHostname] != "cr-1-0" {
		t.Fatal("the slot's own labels changed")
	}
}

// TestReconcile_InFlightReservedInstanceCarriesItsReservation: an
// instance launched into a reservation and not registered yet is a node
// of its reservation for the plan, labels and all, so a pod that
// requires reserved capacity of an ODCR goes onto it rather than waiting.
func TestReconcile_InFlightReservedInstanceCarriesItsReservation(t *testing.T) {
	reserving := &model.NodeClass{Name: "reserving", CapacityReservationSelector: []model.CapacityReservationTerm{{ID: "cr-large"}}}
	pool := &model.Pool{Name: "default", API: model.APIV1, NodeClass: "reserving"}
	a := newAPIServer(t)
	pod := pendingPod("p0", "500m")
	pod.Spec.NodeSelector = map[string]string{model.LabelCapacityType: model.CapacityTypeReserved, model.LabelReservationType: "default"}
	a.pod(pod)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := &reservingLauncher{
		byClass:  map[string][]launch.Reservation{"reserving": {{ID: "cr-large", InstanceType: "r9.large", Zone: "us-east-1b", Type: "default", Available: 0}}},
		inFlight: []launch.Instance{{ID: "i-r1", InstanceType: "r9.large", Zone: "us-east-1b", CapacityType: model.CapacityTypeReserved, ReservationID: "cr-large", Pool: "default", State: "pending", LaunchTime: now.Add(-time.Minute), Tags: map[string]string{launch.TagCluster: "test"}}},
	}
	p := reservingProvisioner(a, l, []*model.Pool{pool}, reserving)
	res, err := p.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Launched) != 0 || res.Nominated != 1 || len(res.Unschedulable) != 0 {
		t.Fatalf("launched %v, nominated %d, unschedulable %v; want the pod nominated onto i-r1", launched(res), res.Nominated, res.Unschedulable)
	}
}
