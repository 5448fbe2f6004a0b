package provisioning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
)

// classResolver answers Desired from a table by node class name (zones,
// or an error) and counts the questions.
type classResolver struct {
	zones map[string][]string
	errs  map[string]error
	// pgs are the classes' placement groups.
	pgs   map[string]*launch.PlacementGroup
	asked []string
}

func (r *classResolver) Desired(_ context.Context, nc *model.NodeClass) (launch.Desired, error) {
	r.asked = append(r.asked, nc.Name)
	if err := r.errs[nc.Name]; err != nil {
		return launch.Desired{}, err
	}
	return launch.Desired{Zones: r.zones[nc.Name], PlacementGroup: r.pgs[nc.Name]}, nil
}

// errNoSubnet is the launcher's error for a class whose subnet selector
// matches nothing (its own, not an AWS call's).
var errNoSubnet = errors.New(`node class "broken": no subnet matches spec.subnetSelectorTerms [{"tags":{"team":"typo"}}]`)

// errThrottled is a DescribeSubnets call that failed, as the SDK wraps it.
var errThrottled = fmt.Errorf(`node class "busy": spec.subnetSelectorTerms: describe subnets: %w`,
	&smithy.OperationError{ServiceID: "EC2", OperationName: "DescribeSubnets", Err: errors.New("RequestLimitExceeded")})

// TestReadyPools: a pool whose node class resolves is narrowed to its
// subnets' zones (on a copy, after its own requirements); one whose class
// cannot launch is named with why; one whose class could not be read (an
// AWS call failed) is planned as it is; a pool without a known class is
// left alone; a class two pools share is resolved once.
func TestReadyPools(t *testing.T) {
	zoneA := []model.Requirement{{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"us-east-1a", "us-east-1b"}}}
	spec := &model.Spec{
		Pools: []*model.Pool{
			{Name: "east", NodeClass: "ok", Requirements: zoneA},
			{Name: "also-east", NodeClass: "ok"},
			{Name: "typo", NodeClass: "broken"},
			{Name: "busy", NodeClass: "busy"},
			{Name: "classless"},
		},
		NodeClasses: map[string]*model.NodeClass{"ok": {Name: "ok"}, "broken": {Name: "broken"}, "busy": {Name: "busy"}},
	}
	r := &classResolver{zones: map[string][]string{"ok": {"us-east-1b", "us-east-1c"}}, errs: map[string]error{"broken": errNoSubnet, "busy": errThrottled}}
	got := ReadyPools(context.Background(), spec, r)

	if want := []string{"ok", "broken", "busy"}; !slices.Equal(r.asked, want) {
		t.Errorf("classes resolved %v, want %v (each once)", r.asked, want)
	}
	names := func(ps []*model.Pool) (out []string) {
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	if want := []string{"east", "also-east", "typo", "busy", "classless"}; !slices.Equal(names(got.Pools), want) {
		t.Fatalf("pools %v, want %v (all, in order)", names(got.Pools), want)
	}
	zoneReq := model.Requirement{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"us-east-1b", "us-east-1c"}}
	if want := append(slices.Clone(zoneA), zoneReq); fmt.Sprint(got.Pools[0].Requirements) != fmt.Sprint(want) {
		t.Errorf("east: requirements %v, want its own and then the subnets' zones %v", got.Pools[0].Requirements, want)
	}
	if fmt.Sprint(got.Pools[1].Requirements) != fmt.Sprint([]model.Requirement{zoneReq}) {
		t.Errorf("also-east: requirements %v, want the subnets' zones", got.Pools[1].Requirements)
	}
	if got.Pools[0] == spec.Pools[0] || len(spec.Pools[0].Requirements) != 1 || len(spec.Pools[1].Requirements) != 0 {
		t.Errorf("the spec's own pools were changed: %v, %v", spec.Pools[0].Requirements, spec.Pools[1].Requirements)
	}
	for i := 2; i < 5; i++ {
		if got.Pools[i] != spec.Pools[i] {
			t.Errorf("%s: narrowed, want the spec's pool as it is", got.Pools[i].Name)
		}
	}
	if len(got.NotReady) != 1 || got.NotReady["typo"] != errNoSubnet.Error() {
		t.Errorf("not ready %v, want typo with the launcher's error", got.NotReady)
	}
	if len(got.Unresolved) != 1 || !errors.Is(got.Unresolved["busy"], errThrottled) {
		t.Errorf("unresolved %v, want busy with the failed call", got.Unresolved)
	}
}

