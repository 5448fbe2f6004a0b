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
	bySwitch(t, set, func(t *testing.T, got, want scheduling.Plan) {
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

// TestNodeOptsSamePlans: a new node's options are kept for alike nodes
// (same pool, zones, capacity types, types and requests) and every plan
// is, to the last option and requirement, the one working them out for
// every node gives. Keeping them by fewer of those (the requests left
// out) would give a node another's options.
func TestNodeOptsSamePlans(t *testing.T) {
	sameOutput(t, "node options kept for alike nodes", scheduling.SetNodeOpts)
}

// TestKeptOptionListsSamePlans: new nodes' option lists, and the pool's
// types priced per zone and capacity type masks they are made from, are
// kept with the prepared pool types for later solves, and a later solve
// of the same input gets, to the last option, the plan a solve making
// its own lists gets, with its lists shared with the first solve's.
// Lists or prices kept by fewer than their masks and types (a node in
// one zone given the options or prices of a node in any zone) would give
// nodes other options.
func TestKeptOptionListsSamePlans(t *testing.T) {
	defer scheduling.SetKeptOpts(true)
	for _, sh := range workloadgen.Shapes {
		for _, n := range []int{60, 400} {
			t.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(t *testing.T) {
				in, err := workloadgen.Input(sh, n, 3)
				if err != nil {
					t.Fatal(err)
				}
				scheduling.SetKeptOpts(false)
				want := scheduling.Solve(in)
				scheduling.SetKeptOpts(true)
				first := scheduling.Solve(in)
				second := scheduling.Solve(in)
				if len(want.NewNodes) == 0 {
					t.Fatal("no new nodes: the case does not exercise the output")
				}
				for _, got := range []scheduling.Plan{first, second} {
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("plan with kept option lists differs from the plan making its own")
					}
				}
				a, b := first.NewNodes[0].InstanceTypeOptions, second.NewNodes[0].InstanceTypeOptions
				if len(a) > 0 && &a[0] != &b[0] {
					t.Errorf("the second solve made its own option list: none kept")
				}
			})
		}
	}
}
