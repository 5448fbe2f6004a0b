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

// TestFitAnswersSamePlans: upgradeFor's answers kept by bin version for
// the levels alike in everything it reads but their CPU and memory, and
// in the frontier rows those fall in (fitidx.go), give the plans asking
// upgradeFor every time gives. Keying by the level's fit key without the
// rows (one answer for every request size) would make plans differ.
func TestFitAnswersSamePlans(t *testing.T) {
	samePlans(t, "upgrade answers kept by frontier rows", scheduling.SetFitAnswers)
}
