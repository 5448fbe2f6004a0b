package scheduling_test

import (
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestLPDominanceSamePlans: the bound's LP prices only the columns no
// earlier column dominates while no dual is below 0 (bound.go,
// priceSome), and every plan is, to the last option, dual price and
// bound, the one pricing every column gives.
func TestLPDominanceSamePlans(t *testing.T) {
	sameOutput(t, "dominated LP columns skipped", scheduling.SetLPDominance)
}
