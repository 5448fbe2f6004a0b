package disruption

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/fromcatalog"
)

var testZones = []string{"us-east-1a", "us-east-1b"}

// testTypes are the embedded catalog's us-east-1 types in two zones.
func testTypes(t testing.TB) []*scheduling.InstanceType {
	t.Helper()
	cat, err := catalog.Offline("us-east-1", testZones)
	if err != nil {
		t.Fatal(err)
	}
	return fromcatalog.InstanceTypes(cat, nil)
}

// consolidating is a v1 pool that consolidates underused nodes, of
// categories c, m and r on amd64, with the capacity types given.
func consolidating(cts ...string) *model.Pool {
	after := time.Duration(0)
	return &model.Pool{Name: "default", API: model.APIV1, Requirements: []model.Requirement{
		{Key: model.LabelCapacityType, Operator: "In", Values: cts},
		{Key: corev1.LabelArchStable, Operator: "In", Values: []string{"amd64"}},
		{Key: corev1.LabelOSStable, Operator: "In", Values: []string{"linux"}},
		{Key: "karpenter.k8s.aws/instance-category", Operator: "In", Values: []string{"c", "m", "r"}},
	}, Disruption: model.Disruption{ConsolidationPolicy: "WhenEmptyOrUnderutilized", ConsolidateAfter: &after}}
}

func withBudget(p *model.Pool, nodes string) *model.Pool {
	p.Disruption.Budgets = []model.Budget{{Nodes: nodes}}
	return p
}

