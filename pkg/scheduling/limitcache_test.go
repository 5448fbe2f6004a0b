package scheduling_test

import (
	"fmt"
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestLimitCacheSameAnswers: where a limit binds (spot-limits), every
// upgrade answer of a limited pool's node that the cache keeps is the
// answer a scan gives at that moment, every new-node type the level's
// memo keeps is the type a walk gives, and the caches keep many (it is
// the point: the local search's rebuilds asked them all again).
func TestLimitCacheSameAnswers(t *testing.T) {
	sizes := []int{100, 250, 299, 2000}
	if testing.Short() {
		sizes = []int{250}
	}
	for _, n := range sizes {
		for seed := int64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("spot-limits/%d/%d", n, seed), func(t *testing.T) {
				in := generated(t, "spot-limits", n, seed)
				kept, wrong := 0, 0
				scheduling.SetLimitCheck(func(cached, fresh int32) {
					kept++
					if cached != fresh {
						wrong++
					}
				})
				defer scheduling.SetLimitCheck(nil)
				newTypes := tallyChecks(scheduling.SetNewTypeCheck)
				defer scheduling.SetNewTypeCheck(nil)
				scheduling.Solve(in)
				if wrong > 0 {
					t.Errorf("%d of %d cached upgrades differ from a scan's", wrong, kept)
				}
				if kept == 0 {
					t.Error("no upgrade of a limited pool's node was kept")
				}
				if newTypes.wrong > 0 {
					t.Errorf("%d of %d cached new-node types differ from a walk's", newTypes.wrong, newTypes.asked)
				}
				if newTypes.asked == 0 {
					t.Error("no new-node type of a limited pool was kept")
				}
			})
		}
	}
}

// TestLimitCacheSamePlans: every generated shape plans the same with the
// limited pools' answers cached as with each asked again.
func TestLimitCacheSamePlans(t *testing.T) {
	samePlans(t, "limited pools' answers cached", scheduling.SetLimitCache)
}
