package scheduling_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// More of Karpenter's scheduling suite (sigs.k8s.io/karpenter v1.15.0,
// pkg/controllers/provisioning/scheduling/*_test.go), case by case; the
// case names are Karpenter's, the code and the catalog are ours
// (fixtures_test.go). The Karpenter cases not here or in
// karpenter_cases_test.go / karpenter_provisioning_test.go /
// constraints_test.go are mostly not plans (metrics, binding, evictions
// over time) or features Joist does not model (reserved capacity, DRA);
// default spread constraints are in defaultspread_test.go, volume
// attachment limits in
// karpenter_volumelimits_test.go:
// testdata/karpenter-coverage.md maps every case.
//
// Karpenter provisions in rounds ("schedule one pod in zone 1, then open
// the pool to zones 2 and 3"); a plan is one round, so an earlier round
// becomes an existing node holding its pods. Such nodes are cordoned when
// the case needs them to count in topology but take no new pod.
//
// Where Joist answers otherwise on purpose the case says so: Joist commits
// every new node to one zone and capacity type while planning (Karpenter
// leaves them open until launch), so cases that need several Karpenter
// batches for zonal affinity work out in one plan.

// kcase is one ported case: in is built fresh for the solve and for the
// check (inputs are not shared between cases).
type kcase struct {
	name          string
	in            func() scheduling.Input
	unschedulable int
	reason        string
	check         func(t *testing.T, in scheduling.Input, plan scheduling.Plan)
}

func runK(t *testing.T, cases []kcase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in()
			plan := solve(t, in)
			if len(plan.Unschedulable) != tc.unschedulable {
				t.Fatalf("%d unschedulable, want %d:\n%s", len(plan.Unschedulable), tc.unschedulable, reasons(plan))
			}
			for _, f := range plan.Unschedulable {
				if !strings.Contains(f.Reason, tc.reason) {
					t.Errorf("reason %q does not contain %q", f.Reason, tc.reason)
				}
			}
			if tc.check != nil {
				tc.check(t, in, plan)
			}
		})
	}
}

// domainOf is the value of key on new node i of a plan: the offering's
// zone and capacity type, a name of its own for the hostname, else its
// labels or its cheapest type's.
func domainOf(t *testing.T, in scheduling.Input, i int, n scheduling.NewNode, key string) string {
	t.Helper()
	switch key {
	case corev1.LabelTopologyZone:
		return n.Cheapest.Zone
	case model.LabelCapacityType:
		return n.Cheapest.CapacityType
	case corev1.LabelHostname:
		return fmt.Sprintf("new-%d", i)
	}
	return labelOf(t, in, n, key)
}

// skewOf counts the pods of namespace default with label app=<app> that
// are neither finished nor terminating per value of key, over the
// existing nodes' pods and the plan's placements, largest first (as
// Karpenter's ExpectSkew lists them: domains without such a pod are left
// out). Pods on a node without the key are not counted.
func skewOf(t *testing.T, in scheduling.Input, plan scheduling.Plan, key, app string) []int {
	t.Helper()
	by := map[string]int{}
	match := func(p *corev1.Pod) bool {
		return p.Namespace == "default" && p.Labels["app"] == app && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
	}
	nodes := map[string]*scheduling.Node{}
	for _, n := range in.Nodes {
		nodes[n.Name] = n
		v, ok := n.Labels[key]
		if !ok {
			continue
		}
		for _, p := range n.Pods {
			if match(p) {
				by[v]++
			}
		}
	}
	for _, pl := range plan.Existing {
		v, ok := nodes[pl.Node].Labels[key]
		if !ok {
			continue
		}
		for _, p := range pl.Pods {
			if match(p) {
				by[v]++
			}
		}
	}
	for i, n := range plan.NewNodes {
		for _, p := range n.Pods {
			if match(p) {
				by[domainOf(t, in, i, n, key)]++
			}
		}
	}
	var out []int
	for _, c := range by {
		out = append(out, c)
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

// wantSkew checks skewOf against the counts Karpenter's case expects.
func wantSkew(key, app string, want ...int) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		if got := skewOf(t, in, plan, key, app); !slices.Equal(got, want) {
			t.Errorf("pods of %s per %s: %v, want %v", app, key, got, want)
		}
	}
}

// maxPerDomain checks that no domain of key holds more than max pods of app.
func maxPerDomain(key, app string, max int) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		if got := skewOf(t, in, plan, key, app); len(got) > 0 && got[0] > max {
			t.Errorf("pods of %s per %s: %v, want at most %d", app, key, got, max)
		}
	}
}

func all(checks ...func(t *testing.T, in scheduling.Input, plan scheduling.Plan)) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		for _, c := range checks {
			c(t, in, plan)
		}
	}
}

func newNodes(want int) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		nodeCount(want)(t, plan)
	}
}

// samePlace checks that two pods went to the same node (or, with same
// false, to different ones).
func samePlace(a, b string, same bool) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		on := placedOn(plan)
		if on[a] == "" || on[b] == "" {
			t.Fatalf("%s on %q, %s on %q: want both placed", a, on[a], b, on[b])
		}
		if (on[a] == on[b]) != same {
			t.Errorf("%s on %s, %s on %s, want same node %v", a, on[a], b, on[b], same)
		}
	}
}

// nodeOfPod is the new node holding a pod, and its index.
func nodeOfPod(plan scheduling.Plan, name string) (int, scheduling.NewNode, bool) {
	for i, n := range plan.NewNodes {
		for _, p := range n.Pods {
			if p.Name == name {
				return i, n, true
			}
		}
	}
	return 0, scheduling.NewNode{}, false
}

func withApp(app string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Labels["app"] = app } }

func withPodLabel(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		labels := map[string]string{}
		for lk, lv := range p.Labels {
			labels[lk] = lv
		}
		labels[k] = v
		p.Labels = labels
	}
}

// ownedBy makes the pod one of the DaemonSet's.
func ownedBy(d *appsv1.DaemonSet) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Namespace = d.Namespace
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: d.Name, Controller: &[]bool{true}[0]}}
	}
}

func inNamespace(ns string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Namespace = ns } }

// lastSpread edits the pod's last topology spread constraint.
func lastSpread(edit func(*corev1.TopologySpreadConstraint)) func(*corev1.Pod) {
	return func(p *corev1.Pod) { edit(&p.Spec.TopologySpreadConstraints[len(p.Spec.TopologySpreadConstraints)-1]) }
}

func noSelector(c *corev1.TopologySpreadConstraint) { c.LabelSelector = nil }

func minDomainsOf(n int32) func(*corev1.TopologySpreadConstraint) {
	return func(c *corev1.TopologySpreadConstraint) { c.MinDomains = &n }
}

func taintsPolicy(p corev1.NodeInclusionPolicy) func(*corev1.TopologySpreadConstraint) {
	return func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &p }
}

func affinityPolicy(p corev1.NodeInclusionPolicy) func(*corev1.TopologySpreadConstraint) {
	return func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &p }
}

// cordoned is an existing node (c.4xlarge) that takes no new pod but whose
// pods count for topology: Karpenter's earlier round.
func cordoned(name, zone string, held ...*corev1.Pod) *scheduling.Node {
	n := existingNode(name, zone, held...)
	n.Unschedulable = true
	return n
}

// full is an existing node with labels of its own and no room left.
func full(name string, labels map[string]string, taints ...corev1.Taint) *scheduling.Node {
	n := existingNode(name, "test-1a")
	delete(n.Labels, corev1.LabelTopologyZone)
	for k, v := range labels {
		n.Labels[k] = v
	}
	n.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("10")}
	n.Capacity = n.Allocatable
	n.Taints = taints
	return n
}

func withNodes(in scheduling.Input, nodes ...*scheduling.Node) scheduling.Input {
	in.Nodes = append(in.Nodes, nodes...)
	return in
}

func spotAndOD() *model.Pool {
	return pool("default", withReq(model.LabelCapacityType, "In", model.CapacityTypeSpot, model.CapacityTypeOnDemand))
}