// typed is a Ready node of the pool of an instance type, zone us-east-1a
// and capacity type, sized as the catalog says, holding pods.
func typed(types []*scheduling.InstanceType, name, instanceType, capacityType string, ps ...*corev1.Pod) Node {
	var it *scheduling.InstanceType
	for _, x := range types {
		if x.Name == instanceType {
			it = x
		}
	}
	if it == nil {
		panic("no instance type " + instanceType)
	}
	labels := map[string]string{model.LabelNodePool: "default", model.LabelZone: testZones[0],
		model.LabelCapacityType: capacityType, corev1.LabelHostname: name}
	for k, v := range it.Labels {
		labels[k] = v
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name},
		Status: corev1.NodeStatus{Capacity: it.Capacity, Allocatable: it.Allocatable,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, p := range ps {
		p.Spec.NodeName = name
	}
	return Node{Node: n, Pods: ps}
}

func keptBy(k string, n Node) Node { n.Node.Annotations[k] = "true"; return n }

// app is a pod requesting cpu and 1Gi.
func app(name, cpu string, annotations ...string) *corev1.Pod {
	p := cpuPod(name, cpu, annotations...)
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1Gi")
	return p
}

// pinned is a pod that may only run on the named node.
func pinned(name, cpu, node string) *corev1.Pod {
	p := app(name, cpu)
	p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	return p
}

// twoPasses plays the reaper: a pass at now (whose stamps are put on the
// nodes), then one 16 s later, returned with the first.
func twoPasses(types []*scheduling.InstanceType, pools []*model.Pool, nodes []Node) (Plan, Plan) {
	return twoPassesWith(scheduling.Input{InstanceTypes: types, Region: "us-east-1"}, pools, nodes)
}

// twoPassesWith is twoPasses with the snapshot's Simulation given.
func twoPassesWith(in scheduling.Input, pools []*model.Pool, nodes []Node) (Plan, Plan) {
	return twoPassesOf(Snapshot{Now: now, Pools: pools, Nodes: nodes, Simulation: in})
}

// twoPassesOf is twoPasses over a whole snapshot (its Now is now).
func twoPassesOf(s Snapshot) (Plan, Plan) {
	first := Decide(s)
	for _, n := range s.Nodes {
		if slices.Contains(first.StampConsolidation, n.Node.Name) {
			n.Node.Annotations[AnnotationConsolidatableAt] = now.Format(time.RFC3339)
			n.Node.Annotations[AnnotationConsolidationCommand] = first.ConsolidationCommand
		}
	}
	s.Now = now.Add(ValidationDelay + time.Second)
	return first, Decide(s)
}

// describe renders decisions as node:delete|replace[:group], grouping
// by command.
func describe(ds []Decision) []string {
	var out []string
	for _, d := range ds {
		s := d.Node + ":delete"
		if d.Replace {
			s = d.Node + ":replace"
		}
		if d.Command != "" {
			s += ":group"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// cheapestFor is the instance type Solve would launch for the pods in
// the pool, and the types it could launch (cheapest first).
func cheapestFor(types []*scheduling.InstanceType, pool *model.Pool, ps ...*corev1.Pod) (string, []string) {
	var move []*corev1.Pod
	for _, p := range ps {
		move = append(move, p.DeepCopy())
	}
	plan := scheduling.Solve(scheduling.Input{Pods: move, Pools: []*model.Pool{pool}, InstanceTypes: types, Region: "us-east-1"})
	var opts []string
	for _, o := range plan.NewNodes[0].InstanceTypeOptions {
		opts = append(opts, o.Name)
	}
	return plan.NewNodes[0].Cheapest.InstanceType, opts
}

func TestConsolidationCommands(t *testing.T) {
	types := testTypes(t)
	od := func() *model.Pool { return consolidating(model.CapacityTypeOnDemand) }
	spot := func() *model.Pool { return consolidating(model.CapacityTypeSpot) }
	both := func() *model.Pool { return consolidating(model.CapacityTypeSpot, model.CapacityTypeOnDemand) }
	cheapOD, _ := cheapestFor(types, od(), app("x", "1"))
	_, spotOpts := cheapestFor(types, spot(), app("x", "1"))

	cases := []struct {
		name        string
		pool        *model.Pool
		nodes       []Node
		want        []string // after validation
		wantBlocked []string
	}{
		{name: "an underused node is replaced by one cheaper node",
			pool: od(),
			nodes: []Node{typed(types, "big", "m5.2xlarge", "on-demand", app("p1", "1")),
				typed(types, "full", "m5.large", "on-demand", app("p2", "1500m", AnnotationDoNotDisrupt))},
			want: []string{"big:replace"}},
		{name: "a node whose pods fit on another is deleted",
			pool: od(),
			nodes: []Node{typed(types, "a", "m5.xlarge", "on-demand", app("p1", "1")),
				typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1", AnnotationDoNotDisrupt))},
			want: []string{"a:delete"}},
		{name: "never churn: a node of the cheapest type that holds its pods stays",
			pool:  od(),
			nodes: []Node{typed(types, "a", cheapOD, "on-demand", app("p1", "1"))}},
		{name: "on-demand is replaced by spot when the pool allows spot",
			pool:  both(),
			nodes: []Node{typed(types, "a", cheapOD, "on-demand", app("p1", "1"))},
			want:  []string{"a:replace"}},
		{name: "spot to spot needs 15 cheaper types",
			pool:  spot(),
			nodes: []Node{typed(types, "a", spotOpts[5], "spot", app("p1", "1"))}},
		{name: "spot to spot with enough cheaper types",
			pool:  spot(),
			nodes: []Node{typed(types, "a", "m5.8xlarge", "spot", app("p1", "1"))},
			want:  []string{"a:replace"}},
		{name: "several nodes are deleted at once",
			pool: od(),
			nodes: []Node{typed(types, "a", "m5.large", "on-demand", app("p1", "500m")),
				typed(types, "b", "m5.large", "on-demand", app("p2", "500m")),
				typed(types, "c", "m5.large", "on-demand", app("p3", "500m")),
				typed(types, "room", "m5.2xlarge", "on-demand", app("p4", "1", AnnotationDoNotDisrupt))},
			want: []string{"a:delete:group", "b:delete:group", "c:delete:group"}},
		{name: "several nodes are replaced by one cheaper node",
			pool: od(),
			nodes: []Node{typed(types, "a", "m5.xlarge", "on-demand", app("p1", "1")),
				typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1")),
				typed(types, "c", "m5.xlarge", "on-demand", app("p3", "1"))},
			want: []string{"a:replace:group", "b:replace:group", "c:replace:group"}},
		{name: "a budget of one retires one node per command",
			pool: withBudget(od(), "1"),
			nodes: []Node{typed(types, "a", "m5.large", "on-demand", app("p1", "500m")),
				typed(types, "b", "m5.large", "on-demand", app("p2", "500m")),
				typed(types, "room", "m5.2xlarge", "on-demand", app("p4", "1", AnnotationDoNotDisrupt))},
			want: []string{"a:delete"}},
		{name: "a budget of zero blocks consolidation, and says so",
			pool: withBudget(od(), "0"),
			nodes: []Node{typed(types, "a", "m5.xlarge", "on-demand", app("p1", "1")),
				typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1", AnnotationDoNotDisrupt))},
			wantBlocked: []string{"a", "b"}},
		{name: "a node's do-not-disrupt blocks it, and says so",
			pool: od(),
			nodes: []Node{keptBy(AnnotationDoNotDisrupt, typed(types, "a", "m5.xlarge", "on-demand", app("p1", "1"))),
				typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1", AnnotationDoNotDisrupt))},
			wantBlocked: []string{"a", "b"}},
		{name: "a pod that would be left without a place keeps its node",
			pool: od(),
			nodes: []Node{typed(types, "a", "m5.xlarge", "on-demand", pinned("p1", "1", "a")),
				typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1", AnnotationDoNotDisrupt))},
			wantBlocked: []string{"b"}}, // b could go, were it not for its pod

		{name: "WhenEmpty pools are not consolidated",
			pool: func() *model.Pool { p := od(); p.Disruption.ConsolidationPolicy = "WhenEmpty"; return p }(),
			nodes: []Node{typed(types, "a", "m5.xlarge", "on-demand", app("p1", "1")),
				typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1", AnnotationDoNotDisrupt))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first, second := twoPasses(types, []*model.Pool{tc.pool}, tc.nodes)
			if len(first.Retire) > 0 {
				t.Fatalf("first pass retired %v before validating", describe(first.Retire))
			}
			if got := describe(second.Retire); !slices.Equal(got, tc.want) {
				t.Fatalf("retired %v, want %v (first pass stamped %v)", got, tc.want, first.StampConsolidation)
			}
			s := Snapshot{Simulation: scheduling.Input{InstanceTypes: types}}
			var retired, saved float64
			command := ""
			for _, d := range second.Retire {
				for _, n := range tc.nodes {
					if n.Node.Name == d.Node {
						retired += s.NodePrice(n.Node)
					}
				}
				saved += d.SavingsPerHour
				if d.SavingsPerHour <= 0 || d.Reason != ReasonUnderutilized {
					t.Errorf("decision %+v saves nothing", d)
				}
				if command != "" && d.Command != command {
					t.Errorf("one command, two ids: %q and %q", command, d.Command)
				}
				command = d.Command
			}
			if len(second.Retire) > 0 && (saved <= 0 || saved > retired+1e-9) {
				t.Errorf("saves $%.4f/h of $%.4f/h retired", saved, retired)
			}
			if len(second.Retire) > 0 && !second.Retire[0].Replace && abs(saved-retired) > 1e-9 {
				t.Errorf("a delete saves $%.4f/h, the nodes cost $%.4f/h", saved, retired)
			}
			var blocked []string
			for _, b := range append(first.Blocked, second.Blocked...) {
				if !slices.Contains(blocked, b.Node) {
					blocked = append(blocked, b.Node)
				}
			}
			slices.Sort(blocked)
			if !slices.Equal(blocked, tc.wantBlocked) {
				t.Errorf("blocked %v (%+v), want %v", blocked, append(first.Blocked, second.Blocked...), tc.wantBlocked)
			}
		})
	}
}

// TestConsolidation_SpotToSpotOff: with Karpenter's
// SpotToSpotConsolidation=false (Snapshot.NoSpotToSpot) a spot node is
// not replaced by a cheaper spot node; a spot node whose pods fit
// elsewhere is still deleted, and an on-demand node still replaced by
// spot.
func TestConsolidation_SpotToSpotOff(t *testing.T) {
	types := testTypes(t)
	spot := consolidating(model.CapacityTypeSpot)
	both := consolidating(model.CapacityTypeSpot, model.CapacityTypeOnDemand)
	cheapOD, _ := cheapestFor(types, consolidating(model.CapacityTypeOnDemand), app("x", "1"))
	for _, tc := range []struct {
		name  string
		pool  *model.Pool
		nodes []Node
		off   bool
		want  []string
	}{
		{"spot to spot, allowed", spot, []Node{typed(types, "a", "m5.8xlarge", "spot", app("p1", "1"))}, false, []string{"a:replace"}},
		{"spot to spot, off", spot, []Node{typed(types, "a", "m5.8xlarge", "spot", app("p1", "1"))}, true, nil},
		{"spot to spot off, a spot node is still deleted", spot, []Node{typed(types, "a", "m5.xlarge", "spot", app("p1", "1")),
			typed(types, "b", "m5.xlarge", "spot", app("p2", "1", AnnotationDoNotDisrupt))}, true, []string{"a:delete"}},
		{"spot to spot off, on-demand still goes to spot", both, []Node{typed(types, "a", cheapOD, "on-demand", app("p1", "1"))}, true, []string{"a:replace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Snapshot{Now: now, Pools: []*model.Pool{tc.pool}, Nodes: tc.nodes, NoSpotToSpot: tc.off,
				Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}}
			first, second := twoPassesOf(s)
			if got := describe(second.Retire); !slices.Equal(got, tc.want) {
				t.Fatalf("retired %v, want %v (first pass stamped %v)", got, tc.want, first.StampConsolidation)
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestConsolidationRevalidates: a command acts only when the same command
// is found after the delay; a command that stopped holding is dropped.
func TestConsolidationRevalidates(t *testing.T) {
	types := testTypes(t)
	pool := consolidating(model.CapacityTypeOnDemand)
	nodes := func() []Node {
		return []Node{typed(types, "a", "m5.xlarge", "on-demand", app("p1", "1")),
			typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1")),
			typed(types, "c", "m5.xlarge", "on-demand", app("p3", "1"))}
	}
	stamp := func(ns []Node, at time.Time, id string, which ...string) {
		for _, n := range ns {
			if slices.Contains(which, n.Node.Name) {
				n.Node.Annotations[AnnotationConsolidatableAt] = at.Format(time.RFC3339)
				n.Node.Annotations[AnnotationConsolidationCommand] = id
			}
		}
	}
	decide := func(ns []Node, at time.Time) Plan {
		return Decide(Snapshot{Now: at, Pools: []*model.Pool{pool}, Nodes: ns, Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}})
	}

	t.Run("the command is stamped on all its nodes with one id", func(t *testing.T) {
		p := decide(nodes(), now)
		if want := []string{"a", "b", "c"}; !slices.Equal(p.StampConsolidation, want) || p.ConsolidationCommand != groupID(want) {
			t.Fatalf("stamped %v with %q, want %v with %q", p.StampConsolidation, p.ConsolidationCommand, want, groupID(want))
		}
	})
	t.Run("not acted on before the delay", func(t *testing.T) {
		ns := nodes()
		stamp(ns, now, groupID([]string{"a", "b", "c"}), "a", "b", "c")
		p := decide(ns, now.Add(ValidationDelay-time.Second))
		if len(p.Retire) > 0 || len(p.StampConsolidation) > 0 || len(p.Unstamp) > 0 {
			t.Fatalf("plan %+v, want waiting", p)
		}
	})
	t.Run("a command missing a node is not acted on: stamped anew", func(t *testing.T) {
		ns := nodes()
		// Stamped for a, b and a node that has gone since.
		stamp(ns, now, groupID([]string{"a", "b", "gone"}), "a", "b")
		p := decide(ns, now.Add(time.Minute))
		if len(p.Retire) > 0 || !slices.Equal(p.StampConsolidation, []string{"a", "b", "c"}) {
			t.Fatalf("retired %v stamped %v, want the whole command stamped anew", describe(p.Retire), p.StampConsolidation)
		}
	})
	t.Run("a command that no longer holds is dropped", func(t *testing.T) {
		ns := nodes()[:1]
		ns[0].Pods = append(ns[0].Pods, pinned("stuck", "100m", "a"))
		ns[0].Pods[1].Spec.NodeName = "a"
		stamp(ns, now, groupID([]string{"a"}), "a")
		p := decide(ns, now.Add(time.Minute))
		if len(p.Retire) > 0 || !slices.Equal(p.Unstamp, []string{"a"}) {
			t.Fatalf("retired %v unstamped %v, want a unstamped", describe(p.Retire), p.Unstamp)
		}
	})
	t.Run("a held command is acted on", func(t *testing.T) {
		ns := nodes()
		stamp(ns, now, groupID([]string{"a", "b", "c"}), "a", "b", "c")
		p := decide(ns, now.Add(ValidationDelay))
		if got := describe(p.Retire); !slices.Equal(got, []string{"a:replace:group", "b:replace:group", "c:replace:group"}) {
			t.Fatalf("retired %v", got)
		}
	})
}

// TestCandidateOrder is Karpenter v1.15's: savings per unit of
// disruption, price over 1 + the evicted pods' eviction costs (1 each
// unless annotated: TestEvictionCost).
func TestCandidateOrder(t *testing.T) {
	mk := func(name string, price float64, pods int, extra float64) *candidate {
		return &candidate{n: Node{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}, price: price, pods: pods, cost: 1 + float64(pods) + extra}
	}
	cs := []*candidate{mk("cheap-few", 0.1, 1, 0), mk("dear-many", 1.0, 9, 0), mk("dear-few", 1.0, 1, 0), mk("unpriced", 0, 0, 0),
		// One pod weighing as nine (a deletion cost of 8 * 2^27): as
		// much as dear-many's nine, and first by its fewer pods; two
		// weighing as one after dear-few by their number.
		mk("dear-weighty", 1.0, 1, 8), mk("dear-weightless", 1.0, 2, -1)}
	sortCandidates(cs)
	var got []string
	for _, c := range cs {
		got = append(got, c.name())
	}
	if want := "dear-few dear-weightless dear-weighty dear-many cheap-few unpriced"; strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}

func TestEvictionCost(t *testing.T) {
	unit := int64(1) << 27
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        float64
	}{
		{"none", nil, 1},
		{"disruption-cost", map[string]string{AnnotationDisruptionCost: fmt.Sprint(unit)}, 2},
		{"pod-deletion-cost", map[string]string{corev1.PodDeletionCost: fmt.Sprint(-unit)}, 0},
		{"disruption-cost wins over pod-deletion-cost", map[string]string{AnnotationDisruptionCost: fmt.Sprint(2 * unit), corev1.PodDeletionCost: fmt.Sprint(-unit)}, 3},
		{"not a number", map[string]string{corev1.PodDeletionCost: "high"}, 1},
		{"beyond an int32", map[string]string{AnnotationDisruptionCost: "4294967296"}, 1},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}
		if got := EvictionCost(p); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// A compact pod's cost is summed when it is kept (Node.Add), at
	// least 0 each.
	n := Node{Node: node("a", "default")}
	weighty := app("weighty", "1")
	weighty.Annotations[corev1.PodDeletionCost] = fmt.Sprint(3 * unit)
	negative := app("negative", "1")
	negative.Annotations[AnnotationDisruptionCost] = fmt.Sprint(-5 * unit)
	n.Add(weighty, nil)
	n.Add(negative, nil)
	n.AddBound(n.Bound[0])
	if len(n.Pods) != 0 || n.moving.cost != 4+0+1 {
		t.Errorf("compact pods' cost %v (%d whole), want 5", n.moving.cost, len(n.Pods))
	}
}

// TestConsolidationAvoidsUnavailableOfferings: offerings recently out of
// capacity are no replacement; with every cheaper one out, the underused
// node stays.
func TestConsolidationAvoidsUnavailableOfferings(t *testing.T) {
	types := testTypes(t)
	pool := consolidating(model.CapacityTypeOnDemand)
	nodes := []Node{typed(types, "big", "m5.2xlarge", "on-demand", app("p1", "1")),
		typed(types, "full", "m5.large", "on-demand", app("p2", "1500m", AnnotationDoNotDisrupt))}
	s := Snapshot{Now: now, Pools: []*model.Pool{pool}, Nodes: nodes, Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}}
	if p := Decide(s); !slices.Equal(p.StampConsolidation, []string{"big"}) {
		t.Fatalf("with every offering available: stamped %v, want big", p.StampConsolidation)
	}
	s.Unavailable = func(instanceType, _, _ string) bool { return instanceType != "m5.2xlarge" }
	if p := Decide(s); len(p.StampConsolidation) > 0 {
		t.Fatalf("with every cheaper offering out of capacity: stamped %v, want nothing", p.StampConsolidation)
	}
}

// TestConsolidationFollowsThePreferencePolicy: the consolidation's
// simulation runs under the snapshot's scheduling options, Karpenter's
// --preference-policy among them. A pod that prefers its node's
// (dearer) instance type keeps that node under Respect — the replacement
// would honour the preference and save nothing — and moves to a cheaper
// node under Ignore.
func TestConsolidationFollowsThePreferencePolicy(t *testing.T) {
	types := testTypes(t)
	pool := consolidating(model.CapacityTypeOnDemand)
	cheap, _ := cheapestFor(types, pool, app("x", "1"))
	const preferred = "m5.2xlarge"
	if cheap == preferred {
		t.Fatalf("the cheapest type for the pod is %s already", preferred)
	}
	nodes := func() []Node {
		p := app("p1", "1")
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{preferred}}}}}}}}
		return []Node{typed(types, "a", preferred, "on-demand", p)}
	}
	for _, tc := range []struct {
		policy string
		want   []string
	}{
		{scheduling.PreferencePolicyRespect, nil},
		{scheduling.PreferencePolicyIgnore, []string{"a:replace"}},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			opts, err := scheduling.PolicyOptions(tc.policy, "")
			if err != nil {
				t.Fatal(err)
			}
			in := scheduling.Input{InstanceTypes: types, Region: "us-east-1", Options: opts}
			_, second := twoPassesWith(in, []*model.Pool{pool}, nodes())
			if got := describe(second.Retire); !slices.Equal(got, tc.want) {
				t.Fatalf("retired %v, want %v", got, tc.want)
			}
		})
	}
}

