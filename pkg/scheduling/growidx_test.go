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
	samePlans(t, "the growth index", scheduling.SetGrowIndex)
}

// TestSkipPaidSamePlans: placeAt does not look for paid room after a
// growth step for classes without topology (packing.go); every plan is
// the one looking after every step makes.
func TestSkipPaidSamePlans(t *testing.T) {
	samePlans(t, "paid room skipped after growth", func(on bool) { scheduling.SetPaidScan(!on) })
}

// TestPaidIndexSamePlans: fillPaid's list of nodes with paid room
// (paidroom.go) holds every node that can take a pending pod, so every
// plan is the one the scan over every open node makes.
func TestPaidIndexSamePlans(t *testing.T) {
	samePlans(t, "the paid room list", scheduling.SetPaidIndex)
}

// TestDrainIndexSamePlans: the drains' tree of listed nodes' free CPU
// (roomy.go) skips only nodes the CPU check would reject, so every plan is
// the one the walk over every listed node makes.
func TestDrainIndexSamePlans(t *testing.T) {
	samePlans(t, "the drain index", scheduling.SetDrainIndex)
}

// samePlans solves every generated shape with a shortcut of the packer
// off (set(false)) and on, and wants the same plans.
func samePlans(t *testing.T, what string, set func(on bool)) {
	sizes := []int{60, 400, 1500}
	if testing.Short() {
		sizes = []int{400}
	}
	defer set(true)
	for _, sh := range workloadgen.Shapes {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(t *testing.T) {
				in, err := workloadgen.Input(sh, n, 3)
				if err != nil {
					t.Fatal(err)
				}
				set(false)
				want := scheduling.Solve(in)
				set(true)
				got := scheduling.Solve(in)
				if a, b := planShape(got), planShape(want); a != b {
					t.Errorf("plan with %s differs from the full scan's:\n%s\n--- full scan:\n%s", what, a, b)
				}
				if len(got.NewNodes) == 0 {
					t.Fatal("no new nodes: the case does not exercise growth")
				}
			})
		}
	}
}