func concat(groups ...[]*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func TestKarpenterSuiteTopologySpread(t *testing.T) {
	zone, host, ct := corev1.LabelTopologyZone, corev1.LabelHostname, model.LabelCapacityType
	dns, anyway := corev1.DoNotSchedule, corev1.ScheduleAnyway
	zoneSpread := spread(zone, 1, dns, "a")
	runK(t, []kcase{
		// Joist reports the pod: a key no pool defines and no type
		// carries has no value to give a new node.
		{name: "should ignore unknown topology keys", in: func() scheduling.Input {
			return input(concat(pods("a", 1, "1", "1Gi", spread("unknown", 1, dns, "a")), pods("plain", 1, "1", "1Gi")))
		}, unschedulable: 1, reason: "unknown", check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if placedOn(plan)["plain-0"] == "" {
				t.Error("the pod without the spread is not placed")
			}
		}},
		// A nil selector matches no pod, so nothing is spread: Joist packs
		// both pods on one node (Karpenter's test only counts them).
		{name: "should not spread when a nil label selector is defined", in: func() scheduling.Input {
			return input(pods("a", 2, "1", "1Gi", zoneSpread, lastSpread(noSelector)))
		}, check: newNodes(1)},
		{name: "should balance pods across zones (match labels)", in: func() scheduling.Input {
			return input(pods("a", 4, "1", "1Gi", zoneSpread))
		}, check: wantSkew(zone, "a", 2, 1, 1)},
		{name: "should balance pods across zones (match expressions)", in: func() scheduling.Input {
			return input(pods("a", 4, "1", "1Gi", zoneSpread, lastSpread(func(c *corev1.TopologySpreadConstraint) {
				c.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}}}
			})))
		}, check: wantSkew(zone, "a", 2, 1, 1)},
		{name: "should respect NodePool zonal constraints (subset) with requirements", in: func() scheduling.Input {
			return input(pods("a", 4, "1", "1Gi", zoneSpread), pool("p", withReq(zone, "In", "test-1a", "test-1b")))
		}, check: wantSkew(zone, "a", 2, 2)},
		{name: "should respect NodePool zonal constraints (subset) with labels", in: func() scheduling.Input {
			return input(pods("a", 4, "1", "1Gi", zoneSpread), pool("p", withLabel(zone, "test-1a")))
		}, check: wantSkew(zone, "a", 4)},
		{name: "should respect NodePool zonal constraints (subset) with requirements and labels", in: func() scheduling.Input {
			return input(pods("a", 4, "1", "1Gi", zoneSpread), pool("p", withReq(zone, "In", "test-1a", "test-1b"), withLabel(zone, "test-1a")))
		}, check: wantSkew(zone, "a", 4)},
		{name: "should respect NodePool zonal constraints (subset) with labels across NodePools", in: func() scheduling.Input {
			return input(pods("a", 4, "1", "1Gi", zoneSpread),
				pool("p", withReq(zone, "In", "test-1a", "test-1b"), withLabel(zone, "test-1a")),
				pool("q", withLabel(zone, "test-1b")))
		}, check: wantSkew(zone, "a", 2, 2)},
		{name: "should respect NodePool zonal constraints (existing pod)", in: func() scheduling.Input {
			return withNodes(input(pods("a", 6, "1100m", "1Gi", zoneSpread), pool("p", withReq(zone, "In", "test-1a", "test-1b"))),
				cordoned("old", "test-1c", pods("a-old", 1, "1100m", "1Gi", withApp("a"))...))
		}, unschedulable: 2, reason: "topology spread", check: wantSkew(zone, "a", 2, 2, 1)},
		{name: "should schedule to the non-minimum domain if its all that's available", in: func() scheduling.Input {
			return withNodes(input(pods("a", 10, "1100m", "1Gi", spread(zone, 5, dns, "a")), pool("p", withReq(zone, "In", "test-1c"))),
				cordoned("old-a", "test-1a", pods("a-old-a", 1, "1100m", "1Gi", withApp("a"))...),
				cordoned("old-b", "test-1b", pods("a-old-b", 1, "1100m", "1Gi", withApp("a"))...))
		}, unschedulable: 4, reason: "topology spread", check: wantSkew(zone, "a", 6, 1, 1)},
		{name: "should only schedule to minimum domains if already violating max skew", in: func() scheduling.Input {
			return withNodes(input(pods("a", 3, "1100m", "1Gi", zoneSpread)),
				cordoned("old", "test-1a", pods("a-old", 3, "1100m", "1Gi", withApp("a"))...))
		}, check: wantSkew(zone, "a", 3, 2, 1)},
		{name: "should not violate max-skew when unsat = do not schedule", in: func() scheduling.Input {
			return withNodes(input(pods("a", 10, "1100m", "1Gi", zoneSpread), pool("p", withReq(zone, "In", "test-1b", "test-1c"))),
				cordoned("old", "test-1a", pods("a-old", 1, "1100m", "1Gi", withApp("a"))...))
		}, unschedulable: 6, reason: "topology spread", check: wantSkew(zone, "a", 2, 2, 1)},
		{name: "should not violate max-skew when unsat = do not schedule (discover domains)", in: func() scheduling.Input {
			// The earlier pod has no spread of its own; it counts all the same.
			return withNodes(input(pods("a", 10, "1100m", "1Gi", zoneSpread), pool("p", withReq(zone, "In", "test-1b", "test-1c"))),
				cordoned("old", "test-1a", pods("first", 1, "1100m", "1Gi", withApp("a"))...))
		}, unschedulable: 6, reason: "topology spread", check: wantSkew(zone, "a", 2, 2, 1)},
		{name: "should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain", in: func() scheduling.Input {
			n1 := cordoned("n1", "test-1a", concat(
				pods("unlabelled", 1, "10m", "10Mi", withApp("other")),
				pods("wrong-ns", 1, "10m", "10Mi", withApp("a"), inNamespace("elsewhere")),
				pods("failed", 1, "10m", "10Mi", withApp("a"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
				pods("succeeded", 1, "10m", "10Mi", withApp("a"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				pods("counted-a", 2, "10m", "10Mi", withApp("a")))...)
			n2 := cordoned("n2", "test-1b", pods("counted-b", 1, "10m", "10Mi", withApp("a"))...)
			n3 := cordoned("n3", "test-1c", pods("no-domain", 1, "10m", "10Mi", withApp("a"))...)
			delete(n3.Labels, zone)
			return withNodes(input(pods("a", 2, "1", "1Gi", zoneSpread)), n1, n2, n3)
		}, check: wantSkew(zone, "a", 2, 2, 1)},
		{name: "should match all pods when labelSelector is not specified", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", zoneSpread, lastSpread(noSelector)))
		}, check: wantSkew(zone, "a", 1)},
		// The selector matches none of the pods that carry it: they do not
		// count, so nothing stops them sharing a node.
		{name: "should handle interdependent selectors", in: func() scheduling.Input {
			return input(pods("a", 5, "100m", "100Mi", spread(host, 1, dns, "b")))
		}, check: newNodes(1)},
		{name: "should respect minDomains constraints", in: func() scheduling.Input {
			return input(pods("a", 3, "1", "1Gi", zoneSpread, lastSpread(minDomainsOf(3))), pool("p", withReq(zone, "In", "test-1a", "test-1b")))
		}, unschedulable: 1, reason: "topology spread", check: wantSkew(zone, "a", 1, 1)},
		{name: "satisfied minDomains constraints (equal) should allow expected pod scheduling", in: func() scheduling.Input {
			return input(pods("a", 11, "1", "1Gi", zoneSpread, lastSpread(minDomainsOf(3))), pool("p", withReq(zone, "In", testZones...)))
		}, check: wantSkew(zone, "a", 4, 4, 3)},
		{name: "satisfied minDomains constraints (greater than minimum) should allow expected pod scheduling", in: func() scheduling.Input {
			return input(pods("a", 11, "1", "1Gi", zoneSpread, lastSpread(minDomainsOf(2))), pool("p", withReq(zone, "In", testZones...)))
		}, check: wantSkew(zone, "a", 4, 4, 3)},

		// Hostname.
		{name: "should balance pods across nodes", in: func() scheduling.Input {
			return input(pods("a", 4, "100m", "100Mi", spread(host, 1, dns, "a")))
		}, check: wantSkew(host, "a", 1, 1, 1, 1)},
		{name: "should balance pods on the same hostname up to maxskew", in: func() scheduling.Input {
			return input(pods("a", 4, "100m", "100Mi", spread(host, 4, dns, "a")))
		}, check: wantSkew(host, "a", 4)},
		{name: "balance multiple deployments with hostname topology spread", in: func() scheduling.Input {
			return input(concat(pods("app1", 2, "100m", "100Mi", spread(host, 1, dns, "app1")), pods("app2", 2, "100m", "100Mi", spread(host, 1, dns, "app2"))))
		}, check: newNodes(2)},
		{name: "balance multiple deployments with hostname topology spread & varying arch", in: func() scheduling.Input {
			return input(concat(
				pods("app1", 2, "100m", "100Mi", spread(host, 1, dns, "app1"), nodeSelector(corev1.LabelArchStable, "amd64")),
				pods("app2", 2, "100m", "100Mi", spread(host, 1, dns, "app2"), nodeSelector(corev1.LabelArchStable, "arm64"))))
		}, check: newNodes(4)},

		// Capacity type.
		{name: "should not violate max-skew when unsat = do not schedule (capacity type)", in: func() scheduling.Input {
			old := cordoned("old", "test-1a", pods("a-old", 1, "1100m", "1Gi", withApp("a"))...)
			old.Labels[ct] = model.CapacityTypeSpot
			return withNodes(input(pods("a", 5, "1100m", "1Gi", spread(ct, 1, dns, "a"))), old)
		}, unschedulable: 3, reason: "topology spread", check: wantSkew(ct, "a", 2, 1)},
		{name: "should violate max-skew when unsat = schedule anyway (capacity type)", in: func() scheduling.Input {
			old := cordoned("old", "test-1a", pods("a-old", 1, "1100m", "1Gi", withApp("a"))...)
			old.Labels[ct] = model.CapacityTypeSpot
			return withNodes(input(pods("a", 5, "1100m", "1Gi", spread(ct, 1, anyway, "a"))), old)
		}, check: func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
			wantSkew(ct, "a", 5, 1)(t, in, plan)
			if len(plan.Relaxed) == 0 {
				t.Error("no relaxation reported for the pods past the skew")
			}
		}},
		{name: "should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain (capacity type)", in: func() scheduling.Input {
			n1 := cordoned("n1", "test-1a", concat(
				pods("unlabelled", 1, "10m", "10Mi", withApp("other")),
				pods("wrong-ns", 1, "10m", "10Mi", withApp("a"), inNamespace("elsewhere")),
				pods("failed", 1, "10m", "10Mi", withApp("a"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
				pods("counted-spot", 2, "10m", "10Mi", withApp("a")))...)
			n1.Labels[ct] = model.CapacityTypeSpot
			n2 := cordoned("n2", "test-1b", pods("counted-od", 1, "10m", "10Mi", withApp("a"))...)
			n3 := cordoned("n3", "test-1c", pods("no-domain", 1, "10m", "10Mi", withApp("a"))...)
			delete(n3.Labels, ct)
			return withNodes(input(pods("a", 2, "1", "1Gi", spread(ct, 1, dns, "a")), spotAndOD()), n1, n2, n3)
		}, check: wantSkew(ct, "a", 3, 2)},
		{name: "should match all pods when labelSelector is not specified (capacity type)", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", spread(ct, 1, dns, "a"), lastSpread(noSelector)), spotAndOD())
		}, check: wantSkew(ct, "a", 1)},
		{name: "should balance pods across capacity-types (node required affinity constrained)", in: func() scheduling.Input {
			// The earlier on-demand pod's node is outside these pods' node
			// affinity, so it does not count: all five may go to spot.
			old := cordoned("old", "test-1a", pods("a-old", 1, "1", "1Gi", withApp("a"))...)
			return withNodes(input(pods("a", 5, "1", "1Gi", spread(ct, 1, dns, "a"), requiredTerms([]corev1.NodeSelectorRequirement{
				req(zone, corev1.NodeSelectorOpIn, "test-1b"), req(ct, corev1.NodeSelectorOpIn, model.CapacityTypeSpot),
			})), spotAndOD()), old)
		}, check: wantSkew(ct, "a", 5, 1)},
		{name: "should balance pods across capacity-types (no constraints)", in: func() scheduling.Input {
			old := cordoned("old", "test-1a", pods("a-old", 1, "2", "1Gi", withApp("a"))...)
			return withNodes(input(pods("a", 5, "2", "1Gi", spread(ct, 1, dns, "a")), pool("spot", withReq(ct, "In", model.CapacityTypeSpot))), old)
		}, unschedulable: 3, reason: "topology spread", check: wantSkew(ct, "a", 2, 1)},

		// Combined.
		{name: "should spread pods while respecting both constraints (hostname and zonal)", in: func() scheduling.Input {
			return input(pods("a", 21, "1", "1Gi", zoneSpread, spread(host, 3, dns, "a")))
		}, check: all(wantSkew(zone, "a", 7, 7, 7), maxPerDomain(host, "a", 3))},
		// Karpenter counts test-zone-3 as a domain although the only pool
		// there has a zero cpu limit, so one pod goes to each other zone
		// and the rest fail; Joist counts the same domains.
		{name: "should spread pods while respecting both constraints (zonal DoNotSchedule, hostname ScheduleAnyway, disabled pool)", in: func() scheduling.Input {
			return input(pods("a", 10, "1", "1Gi", zoneSpread, spread(host, 1, anyway, "a")),
				pool("p", withReq(zone, "In", "test-1a", "test-1b")),
				pool("off", withReq(zone, "In", "test-1c"), func(p *model.Pool) { p.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")} }))
		}, unschedulable: 8, check: all(wantSkew(zone, "a", 1, 1), wantSkew(host, "a", 1, 1))},
		{name: "should spread pods while respecting both constraints (capacity type and hostname)", in: func() scheduling.Input {
			return input(pods("a", 21, "1", "1Gi", spread(ct, 1, dns, "a"), spread(host, 3, dns, "a")), spotAndOD())
		}, check: all(wantSkew(ct, "a", 11, 10), maxPerDomain(host, "a", 3))},
		{name: "should spread pods while respecting both constraints (zonal and capacity type)", in: func() scheduling.Input {
			return input(pods("a", 11, "1", "1Gi", spread(ct, 1, dns, "a"), zoneSpread), spotAndOD())
		}, check: all(maxPerDomain(ct, "a", 6), maxPerDomain(zone, "a", 4))},
		{name: "should spread pods while respecting all constraints", in: func() scheduling.Input {
			return input(pods("a", 23, "1", "1Gi", spread(ct, 1, dns, "a"), spread(zone, 2, dns, "a"), spread(host, 3, dns, "a")), spotAndOD())
		}, check: all(maxPerDomain(ct, "a", 12), maxPerDomain(host, "a", 3))},
		{name: "should limit spread options by nodeSelector", in: func() scheduling.Input {
			return input(concat(
				pods("a", 5, "1", "1Gi", zoneSpread, nodeSelector(zone, "test-1a")),
				pods("a2", 10, "1", "1Gi", withApp("a"), zoneSpread, nodeSelector(zone, "test-1b"))))
		}, check: wantSkew(zone, "a", 10, 5)},
		{name: "should limit spread options by node requirements", in: func() scheduling.Input {
			return input(pods("a", 10, "1", "1Gi", zoneSpread, requiredTerms([]corev1.NodeSelectorRequirement{req(zone, corev1.NodeSelectorOpIn, "test-1a", "test-1b")})))
		}, check: wantSkew(zone, "a", 5, 5)},
		{name: "should limit spread options by required node affinity", in: func() scheduling.Input {
			return withNodes(input(pods("a", 6, "1", "1Gi", zoneSpread, requiredTerms([]corev1.NodeSelectorRequirement{req(zone, corev1.NodeSelectorOpIn, testZones...)}))),
				cordoned("old-a", "test-1a", pods("a-old-a", 3, "1", "1Gi", withApp("a"))...),
				cordoned("old-b", "test-1b", pods("a-old-b", 3, "1", "1Gi", withApp("a"))...))
		}, check: wantSkew(zone, "a", 4, 4, 4)},
		{name: "should limit spread options by nodeSelector (capacity type)", in: func() scheduling.Input {
			return input(concat(
				pods("a", 5, "1", "1Gi", spread(ct, 1, dns, "a"), nodeSelector(ct, model.CapacityTypeSpot)),
				pods("a2", 5, "1", "1Gi", withApp("a"), spread(ct, 1, dns, "a"), nodeSelector(ct, model.CapacityTypeOnDemand))), spotAndOD())
		}, check: wantSkew(ct, "a", 5, 5)},
		{name: "should limit spread options by node affinity (capacity type)", in: func() scheduling.Input {
			old := cordoned("old", "test-1a", pods("a-old", 3, "1", "1Gi", withApp("a"))...)
			old.Labels[ct] = model.CapacityTypeSpot
			return withNodes(input(pods("a", 6, "1", "1Gi", spread(ct, 1, dns, "a"), requiredTerms([]corev1.NodeSelectorRequirement{
				req(ct, corev1.NodeSelectorOpIn, model.CapacityTypeSpot, model.CapacityTypeOnDemand)})), spotAndOD()), old)
		}, check: wantSkew(ct, "a", 5, 4)},

		// matchLabelKeys.
		{name: "should support matchLabelKeys", in: func() scheduling.Input {
			mlk := lastSpread(func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = []string{"rev"} })
			return input(concat(
				pods("a", 2, "100m", "100Mi", withPodLabel("rev", "value-a"), spread(host, 1, dns, "a"), mlk),
				pods("b", 2, "100m", "100Mi", withApp("a"), withPodLabel("rev", "value-b"), spread(host, 1, dns, "a"), mlk)))
		}, check: wantSkew(host, "a", 2, 2)},
		{name: "should ignore unknown labels specified in matchLabelKeys", in: func() scheduling.Input {
			return input(pods("a", 4, "100m", "100Mi", spread(host, 1, dns, "a"), lastSpread(func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = []string{"rev"} })))
		}, check: wantSkew(host, "a", 1, 1, 1, 1)},
	})
}

func TestKarpenterSuiteSpreadPolicies(t *testing.T) {
	const key = "fake-label"
	dns := corev1.DoNotSchedule
	taint := corev1.Taint{Key: "taintname", Value: "taintvalue", Effect: corev1.TaintEffectNoSchedule}
	taintedFooBar := func() []*scheduling.Node {
		return []*scheduling.Node{full("foo", map[string]string{key: "foo"}, taint), full("bar", map[string]string{key: "bar"}, taint)}
	}
	mismatchFooBar := func() []*scheduling.Node {
		return []*scheduling.Node{full("foo", map[string]string{key: "foo", "selector": "mismatch"}), full("bar", map[string]string{key: "bar", "selector": "mismatch"})}
	}
	taintedPool := func(name, value string, values ...string) *model.Pool {
		return pool(name, withReq(model.LabelCapacityType, "Exists"), withReq(key, "In", values...), withTaint("taint-key", value, corev1.TaintEffectNoSchedule))
	}
	tol := func(value string) func(*corev1.Pod) {
		return tolerate("taint-key", value, corev1.TaintEffectNoSchedule)
	}
	runK(t, []kcase{
		{name: "should balance pods across a label (NodeTaintsPolicy=ignore)", in: func() scheduling.Input {
			return withNodes(input(pods("a", 5, "1", "1Gi", spread(key, 1, dns, "a"), lastSpread(taintsPolicy(corev1.NodeInclusionPolicyIgnore))), pool("p", withLabel(key, "baz"))), taintedFooBar()...)
		}, unschedulable: 4, reason: "topology spread", check: wantSkew(key, "a", 1)},
		{name: "should balance pods across a label (NodeTaintsPolicy=honor)", in: func() scheduling.Input {
			return withNodes(input(pods("a", 5, "1", "1Gi", spread(key, 1, dns, "a"), lastSpread(taintsPolicy(corev1.NodeInclusionPolicyHonor))), pool("p", withLabel(key, "baz"))), taintedFooBar()...)
		}, check: wantSkew(key, "a", 5)},
		{name: "should balance pods across a label when discovered from the nodepool (NodeTaintsPolicy=ignore)", in: func() scheduling.Input {
			return input(pods("a", 2, "1", "1Gi", spread(key, 1, dns, "a"), lastSpread(taintsPolicy(corev1.NodeInclusionPolicyIgnore))),
				pool("p", withReq(key, "In", "foo")), taintedPool("t", "taint-value", "bar"))
		}, unschedulable: 1, reason: "topology spread", check: wantSkew(key, "a", 1)},
		{name: "should balance pods across a label when discovered from the nodepool (NodeTaintsPolicy=honor)", in: func() scheduling.Input {
			return input(pods("a", 2, "1", "1Gi", spread(key, 1, dns, "a"), lastSpread(taintsPolicy(corev1.NodeInclusionPolicyHonor))),
				pool("p", withReq(key, "In", "foo")), taintedPool("t", "taint-value", "bar"))
		}, check: wantSkew(key, "a", 2)},
		{name: "should balance pods across a label when mutually exclusive NodePools (by taints) share domains (NodeTaintsPolicy=honor)", in: func() scheduling.Input {
			honor := lastSpread(taintsPolicy(corev1.NodeInclusionPolicyHonor))
			return input(concat(
				pods("one", 2, "1", "1Gi", withApp("a"), spread(key, 1, dns, "a"), honor, tol("nodepool-0")),
				pods("two", 4, "1", "1Gi", withApp("a"), spread(key, 1, dns, "a"), honor, tol("nodepool-1"))),
				taintedPool("np0", "nodepool-0", "foo", "bar"), taintedPool("np1", "nodepool-1", "foo", "baz"))
		}, check: wantSkew(key, "a", 3, 2, 1)},
		{name: "should balance pods across a label (NodeAffinityPolicy=ignore)", in: func() scheduling.Input {
			return withNodes(input(pods("a", 5, "1", "1Gi", nodeSelector("selector", "value"), spread(key, 1, dns, "a"), lastSpread(affinityPolicy(corev1.NodeInclusionPolicyIgnore))),
				pool("p", withLabel(key, "baz"), withLabel("selector", "value"))), mismatchFooBar()...)
		}, unschedulable: 4, reason: "topology spread", check: wantSkew(key, "a", 1)},
		{name: "should balance pods across a label (NodeAffinityPolicy=honor)", in: func() scheduling.Input {
			return withNodes(input(pods("a", 5, "1", "1Gi", nodeSelector("selector", "value"), spread(key, 1, dns, "a"), lastSpread(affinityPolicy(corev1.NodeInclusionPolicyHonor))),
				pool("p", withLabel(key, "baz"), withLabel("selector", "value"))), mismatchFooBar()...)
		}, check: wantSkew(key, "a", 5)},
	})
}

// nodeValues are the values key may take on the new node holding a pod,
// whatever offering is launched: its zones, capacity types, its label, or
// the label over its instance type options ("" where a type lacks it).
func nodeValues(in scheduling.Input, n scheduling.NewNode, key string) map[string]bool {
	out := map[string]bool{}
	switch key {
	case corev1.LabelTopologyZone:
		for _, z := range n.Zones {
			out[z] = true
		}
		return out
	case model.LabelCapacityType:
		for _, c := range n.CapacityTypes {
			out[c] = true
		}
		return out
	}
	if v, ok := n.Labels[key]; ok {
		out[v] = true
		return out
	}
	return typeLabelValues(in, n, key)
}

// podNodeHas checks that the node of pod carries key=want whatever is
// launched (want "" : the node does not carry key).
func podNodeHas(pod, key, want string) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		_, n, ok := nodeOfPod(plan, pod)
		if !ok {
			t.Fatalf("%s is not on a new node", pod)
		}
		if got := nodeValues(in, n, key); len(got) != 1 || !got[want] {
			t.Errorf("%s's node may have %s in %v, want only %q", pod, key, got, want)
		}
	}
}