// TestReconcile_LeavesOutPoolsWhoseNodeClassCannotLaunch: the heavier
// pool's node class selects no subnet, so its nodes could never launch:
// the pod is planned onto the next pool, and the pass says which pool was
// left out and why. A class that could not be read (throttled) leaves
// its pool planned as usual: a passing error moves nobody.
//
// On the real API server: the pass reads and nominates the pods there.
func TestReconcile_LeavesOutPoolsWhoseNodeClassCannotLaunch(t *testing.T) {
	pools := []*model.Pool{
		{Name: "fast", API: model.APIV1, NodeClass: "broken", Weight: 10},
		{Name: "plain", API: model.APIV1, NodeClass: "ok"},
	}
	for _, c := range []struct {
		name     string
		err      error
		wantPool string
		notReady string
	}{
		{name: "a class that selects no subnet", err: errNoSubnet, wantPool: "plain", notReady: "no subnet matches"},
		{name: "a class that could not be read", err: errThrottled, wantPool: "fast"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAPIServer(t)
			a.pod(pendingPod("p0", "1500m"))
			l := &reservingLauncher{}
			p := reservingProvisioner(a, l, pools, &model.NodeClass{Name: "broken"}, &model.NodeClass{Name: "ok"})
			p.NodeClasses = &classResolver{zones: map[string][]string{"ok": {"us-east-1a", "us-east-1b"}}, errs: map[string]error{"broken": c.err}}
			res, err := p.Reconcile(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(l.requests) != 1 || l.requests[0].Pool.Name != c.wantPool {
				t.Fatalf("launched %v, want one node of pool %s", launched(res), c.wantPool)
			}
			why, left := res.NotReady["fast"]
			if c.notReady == "" && left {
				t.Errorf("pool fast left out (%s), want it planned", why)
			}
			if c.notReady != "" && (!left || !strings.Contains(why, c.notReady)) {
				t.Errorf("not ready %v, want fast: ...%s...", res.NotReady, c.notReady)
			}
		})
	}
}

// TestReconcile_PlansOnlyInTheSubnetsZones: pods spread over zones
// (maxSkew 1) are planned only in the zones their pool's node class has
// subnets in: the catalog offers us-east-1a and 1b, the class's subnets
// are all in 1b, so both nodes go to 1b, as Karpenter's offerings of that
// class exist in 1b only. Planned over both zones, one node would be in
// a zone it can never launch in.
func TestReconcile_PlansOnlyInTheSubnetsZones(t *testing.T) {
	a := newAPIServer(t)
	for i := range 2 {
		pod := pendingPod(fmt.Sprintf("web-%d", i), "1500m")
		pod.Labels = map[string]string{"app": "web"}
		pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		}}
		a.pod(pod)
	}
	l := &reservingLauncher{}
	p := reservingProvisioner(a, l, []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "east-b"}}, &model.NodeClass{Name: "east-b"})
	p.NodeClasses = &classResolver{zones: map[string][]string{"east-b": {"us-east-1b"}}}
	res, err := p.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unschedulable) != 0 {
		t.Fatalf("unschedulable: %v", res.Unschedulable)
	}
	got := launched(res)
	if len(got) == 0 {
		t.Fatal("nothing launched")
	}
	for _, s := range got {
		if !strings.Contains(s, "/us-east-1b/") {
			t.Errorf("launched %v, want every node in us-east-1b", got)
			break
		}
	}
	for _, r := range l.requests {
		for _, o := range r.Options {
			if o.Zone != "us-east-1b" {
				t.Errorf("pool %s: option %s in %s, want only us-east-1b", r.Pool.Name, o.InstanceType, o.Zone)
			}
		}
	}
}

