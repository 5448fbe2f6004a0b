package scheduling_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// More of Karpenter's scheduling suite (sigs.k8s.io/karpenter v1.15.0,
// pkg/controllers/provisioning/scheduling/*_test.go), case by case; the
// case names are Karpenter's, the code and the catalog are ours
// (fixtures_test.go). Each Karpenter case that is
// not here or in karpenter_cases_test.go / constraints_test.go needs
// cluster state over time, controllers or metrics rather than a plan.
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