func nodeReq(reqs ...corev1.NodeSelectorRequirement) func(*corev1.Pod) {
	return requiredTerms(reqs)
}

func preferNode(weight int32, reqs ...corev1.NodeSelectorRequirement) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		ensureAffinity(p)
		if p.Spec.Affinity.NodeAffinity == nil {
			p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		na := p.Spec.Affinity.NodeAffinity
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: reqs}})
	}
}

func TestKarpenterSuiteRequirements(t *testing.T) {
	zone, it, key := corev1.LabelTopologyZone, corev1.LabelInstanceTypeStable, "test-key"
	in, notIn, exists, dne := corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist
	one := func(mods ...func(*corev1.Pod)) []*corev1.Pod { return pods("p", 1, "1", "1Gi", mods...) }
	labelled := func() *model.Pool { return pool("p", withLabel(key, "test-value")) }
	required := func() *model.Pool { return pool("p", withReq(key, "In", "test-value")) }
	cpuKey := "karpenter.k8s.aws/instance-cpu"
	runK(t, []kcase{
		// NodePool with Labels.
		{name: "should schedule unconstrained pods that don't have matching node selectors", in: func() scheduling.Input { return input(one(), labelled()) },
			check: podNodeHas("p-0", key, "test-value")},
		{name: "should not schedule pods that have conflicting node selectors", in: func() scheduling.Input {
			return input(one(nodeSelector(key, "different-value")), labelled())
		}, unschedulable: 1},
		{name: "should not schedule pods that have node selectors with undefined key", in: func() scheduling.Input {
			return input(one(nodeSelector(key, "test-value")))
		}, unschedulable: 1, reason: "not defined"},
		{name: "should schedule pods that have matching requirements", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, in, "test-value", "another-value"))), labelled())
		}, check: podNodeHas("p-0", key, "test-value")},
		{name: "should not schedule pods that have conflicting requirements", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, in, "another-value"))), labelled())
		}, unschedulable: 1},

		// Well Known Labels.
		{name: "should use NodePool constraints", in: func() scheduling.Input { return input(one(), pool("p", withReq(zone, "In", "test-1b"))) },
			check: podNodeHas("p-0", zone, "test-1b")},
		{name: "should use node selectors", in: func() scheduling.Input {
			return input(one(nodeSelector(zone, "test-1b")), pool("p", withReq(zone, "In", "test-1a", "test-1b")))
		}, check: podNodeHas("p-0", zone, "test-1b")},
		{name: "should not schedule the pod if nodeselector unknown", in: func() scheduling.Input {
			return input(one(nodeSelector(zone, "unknown")), pool("p", withReq(zone, "In", "test-1a")))
		}, unschedulable: 1},
		{name: "should not schedule if node selector outside of NodePool constraints", in: func() scheduling.Input {
			return input(one(nodeSelector(zone, "test-1b")), pool("p", withReq(zone, "In", "test-1a")))
		}, unschedulable: 1},
		{name: "should schedule compatible requirements with Operator=In", in: func() scheduling.Input {
			return input(one(nodeReq(req(zone, in, "test-1c"))))
		}, check: podNodeHas("p-0", zone, "test-1c")},
		{name: "should schedule compatible requirements with Operator=Gt", in: func() scheduling.Input {
			return input(one(), pool("p", withReq(cpuKey, "Gt", "8")))
		}, check: podNodeHas("p-0", cpuKey, "16")},
		{name: "should schedule compatible requirements with Operator=Lt", in: func() scheduling.Input {
			return input(one(), pool("p", withReq(cpuKey, "Lt", "4")))
		}, check: podNodeHas("p-0", cpuKey, "2")},
		{name: "should schedule compatible requirements with Operator=Gte", in: func() scheduling.Input {
			return input(one(), pool("p", withReq(cpuKey, "Gte", "16")))
		}, check: podNodeHas("p-0", cpuKey, "16")},
		{name: "should schedule compatible requirements with Operator=Lte", in: func() scheduling.Input {
			return input(one(), pool("p", withReq(cpuKey, "Lte", "2")))
		}, check: podNodeHas("p-0", cpuKey, "2")},
		{name: "should not schedule incompatible preferences and requirements with Operator=In", in: func() scheduling.Input {
			return input(one(nodeReq(req(zone, in, "unknown"))))
		}, unschedulable: 1},
		{name: "should schedule compatible requirements with Operator=NotIn", in: func() scheduling.Input {
			return input(one(nodeReq(req(zone, notIn, "test-1a", "test-1b", "unknown"))))
		}, check: podNodeHas("p-0", zone, "test-1c")},
		{name: "should not schedule incompatible preferences and requirements with Operator=NotIn", in: func() scheduling.Input {
			return input(one(nodeReq(req(zone, notIn, "test-1a", "test-1b", "test-1c", "unknown"))))
		}, unschedulable: 1},
		{name: "should schedule compatible preferences and requirements with Operator=In", in: func() scheduling.Input {
			return input(one(nodeReq(req(zone, in, "test-1a", "test-1b", "test-1c", "unknown")), preferNode(1, req(zone, in, "test-1b", "unknown"))))
		}, check: podNodeHas("p-0", zone, "test-1b")},
		{name: "should schedule incompatible preferences and requirements with Operator=In", in: func() scheduling.Input {
			return input(one(nodeReq(req(zone, in, "test-1a", "test-1b", "test-1c", "unknown")), preferNode(1, req(zone, in, "unknown"))))
		}},
		{name: "should schedule compatible preferences and requirements with Operator=NotIn", in: func() scheduling.Input {
			return input(one(nodeReq(req(zone, in, "test-1a", "test-1b", "test-1c", "unknown")), preferNode(1, req(zone, notIn, "test-1a", "test-1c"))))
		}, check: podNodeHas("p-0", zone, "test-1b")},
		{name: "should schedule incompatible preferences and requirements with Operator=NotIn", in: func() scheduling.Input {
			return input(one(nodeReq(req(zone, in, "test-1a", "test-1b", "test-1c", "unknown")), preferNode(1, req(zone, notIn, "test-1a", "test-1b", "test-1c"))))
		}},
		{name: "should schedule compatible node selectors, preferences and requirements", in: func() scheduling.Input {
			return input(one(nodeSelector(zone, "test-1c"), nodeReq(req(zone, in, testZones...)), preferNode(1, req(zone, in, testZones...))))
		}, check: podNodeHas("p-0", zone, "test-1c")},
		{name: "should combine multidimensional node selectors, preferences and requirements", in: func() scheduling.Input {
			return input(one(nodeSelector(zone, "test-1c", it, "a.xlarge"),
				nodeReq(req(zone, in, "test-1a", "test-1c"), req(it, in, "c.large", "a.xlarge")),
				preferNode(1, req(zone, notIn, "unknown"), req(it, notIn, "unknown"))))
		}, check: all(podNodeHas("p-0", zone, "test-1c"), podNodeHas("p-0", it, "a.xlarge"))},

		// Constraints Validation: restricted keys no pool defines.
		{name: "should not schedule pods that have node selectors with restricted labels", in: func() scheduling.Input {
			return input(one(nodeReq(req("karpenter.sh/initialized", in, "test"))))
		}, unschedulable: 1},
		{name: "should not schedule pods that have node selectors with restricted domains", in: func() scheduling.Input {
			return input(one(nodeReq(req("kubernetes.io/test", in, "test"))))
		}, unschedulable: 1},
		{name: "should schedule pods that have node selectors with label in the kubernetes domains", in: func() scheduling.Input {
			return input(one(nodeSelector("node-restriction.kubernetes.io/test", "test-value")), pool("p", withReq("node-restriction.kubernetes.io/test", "In", "test-value")))
		}, check: podNodeHas("p-0", "node-restriction.kubernetes.io/test", "test-value")},
		{name: "should schedule pods that have node selectors with label in subdomain from kubernetes domains", in: func() scheduling.Input {
			return input(one(nodeSelector("subdomain.node-restriction.kubernetes.io/test", "test-value")), pool("p", withReq("subdomain.node-restriction.kubernetes.io/test", "In", "test-value")))
		}, check: podNodeHas("p-0", "subdomain.node-restriction.kubernetes.io/test", "test-value")},
		{name: "should schedule pods that have node selectors with label in wellknown label list", in: func() scheduling.Input {
			return input(concat(
				pods("zone", 1, "1", "1Gi", nodeSelector(zone, "test-1a")),
				pods("type", 1, "1", "1Gi", nodeSelector(it, "c.xlarge")),
				pods("arch", 1, "1", "1Gi", nodeSelector(corev1.LabelArchStable, "arm64")),
				pods("os", 1, "1", "1Gi", nodeSelector(corev1.LabelOSStable, "linux")),
				pods("spot", 1, "1", "1Gi", nodeSelector(model.LabelCapacityType, "spot"))), spotAndOD())
		}, check: all(podNodeHas("zone-0", zone, "test-1a"), podNodeHas("type-0", it, "c.xlarge"), podNodeHas("arch-0", corev1.LabelArchStable, "arm64"),
			podNodeHas("spot-0", model.LabelCapacityType, "spot"))},

		// Scheduling Logic.
		{name: "should not schedule pods with nodePool which is not ready", in: func() scheduling.Input {
			in := input(one(), pool("p"))
			in.NotReady = map[string]string{"p": "node class default: no subnet matches"}
			return in
		}, unschedulable: 1, reason: "pool is not ready: node class default: no subnet matches"},
		{name: "should not schedule pods that have node selectors with In operator and undefined key", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, in, "test-value"))))
		}, unschedulable: 1},
		{name: "should schedule pods that have node selectors with NotIn operator and undefined key", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, notIn, "test-value"))))
		}, check: podNodeHas("p-0", key, "")},
		{name: "should not schedule pods that have node selectors with Exists operator and undefined key", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, exists))))
		}, unschedulable: 1},
		{name: "should schedule pods that with DoesNotExists operator and undefined key", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, dne))))
		}, check: podNodeHas("p-0", key, "")},
		{name: "should schedule unconstrained pods that don't have matching node selectors (requirement)", in: func() scheduling.Input { return input(one(), required()) },
			check: podNodeHas("p-0", key, "test-value")},
		{name: "should schedule pods that have node selectors with matching value and In operator", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, in, "test-value"))), required())
		}, check: podNodeHas("p-0", key, "test-value")},
		{name: "should not schedule pods that have node selectors with matching value and NotIn operator", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, notIn, "test-value"))), required())
		}, unschedulable: 1},
		{name: "should schedule the pod with Exists operator and defined key", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, exists))), required())
		}, check: podNodeHas("p-0", key, "test-value")},
		{name: "should not schedule the pod with DoesNotExists operator and defined key", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, dne))), required())
		}, unschedulable: 1},
		{name: "should not schedule pods that have node selectors with different value and In operator", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, in, "another-value"))), required())
		}, unschedulable: 1},
		{name: "should schedule pods that have node selectors with different value and NotIn operator", in: func() scheduling.Input {
			return input(one(nodeReq(req(key, notIn, "another-value"))), required())
		}, check: podNodeHas("p-0", key, "test-value")},
		{name: "should schedule compatible pods to the same node", in: func() scheduling.Input {
			return input(concat(pods("a", 1, "1", "1Gi", nodeReq(req(key, in, "test-value"))), pods("b", 1, "1", "1Gi", nodeReq(req(key, notIn, "another-value")))),
				pool("p", withReq(key, "In", "test-value", "another-value")))
		}, check: all(podNodeHas("a-0", key, "test-value"), podNodeHas("b-0", key, "test-value"), samePlace("a-0", "b-0", true))},
		{name: "should schedule incompatible pods to the different node", in: func() scheduling.Input {
			return input(concat(pods("a", 1, "1", "1Gi", nodeReq(req(key, in, "test-value"))), pods("b", 1, "1", "1Gi", nodeReq(req(key, in, "another-value")))),
				pool("p", withReq(key, "In", "test-value", "another-value")))
		}, check: all(podNodeHas("a-0", key, "test-value"), podNodeHas("b-0", key, "another-value"), samePlace("a-0", "b-0", false))},
		{name: "Exists operator should not overwrite the existing value", in: func() scheduling.Input {
			return input(one(nodeReq(req(zone, in, "non-existent-zone"), req(zone, exists))))
		}, unschedulable: 1},

		// Preferential Fallback.
		{name: "should not relax the final term", in: func() scheduling.Input {
			return input(one(nodeReq(req(zone, in, "invalid"))), pool("p", withReq(zone, "In", "test-1a"), withReq(it, "In", "c.large")))
		}, unschedulable: 1},
		{name: "should relax multiple terms", in: func() scheduling.Input {
			return input(one(requiredTerms(
				[]corev1.NodeSelectorRequirement{req(zone, in, "invalid")},
				[]corev1.NodeSelectorRequirement{req(zone, in, "invalid")},
				[]corev1.NodeSelectorRequirement{req(zone, in, "test-1a")},
				[]corev1.NodeSelectorRequirement{req(zone, in, "test-1b")})))
		}, check: podNodeHas("p-0", zone, "test-1a")},
		{name: "should relax all terms", in: func() scheduling.Input {
			return input(one(preferNode(1, req(zone, in, "invalid")), preferNode(1, req(it, in, "invalid"))))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.Relaxed) != 1 {
				t.Errorf("relaxed %+v, want the pod reported", plan.Relaxed)
			}
		}},
		{name: "should relax to use lighter weights", in: func() scheduling.Input {
			return input(one(preferNode(100, req(it, in, "test-1c")), preferNode(50, req(zone, in, "test-1b")), preferNode(1, req(zone, in, "test-1a"))),
				pool("p", withReq(zone, "In", "test-1a", "test-1b")))
		}, check: podNodeHas("p-0", zone, "test-1b")},
		{name: "should schedule even if preference is conflicting with requirement", in: func() scheduling.Input {
			return input(one(preferNode(1, req(zone, notIn, "test-1c")), nodeReq(req(zone, in, "test-1c"))))
		}, check: podNodeHas("p-0", zone, "test-1c")},
		{name: "should schedule even if preference requirements are conflicting", in: func() scheduling.Input {
			return input(one(preferNode(1, req(zone, in, "invalid"), req(zone, notIn, "invalid"))))
		}},
	})
}

func preferAffinity(weight int32, key, app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		ensureAffinity(p)
		if p.Spec.Affinity.PodAffinity == nil {
			p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{}
		}
		a := p.Spec.Affinity.PodAffinity
		a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution, corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(key, app)})
	}
}

func preferAnti(weight int32, key, app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		ensureAffinity(p)
		if p.Spec.Affinity.PodAntiAffinity == nil {
			p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a := p.Spec.Affinity.PodAntiAffinity
		a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution, corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(key, app)})
	}
}

// lastAffinityTerm edits the pod's last required pod affinity term.
func lastAffinityTerm(edit func(*corev1.PodAffinityTerm)) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		ts := p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		edit(&ts[len(ts)-1])
	}
}

// zoneOfPod is the zone of the node a pod is on, new or existing.
func zoneOfPod(in scheduling.Input, plan scheduling.Plan, pod string) string {
	if _, n, ok := nodeOfPod(plan, pod); ok {
		return n.Cheapest.Zone
	}
	for _, pl := range plan.Existing {
		for _, p := range pl.Pods {
			if p.Name == pod {
				for _, n := range in.Nodes {
					if n.Name == pl.Node {
						return n.Labels[corev1.LabelTopologyZone]
					}
				}
			}
		}
	}
	return ""
}