// TestZoneIDs_FromSubnetsAndNodes: the zones' IDs are the node classes'
// subnets' and the nodes' labels' (EKS's cloud controller manager labels
// every node with both); none known is nil, so the simulator leaves the
// zone ID a label of its own.
func TestZoneIDs_FromSubnetsAndNodes(t *testing.T) {
	n := &corev1.Node{}
	n.Labels = map[string]string{corev1.LabelTopologyZone: "us-east-1c", "topology.k8s.aws/zone-id": "use1-az2"}
	bare := &corev1.Node{}
	bare.Labels = map[string]string{corev1.LabelTopologyZone: "us-east-1d"}
	r := &Readiness{ZoneIDs: map[string]string{"us-east-1a": "use1-az4", "us-east-1b": "use1-az6"}}
	got := ZoneIDs(r, []*corev1.Node{n, bare})
	want := map[string]string{"us-east-1a": "use1-az4", "us-east-1b": "use1-az6", "us-east-1c": "use1-az2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("zone IDs %v, want %v", got, want)
	}
	if got := ZoneIDs(nil, []*corev1.Node{bare}); got != nil {
		t.Errorf("zone IDs %v, want nil when none is known", got)
	}
	// ReadyPools gathers the classes' subnets' zone IDs.
	spec := &model.Spec{Pools: []*model.Pool{{Name: "a", NodeClass: "x"}}, NodeClasses: map[string]*model.NodeClass{"x": {Name: "x"}}}
	rd := ReadyPools(context.Background(), spec, zoneIDResolver{"us-east-1a": "use1-az4"})
	if rd.ZoneIDs["us-east-1a"] != "use1-az4" {
		t.Errorf("ReadyPools zone IDs %v, want the class's", rd.ZoneIDs)
	}
}

// zoneIDResolver resolves every class to subnets in its zones.
type zoneIDResolver map[string]string

func (z zoneIDResolver) Desired(context.Context, *model.NodeClass) (launch.Desired, error) {
	d := launch.Desired{ZoneIDs: map[string]string{}}
	for zone, id := range z {
		d.Zones = append(d.Zones, zone)
		d.ZoneIDs[zone] = id
	}
	return d, nil
}

