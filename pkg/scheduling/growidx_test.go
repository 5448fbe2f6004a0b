package scheduling_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
)

// planShape is a plan as the packer decides it: each new node's pool,
// type and zone with the names of its pods, in a canonical order.
func planShape(p scheduling.Plan) string {
	var lines []string
	for _, n := range p.NewNodes {
		var pods []string
		for _, pd := range n.Pods {
			pods = append(pods, pd.Namespace+"/"+pd.Name)
		}
		sort.Strings(pods)
		lines = append(lines, fmt.Sprintf("%s %s %s: %s", n.Pool, n.Cheapest.InstanceType, n.Cheapest.Zone, strings.Join(pods, ",")))
	}
	sort.Strings(lines)
	return fmt.Sprintf("%d unschedulable\n%s", len(p.Unschedulable), strings.Join(lines, "\n"))
}

// TestGrowIndexSamePlans: the growth index only saves the packer from
// looking at nodes that cannot win a growth step, so every plan is the
// one the scan over every open node makes. Every generated shape, at
// sizes where steps tie between many equal nodes.
func TestGrowIndexSamePlans(t *testing.T) {
	sizes := []int{60, 400, 1500}
	if testing.Short() {
		sizes = []int{400}
	}
	defer scheduling.SetGrowIndex(true)
	for _, sh := range workloadgen.Shapes {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(t *testing.T) {
				in, err := workloadgen.Input(sh, n, 3)
				if err != nil {
					t.Fatal(err)
				}
				scheduling.SetGrowIndex(false)
				want := scheduling.Solve(in)
				scheduling.SetGrowIndex(true)
				got := scheduling.Solve(in)
				if a, b := planShape(got), planShape(want); a != b {
					t.Errorf("plan with the index differs from the full scan's:\n%s\n--- full scan:\n%s", a, b)
				}
				if len(got.NewNodes) == 0 {
					t.Fatal("no new nodes: the case does not exercise growth")
				}
			})
		}
	}
}