func placedCount(plan scheduling.Plan) int {
	return len(placedOn(plan))
}

func TestKarpenterSuitePodAffinity(t *testing.T) {
	zone, host := corev1.LabelTopologyZone, corev1.LabelHostname
	dns := corev1.DoNotSchedule
	zoneGuards := func(mods ...func(*corev1.Pod)) []*corev1.Pod {
		var out []*corev1.Pod
		for _, z := range testZones {
			out = append(out, pods("guard-"+z, 1, "2", "1Gi", append([]func(*corev1.Pod){withApp("guard"), nodeSelector(zone, z)}, mods...)...)...)
		}
		return out
	}
	runK(t, []kcase{
		{name: "should schedule a pod with empty pod affinity and anti-affinity", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}, PodAntiAffinity: &corev1.PodAntiAffinity{}}
			}))
		}},
		{name: "should respect pod affinity (hostname)", in: func() scheduling.Input {
			return input(concat(
				pods("spread", 10, "100m", "100Mi", spread(host, 1, dns, "spread")),
				pods("target", 1, "100m", "100Mi", withApp("s2")),
				pods("follower", 1, "100m", "100Mi", affinity(host, "s2"))))
		}, check: samePlace("target-0", "follower-0", true)},
		{name: "should respect self pod affinity (hostname)", in: func() scheduling.Input {
			return input(pods("a", 3, "100m", "100Mi", affinity(host, "a")))
		}, check: newNodes(1)},
		// Karpenter's fake types hold five pods; ours hold at most 234.
		{name: "should respect self pod affinity for first empty topology domain only (hostname)", in: func() scheduling.Input {
			return input(pods("a", 240, "10m", "10Mi", affinity(host, "a")))
		}, unschedulable: 6, reason: "pod affinity", check: newNodes(1)},
		{name: "should respect self pod affinity for first empty topology domain only (hostname/constrained zones)", in: func() scheduling.Input {
			return withNodes(input(pods("a", 10, "100m", "100Mi", affinity(host, "a"), nodeReq(req(zone, corev1.NodeSelectorOpIn, "test-1b", "test-1c")))),
				existingNode("first", "test-1a", pods("a-first", 1, "100m", "100Mi", withApp("a"), affinity(host, "a"))...))
		}, unschedulable: 10, reason: "pod affinity"},
		{name: "should respect self pod affinity (zone)", in: func() scheduling.Input {
			return input(pods("a", 3, "100m", "100Mi", affinity(zone, "a")))
		}, check: newNodes(1)},
		{name: "should respect self pod affinity (zone w/ constraint)", in: func() scheduling.Input {
			return input(pods("a", 3, "100m", "100Mi", affinity(zone, "a"), nodeReq(req(zone, corev1.NodeSelectorOpIn, "test-1c"))))
		}, check: all(newNodes(1), podNodeHas("a-0", zone, "test-1c"))},
		{name: "should allow violation of preferred pod affinity", in: func() scheduling.Input {
			return input(concat(pods("spread", 10, "100m", "100Mi", spread(host, 1, dns, "spread")), pods("follower", 1, "100m", "100Mi", preferAffinity(50, host, "nobody"))))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.Relaxed) != 1 || !strings.Contains(plan.Relaxed[0].Reason, "affinity") {
				t.Errorf("relaxed %+v, want the follower's preferred affinity", plan.Relaxed)
			}
		}},
		{name: "should allow violation of preferred pod anti-affinity", in: func() scheduling.Input {
			return input(pods("a", 10, "100m", "100Mi", preferAnti(50, zone, "a"), spread(zone, 1, dns, "a")))
		}, check: wantSkew(zone, "a", 4, 3, 3)},
		{name: "should separate nodes using simple pod anti-affinity on hostname", in: func() scheduling.Input {
			return input(concat(pods("second", 1, "100m", "100Mi", antiAffinity(host, "s1")), pods("first", 1, "100m", "100Mi", withApp("s1"))))
		}, check: samePlace("first-0", "second-0", false)},
		// Karpenter leaves the first pod's zone open until launch, so the
		// pod avoiding it waits a round; Joist fixes the zone in the plan
		// and places both now, in different zones.
		{name: "should not violate pod anti-affinity on zone (other schedules first)", in: func() scheduling.Input {
			return input(concat(pods("pod", 1, "2", "1Gi", withApp("s2")), pods("aff", 1, "100m", "100Mi", antiAffinity(zone, "s2"))))
		}, check: func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
			if a, b := zoneOfPod(in, plan, "pod-0"), zoneOfPod(in, plan, "aff-0"); a == "" || a == b {
				t.Errorf("zones %q and %q, want two different zones", a, b)
			}
		}},
		{name: "should violate preferred pod anti-affinity on zone (inverse)", in: func() scheduling.Input {
			return input(concat(zoneGuards(preferAnti(10, zone, "aff")), pods("aff", 1, "100m", "100Mi", withApp("aff"))))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if placedCount(plan) != 4 {
				t.Errorf("placed %v, want all four", placedOn(plan))
			}
		}},
		{name: "should not violate pod anti-affinity on zone (inverse)", in: func() scheduling.Input {
			return input(concat(zoneGuards(antiAffinity(zone, "aff")), pods("aff", 1, "100m", "100Mi", withApp("aff"))))
		}, unschedulable: 1, reason: "anti-affinity"},
		// Karpenter: not in this round (the first pod's zone is open);
		// Joist: in another zone now.
		{name: "should not violate pod anti-affinity on zone (Schrödinger)", in: func() scheduling.Input {
			return input(concat(pods("anywhere", 1, "2", "1Gi", antiAffinity(zone, "aff")), pods("aff", 1, "100m", "100Mi", withApp("aff"))))
		}, check: func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
			if a, b := zoneOfPod(in, plan, "anywhere-0"), zoneOfPod(in, plan, "aff-0"); a == "" || a == b {
				t.Errorf("zones %q and %q, want two different zones", a, b)
			}
		}},
		{name: "should not violate pod anti-affinity on zone (inverse w/existing nodes)", in: func() scheduling.Input {
			var nodes []*scheduling.Node
			for _, z := range testZones {
				nodes = append(nodes, existingNode("n-"+z, z, pods("guard-"+z, 1, "2", "1Gi", withApp("guard"), antiAffinity(zone, "aff"))...))
			}
			return withNodes(input(pods("aff", 1, "100m", "100Mi", withApp("aff"))), nodes...)
		}, unschedulable: 1, reason: "anti-affinity"},
		{name: "should violate preferred pod anti-affinity on zone (inverse w/existing nodes)", in: func() scheduling.Input {
			var nodes []*scheduling.Node
			for _, z := range testZones {
				nodes = append(nodes, existingNode("n-"+z, z, pods("guard-"+z, 1, "2", "1Gi", withApp("guard"), preferAnti(10, zone, "aff"))...))
			}
			return withNodes(input(pods("aff", 1, "100m", "100Mi", withApp("aff"))), nodes...)
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if placedCount(plan) != 1 || len(plan.NewNodes) != 0 {
				t.Errorf("placed %v, %d new nodes: want the pod on an existing node (a preference of others is no bar)", placedOn(plan), len(plan.NewNodes))
			}
		}},
		{name: "should allow violation of a pod affinity preference with a conflicting required constraint", in: func() scheduling.Input {
			return input(pods("a", 3, "100m", "100Mi", spread(host, 1, dns, "a"), preferAffinity(50, host, "a")))
		}, check: wantSkew(host, "a", 1, 1, 1)},
		// Karpenter needs a round per zone; Joist places one pod per zone
		// in one plan.
		{name: "should support pod anti-affinity with a zone topology", in: func() scheduling.Input {
			return input(pods("a", 5, "100m", "100Mi", antiAffinity(zone, "a")))
		}, unschedulable: 2, reason: "anti-affinity", check: wantSkew(zone, "a", 1, 1, 1)},
		{name: "should not schedule pods with affinity to a non-existent pod", in: func() scheduling.Input {
			return input(pods("a", 10, "100m", "100Mi", affinity(zone, "nobody")))
		}, unschedulable: 10, reason: "pod affinity"},
		// Karpenter: the followers wait a round for the target's zone;
		// Joist fixes it and places all eleven in one zone now.
		{name: "should support pod affinity with zone topology (unconstrained target)", in: func() scheduling.Input {
			return input(concat(pods("target", 1, "100m", "100Mi", withApp("target")), pods("aff", 10, "100m", "100Mi", withApp("target"), affinity(zone, "target"))))
		}, check: wantSkew(zone, "target", 11)},
		{name: "should support pod affinity with zone topology (constrained target)", in: func() scheduling.Input {
			return input(concat(pods("target", 1, "100m", "100Mi", withApp("target"), nodeReq(req(zone, corev1.NodeSelectorOpIn, "test-1a"))),
				pods("aff", 10, "100m", "100Mi", withApp("target"), affinity(zone, "target"))))
		}, check: all(wantSkew(zone, "target", 11), podNodeHas("aff-0", zone, "test-1a"))},
		{name: "should filter pod affinity topologies by namespace, no matching pods", in: func() scheduling.Input {
			return input(concat(
				pods("spread", 10, "100m", "100Mi", spread(host, 1, dns, "spread")),
				pods("target", 1, "100m", "100Mi", withApp("s2"), inNamespace("other-ns-no-match")),
				pods("follower", 1, "100m", "100Mi", affinity(host, "s2"))))
		}, unschedulable: 1, reason: "pod affinity", check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if placedOn(plan)["target-0"] == "" {
				t.Error("the target is not placed")
			}
		}},
		{name: "should filter pod affinity topologies by namespace, matching pods namespace list", in: func() scheduling.Input {
			return input(concat(
				pods("spread", 10, "100m", "100Mi", spread(host, 1, dns, "spread")),
				pods("target", 1, "100m", "100Mi", withApp("s2"), inNamespace("other-ns-list")),
				pods("follower", 1, "100m", "100Mi", affinity(host, "s2"), lastAffinityTerm(func(t *corev1.PodAffinityTerm) { t.Namespaces = []string{"other-ns-list"} }))))
		}, check: samePlace("target-0", "follower-0", true)},
		{name: "should filter pod affinity topologies by namespace, empty namespace selector", in: func() scheduling.Input {
			return input(concat(
				pods("spread", 10, "100m", "100Mi", spread(host, 1, dns, "spread")),
				pods("target", 1, "100m", "100Mi", withApp("s2"), inNamespace("empty-ns-selector")),
				pods("follower", 1, "100m", "100Mi", affinity(host, "s2"), lastAffinityTerm(func(t *corev1.PodAffinityTerm) { t.NamespaceSelector = &metav1.LabelSelector{} }))))
		}, check: samePlace("target-0", "follower-0", true)},
		{name: "namespace selector by labels (Namespaces given)", in: func() scheduling.Input {
			in := input(concat(
				pods("target", 1, "100m", "100Mi", withApp("s2"), inNamespace("team-a")),
				pods("other", 1, "100m", "100Mi", withApp("s2"), inNamespace("team-b"), antiAffinity(host, "s2"), lastAntiTerm(func(t *corev1.PodAffinityTerm) { t.Namespaces = []string{"team-a"} })),
				pods("follower", 1, "100m", "100Mi", affinity(host, "s2"), lastAffinityTerm(func(t *corev1.PodAffinityTerm) {
					t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
				}))))
			in.Namespaces = []*corev1.Namespace{
				{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"team": "a"}}},
				{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"team": "b"}}},
			}
			return in
		}, check: all(samePlace("target-0", "follower-0", true), samePlace("target-0", "other-0", false))},
	})
}

func lastAntiTerm(edit func(*corev1.PodAffinityTerm)) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		ts := p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		edit(&ts[len(ts)-1])
	}
}

// withExtra adds resources to the capacity and allocatable of named types.
func withExtra(in scheduling.Input, typ string, name corev1.ResourceName, q string) scheduling.Input {
	for _, it := range in.InstanceTypes {
		if it.Name == typ {
			it.Capacity[name] = resource.MustParse(q)
			it.Allocatable[name] = resource.MustParse(q)
		}
	}
	return in
}

// windowsType adds a Windows type (4 cpu, 16Gi) to the catalog.
func windowsType(in scheduling.Input) scheduling.Input {
	for _, it := range testInstanceTypes() {
		if it.Name == "m.xlarge" {
			it.Name = "w.xlarge"
			it.Labels[corev1.LabelInstanceTypeStable] = "w.xlarge"
			it.Labels[corev1.LabelOSStable] = "windows"
			it.Labels["karpenter.k8s.aws/instance-family"] = "w"
			in.InstanceTypes = append(in.InstanceTypes, it)
		}
	}
	return in
}

func inFlight(name, zone string, held ...*corev1.Pod) *scheduling.Node {
	n := existingNode(name, zone, held...)
	n.InFlight = true
	n.Pool = "default"
	return n
}

func small(n *scheduling.Node, cpu string) *scheduling.Node {
	n.Allocatable = n.Allocatable.DeepCopy()
	n.Allocatable[corev1.ResourceCPU] = resource.MustParse(cpu)
	return n
}

func onExisting(pod, node string) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		if got := placedOn(plan)[pod]; got != node {
			t.Errorf("%s on %q, want %s", pod, got, node)
		}
	}
}

func onNewNode(pod string) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		if _, _, ok := nodeOfPod(plan, pod); !ok {
			t.Errorf("%s on %q, want a new node", pod, placedOn(plan)[pod])
		}
	}
}

func cheapest(typ string) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		cheapestType(typ)(t, plan)
	}
}

