package scheduling_test

import (
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestFitIndexSamePlans: upgradeFor and isOpen visit only the frontier
// types with the CPU and memory they ask for (fitidx.go), in frontier
// order, so every plan is the one scanning the whole frontier makes. An
// index that drops a type with just enough of either (a strict
// comparison) would make plans differ.
func TestFitIndexSamePlans(t *testing.T) {
	samePlans(t, "the frontier indexed by CPU and memory", scheduling.SetFitIndex)
}
