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