func TestKarpenterSuiteInstanceTypesAndNodes(t *testing.T) {
	zone, arch, it := corev1.LabelTopologyZone, corev1.LabelArchStable, corev1.LabelInstanceTypeStable
	family := "karpenter.k8s.aws/instance-family"
	amd := func() *model.Pool { return pool("p", withReq(arch, "In", "amd64")) }
	runK(t, []kcase{
		// Instance Type Compatibility.
		{name: "should not schedule if requesting more resources than any instance type has", in: func() scheduling.Input {
			return input(pods("a", 1, "512", "1Gi"))
		}, unschedulable: 1, reason: "cpu"},
		{name: "should launch pods with different archs on different instances", in: func() scheduling.Input {
			return input(concat(pods("x", 1, "100m", "100Mi", nodeSelector(arch, "amd64")), pods("y", 1, "100m", "100Mi", nodeSelector(arch, "arm64"))),
				pool("p", withReq(arch, "In", "arm64", "amd64")))
		}, check: all(newNodes(2), podNodeHas("x-0", arch, "amd64"), podNodeHas("y-0", arch, "arm64"))},
		{name: "should exclude instance types that are not supported by the pod constraints (node affinity/instance type)", in: func() scheduling.Input {
			return input(pods("a", 1, "100m", "100Mi", nodeReq(req(it, corev1.NodeSelectorOpIn, "a.xlarge"))), amd())
		}, unschedulable: 1},
		{name: "should exclude instance types that are not supported by the pod constraints (node affinity/operating system)", in: func() scheduling.Input {
			return input(pods("a", 1, "100m", "100Mi", nodeReq(req(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "ios"))), amd())
		}, unschedulable: 1},
		{name: "should launch pods with different operating systems on different instances", in: func() scheduling.Input {
			return windowsType(input(concat(pods("x", 1, "100m", "100Mi", nodeSelector(corev1.LabelOSStable, "linux")), pods("y", 1, "100m", "100Mi", nodeSelector(corev1.LabelOSStable, "windows")))))
		}, check: all(newNodes(2), podNodeHas("y-0", it, "w.xlarge"))},
		// The first pod uses the beta instance-type label, which Joist
		// reads as the stable one, as Karpenter does.
		{name: "should launch pods with different instance type node selectors on different instances", in: func() scheduling.Input {
			return input(concat(pods("x", 1, "100m", "100Mi", nodeSelector(corev1.LabelInstanceType, "c.large")), pods("y", 1, "100m", "100Mi", nodeSelector(it, "c.xlarge"))))
		}, check: all(newNodes(2), podNodeHas("x-0", it, "c.large"), podNodeHas("y-0", it, "c.xlarge"))},
		{name: "should launch pods with different zone selectors on different instances", in: func() scheduling.Input {
			return input(concat(pods("x", 1, "100m", "100Mi", nodeSelector(zone, "test-1a")), pods("y", 1, "100m", "100Mi", nodeSelector(zone, "test-1b"))))
		}, check: all(newNodes(2), podNodeHas("x-0", zone, "test-1a"), podNodeHas("y-0", zone, "test-1b"))},
		{name: "should launch pods with resources that aren't on any single instance type on different instances", in: func() scheduling.Input {
			in := input(concat(pods("x", 1, "100m", "100Mi", request("example.com/gpu1", "1")), pods("y", 1, "100m", "100Mi", request("example.com/gpu2", "1"))))
			return withExtra(withExtra(in, "c.xlarge", "example.com/gpu1", "25"), "m.xlarge", "example.com/gpu2", "25")
		}, check: all(newNodes(2), podNodeHas("x-0", it, "c.xlarge"), podNodeHas("y-0", it, "m.xlarge"))},
		{name: "should fail to schedule a pod with resources requests that aren't on a single instance type", in: func() scheduling.Input {
			in := input(pods("x", 1, "100m", "100Mi", request("example.com/gpu1", "1"), request("example.com/gpu2", "1")))
			return withExtra(withExtra(in, "c.xlarge", "example.com/gpu1", "25"), "m.xlarge", "example.com/gpu2", "25")
		}, unschedulable: 1},
		{name: "should filter instance types that match labels", in: func() scheduling.Input {
			return input(concat(pods("x", 1, "100m", "100Mi", nodeSelector(family, "m")), pods("y", 1, "100m", "100Mi", nodeSelector(family, "c"))))
		}, check: all(cheapestOf("x-0", "m.xlarge"), cheapestOf("y-0", "c.large"))},
		{name: "should not schedule with incompatible labels", in: func() scheduling.Input {
			return input(concat(pods("x", 1, "100m", "100Mi", nodeSelector(family, "c", arch, "arm64")), pods("y", 1, "100m", "100Mi", nodeSelector(family, "a", it, "c.large"))))
		}, unschedulable: 2},
		{name: "should schedule optional labels", in: func() scheduling.Input {
			return input(pods("x", 1, "100m", "100Mi", nodeReq(req("karpenter.k8s.aws/instance-gpu-count", corev1.NodeSelectorOpExists))))
		}, check: podNodeHas("x-0", it, "g.2xlarge")},
		{name: "should schedule without optional labels if disallowed", in: func() scheduling.Input {
			return input(pods("x", 1, "100m", "100Mi", nodeReq(req("karpenter.k8s.aws/instance-gpu-count", corev1.NodeSelectorOpDoesNotExist))))
		}, check: podNodeHas("x-0", "karpenter.k8s.aws/instance-gpu-count", "")},

		// Binpacking.
		{name: "should schedule a small pod on the smallest instance", in: func() scheduling.Input { return input(pods("a", 1, "10m", "100M")) }, check: cheapest("c.large")},
		{name: "should schedule a small pod on the smallest possible instance type", in: func() scheduling.Input { return input(pods("a", 1, "10m", "2000M")) }, check: cheapest("c.large")},
		// Joist reads the overhead the RuntimeClass admission put in the
		// pod spec.
		{name: "should take pod runtime class into consideration", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
			}))
		}, check: cheapest("c.xlarge")},
		{name: "should schedule multiple small pods on the smallest possible instance type", in: func() scheduling.Input { return input(pods("a", 5, "10m", "10M")) },
			check: all(newNodes(1), cheapest("c.large"))},
		// Karpenter fills its largest type; Joist picks what is cheapest
		// for the whole set (the verifier checks every node's fit).
		{name: "should create new nodes when a node is at capacity", in: func() scheduling.Input {
			return input(pods("a", 40, "10m", "1.8G", nodeSelector(arch, "amd64")))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes) < 2 {
				t.Errorf("%d nodes for 72G of pods, want several", len(plan.NewNodes))
			}
		}},
		{name: "should pack small and large pods together", in: func() scheduling.Input {
			return input(concat(pods("large", 40, "10m", "1.8G", nodeSelector(arch, "amd64")), pods("small", 20, "10m", "400M", nodeSelector(arch, "amd64"))))
		}},
		// Karpenter gives the small pod a node of its own (two nodes,
		// $0.72/h here); one c.4xlarge holds both for $0.64/h.
		{name: "should pack nodes tightly (Joist: one cheaper node)", in: func() scheduling.Input {
			return input(concat(pods("big", 1, "4500m", "1Gi"), pods("small", 1, "1", "1Gi")))
		}, check: all(newNodes(1), cheapest("c.4xlarge"))},
		{name: "should handle zero-quantity resource requests", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", request("foo.com/weird-resources", "0")))
		}},
		{name: "should not schedule pods that exceed every instance type's capacity", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "2Ti"))
		}, unschedulable: 1, reason: "memory"},
		{name: "should create new nodes when a node is at capacity due to pod limits per node", in: func() scheduling.Input {
			return input(pods("a", 60, "1m", "1Mi", nodeSelector(family, "c"), nodeReq(req("karpenter.k8s.aws/instance-cpu", corev1.NodeSelectorOpLt, "3"))))
		}, check: newNodes(3)},
		{name: "should select for valid instance types, regardless of price", in: func() scheduling.Input {
			return input(pods("a", 1, "1m", "1Mi", nodeReq(req(family, corev1.NodeSelectorOpIn, "c", "m"))))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			cheapestType("c.large")(t, plan)
			var names []string
			for _, o := range plan.NewNodes[0].InstanceTypeOptions {
				names = append(names, o.Name)
			}
			slices.Sort(names)
			if want := []string{"c.4xlarge", "c.large", "c.xlarge", "m.4xlarge", "m.xlarge"}; !slices.Equal(names, want) {
				t.Errorf("options %v, want every valid type %v", names, want)
			}
		}},

		// In-flight and existing nodes.
		{name: "should not launch a second node if there is an in-flight node that can support the pod", in: func() scheduling.Input {
			return withNodes(input(pods("a", 1, "10m", "10Mi")), inFlight("i-1", "test-1a"))
		}, check: all(onExisting("a-0", "i-1"), newNodes(0))},
		{name: "should not launch a second node if there is an in-flight node that can support the pod (node selectors)", in: func() scheduling.Input {
			return withNodes(input(concat(
				pods("second", 1, "10m", "10Mi", nodeReq(req(zone, corev1.NodeSelectorOpIn, "test-1a", "test-1b"))),
				pods("third", 1, "10m", "10Mi", nodeReq(req(zone, corev1.NodeSelectorOpIn, "test-1a", "test-1c"))))),
				inFlight("i-1", "test-1b"))
		}, check: all(onExisting("second-0", "i-1"), onNewNode("third-0"))},
		{name: "should launch a second node if a pod won't fit on the existingNodes node", in: func() scheduling.Input {
			return withNodes(input(pods("a", 1, "1", "10Mi")), small(inFlight("i-1", "test-1a", pods("first", 1, "1001m", "10Mi")...), "2"))
		}, check: onNewNode("a-0")},
		{name: "should launch a second node if a pod isn't compatible with the existingNodes node (node selector)", in: func() scheduling.Input {
			return withNodes(input(pods("a", 1, "10m", "10Mi", nodeSelector(arch, "arm64"))), inFlight("i-1", "test-1a"))
		}, check: onNewNode("a-0")},
		{name: "should balance pods across zones with in-flight nodes", in: func() scheduling.Input {
			a := func(n int, name string) []*corev1.Pod { return pods(name, n, "1", "1Gi", withApp("a")) }
			return withNodes(input(pods("a", 5, "1", "1Gi", spread(zone, 1, corev1.DoNotSchedule, "a"))),
				inFlight("i-a", "test-1a", a(1, "old-a")...), inFlight("i-b", "test-1b", a(1, "old-b")...), inFlight("i-c", "test-1c", a(2, "old-c")...))
		}, check: all(wantSkew(zone, "a", 3, 3, 3), newNodes(0))},
		{name: "should balance pods across hostnames with in-flight nodes", in: func() scheduling.Input {
			var nodes []*scheduling.Node
			for i := 0; i < 4; i++ {
				nodes = append(nodes, inFlight(fmt.Sprintf("i-%d", i), testZones[i%3], pods(fmt.Sprintf("old-%d", i), 1, "1", "1Gi", withApp("a"))...))
			}
			return withNodes(input(pods("a", 5, "1", "1Gi", spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, "a"))), nodes...)
		}, check: all(wantSkew(corev1.LabelHostname, "a", 1, 1, 1, 1, 1, 1, 1, 1, 1), newNodes(5))},
		{name: "should assume pod will schedule to a tainted node with no taints", in: func() scheduling.Input {
			return withNodes(input(pods("a", 1, "8", "1Gi")), inFlight("i-1", "test-1a"))
		}, check: onExisting("a-0", "i-1")},
		{name: "should assume pod will schedule to a node with ephemeral taint node.kubernetes.io/not-ready:NoExecute when the node is uninitialized", in: func() scheduling.Input {
			n := inFlight("i-1", "test-1a")
			n.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}}
			return withNodes(input(pods("a", 1, "1", "1Gi")), n)
		}, check: onExisting("a-0", "i-1")},
		{name: "should not assume pod will schedule to a tainted node", in: func() scheduling.Input {
			n := existingNode("n1", "test-1a")
			n.Taints = []corev1.Taint{{Key: "foo.com/taint", Effect: corev1.TaintEffectNoSchedule}}
			return withNodes(input(pods("a", 1, "1", "1Gi")), n)
		}, check: onNewNode("a-0")},
		{name: "should assume pod will schedule to a tainted node with a custom startup taint", in: func() scheduling.Input {
			startup := corev1.Taint{Key: "foo.com/taint", Effect: corev1.TaintEffectNoSchedule}
			n := inFlight("i-1", "test-1a")
			n.Taints = []corev1.Taint{startup, {Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
			return withNodes(input(pods("a", 1, "1", "1Gi"), pool("default", func(p *model.Pool) { p.StartupTaints = []corev1.Taint{startup} })), n)
		}, check: onExisting("a-0", "i-1")},
		{name: "should not assume pod will schedule to a node with startup taints after initialization", in: func() scheduling.Input {
			startup := corev1.Taint{Key: "ignore-me", Value: "nothing-to-see-here", Effect: corev1.TaintEffectNoSchedule}
			n := existingNode("n1", "test-1a")
			n.Pool = "default"
			n.Taints = []corev1.Taint{startup}
			return withNodes(input(pods("a", 1, "1", "1Gi"), pool("default", func(p *model.Pool) { p.StartupTaints = []corev1.Taint{startup} })), n)
		}, check: onNewNode("a-0")},
		{name: "should track daemonset usage separately so we know how many DS resources are remaining to be scheduled", in: func() scheduling.Input {
			// The in-flight node already runs the DaemonSet's pod: its
			// request is counted once, not reserved again.
			yes := true
			dsPod := pods("agent-x", 1, "1", "256Mi", func(p *corev1.Pod) {
				p.Namespace = "kube-system"
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: &yes}}
			})
			in := withNodes(input(pods("a", 1, "1", "1Gi")), small(inFlight("i-1", "test-1a", dsPod...), "2"))
			in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "1", "256Mi"))
			return in
		}, check: onExisting("a-0", "i-1")},
		{name: "should not subtract daemonset overhead that is not strictly compatible with an existing node", in: func() scheduling.Input {
			in := withNodes(input(pods("a", 1, "1500m", "1Gi")), small(inFlight("i-1", "test-1a"), "2"))
			in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "1", "256Mi", nodeSelector(arch, "arm64")))
			return in
		}, check: onExisting("a-0", "i-1")},
		{name: "should pack in-flight nodes before launching new nodes", in: func() scheduling.Input {
			return withNodes(input(pods("a", 10, "1", "1Gi")), small(inFlight("i-1", "test-1a"), "5"))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			on := 0
			for _, pl := range plan.Existing {
				on += len(pl.Pods)
			}
			if on != 5 {
				t.Errorf("%d pods on the in-flight node (5 cpu free), want 5", on)
			}
		}},
		{name: "should schedule pods with the same host port to different nodes", in: func() scheduling.Input {
			return input(pods("a", 2, "100m", "100Mi", hostPort(80)))
		}, check: newNodes(2)},
		{name: "should schedule a pod to an existing node unowned by Karpenter", in: func() scheduling.Input {
			return withNodes(input(pods("a", 1, "1", "1Gi")), existingNode("n1", "test-1a"))
		}, check: all(onExisting("a-0", "n1"), newNodes(0))},
		{name: "should schedule multiple pods to an existing node unowned by Karpenter", in: func() scheduling.Input {
			return withNodes(input(pods("a", 10, "100m", "100Mi")), existingNode("n1", "test-1a"))
		}, check: newNodes(0)},
		{name: "should consider a pod incompatible with an existing node but compatible with NodePool", in: func() scheduling.Input {
			return withNodes(input(pods("a", 1, "1", "1Gi", nodeSelector(zone, "test-1b"))), existingNode("n1", "test-1a"))
		}, check: all(onNewNode("a-0"), podNodeHas("a-0", zone, "test-1b"))},

		// Taints (topology_test.go's last cases).
		{name: "should not generate taints for OpExists", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
			}))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes[0].Taints) != 0 {
				t.Errorf("taints %v, want none", plan.NewNodes[0].Taints)
			}
		}},
	})
}

func cheapestOf(pod, typ string) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		if _, n, ok := nodeOfPod(plan, pod); !ok || n.Cheapest.InstanceType != typ {
			t.Errorf("%s's node is a %s, want %s", pod, n.Cheapest.InstanceType, typ)
		}
	}
}

// minPrice is the cheapest offering in the catalog, computed here from
// the offerings, for a 1 cpu / 1Gi pod on a type and offering ok accepts.
func minPrice(in scheduling.Input, ok func(it *scheduling.InstanceType, o scheduling.Offering) bool) float64 {
	best := -1.0
	for _, it := range in.InstanceTypes {
		cpu := it.Allocatable[corev1.ResourceCPU]
		if cpu.Cmp(resource.MustParse("1")) < 0 {
			continue
		}
		for _, o := range it.Offerings {
			if ok(it, o) && (best < 0 || o.Price < best) {
				best = o.Price
			}
		}
	}
	return best
}

// priced checks that the single new node costs what minPrice says and
// that every option and offering it may get passes ok.
func priced(ok func(it *scheduling.InstanceType, o scheduling.Offering) bool) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		if len(plan.NewNodes) != 1 {
			t.Fatalf("%d new nodes, want 1", len(plan.NewNodes))
		}
		n := plan.NewNodes[0]
		if want := minPrice(in, ok); n.Cheapest.PricePerHour != want {
			t.Errorf("node at $%.2f/h (%+v), want the cheapest $%.2f/h", n.Cheapest.PricePerHour, n.Cheapest, want)
		}
		for _, o := range n.InstanceTypeOptions {
			for _, it := range in.InstanceTypes {
				if it.Name != o.Name {
					continue
				}
				for _, z := range n.Zones {
					for _, c := range n.CapacityTypes {
						if !ok(it, scheduling.Offering{Zone: z, CapacityType: c}) {
							t.Errorf("option %s in %s/%s is outside the constraints", o.Name, z, c)
						}
					}
				}
			}
		}
	}
}