// TestReconcile_PlansIntoTheClassesPlacementGroups: a node class with a
// partition placement group of three partitions lets pods spread over
// the partition label (maxSkew 1): three nodes, one per partition, each
// labelled with the group and its partition; a class with a cluster
// group leaves out the types EC2 does not launch into one (burstable),
// though a t-family type is the cheapest for the pod, and plans only in
// the group's zone.
//
// On the real API server: the pass reads and nominates the pods there.
func TestReconcile_PlansIntoTheClassesPlacementGroups(t *testing.T) {
	t.Run("partition", func(t *testing.T) {
		a := newAPIServer(t)
		for i := range 3 {
			pod := pendingPod(fmt.Sprintf("kafka-%d", i), "1500m")
			pod.Labels = map[string]string{"app": "kafka"}
			pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: model.LabelPlacementGroupPartition, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kafka"}},
			}}
			a.pod(pod)
		}
		l := &reservingLauncher{}
		p := reservingProvisioner(a, l, []*model.Pool{{Name: "kafka", API: model.APIV1, NodeClass: "racks"}}, &model.NodeClass{Name: "racks"})
		p.NodeClasses = &classResolver{pgs: map[string]*launch.PlacementGroup{"racks": {ID: "pg-0a1", Name: "racks", Strategy: "partition", Partitions: 3}}}
		res, err := p.Reconcile(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Unschedulable) != 0 {
			t.Fatalf("unschedulable: %v", res.Unschedulable)
		}
		var parts []string
		for _, r := range l.requests {
			if r.Labels[model.LabelPlacementGroupID] != "pg-0a1" {
				t.Errorf("node labels %v, want the group's id", r.Labels)
			}
			parts = append(parts, r.Labels[model.LabelPlacementGroupPartition])
		}
		slices.Sort(parts)
		if want := []string{"1", "2", "3"}; !slices.Equal(parts, want) {
			t.Errorf("partitions %v, want %v (one node in each)", parts, want)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		a := newAPIServer(t)
		a.pod(pendingPod("p0", "500m"))
		pool := &model.Pool{Name: "hpc", API: model.APIV1, NodeClass: "tight", Requirements: []model.Requirement{
			{Key: "karpenter.k8s.aws/instance-family", Operator: "In", Values: []string{"t3", "m5"}},
		}}
		l := &reservingLauncher{}
		p := reservingProvisioner(a, l, []*model.Pool{pool}, &model.NodeClass{Name: "tight"})
		t3 := &catalog.InstanceType{Name: "t3.large", Family: "t3", Category: "t", Generation: 3, Size: "large", Arch: "amd64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, MaxENIsDefaultCard: 3, IPv4PerENI: 12, Burstable: true, CurrentGeneration: true}
		m5 := &catalog.InstanceType{Name: "m5.large", Family: "m5", Category: "m", Generation: 5, Size: "large", Arch: "amd64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, MaxENIsDefaultCard: 3, IPv4PerENI: 10, CurrentGeneration: true}
		offers := func(price float64) []catalog.Offering {
			return []catalog.Offering{{Zone: "us-east-1a", CapacityType: "on-demand", Price: price}, {Zone: "us-east-1b", CapacityType: "on-demand", Price: price}}
		}
		p.Catalog = catalog.New("us-east-1", []string{"us-east-1a", "us-east-1b"}, []*catalog.InstanceType{t3, m5},
			map[string][]catalog.Offering{"t3.large": offers(0.08), "m5.large": offers(0.10)})
		p.NodeClasses = &classResolver{
			zones: map[string][]string{"tight": {"us-east-1a", "us-east-1b"}},
			pgs:   map[string]*launch.PlacementGroup{"tight": {ID: "pg-0b2", Name: "tight", Strategy: "cluster", Zone: "us-east-1b"}},
		}
		if _, err := p.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(l.requests) != 1 {
			t.Fatalf("launched %d nodes, want 1", len(l.requests))
		}
		var types []string
		for _, o := range l.requests[0].Options {
			types = append(types, o.InstanceType+"/"+o.Zone)
		}
		if !slices.Equal(types, []string{"m5.large/us-east-1b"}) {
			t.Errorf("options %v, want only m5.large in us-east-1b (t3.large is burstable: not in a cluster placement group, whose instances are in 1b)", types)
		}
	})
}

// TestReadyPools_KubeletExpressionsAreNotReady: a pool whose kubelet
// settings are CEL expressions (Karpenter's NodeClassCEL gate, off by
// default, which Joist does not implement) is left out of planning with
// the paths named, as Karpenter marks such an EC2NodeClass not ready;
// quantities are fine.
func TestReadyPools_KubeletExpressionsAreNotReady(t *testing.T) {
	maxPods := int32(20)
	spec := &model.Spec{
		Pools: []*model.Pool{
			{Name: "cel", NodeClass: "cel", Kubelet: &model.Kubelet{MaxPodsExpression: "vcpus * 8", KubeReserved: map[string]string{"cpu": "vcpus * 10", "memory": "1Gi"}}},
			{Name: "plain", NodeClass: "plain", Kubelet: &model.Kubelet{MaxPods: &maxPods, SystemReserved: map[string]string{"cpu": "100m"}}},
		},
		NodeClasses: map[string]*model.NodeClass{"cel": {Name: "cel"}, "plain": {Name: "plain"}},
	}
	r := &classResolver{}
	got := ReadyPools(context.Background(), spec, r)
	want := `node class "cel": spec.kubelet.kubeReserved.cpu, spec.kubelet.maxPods: CEL expressions need Karpenter's NodeClassCEL feature gate`
	if why := got.NotReady["cel"]; !strings.HasPrefix(why, want) {
		t.Errorf("not ready %q, want %q...", why, want)
	}
	if _, ok := got.NotReady["plain"]; ok || !slices.Equal(r.asked, []string{"plain"}) {
		t.Errorf("not ready %v, classes resolved %v; want plain ready and resolved", got.NotReady, r.asked)
	}
}
