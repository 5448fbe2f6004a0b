package scheduling_test

import (
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestOfferedInIsEachTypesOffering: the pool's types offered in some zone
// and some capacity type of a pair of masks, made once per pair for the
// classes' compatibility, are those whose own offerings meet both masks,
// whichever pairs were asked before (spot and on-demand pools, several
// zones).
func TestOfferedInIsEachTypesOffering(t *testing.T) {
	masks := [][2]uint64{
		{^uint64(0), ^uint64(0)}, {1, ^uint64(0)}, {1, 1}, {1, 2}, {2, 1}, {6, 3}, {4, 2}, {^uint64(0), 1}, {0, 1},
	}
	for _, c := range []struct {
		shape string
		pods  int
	}{{"spot-limits", 100}, {"zonal-volumes", 100}, {"mix", 100}} {
		if why := scheduling.OfferedInDisagrees(generated(t, c.shape, c.pods, 1), masks); why != "" {
			t.Errorf("%s/%d: %s", c.shape, c.pods, why)
		}
	}
}