func TestKarpenterSuiteInstanceSelection(t *testing.T) {
	zone, arch, os, ct := corev1.LabelTopologyZone, corev1.LabelArchStable, corev1.LabelOSStable, model.LabelCapacityType
	one := func(mods ...func(*corev1.Pod)) []*corev1.Pod { return pods("a", 1, "1", "1Gi", mods...) }
	lbl := func(k, v string) func(it *scheduling.InstanceType, o scheduling.Offering) bool {
		return func(it *scheduling.InstanceType, o scheduling.Offering) bool {
			switch k {
			case zone:
				return o.Zone == v
			case ct:
				return o.CapacityType == v
			}
			return it.Labels[k] == v
		}
	}
	and := func(fs ...func(*scheduling.InstanceType, scheduling.Offering) bool) func(*scheduling.InstanceType, scheduling.Offering) bool {
		return func(it *scheduling.InstanceType, o scheduling.Offering) bool {
			for _, f := range fs {
				if !f(it, o) {
					return false
				}
			}
			return true
		}
	}
	od, spot := lbl(ct, model.CapacityTypeOnDemand), lbl(ct, model.CapacityTypeSpot)
	both := func(mods ...func(*model.Pool)) *model.Pool {
		return pool("p", append([]func(*model.Pool){withReq(ct, "In", model.CapacityTypeSpot, model.CapacityTypeOnDemand)}, mods...)...)
	}
	sel := func(k, v string) func(*corev1.Pod) { return nodeReq(req(k, corev1.NodeSelectorOpIn, v)) }
	// sels is one required term of several key In [value] pairs.
	sels := func(kv ...string) func(*corev1.Pod) {
		var rs []corev1.NodeSelectorRequirement
		for i := 0; i+1 < len(kv); i += 2 {
			rs = append(rs, req(kv[i], corev1.NodeSelectorOpIn, kv[i+1]))
		}
		return nodeReq(rs...)
	}
	runK(t, []kcase{
		{name: "should schedule on one of the cheapest instances", in: func() scheduling.Input { return input(one()) }, check: priced(od)},
		{name: "should schedule on one of the cheapest instances (pod arch = amd64)", in: func() scheduling.Input { return input(one(sel(arch, "amd64"))) }, check: priced(and(od, lbl(arch, "amd64")))},
		{name: "should schedule on one of the cheapest instances (pod arch = arm64)", in: func() scheduling.Input { return input(one(sel(arch, "arm64"))) }, check: priced(and(od, lbl(arch, "arm64")))},
		{name: "should schedule on one of the cheapest instances (prov arch = amd64)", in: func() scheduling.Input { return input(one(), pool("p", withReq(arch, "In", "amd64"))) }, check: priced(and(od, lbl(arch, "amd64")))},
		{name: "should schedule on one of the cheapest instances (prov arch = arm64)", in: func() scheduling.Input { return input(one(), pool("p", withReq(arch, "In", "arm64"))) }, check: priced(and(od, lbl(arch, "arm64")))},
		{name: "should schedule on one of the cheapest instances (prov os = windows)", in: func() scheduling.Input { return windowsType(input(one(), pool("p", withReq(os, "In", "windows")))) }, check: priced(and(od, lbl(os, "windows")))},
		{name: "should schedule on one of the cheapest instances (pod os = windows)", in: func() scheduling.Input { return windowsType(input(one(sel(os, "windows")))) }, check: priced(and(od, lbl(os, "windows")))},
		{name: "should schedule on one of the cheapest instances (pod os = linux)", in: func() scheduling.Input { return windowsType(input(one(sel(os, "linux")))) }, check: priced(and(od, lbl(os, "linux")))},
		{name: "should schedule on one of the cheapest instances (prov zone = test-zone-2)", in: func() scheduling.Input { return input(one(), pool("p", withReq(zone, "In", "test-1b"))) }, check: priced(and(od, lbl(zone, "test-1b")))},
		{name: "should schedule on one of the cheapest instances (pod zone = test-zone-2)", in: func() scheduling.Input { return input(one(sel(zone, "test-1b"))) }, check: priced(and(od, lbl(zone, "test-1b")))},
		{name: "should schedule on one of the cheapest instances (prov ct = spot)", in: func() scheduling.Input { return input(one(), pool("p", withReq(ct, "In", "spot"))) }, check: priced(spot)},
		{name: "should schedule on one of the cheapest instances (pod ct = spot)", in: func() scheduling.Input { return input(one(sel(ct, "spot")), both()) }, check: priced(spot)},
		{name: "should schedule on one of the cheapest instances (prov ct = ondemand, prov zone = test-zone-1)", in: func() scheduling.Input {
			return input(one(), pool("p", withReq(zone, "In", "test-1a")))
		}, check: priced(and(od, lbl(zone, "test-1a")))},
		{name: "should schedule on one of the cheapest instances (pod ct = spot, pod zone = test-zone-1)", in: func() scheduling.Input {
			return input(one(sels(ct, "spot", zone, "test-1a")), both())
		}, check: priced(and(spot, lbl(zone, "test-1a")))},
		{name: "should schedule on one of the cheapest instances (prov ct = spot, pod zone = test-zone-2)", in: func() scheduling.Input {
			return input(one(sel(zone, "test-1b")), pool("p", withReq(ct, "In", "spot")))
		}, check: priced(and(spot, lbl(zone, "test-1b")))},
		{name: "should schedule on one of the cheapest instances (prov ct = ondemand/test-zone-1/arm64/windows)", in: func() scheduling.Input {
			// Our Windows type is amd64: nothing is arm64 and Windows.
			return windowsType(input(one(), pool("p", withReq(zone, "In", "test-1a"), withReq(arch, "In", "arm64"), withReq(os, "In", "windows"))))
		}, unschedulable: 1},
		{name: "should schedule on one of the cheapest instances (prov = spot/test-zone-2, pod = amd64/linux)", in: func() scheduling.Input {
			return input(one(sels(arch, "amd64", os, "linux")), pool("p", withReq(ct, "In", "spot"), withReq(zone, "In", "test-1b")))
		}, check: priced(and(spot, lbl(zone, "test-1b"), lbl(arch, "amd64")))},
		{name: "should schedule on one of the cheapest instances (pod ct = spot/test-zone-2/amd64/linux)", in: func() scheduling.Input {
			return input(one(sels(ct, "spot", zone, "test-1b", arch, "amd64", os, "linux")), both())
		}, check: priced(and(spot, lbl(zone, "test-1b"), lbl(arch, "amd64")))},
		{name: "should not schedule if no instance type matches selector (pod arch = arm)", in: func() scheduling.Input {
			return input(one(sel(arch, "arm64")), pool("p", withReq(arch, "In", "amd64")))
		}, unschedulable: 1},
		{name: "should not schedule if no instance type matches selector (pod arch = arm zone=test-zone-2)", in: func() scheduling.Input {
			in := input(one(sels(arch, "arm64", zone, "test-1b")))
			for _, it := range in.InstanceTypes {
				if it.Labels[arch] == "arm64" {
					it.Offerings = slices.DeleteFunc(it.Offerings, func(o scheduling.Offering) bool { return o.Zone == "test-1b" })
				}
			}
			return in
		}, unschedulable: 1},
		{name: "should not schedule if no instance type matches selector (prov arch = arm / pod zone=test-zone-2)", in: func() scheduling.Input {
			in := input(one(sel(zone, "test-1b")), pool("p", withReq(arch, "In", "arm64")))
			for _, it := range in.InstanceTypes {
				if it.Labels[arch] == "arm64" {
					it.Offerings = slices.DeleteFunc(it.Offerings, func(o scheduling.Offering) bool { return o.Zone == "test-1b" })
				}
			}
			return in
		}, unschedulable: 1},
		{name: "should schedule on an instance with enough resources", in: func() scheduling.Input {
			return input(concat(pods("a", 1, "1", "1Gi"), pods("b", 1, "1500m", "3Gi"), pods("c", 1, "300m", "9Gi")))
		}, check: newNodes(1)},
		{name: "should schedule on cheaper on-demand instance even when spot price ordering would place other instance types first", in: func() scheduling.Input {
			in := input(one(), pool("p", withReq(ct, "In", model.CapacityTypeOnDemand)))
			for _, it := range in.InstanceTypes {
				for i := range it.Offerings {
					switch {
					case it.Name == "c.large" && it.Offerings[i].CapacityType == model.CapacityTypeOnDemand:
						it.Offerings[i].Price = 0.10
					case it.Name == "c.large":
						it.Offerings[i].Price = 0.05
					case it.Name == "a.xlarge" && it.Offerings[i].CapacityType == model.CapacityTypeSpot:
						it.Offerings[i].Price = 0.01
					}
				}
			}
			return in
		}, check: cheapest("c.large")},
		{name: "offerings unavailable are not used", in: func() scheduling.Input {
			in := input(one())
			in.Unavailable = func(typ, zone, ct string) bool { return typ == "c.large" }
			return in
		}, check: cheapest("c.xlarge")},
		{name: "gpu pods land on the gpu type only", in: func() scheduling.Input {
			return input(pods("g", 2, "1", "1Gi", request("nvidia.com/gpu", "1")))
		}, check: func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes) != 2 {
				t.Errorf("%d nodes for two one-gpu pods on one-gpu types, want 2", len(plan.NewNodes))
			}
			for _, n := range plan.NewNodes {
				if v := nodeValues(in, n, corev1.LabelInstanceTypeStable); len(v) != 1 || !v["g.2xlarge"] {
					t.Errorf("options %v, want g.2xlarge only", v)
				}
			}
		}},
	})
}

