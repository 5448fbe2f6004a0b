package scheduling_test

import (
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestRebuildTwinsSamePlans: a rebuild pass that skips groups of twins
// of groups it tried since it last kept one plans as trying every group
// does, on every generated shape.
func TestRebuildTwinsSamePlans(t *testing.T) {
	samePlans(t, "rebuilds of twins skipped", scheduling.SetRebuildTwins)
}

// TestRebuildTwinsSpareRebuilds: where the least utilised nodes are alike
// (spot-limits at 299 pods: a dozen one-pod nodes of one small type; gpu
// at 2,000 pods: one-GPU nodes; hostname-anti at 40 pods: the tail
// split's one-pod nodes), each kind is tried once, for the same plan; and
// where a later node of the tail split that is no twin is kept
// (hostname-anti at 40 pods, zone-spread at 299), it is still tried.
func TestRebuildTwinsSpareRebuilds(t *testing.T) {
	for _, c := range []struct {
		shape     string
		pods      int
		seed      int64
		mostRatio float64 // rebuilds with twins skipped, at most this share of all
	}{
		{"spot-limits", 299, 4, 0.5},
		{"gpu", 2000, 1, 0.5},
		{"hostname-anti", 40, 1, 0.8},
		{"hostname-anti", 40, 2, 0.5},
		{"zone-spread", 299, 2, 1},
		{"zone-spread", 180, 3, 1},
	} {
		in := generated(t, c.shape, c.pods, c.seed)
		scheduling.SetRebuildTwins(false)
		all, tries := scheduling.SolveCountingRebuilds(in)
		scheduling.SetRebuildTwins(true)
		got, spared := scheduling.SolveCountingRebuilds(in)
		if a, b := planShape(got), planShape(all); a != b {
			t.Errorf("%s/%d: plan with twins skipped differs:\n%s\n--- every group tried:\n%s", c.shape, c.pods, a, b)
		}
		if float64(spared) > c.mostRatio*float64(tries) {
			t.Errorf("%s/%d: %d rebuilds with twins skipped against %d, want at most %.0f%%", c.shape, c.pods, spared, tries, 100*c.mostRatio)
		}
		t.Logf("%s/%d seed %d: %d rebuilds -> %d", c.shape, c.pods, c.seed, tries, spared)
	}
}
