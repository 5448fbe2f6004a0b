package scheduling_test

import (
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestUpgradeCeilSamePlans: upgradeFor's scan stopped at the efficiency
// ceiling gives every generated shape the plan of the full scan.
func TestUpgradeCeilSamePlans(t *testing.T) {
	samePlans(t, "upgrade scans stopped at the ceiling", scheduling.SetUpgradeCeil)
}

// TestGrowBoundCeilSameBounds: the growth index's bound on a node's
// upgrades, its scan of the types stopped at the efficiency ceiling, is
// the bound of the scan of every type, on every node it bounds while
// packing and rebuilding shapes of several pod sizes.
func TestGrowBoundCeilSameBounds(t *testing.T) {
	checked := 0
	scheduling.SetGrowBoundCheck(func(cut, full float64) {
		checked++
		if cut != full {
			t.Errorf("bound with the scan stopped at the ceiling %v, full scan %v", cut, full)
		}
	})
	defer scheduling.SetGrowBoundCheck(nil)
	for _, shape := range []string{"few-big", "many-shapes", "web-six", "gpu"} {
		scheduling.Solve(generated(t, shape, 2000, 1))
	}
	if checked == 0 {
		t.Fatal("no growth bound was computed: the test compares nothing")
	}
	t.Logf("%d bounds compared", checked)
}

// TestAllowanceSkipSamePlans: the scan's allowance check skipped for
// levels without topology or host ports (upgradeFor refuses the same
// nodes) gives every generated shape the plan of asking it everywhere.
func TestAllowanceSkipSamePlans(t *testing.T) {
	samePlans(t, "allowance skipped for free levels", scheduling.SetAllowanceSkip)
}