func TestKarpenterSuiteVolumes(t *testing.T) {
	zone := corev1.LabelTopologyZone
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	sc := func(name string, mode storagev1.VolumeBindingMode, isDefault bool, zones ...string) *storagev1.StorageClass {
		c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &mode}
		if isDefault {
			c.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		for _, z := range zones {
			c.AllowedTopologies = append(c.AllowedTopologies, corev1.TopologySelectorTerm{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: zone, Values: []string{z}}}})
		}
		return c
	}
	// claim makes a claim; an ephemeral volume's (<pod>-tmp) is
	// controlled by its pod, as the ephemeral volume controller makes it.
	claim := func(name string, mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		if pod, ok := strings.CutSuffix(name, "-tmp"); ok {
			yes := true
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod, Controller: &yes}}
		}
		for _, m := range mods {
			m(c)
		}
		return c
	}
	class := func(name string) func(*corev1.PersistentVolumeClaim) {
		return func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = &name }
	}
	boundTo := func(pv string) func(*corev1.PersistentVolumeClaim) {
		return func(c *corev1.PersistentVolumeClaim) {
			c.Spec.VolumeName = pv
			c.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
			c.Status.Phase = corev1.ClaimBound
		}
	}
	pv := func(name string, zones ...string) *corev1.PersistentVolume {
		var terms []corev1.NodeSelectorTerm
		for _, z := range zones {
			terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req(zone, corev1.NodeSelectorOpIn, z)}})
		}
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: terms}}}}
	}
	localPV := func(name, node string, hostPath bool) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{req(corev1.LabelHostname, corev1.NodeSelectorOpIn, node)}}}}}}}
		if hostPath {
			v.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/data"}
		} else {
			v.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/disks/a"}
		}
		return v
	}
	placed := func(name string) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
		return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			t.Helper()
			if placedOn(plan)[name] == "" {
				t.Errorf("%s not placed:\n%s", name, reasons(plan))
			}
		}
	}
	useClaim := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
		}
	}
	// claimNamingVolume is one pod whose claim "ca" names volume "pva" in
	// test-1b before the binding completed (no bind-completed
	// annotation); the volume is reserved for the claim named by
	// reservedFor ("" for a free volume).
	claimNamingVolume := func(reservedFor string) scheduling.Input {
		in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
		v := pv("pva", "test-1b")
		if reservedFor != "" {
			v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: reservedFor}
		}
		in.PersistentVolumes = []*corev1.PersistentVolume{v}
		in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pva" })}
		return in
	}
	// localOrZone is one pod whose claim is bound to a local (or
	// hostPath) volume on a node that is gone, with a second, OR'ed
	// term allowing zone test-1b.
	localOrZone := func(hostPath bool) scheduling.Input {
		in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
		v := localPV("pva", "gone-node", hostPath)
		v.Spec.NodeAffinity.Required.NodeSelectorTerms = append(v.Spec.NodeAffinity.Required.NodeSelectorTerms,
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req(zone, corev1.NodeSelectorOpIn, "test-1b")}})
		in.PersistentVolumes = []*corev1.PersistentVolume{v}
		in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", boundTo("pva"))}
		return in
	}
	ephemeral := func(class *string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class}}}}})
		}
	}
	str := func(s string) *string { return &s }
	antiZone := antiAffinity(zone, "a")
	twoZones := func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		a, b := zoneOfPod(in, plan, "a-0"), zoneOfPod(in, plan, "b-0")
		if a == b || (a != "test-1a" && a != "test-1b") || (b != "test-1a" && b != "test-1b") {
			t.Errorf("zones %q and %q, want test-1a and test-1b", a, b)
		}
	}
	runK(t, []kcase{
		{name: "should schedule pods using a PV with multiple zones", in: func() scheduling.Input {
			in := input(concat(pods("a", 1, "1", "1Gi", antiZone, useClaim("ca")), pods("b", 1, "1", "1Gi", withApp("a"), antiZone, useClaim("cb"))))
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pva", "test-1a", "test-1b"), pv("pvb", "test-1a", "test-1b")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", boundTo("pva")), claim("cb", boundTo("pvb"))}
			return in
		}, check: twoZones},
		{name: "should schedule pods using a StorageClass with multiple zones in AllowedTopologies", in: func() scheduling.Input {
			in := input(concat(pods("a", 1, "1", "1Gi", antiZone, useClaim("ca")), pods("b", 1, "1", "1Gi", withApp("a"), antiZone, useClaim("cb"))))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false, "test-1a", "test-1b")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class("gp3")), claim("cb", class("gp3"))}
			return in
		}, check: twoZones},
		{name: "should launch nodes for pods with ephemeral volume using the specified storage class name", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", ephemeral(str("mine"))))
			in.StorageClasses = []*storagev1.StorageClass{sc("default", wffc, true, "test-1b"), sc("mine", wffc, false, "test-1a")}
			return in
		}, check: podNodeHas("a-0", zone, "test-1a")},
		{name: "should launch nodes for pods with ephemeral volume using a default storage class", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", ephemeral(nil)))
			in.StorageClasses = []*storagev1.StorageClass{sc("other", wffc, false, "test-1b"), sc("default", wffc, true, "test-1a")}
			return in
		}, check: podNodeHas("a-0", zone, "test-1a")},
		{name: "should launch nodes for pods with ephemeral volume using the newest storage class", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", ephemeral(nil)))
			older, newer := sc("older", wffc, true, "test-1b"), sc("newer", wffc, true, "test-1a")
			older.CreationTimestamp = metav1.Unix(1000, 0)
			newer.CreationTimestamp = metav1.Unix(2000, 0)
			in.StorageClasses = []*storagev1.StorageClass{older, newer}
			return in
		}, check: podNodeHas("a-0", zone, "test-1a")},
		{name: "should not launch nodes for pod with unbound volume for volumeBindingMode immediate", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			in.StorageClasses = []*storagev1.StorageClass{sc("now", immediate, false)}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class("now"))}
			return in
		}, unschedulable: 1, reason: "immediate"},
		{name: "should not launch nodes for pod with deleting persistentVolumeClaim", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false)}
			now := metav1.Unix(3000, 0)
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class("gp3"), func(c *corev1.PersistentVolumeClaim) { c.DeletionTimestamp = &now })}
			return in
		}, unschedulable: 1, reason: "being deleted"},
		{name: "should not launch nodes for pod with Lost persistentVolumeClaim", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false)}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class("gp3"), func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimLost })}
			return in
		}, unschedulable: 1, reason: "lost"},
		{name: "should not launch nodes for pod with a claim of a non-existent storage class", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false)}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class("non-existent"))}
			return in
		}, unschedulable: 1, reason: "storageclass"},
		{name: "should not launch nodes for pod with a claim of an explicitly disabled storage class (empty string)", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, true)}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class(""))}
			return in
		}, unschedulable: 1, reason: "immediate"},
		{name: "should not launch nodes for pod with an ephemeral volume of a non-existent storage class", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", ephemeral(str("non-existent"))))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, true)}
			return in
		}, unschedulable: 1, reason: "storageclass"},
		{name: "should schedule pod with PVC and TSC minDomains=3 when pods are spread across 3 zones", in: func() scheduling.Input {
			md := lastSpread(minDomainsOf(3))
			in := input(concat(pods("first", 3, "1", "1Gi", withApp("a"), spread(zone, 1, corev1.DoNotSchedule, "a"), md),
				pods("vol", 1, "1", "1Gi", withApp("a"), spread(zone, 1, corev1.DoNotSchedule, "a"), md, useClaim("ca"))))
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pva", "test-1a")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", boundTo("pva"))}
			return in
		}, check: all(wantSkew(zone, "a", 2, 1, 1), podNodeHas("vol-0", zone, "test-1a"))},
		// provisioning/suite_test.go's volume topology cases.
		{name: "should schedule with an empty storage class if the pvc is bound", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pva", "test-1b")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class(""), boundTo("pva"))}
			return in
		}, check: podNodeHas("a-0", zone, "test-1b")},
		{name: "should schedule with a missing storage class if the pvc is bound", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, true)}
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pva", "test-1b")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class("missing-storage-class"), boundTo("pva"))}
			return in
		}, check: podNodeHas("a-0", zone, "test-1b")},
		{name: "should schedule valid pods when a pod with an invalid pvc is encountered (volume name)", in: func() scheduling.Input {
			in := input(concat(pods("a", 1, "1", "1Gi", useClaim("ca")), pods("ok", 1, "1", "1Gi")))
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pvb", "test-1b")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "invalid-volume-name" })}
			return in
		}, unschedulable: 1, reason: "invalid-volume-name", check: placed("ok-0")},
		{name: "should schedule valid pods when a pod with an invalid pvc is encountered (pvc)", in: func() scheduling.Input {
			in := input(concat(pods("a", 1, "1", "1Gi", useClaim("invalid")), pods("ok", 1, "1", "1Gi")))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, true)}
			return in
		}, unschedulable: 1, reason: "not found", check: placed("ok-0")},
		{name: "should schedule valid pods when a pod with an invalid pvc is encountered (storage class)", in: func() scheduling.Input {
			in := input(concat(pods("a", 1, "1", "1Gi", useClaim("ca")), pods("ok", 1, "1", "1Gi")))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, true)}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class("invalid-storage-class"))}
			return in
		}, unschedulable: 1, reason: "storageclass", check: placed("ok-0")},
		{name: "should schedule to storage class zones if volume does not exist", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca"), nodeReq(req(zone, corev1.NodeSelectorOpIn, "test-1a", "test-1c"))))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false, "test-1b", "test-1c")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class("gp3"))}
			return in
		}, check: podNodeHas("a-0", zone, "test-1c")},
		{name: "should schedule to storage class zones if volume does not exist (ephemeral volume)", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", ephemeral(str("gp3")), nodeReq(req(zone, corev1.NodeSelectorOpIn, "test-1a", "test-1c"))))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false, "test-1b", "test-1c")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("a-0-tmp", class("gp3"))}
			return in
		}, check: podNodeHas("a-0", zone, "test-1c")},
		{name: "should not schedule if storage class zones are incompatible", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca"), nodeReq(req(zone, corev1.NodeSelectorOpIn, "test-1a"))))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false, "test-1b", "test-1c")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class("gp3"))}
			return in
		}, unschedulable: 1},
		{name: "should not schedule if storage class zones are incompatible (ephemeral volume)", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", ephemeral(str("gp3")), nodeReq(req(zone, corev1.NodeSelectorOpIn, "test-1a"))))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false, "test-1b", "test-1c")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("a-0-tmp", class("gp3"))}
			return in
		}, unschedulable: 1},
		{name: "should schedule to volume zones if volume already bound", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false, "test-1b", "test-1c")}
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pva", "test-1c")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class("gp3"), boundTo("pva"))}
			return in
		}, check: podNodeHas("a-0", zone, "test-1c")},
		// The claim the ephemeral volume controller made for the pod
		// (<pod>-<volume>) decides once it exists, not the template.
		{name: "should schedule to volume zones if volume already bound (ephemeral volume)", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", ephemeral(str("gp3"))))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false, "test-1b", "test-1c")}
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pva", "test-1c")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("a-0-tmp", class("gp3"), boundTo("pva"))}
			return in
		}, check: podNodeHas("a-0", zone, "test-1c")},
		// Pods of one template with ephemeral volumes: each pod's own
		// claim decides for it.
		{name: "ephemeral volumes of one template bound in different zones", in: func() scheduling.Input {
			in := input(pods("a", 2, "1", "1Gi", ephemeral(str("gp3"))))
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false)}
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pv0", "test-1a"), pv("pv1", "test-1c")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("a-0-tmp", class("gp3"), boundTo("pv0")), claim("a-1-tmp", class("gp3"), boundTo("pv1"))}
			return in
		}, check: all(podNodeHas("a-0", zone, "test-1a"), podNodeHas("a-1", zone, "test-1c"))},
		{name: "should not schedule if volume zones are incompatible", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca"), nodeReq(req(zone, corev1.NodeSelectorOpIn, "test-1a"))))
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pva", "test-1c")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", class("gp3"), boundTo("pva"))}
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false)}
			return in
		}, unschedulable: 1},
		{name: "should not schedule if volume zones are incompatible (ephemeral volume)", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", ephemeral(str("gp3")), nodeReq(req(zone, corev1.NodeSelectorOpIn, "test-1a"))))
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pva", "test-1c")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("a-0-tmp", class("gp3"), boundTo("pva"))}
			in.StorageClasses = []*storagev1.StorageClass{sc("gp3", wffc, false)}
			return in
		}, unschedulable: 1},
		// An ephemeral volume of an Immediate class is refused until its
		// claim is bound; once bound, the volume's zone decides.
		{name: "ephemeral volume of an immediate class, claim bound", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", ephemeral(str("now"))))
			in.StorageClasses = []*storagev1.StorageClass{sc("now", immediate, false)}
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pva", "test-1b")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("a-0-tmp", class("now"), boundTo("pva"))}
			return in
		}, check: podNodeHas("a-0", zone, "test-1b")},
		{name: "should not relax an added volume topology zone node-selector away", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca"), preferNode(1, req(zone, corev1.NodeSelectorOpIn, "test-1a"))))
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pva", "test-1c")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", boundTo("pva"))}
			return in
		}, check: podNodeHas("a-0", zone, "test-1c")},
		{name: "should not launch nodes for pod with bound persistentVolume that is marked for deletion", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			gone := pv("pva", "test-1b")
			now := metav1.Unix(3000, 0)
			gone.DeletionTimestamp = &now
			in.PersistentVolumes = []*corev1.PersistentVolume{gone}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", boundTo("pva"))}
			return in
		}, unschedulable: 1, reason: "being deleted"},
		// A claim naming its volume before the PV controller completed the
		// binding: the kube-scheduler and Karpenter wait for the binding
		// (Karpenter's "pvc is considered unbound" check). Joist plans it
		// in the volume's zone when the binding will complete — the volume
		// is free or reserved for this claim — since it completes within
		// seconds, before a new node is up; a volume bound to another
		// claim never will, and the pod is reported.
		{name: "claim naming a free volume, binding not complete (Joist: planned in the volume's zone)", in: func() scheduling.Input {
			return claimNamingVolume("")
		}, check: podNodeHas("a-0", zone, "test-1b")},
		{name: "claim naming a volume reserved for it, binding not complete", in: func() scheduling.Input {
			return claimNamingVolume("ca")
		}, check: podNodeHas("a-0", zone, "test-1b")},
		{name: "claim naming a volume bound to another claim", in: func() scheduling.Input {
			return claimNamingVolume("other")
		}, unschedulable: 1, reason: "bound to another claim"},
		// Karpenter drops the hostname term of a local or hostPath
		// volume's node affinity and launches a node, which the
		// kube-scheduler then refuses (the volume is on another node), so
		// the pod stays pending on an empty node. Joist keeps the term:
		// the pod goes to the volume's node when it has room, and is
		// reported otherwise.
		{name: "should ignore hostname affinity scheduling when using local path volumes (Joist: reported, the volume's node is gone)", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			in.PersistentVolumes = []*corev1.PersistentVolume{localPV("pva", "gone-node", false)}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", boundTo("pva"))}
			return in
		}, unschedulable: 1, reason: "gone-node", check: newNodes(0)},
		{name: "should ignore hostname affinity scheduling when using hostpath volumes (Joist: reported, the volume's node is gone)", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			in.PersistentVolumes = []*corev1.PersistentVolume{localPV("pva", "gone-node", true)}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", boundTo("pva"))}
			return in
		}, unschedulable: 1, reason: "gone-node", check: newNodes(0)},
		{name: "should ignore hostname affinity scheduling when using local path volumes (ephemeral volume) (Joist: reported)", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", ephemeral(str("local-path"))))
			in.StorageClasses = []*storagev1.StorageClass{sc("local-path", wffc, false)}
			in.PersistentVolumes = []*corev1.PersistentVolume{localPV("pva", "gone-node", false)}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("a-0-tmp", class("local-path"), boundTo("pva"))}
			return in
		}, unschedulable: 1, reason: "gone-node", check: newNodes(0)},
		// Its terms are OR'ed: the zone term lets a new node take it, in
		// that zone (Karpenter: anywhere, having dropped the hostname).
		{name: "should preserve unconstrained PV alternatives after ignoring hostname affinity (for local volumes)", in: func() scheduling.Input { return localOrZone(false) }, check: podNodeHas("a-0", zone, "test-1b")},
		{name: "should preserve unconstrained PV alternatives after ignoring hostname affinity (for hostpath volumes)", in: func() scheduling.Input { return localOrZone(true) }, check: podNodeHas("a-0", zone, "test-1b")},
		{name: "local volume: the pod goes to the volume's node", in: func() scheduling.Input {
			in := withNodes(input(pods("a", 1, "1", "1Gi", useClaim("ca"))), existingNode("disk-node", "test-1a"))
			in.PersistentVolumes = []*corev1.PersistentVolume{localPV("pva", "disk-node", false)}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", boundTo("pva"))}
			return in
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if on := placedOn(plan)["a-0"]; on != "disk-node" {
				t.Errorf("a-0 on %q, want disk-node (its local volume's node)", on)
			}
		}},
		{name: "should not ignore hostname affinity when using non-local path volumes", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca")))
			v := localPV("pva", "gone-node", false)
			v.Spec.Local = nil
			in.PersistentVolumes = []*corev1.PersistentVolume{v}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", boundTo("pva"))}
			return in
		}, unschedulable: 1, check: newNodes(0)},
		// Not Karpenter's: the same rule the other way. The volume puts the
		// pod in test-1a, where two matching pods already are and the
		// other zones have none: one more there breaks the skew.
		{name: "a volume's zone does not narrow the spread's domains", in: func() scheduling.Input {
			in := withNodes(input(pods("vol", 1, "1", "1Gi", withApp("a"), spread(zone, 1, corev1.DoNotSchedule, "a"), useClaim("ca"))),
				cordoned("old", "test-1a", pods("a-old", 2, "1", "1Gi", withApp("a"))...))
			in.PersistentVolumes = []*corev1.PersistentVolume{pv("pva", "test-1a")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("ca", boundTo("pva"))}
			return in
		}, unschedulable: 1, reason: "topology spread"},
	})
}

// tinyCatalog is Karpenter's minValues catalog: three types of 1, 2 and 4
// cpu at $0.52, $1.00 and $1.20, each with a generation label.
func tinyCatalog(pods []*corev1.Pod, p *model.Pool) scheduling.Input {
	var types []*scheduling.InstanceType
	for i, s := range []struct {
		cpu   string
		price float64
		gen   string
	}{{"1", 0.52, "3"}, {"2", 1.0, "4"}, {"4", 1.2, "1"}} {
		name := fmt.Sprintf("instance-type-%d", i+1)
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("10")}
		types = append(types, &scheduling.InstanceType{Name: name, Capacity: capacity, Allocatable: capacity,
			Labels:    map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", "example.com/generation": s.gen},
			Offerings: []scheduling.Offering{{Zone: "test-1a", CapacityType: model.CapacityTypeOnDemand, Price: s.price}}})
	}
	return scheduling.Input{Pods: pods, Pools: []*model.Pool{p}, InstanceTypes: types, Region: "test-1"}
}

func withMinValues(key, op string, n int, values ...string) func(*model.Pool) {
	return func(p *model.Pool) {
		p.Requirements = append(p.Requirements, model.Requirement{Key: key, Operator: op, Values: values, MinValues: &n})
	}
}

// everyNodeHasOptions checks each new node may be at least n types.
func everyNodeHasOptions(n int) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		for i, nn := range plan.NewNodes {
			if len(nn.InstanceTypeOptions) < n {
				t.Errorf("node %d has %d options %v, want at least %d", i, len(nn.InstanceTypeOptions), nn.InstanceTypeOptions, n)
			}
		}
	}
}

func TestKarpenterSuiteMinValues(t *testing.T) {
	it, gen := corev1.LabelInstanceTypeStable, "example.com/generation"
	twoPods := func() []*corev1.Pod { return pods("a", 2, "900m", "100Mi") }
	runK(t, []kcase{
		{name: "should schedule respecting the minValues from instance-type requirements", in: func() scheduling.Input {
			return tinyCatalog(twoPods(), pool("p", withMinValues(it, "In", 2, "instance-type-1", "instance-type-2")))
		}, check: all(newNodes(2), everyNodeHasOptions(2))},
		{name: "should schedule respecting the minValues in Gt operator", in: func() scheduling.Input {
			return tinyCatalog(twoPods(), pool("p", withMinValues(gen, "Gt", 2, "2")))
		}, check: all(newNodes(2), everyNodeHasOptions(2))},
		{name: "scheduler should fail if the minValues in Gt operator is not satisfied", in: func() scheduling.Input {
			return tinyCatalog(twoPods(), pool("p", withMinValues(gen, "Gt", 2, "3")))
		}, unschedulable: 2},
		{name: "should schedule respecting the minValues in Lt operator", in: func() scheduling.Input {
			return tinyCatalog(twoPods(), pool("p", withMinValues(gen, "Lt", 2, "4")))
		}, check: all(newNodes(2), everyNodeHasOptions(2))},
		{name: "scheduler should fail if the minValues in Lt operator is not satisfied", in: func() scheduling.Input {
			return tinyCatalog(twoPods(), pool("p", withMinValues(gen, "Lt", 2, "3")))
		}, unschedulable: 2},
		{name: "should schedule considering the max of the minValues of In and NotIn operators in the instance-type requirements", in: func() scheduling.Input {
			return tinyCatalog(twoPods(), pool("p", withMinValues(it, "In", 1, "instance-type-1", "instance-type-2", "instance-type-3"), withMinValues(it, "NotIn", 2, "instance-type-3")))
		}, check: all(newNodes(2), everyNodeHasOptions(2))},
		{name: "should schedule considering the max of the minValues of Gt and Lt operators.", in: func() scheduling.Input {
			return tinyCatalog(twoPods(), pool("p", withMinValues(gen, "Gt", 1, "2"), withMinValues(gen, "Lt", 2, "5")))
		}, check: all(newNodes(2), everyNodeHasOptions(2))},
		{name: "schedule should fail if minimum number of InstanceTypes is not met as per the minValues in the requirement", in: func() scheduling.Input {
			return tinyCatalog(twoPods(), pool("p", withMinValues(it, "Exists", 11)))
		}, unschedulable: 2},
		{name: "should schedule and respect multiple requirement keys with minValues", in: func() scheduling.Input {
			return tinyCatalog(twoPods(), pool("p", withMinValues(it, "In", 2, "instance-type-1", "instance-type-2"), withMinValues(gen, "Exists", 2)))
		}, check: all(newNodes(2), everyNodeHasOptions(2))},
	})
}