// TestConsolidationOfReservedNodes: a node in a capacity reservation
// costs nothing more than the reservation does (its price is unknown to
// the catalog: $0/h). An underused one is deleted when its pods fit on
// the other nodes (its room goes back to the reservation), and never
// replaced: no node is cheaper than one already paid for.
func TestConsolidationOfReservedNodes(t *testing.T) {
	types := testTypes(t)
	pool := consolidating(model.CapacityTypeReserved, model.CapacityTypeOnDemand)
	for _, tc := range []struct {
		name  string
		nodes []Node
		want  []string
	}{
		{"an underused reserved node alone is kept",
			[]Node{typed(types, "r", "m5.2xlarge", model.CapacityTypeReserved, app("p1", "1"))}, nil},
		{"a reserved node whose pods fit on another node is deleted",
			[]Node{typed(types, "r", "m5.xlarge", model.CapacityTypeReserved, app("p1", "1")),
				typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1", AnnotationDoNotDisrupt))},
			[]string{"r:delete"}},
		{"an on-demand node whose pods fit on a reserved one is deleted",
			[]Node{typed(types, "a", "m5.xlarge", "on-demand", app("p1", "1")),
				typed(types, "r", "m5.xlarge", model.CapacityTypeReserved, app("p2", "1", AnnotationDoNotDisrupt))},
			[]string{"a:delete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, second := twoPasses(types, []*model.Pool{pool}, tc.nodes)
			if got := describe(second.Retire); !slices.Equal(got, tc.want) {
				t.Fatalf("retired %v, want %v", got, tc.want)
			}
		})
	}
}

// TestConsolidationIntoReservations: room a capacity reservation can
// still hold (Snapshot.Reserved, as the provisioner offers it) costs
// nothing, so a bought node whose pods fit there is replaced by a node in
// the reservation, and several by one; a reserved node is not moved into
// another reservation (nothing to save), and a reserved room marked out
// of capacity is not used.
func TestConsolidationIntoReservations(t *testing.T) {
	types := testTypes(t)
	pool := consolidating(model.CapacityTypeReserved, model.CapacityTypeOnDemand)
	cheapOD, _ := cheapestFor(types, consolidating(model.CapacityTypeOnDemand), app("x", "1"))
	room := func(name, instanceType string) *scheduling.Node {
		n := typed(types, name, instanceType, model.CapacityTypeReserved)
		n.Node.Labels[model.LabelReservationID] = "cr-" + name
		return &scheduling.Node{Name: name, Pool: "default", InFlight: true, Labels: n.Node.Labels,
			Capacity: n.Node.Status.Capacity, Allocatable: n.Node.Status.Allocatable}
	}
	for _, tc := range []struct {
		name        string
		nodes       []Node
		reserved    []*scheduling.Node
		unavailable bool
		want        []string
	}{
		{"without reserved room, a node of the cheapest type stays",
			[]Node{typed(types, "a", cheapOD, "on-demand", app("p1", "1"))}, nil, false, nil},
		{"a node whose pods fit in reserved room is replaced",
			[]Node{typed(types, "a", cheapOD, "on-demand", app("p1", "1"))}, []*scheduling.Node{room("r1", "m5.xlarge")}, false,
			[]string{"a:replace"}},
		{"several nodes go into one reserved node",
			[]Node{typed(types, "a", "m5.xlarge", "on-demand", app("p1", "1")),
				typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1")),
				typed(types, "c", "m5.xlarge", "on-demand", app("p3", "1"))},
			[]*scheduling.Node{room("r1", "m5.2xlarge")}, false,
			[]string{"a:replace:group", "b:replace:group", "c:replace:group"}},
		{"a reserved node is not moved into another reservation",
			[]Node{typed(types, "a", "m5.xlarge", model.CapacityTypeReserved, app("p1", "1"))}, []*scheduling.Node{room("r1", "m5.xlarge")}, false, nil},
		{"reserved room marked out of capacity is not used",
			[]Node{typed(types, "a", cheapOD, "on-demand", app("p1", "1"))}, []*scheduling.Node{room("r1", "m5.xlarge")}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Snapshot{Now: now, Pools: []*model.Pool{pool}, Nodes: tc.nodes, Reserved: tc.reserved,
				Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}}
			if tc.unavailable {
				s.Unavailable = func(_, _, ct string) bool { return ct == model.CapacityTypeReserved }
			}
			first, second := twoPassesOf(s)
			if got := describe(second.Retire); !slices.Equal(got, tc.want) {
				t.Fatalf("retired %v, want %v (first pass: blocked %+v)", got, tc.want, first.Blocked)
			}
			for _, d := range second.Retire {
				if d.Reason != ReasonUnderutilized || d.SavingsPerHour <= 0 {
					t.Errorf("decision %+v: want an underutilized replacement that saves the node's price", d)
				}
			}
		})
	}
}
