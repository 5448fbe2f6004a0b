package scheduling_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestPaidOrderSamePlansWithExistingNodes: while packing, fillPaid reads
// the nodes with paid room from a treap by (room's value, node) with each
// subtree's largest free amount of each resource (paidorder.go), existing nodes
// first; every plan, placements on existing nodes included, is the one
// the scan over every open node makes. The generated shapes have no
// existing nodes; these cases do, with host ports taken on some, pods of
// several sizes and spreads.
func TestPaidOrderSamePlansWithExistingNodes(t *testing.T) {
	web := func(p *corev1.Pod) { p.Labels["app"] = "web" }
	held := func(name string, n int, cpu, mem string, mods ...func(*corev1.Pod)) []*corev1.Pod {
		return pods(name, n, cpu, mem, mods...)
	}
	cases := []struct {
		name  string
		nodes func() []*scheduling.Node
		pods  func() [][]*corev1.Pod
	}{{
		name: "existing nodes with room of several sizes, then new nodes",
		nodes: func() []*scheduling.Node {
			return []*scheduling.Node{
				existingNode("n1", "test-1a", held("h1", 12, "1", "2Gi")...),
				existingNode("n2", "test-1b", held("h2", 4, "1", "2Gi")...),
				existingNode("n3", "test-1c", held("h3", 15, "1", "1Gi")...),
				existingNode("n4", "test-1a"),
			}
		},
		pods: func() [][]*corev1.Pod {
			return [][]*corev1.Pod{
				pods("big", 6, "3", "6Gi"),
				pods("mid", 20, "1", "2Gi"),
				pods("small", 60, "250m", "256Mi"),
				pods("tiny", 40, "100m", "64Mi"),
			}
		},
	}, {
		name: "host ports taken on some existing nodes",
		nodes: func() []*scheduling.Node {
			return []*scheduling.Node{
				existingNode("n1", "test-1a", held("h1", 1, "1", "1Gi", hostPort(8080))...),
				existingNode("n2", "test-1b", held("h2", 2, "1", "1Gi")...),
				existingNode("n3", "test-1c", held("h3", 1, "1", "1Gi", hostPort(9090))...),
			}
		},
		pods: func() [][]*corev1.Pod {
			return [][]*corev1.Pod{
				pods("p80", 12, "500m", "512Mi", hostPort(8080)),
				pods("p90", 12, "750m", "512Mi", hostPort(9090)),
				pods("both", 5, "250m", "256Mi", hostPort(8080), hostPort(9090)),
				pods("free", 80, "300m", "384Mi"),
			}
		},
	}, {
		name: "spreads and anti-affinity beside existing nodes",
		nodes: func() []*scheduling.Node {
			return []*scheduling.Node{
				existingNode("n1", "test-1a", held("h1", 6, "1", "2Gi", web)...),
				existingNode("n2", "test-1b", held("h2", 8, "1", "2Gi")...),
			}
		},
		pods: func() [][]*corev1.Pod {
			return [][]*corev1.Pod{
				pods("s", 18, "500m", "1Gi", spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "s")),
				pods("a", 6, "1", "1Gi", antiAffinity(corev1.LabelHostname, "web")),
				pods("z", 50, "200m", "256Mi"),
			}
		},
	}}
	defer scheduling.SetPaidIndex(true)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := func(on bool) scheduling.Plan {
				var all []*corev1.Pod
				for _, ps := range c.pods() {
					all = append(all, ps...)
				}
				in := input(all)
				in.Nodes = c.nodes()
				scheduling.SetPaidIndex(on)
				return solve(t, in)
			}
			want, got := plan(false), plan(true)
			if len(want.Existing) == 0 {
				t.Fatal("no pod went to an existing node: the case does not exercise them")
			}
			if a, b := planShape(got), planShape(want); a != b {
				t.Errorf("plan with the order differs from the full scan's:\n%s\n--- full scan:\n%s", a, b)
			}
			if a, b := fmt.Sprint(placedOn(got)), fmt.Sprint(placedOn(want)); a != b {
				t.Errorf("placements with the order differ from the full scan's:\n%s\n--- full scan:\n%s", a, b)
			}
		})
	}
}
