package scheduling_test

import (
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestGrowChainSamePlans: a growth step that follows one for the same
// class takes the grown node's (or the runner-up node's) next upgrade
// without asking every node when that upgrade beats the bounds the last
// search left on every other candidate, and every plan is the one
// searching each step makes. A bound that could rise between steps (the
// runner-up left out of it, or the new nodes' ignored) would take an
// upgrade the search would not, and plans would differ.
func TestGrowChainSamePlans(t *testing.T) {
	samePlans(t, "growth steps chained", scheduling.SetGrowChain)
}

// TestGrowChainTakesSteps: the chain is taken where a class of several
// pods grows a node step by step (web-six's Deployments at 2,000 pods),
// so the test above compares plans the chain made.
func TestGrowChainTakesSteps(t *testing.T) {
	in := generated(t, "web-six", 2000, 1)
	taken := 0
	scheduling.SetChainTaken(func() { taken++ })
	defer scheduling.SetChainTaken(nil)
	scheduling.Solve(in)
	if taken == 0 {
		t.Fatal("no growth step was taken from a chain")
	}
	t.Logf("%d growth steps taken from chains", taken)
}
