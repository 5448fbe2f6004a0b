package scheduling_test

import (
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// ceilingShapes are the generated shapes and sizes the ceilings' tests
// solve: classes of many pods and of one, small and large plans, and
// the constrained shapes whose levels allowance must still be asked for.
var ceilingShapes = []struct {
	name string
	pods int
}{
	{"few-big", 299}, {"few-big", 2000}, {"many-shapes", 299}, {"many-shapes", 2000}, {"web-six", 2000},
	{"gpu", 2000}, {"spot-limits", 299}, {"zone-spread", 299}, {"hostports", 299}, {"mix", 299},
}

// TestCeilingsChangeNoAnswer: upgradeFor's scan stopped at the
// efficiency ceiling gives the type the scan of every type gives, and
// the growth index's bound on a node's upgrades stopped at the same
// ceiling is the full scan's, for every answer and bound of the shapes
// above (packing and every stage of the local search, at the whole
// workload's prices and at regroups' own). The tie rule's edge cases
// come up too rarely here for a rule one step too loose to show:
// TestUpgradeCeilKeepsTheBest draws them.
func TestCeilingsChangeNoAnswer(t *testing.T) {
	answers, bounds := 0, 0
	scheduling.SetUpgradeCheck(func(cut, full int) {
		answers++
		if cut != full {
			t.Errorf("upgrade with the scan stopped at the ceiling: type %d, full scan: type %d", cut, full)
		}
	})
	defer scheduling.SetUpgradeCheck(nil)
	scheduling.SetGrowBoundCheck(func(cut, full float64) {
		bounds++
		if cut != full {
			t.Errorf("bound with the scan stopped at the ceiling %v, full scan %v", cut, full)
		}
	})
	defer scheduling.SetGrowBoundCheck(nil)
	for _, c := range ceilingShapes {
		scheduling.Solve(generated(t, c.name, c.pods, 1))
	}
	if answers == 0 || bounds == 0 {
		t.Fatalf("%d answers and %d bounds compared: the test compares nothing", answers, bounds)
	}
	t.Logf("%d upgrade answers and %d growth bounds compared", answers, bounds)
}

// TestAllowanceSkipRefusesNothing: the scan does not ask allowance for
// levels without topology or host ports, because there it refuses only
// nodes upgradeFor refuses too: over the shapes above, no node it
// skipped would allowance have refused while an upgrade was found.
func TestAllowanceSkipRefusesNothing(t *testing.T) {
	skipped := 0
	scheduling.SetAllowanceSkipped(func(refused, found bool) {
		skipped++
		if refused && found {
			t.Errorf("an upgrade was found for a node allowance refuses")
		}
	})
	defer scheduling.SetAllowanceSkipped(nil)
	for _, c := range ceilingShapes {
		scheduling.Solve(generated(t, c.name, c.pods, 1))
	}
	if skipped == 0 {
		t.Fatal("no node was skipped: the test checks nothing")
	}
	t.Logf("%d nodes asked without allowance", skipped)
}
