package scheduling_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
)

// sameOutput is samePlans comparing the whole plan (every new node's
// options, requirements, zones, labels and requests too), for switches
// of the plan's output.
func sameOutput(t *testing.T, what string, set func(on bool)) {
	sizes := []int{60, 400, 1500}
	if testing.Short() {
		sizes = []int{400}
	}
	defer set(true)
	for _, sh := range workloadgen.Shapes {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(t *testing.T) {
				in, err := workloadgen.Input(sh, n, 3)
				if err != nil {
					t.Fatal(err)
				}
				set(false)
				want := scheduling.Solve(in)
				set(true)
				got := scheduling.Solve(in)
				if len(got.NewNodes) == 0 {
					t.Fatal("no new nodes: the case does not exercise the output")
				}
				if !reflect.DeepEqual(got, want) {
					for i := range got.NewNodes {
						if i < len(want.NewNodes) && !reflect.DeepEqual(got.NewNodes[i], want.NewNodes[i]) {
							t.Fatalf("plan with %s differs; first at new node %d:\n%+v\n--- without:\n%+v", what, i, got.NewNodes[i], want.NewNodes[i])
						}
					}
					t.Fatalf("plan with %s differs from the plan without", what)
				}
			})
		}
	}
}

// TestNodeOptsSamePlans: a new node's options are kept for alike nodes
// (same pool, zones, capacity types, types and requests) and every plan
// is, to the last option and requirement, the one working them out for
// every node gives. Keeping them by fewer of those (the requests left
// out) would give a node another's options.
func TestNodeOptsSamePlans(t *testing.T) {
	sameOutput(t, "node options kept for alike nodes", scheduling.SetNodeOpts)
}