func TestKarpenterSuiteMore(t *testing.T) {
	zone, arch := corev1.LabelTopologyZone, corev1.LabelArchStable
	twoArchReqs := func(p *model.Pool) {
		p.Requirements = append(p.Requirements, model.Requirement{Key: arch, Operator: "In", Values: []string{"amd64"}}, model.Requirement{Key: arch, Operator: "In", Values: []string{"arm64"}})
	}
	pvIn := func(key, value string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{req(key, corev1.NodeSelectorOpIn, value)}}}}}}}
	}
	useClaim := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
		}
	}
	boundClaim := func(name, pv string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	}
	runK(t, []kcase{
		// NodePool requirements instance filtering.
		{name: "should return appropriate pod error when no available instance types exist", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi"), pool("p", withReq(corev1.LabelInstanceTypeStable, "In", "non-existent-instance-type")))
		}, unschedulable: 1, reason: "no instance type"},
		{name: "should handle multiple pods when requirements filter out all instance types", in: func() scheduling.Input {
			return input(pods("a", 3, "1", "1Gi"), pool("p", withReq(arch, "In", "non-existent-arch")))
		}, unschedulable: 3, reason: "no instance type"},
		{name: "should handle conflicting requirements that eliminate all instance types", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi"), pool("p", twoArchReqs))
		}, unschedulable: 1},
		{name: "should handle zone requirements that filter out all instance types", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi"), pool("p", withReq(zone, "In", "non-existent-zone-1", "non-existent-zone-2")))
		}, unschedulable: 1},

		// No Pre-Binding: the earlier round's pod is on an in-flight node.
		{name: "should respect self pod affinity without pod binding (zone)", in: func() scheduling.Input {
			return withNodes(input(pods("a", 3, "100m", "100Mi", affinity(zone, "a"))),
				small(inFlight("i-1", "test-1b", pods("a-first", 1, "100m", "100Mi", affinity(zone, "a"))...), "300m"))
		}, check: func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
			for _, p := range []string{"a-0", "a-1", "a-2"} {
				if z := zoneOfPod(in, plan, p); z != "test-1b" {
					t.Errorf("%s in %q, want test-1b with the first pod", p, z)
				}
			}
		}},

		// Volumes without topology, and in-tree (migrated) zone keys.
		{name: "should not fail for NFS volumes", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "nfs", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "fs", Path: "/"}}})
			}))
		}},
		{name: "should launch nodes for pods with non-dynamic PVC using a migrated PVC/PV", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("c1")))
			in.PersistentVolumes = []*corev1.PersistentVolume{pvIn(corev1.LabelFailureDomainBetaZone, "test-1b")}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{boundClaim("c1", "pv-1")}
			return in
		}, check: podNodeHas("a-0", zone, "test-1b")},
		{name: "should launch nodes for pods with ephemeral volume using a migrated PVC/PV", in: func() scheduling.Input {
			mode := storagev1.VolumeBindingWaitForFirstConsumer
			in := input(pods("a", 1, "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
					VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}})
			}))
			in.StorageClasses = []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "in-tree", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
				Provisioner: "kubernetes.io/aws-ebs", VolumeBindingMode: &mode,
				AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelFailureDomainBetaZone, Values: []string{"test-1c"}}}}}}}
			return in
		}, check: podNodeHas("a-0", zone, "test-1c")},
		// Karpenter picks test-zone-1/optional; Joist tries the
		// alternatives in its own order and may pick the other valid one.
		{name: "should schedule pods when a valid multi-volume topology alternative remains after pruning disjoint branches", in: func() scheduling.Input {
			const exotic = "example.com/exotic"
			mode := storagev1.VolumeBindingWaitForFirstConsumer
			term := func(kv ...string) corev1.TopologySelectorTerm {
				var t corev1.TopologySelectorTerm
				for i := 0; i+1 < len(kv); i += 2 {
					t.MatchLabelExpressions = append(t.MatchLabelExpressions, corev1.TopologySelectorLabelRequirement{Key: kv[i], Values: []string{kv[i+1]}})
				}
				return t
			}
			in := input(pods("a", 1, "1", "1Gi", useClaim("ca"), useClaim("cb")))
			for _, it := range in.InstanceTypes {
				switch it.Name {
				case "c.large":
					it.Labels[exotic] = "optional"
				case "c.xlarge":
					it.Labels[exotic] = "required"
				}
			}
			a, b := "a", "b"
			in.StorageClasses = []*storagev1.StorageClass{
				{ObjectMeta: metav1.ObjectMeta{Name: a}, VolumeBindingMode: &mode, AllowedTopologies: []corev1.TopologySelectorTerm{term(exotic, "required"), term(exotic, "optional")}},
				{ObjectMeta: metav1.ObjectMeta{Name: b}, VolumeBindingMode: &mode, AllowedTopologies: []corev1.TopologySelectorTerm{term(zone, "test-1a", exotic, "optional"), term(zone, "test-1b", exotic, "required")}},
			}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{
				{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &a}},
				{ObjectMeta: metav1.ObjectMeta{Name: "cb", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &b}},
			}
			return in
		}, check: func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
			_, n, _ := nodeOfPod(plan, "a-0")
			z, e := nodeValues(in, n, zone), nodeValues(in, n, "example.com/exotic")
			if len(z) != 1 || len(e) != 1 || !(z["test-1a"] && e["optional"] || z["test-1b"] && e["required"]) {
				t.Errorf("zones %v, exotic %v: want test-1a/optional or test-1b/required", z, e)
			}
		}},
	})
}

// TestKarpenterProvisioningDaemonSets ports the DaemonSet cases of
// Karpenter's provisioning suite (pkg/controllers/provisioning/
// suite_test.go), the overhead a new node reserves. A 1 cpu pod alone fits
// a c.large (1.9 cpu allocatable); with a 2 cpu DaemonSet it needs a
// c.xlarge: the type shows whether the DaemonSet was counted.
func TestKarpenterProvisioningDaemonSets(t *testing.T) {
	cpuKey := "karpenter.k8s.aws/instance-cpu"
	ds := func(mods ...func(*corev1.Pod)) *appsv1.DaemonSet { return daemonSet("agent", "2", "2Gi", mods...) }
	with := func(in scheduling.Input, sets ...*appsv1.DaemonSet) scheduling.Input {
		in.DaemonSets = append(in.DaemonSets, sets...)
		return in
	}
	pod := func(mods ...func(*corev1.Pod)) []*corev1.Pod { return pods("a", 1, "1", "1Gi", mods...) }
	counted, ignored := cheapest("c.xlarge"), cheapest("c.large")
	runK(t, []kcase{
		{name: "should account for daemonsets", in: func() scheduling.Input { return with(input(pod()), ds()) }, check: counted},
		{name: "should account for daemonset hostports", in: func() scheduling.Input {
			return with(input(pod(hostPort(8080))), ds(hostPort(8080)))
		}, unschedulable: 1, reason: "host port", check: newNodes(0)},
		// Sizes are instance-cpu here: the DaemonSet binding the pod's
		// port runs only on 16-core types, so a 4-core node (holding the
		// other DaemonSet) takes the pod.
		{name: "should not account for daemonset hostports when daemonset would not schedule on selected node", in: func() scheduling.Input {
			return with(input(pod(hostPort(8080), nodeReq(req(cpuKey, corev1.NodeSelectorOpLt, "8")))),
				daemonSet("big", "4", "4Gi", hostPort(8080), nodeReq(req(cpuKey, corev1.NodeSelectorOpGt, "8"))),
				daemonSet("small", "2", "2Gi", hostPort(8081), nodeReq(req(cpuKey, corev1.NodeSelectorOpLt, "8"))))
		}, check: counted},
		// Without the pod's own size requirement: the port rules out the
		// types the DaemonSet runs on, for the node's every option.
		{name: "daemonset hostport rules out only the types it runs on", in: func() scheduling.Input {
			return with(input(concat(pods("a", 1, "1", "1Gi", hostPort(8080)), pods("b", 6, "1", "1Gi"))),
				daemonSet("big", "4", "4Gi", hostPort(8080), nodeReq(req(cpuKey, corev1.NodeSelectorOpGt, "8"))))
		}, check: func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
			i, n, ok := nodeOfPod(plan, "a-0")
			if !ok {
				t.Fatalf("a-0 not on a new node:\n%s", reasons(plan))
			}
			for _, o := range n.InstanceTypeOptions {
				if o.Name == "c.4xlarge" || o.Name == "m.4xlarge" {
					t.Errorf("new-%d holds a-0 (port 8080) but may be %s, where the DaemonSet binds 8080", i, o.Name)
				}
			}
		}},
		// The DaemonSet's pod, not its template: admission may change it
		// (injected sidecars, VPA, LimitRange defaults). Here a pending
		// pod of the DaemonSet asks 2 CPU where the template asks 4.
		{name: "should account for overhead using daemonset pod spec instead of daemonset spec", in: func() scheduling.Input {
			d := daemonSet("agent", "4", "4Gi")
			return with(input(concat(pod(), pods("agent-x", 1, "2", "2Gi", ownedBy(d)))), d)
		}, check: counted},
		// Not Karpenter's: a pod of an older template (the DaemonSet was
		// updated since) says nothing of the next pod: the template counts.
		{name: "daemonset pod of an older template is not its overhead", in: func() scheduling.Input {
			d := daemonSet("agent", "4", "4Gi")
			d.Generation = 3
			return with(input(concat(pod(), pods("agent-x", 1, "2", "2Gi", ownedBy(d), withPodLabel("pod-template-generation", "2")))), d)
		}, check: cheapest("c.4xlarge")},
		// A running pod larger than the template (a sidecar injected)
		// counts on new nodes at its size; the largest of several.
		{name: "daemonset pods on nodes larger than the template", in: func() scheduling.Input {
			d := daemonSet("agent", "1", "1Gi")
			d.Generation = 3
			cur := withPodLabel("pod-template-generation", "3")
			return withNodes(with(input(pod()), d),
				cordoned("n1", "test-1a", pods("agent-1", 1, "2500m", "1Gi", ownedBy(d), cur)...),
				cordoned("n2", "test-1b", pods("agent-2", 1, "3", "1Gi", ownedBy(d), cur)...))
		}, check: cheapest("c.4xlarge")},
		{name: "daemonset pod on a node in compact form counts as its overhead", in: func() scheduling.Input {
			d := daemonSet("agent", "1", "1Gi")
			n := cordoned("n1", "test-1a")
			b, ok := scheduling.NewBoundPod(pods("agent-1", 1, "3", "1Gi", ownedBy(d))[0], nil)
			if !ok {
				panic("bound pod refused")
			}
			n.Bound = append(n.Bound, b)
			return withNodes(with(input(pod()), d), n)
		}, check: cheapest("c.4xlarge")},
		{name: "should account for daemonsets (with startup taint)", in: func() scheduling.Input {
			return with(input(pod(), pool("p", func(p *model.Pool) {
				p.StartupTaints = []corev1.Taint{{Key: "foo.com/taint", Effect: corev1.TaintEffectNoSchedule}}
			})), ds())
		}, check: counted},
		{name: "should not schedule if daemonset overhead is too large", in: func() scheduling.Input {
			return with(input(pod()), daemonSet("huge", "10000", "10000Gi"))
		}, unschedulable: 1},
		{name: "should ignore daemonsets without matching tolerations", in: func() scheduling.Input {
			return with(input(pod(func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
			}), pool("p", withTaint("foo", "bar", corev1.TaintEffectNoSchedule))), ds())
		}, check: ignored},
		{name: "should ignore daemonsets with an invalid selector", in: func() scheduling.Input {
			return with(input(pod()), ds(nodeSelector("node", "invalid")))
		}, check: ignored},
		{name: "should ignore daemonsets when no instance types meet the daemonset requirements", in: func() scheduling.Input {
			return with(input(pod()), ds(nodeReq(req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "non-existent-instance-type"))))
		}, check: ignored},
		{name: "should account for daemonsets with a custom label nodeSelector that matches the nodepool", in: func() scheduling.Input {
			return with(input(pod(), pool("p", withLabel("purpose", "monitoring"))), ds(nodeSelector("purpose", "monitoring")))
		}, check: counted},
		{name: "should filter out daemonsets based on instance type requirements", in: func() scheduling.Input {
			return with(input(pod()),
				daemonSet("small", "1", "100Mi", nodeReq(req(cpuKey, corev1.NodeSelectorOpLt, "8"))),
				daemonSet("large", "10", "100Mi", nodeReq(req(cpuKey, corev1.NodeSelectorOpGt, "8"))))
		}, check: counted},
		{name: "should account daemonsets with NotIn operator and unspecified key", in: func() scheduling.Input {
			return with(input(pod(nodeReq(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-1b")))), ds(nodeReq(req("foo", corev1.NodeSelectorOpNotIn, "bar"))))
		}, check: counted},
		{name: "should consider a daemonset schedulable with multiple node affinity terms", in: func() scheduling.Input {
			return with(input(pod(), pool("p", withLabel("foo", "bar"))), ds(requiredTerms(
				[]corev1.NodeSelectorRequirement{req("foo", corev1.NodeSelectorOpIn, "voo")},
				[]corev1.NodeSelectorRequirement{req("foo", corev1.NodeSelectorOpIn, "bar")})))
		}, check: counted},
		{name: "should consider a daemonset schedulable with an incompatible node affinity preference", in: func() scheduling.Input {
			return with(input(pod()), ds(preferNode(1, req("node", corev1.NodeSelectorOpIn, "invalid"))))
		}, check: counted},
		{name: "should consider a daemonset schedulable with a PreferNoSchedule taint", in: func() scheduling.Input {
			return with(input(pod(), pool("p", withTaint("test", "", corev1.TaintEffectPreferNoSchedule))), ds())
		}, check: counted},
		// suite_test.go (scheduling), Issue #2116.
		{name: "Should properly handle DaemonSet resources with Node Affinity for `karpenter.sh/initialized` and `karpenter.sh/registered`", in: func() scheduling.Input {
			return with(input(pods("a", 1, "2", "1Gi")),
				daemonSet("ds-initialized", "1", "100Mi", nodeReq(req("karpenter.sh/initialized", corev1.NodeSelectorOpIn, "true"))),
				daemonSet("ds-registered", "1", "100Mi", nodeReq(req("karpenter.sh/registered", corev1.NodeSelectorOpIn, "true"))))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes) != 1 {
				t.Fatalf("%d nodes, want 1", len(plan.NewNodes))
			}
			n := plan.NewNodes[0]
			if got := n.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("4")) != 0 {
				t.Errorf("requests cpu %s, want 4 (the pod and both DaemonSets)", got.String())
			}
			for _, r := range n.Requirements {
				if r.Key == "karpenter.sh/initialized" || r.Key == "karpenter.sh/registered" {
					t.Errorf("node requirement %+v: the lifecycle labels must not leak into the node's requirements", r)
				}
			}
		}},
		{name: "should not double-count daemon overhead when multiple pods are scheduled to the same nodeclaim", in: func() scheduling.Input {
			return with(input(pods("a", 2, "1", "1Gi")), daemonSet("agent", "1", "256Mi"))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes) != 1 {
				t.Fatalf("%d nodes, want 1", len(plan.NewNodes))
			}
			if got := plan.NewNodes[0].Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("3")) != 0 {
				t.Errorf("requests cpu %s, want 3 (two pods and one DaemonSet pod)", got.String())
			}
		}},
	})
}
