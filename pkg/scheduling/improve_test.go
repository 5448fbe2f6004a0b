package scheduling_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
)

// TestVersionRestoreSamePlans: a bin the local search changed and put
// back takes its version back (restoreShape), so the upgrade answers and
// open states cached for that version serve again; every plan is the one
// giving it a new version (recomputing them) makes. Versions reused for
// another state (a per-bin counter instead of the solve's) would make
// cached answers stale, and plans differ.
func TestVersionRestoreSamePlans(t *testing.T) {
	samePlans(t, "versions restored", scheduling.SetVersionRestore)
}

// TestUpgradeCacheSamePlans: the cached upgrade answers (by bin version,
// and under a split's price cap by version and cap) give the plans that
// asking upgradeFor every time gives. An answer kept across a cap change
// or a version change would make plans differ.
func TestUpgradeCacheSamePlans(t *testing.T) {
	samePlans(t, "upgrade answers cached", scheduling.SetUpgradeCache)
}

// TestScratchSamePlans: solves reuse the answer caches' tables and slots
// earlier solves gave back (scratch.go), and every plan is the one new
// tables give. (A stale entry is read as an answer only when its table
// reaches its generation, too rarely for plans here to show it; that
// tables are handed out cleared is TestScratchHandsOutClearedTables'.)
func TestScratchSamePlans(t *testing.T) {
	samePlans(t, "tables of earlier solves", scheduling.SetScratch)
}

// TestRegroupPoolColumnsSamePlans: the regrouping prices a group's pods
// by an LP over its pools' types only (regroup.go), and every plan is the
// one an LP over every pool's types gives.
func TestRegroupPoolColumnsSamePlans(t *testing.T) {
	samePlans(t, "the regrouping's LP over the group's pools", scheduling.SetRegroupPoolColumns)
}

// TestOpenCacheSamePlans: isOpen's shortcuts (a closed bin stays closed
// while the smallest pending request only rose, the type that made a bin
// open is tried first) give the plans its full scans give. Keeping a
// closed answer after the minimum fell would make plans differ.
func TestOpenCacheSamePlans(t *testing.T) {
	samePlans(t, "open states kept", scheduling.SetOpenCache)
}

// TestLiveEmptySamePlans: the new nodes the local search emptied (kept
// in the solver's bins, without pods) are left out of the live list the
// growth and paid-room searches scan, which skip them anyway, so every
// plan is the one keeping them there makes. Leaving out a node that
// still holds pods would make plans differ.
func TestLiveEmptySamePlans(t *testing.T) {
	samePlans(t, "empty new nodes left out of the live list", scheduling.SetLiveEmpty)
}

// TestWorkMinSamePlans: a rebuild without the growth index takes the
// smallest request of its work still to place as the pending minimum
// (setWorkMin), which keeps more nodes open than the request of the
// class it places; the searches check each node anyway, so every plan is
// the one the class's own request makes. A minimum above the request of
// the class placed would close nodes that could take it, and plans would
// differ (one no node holds: 17 of the 27 cases).
func TestWorkMinSamePlans(t *testing.T) {
	samePlans(t, "the work's smallest request as the pending minimum", scheduling.SetWorkMin)
}

// TestRebuildBoundSamePlans: a rebuild stopped once its new nodes' price
// floor reaches the price before it would not have been kept, so every
// plan is the one packing every rebuild to the end makes. A floor that
// could fall (the nodes' offers alone, which an upgrade to a cheaper type
// or a regroup's right-sizing lowers) would stop rebuilds that win, and
// plans would differ.
func TestRebuildBoundSamePlans(t *testing.T) {
	samePlans(t, "rebuilds stopped at their price floor", scheduling.SetRebuildBound)
}

// TestPendingFloorSamePlans: rebuilds whose pods, before any is placed,
// must already raise the price floor to the price before them are not
// packed (rebuildbound.go, pendingLost), and every plan is the one
// packing them gives.
func TestPendingFloorSamePlans(t *testing.T) {
	samePlans(t, "rebuilds cut by their pending pods' floor", scheduling.SetPendingFloor)
}

// TestPendingFloorCutsGPURebuilds: mix at 299 pods, seed 4, puts 82 GPU
// pods each alone on the cheapest GPU node; the local search's rebuilds
// of those nodes (alone, in pairs, in the regrouping's groups of up to 64)
// can only end at the same price, and the check cuts them before they
// pack: most of the rebuilds tried, for the same plan.
func TestPendingFloorCutsGPURebuilds(t *testing.T) {
	sh, _ := workloadgen.ShapeByName("mix")
	in, err := workloadgen.Input(sh, 299, 4)
	if err != nil {
		t.Fatal(err)
	}
	scheduling.SetPendingFloor(false)
	want, triesOff := scheduling.SolveCountingRebuilds(in)
	scheduling.SetPendingFloor(true)
	cut := 0
	scheduling.SetPendingCut(func() { cut++ })
	defer scheduling.SetPendingCut(nil)
	got, tries := scheduling.SolveCountingRebuilds(in)
	if a, b := planShape(got), planShape(want); a != b {
		t.Fatalf("plan with the check differs:\n%s\n--- without:\n%s", a, b)
	}
	if tries != triesOff {
		t.Fatalf("%d rebuilds tried with the check, %d without: the check must only cut rebuilds, not change which are tried", tries, triesOff)
	}
	t.Logf("cut %d of %d rebuilds", cut, tries)
	if 2*cut < tries {
		t.Errorf("the check cut %d of %d rebuilds; want at least half (the GPU nodes')", cut, tries)
	}
}

// TestRebuildFloorSumsTheTouchedNodes: a rebuild's price floor, summed
// at its start and then read again only for the nodes it touched, is the
// sum over every node at each growth step. A node changed without being
// touched, or touched without its floor before, would make them differ.
func TestRebuildFloorSumsTheTouchedNodes(t *testing.T) {
	calls, off := 0, 0
	var worst float64
	scheduling.SetFloorCheck(func(incremental, full float64) {
		calls++
		if d := math.Abs(incremental - full); d > 1e-6*math.Max(1, full) {
			off++
			worst = math.Max(worst, d)
		}
	})
	defer scheduling.SetFloorCheck(nil)
	for _, sh := range workloadgen.Shapes {
		in, err := workloadgen.Input(sh, 400, 3)
		if err != nil {
			t.Fatal(err)
		}
		scheduling.Solve(in)
	}
	if calls == 0 {
		t.Fatal("no rebuild read its floor")
	}
	if off > 0 {
		t.Errorf("%d of %d floors differ from the sum over every node (by up to $%.4f/h)", off, calls, worst)
	}
}

// TestTailWorthSamePlans: the tail split's alone tries skip nodes whose
// pods are worth their price within the stop's gap (regroup.go), and
// every plan is the one trying them gives.
func TestTailWorthSamePlans(t *testing.T) {
	samePlans(t, "the tail split skipping nodes worth their price", scheduling.SetTailWorth)
}

// TestTailSplitSkipsNodesWorthTheirPrice: many-shapes at 150 pods is one
// c6a.48xlarge of 109 pods worth 99.97 % of its price at the LP's prices
// and a tail of small nodes; the tail split no longer tries the full
// nodes alone: the same plan with fewer rebuilds. (With the whole-node
// bound, or the balanced repacking, the local search stops near the
// bound before the tail split: the case runs without them.)
func TestTailSplitSkipsNodesWorthTheirPrice(t *testing.T) {
	defer scheduling.SetTailWorth(true)
	defer scheduling.SetIntBound(true)
	defer scheduling.SetRebalance(true)
	scheduling.SetIntBound(false)
	scheduling.SetRebalance(false)
	in := generated(t, "many-shapes", 150, 1)
	scheduling.SetTailWorth(false)
	all, allTries := scheduling.SolveCountingRebuilds(in)
	scheduling.SetTailWorth(true)
	got, tries := scheduling.SolveCountingRebuilds(in)
	if planShape(got) != planShape(all) {
		t.Errorf("plan differs from trying every node alone:\n%s\n--- every node:\n%s", planShape(got), planShape(all))
	}
	if tries >= allTries {
		t.Errorf("%d rebuilds tried, %d trying every node alone: no node skipped", tries, allTries)
	}
}

// TestRepeatPassSamePlans: a rebuild pass that would find every node at
// the version the last pass that kept nothing left it at is skipped (it
// would try the same rebuilds and keep none), so every plan is the one
// running it makes. Skipping every pass after the first one, whatever
// the nodes, makes 7 of the cases differ.
func TestRepeatPassSamePlans(t *testing.T) {
	samePlans(t, "repeated rebuild passes skipped", scheduling.SetRepeatPass)
}

// TestSearchScratchSamePlans: the local search's buffers kept across
// steps (improve's order, rebuildPass's candidates, the drains' and
// merges' entries, fastUpgrades' growths from a pool) and its sorts by
// slices.SortStableFunc give the plans that fresh slices and
// sort.SliceStable give. A pooled growth overwritten before placeAt
// applied it, or a sort taking other steps, would make plans differ.
func TestSearchScratchSamePlans(t *testing.T) {
	samePlans(t, "the local search's scratch reused", scheduling.SetSearchScratch)
}

// TestMergeTwinsSamePlans: a merge into a node whose twin (same pool,
// offering price, zones, capacity types, requests and allowed types) was
// refused before anything changed is refused without asking, and every
// plan is the one asking every node gives. Skipping twins of a node
// refused later (after the journal began: topology, the final price),
// or keeping the table across merges that changed nodes, could make
// plans differ.
func TestMergeTwinsSamePlans(t *testing.T) {
	samePlans(t, "merges skipping twins of nodes refused early", scheduling.SetMergeTwins)
}

// TestDrainBoundSamePlans: a drain is not tried when the free room of
// the other listed nodes cannot take enough of the node's pods for a
// cheaper type to hold the rest, and every plan is the one trying it
// makes.
func TestDrainBoundSamePlans(t *testing.T) {
	samePlans(t, "drains skipped by the free-room bound", scheduling.SetDrainBound)
}

// TestDrainFitSamePlans: the free-room bound counts only the room of
// nodes where the drained node's smallest request fits (a pod lands
// whole or not at all), and every plan is the one counting all room
// makes. Counting room a pod of the node fits in as none, or a sum kept
// after a kept drain changed the list, could make plans differ.
func TestDrainFitSamePlans(t *testing.T) {
	samePlans(t, "drains skipped by the room where the node's pods fit", scheduling.SetDrainFit)
}

// TestRebuildPaidSamePlans: a rebuild's fillPaid reads its own list of
// the open nodes with room at their type for the smallest pending
// request, kept up to date from the nodes that changed, and every plan
// is the one looking at every open node makes. A node left off the list
// after it got room (a pod taken off, a bigger type, a new node), or a
// list kept after the minimum fell, could make plans differ.
func TestRebuildPaidSamePlans(t *testing.T) {
	samePlans(t, "rebuilds reading their list of nodes with paid room", scheduling.SetRebuildPaid)
}

// TestDrainFitKeptSumsHold: the room where a drained node's smallest
// request fits is summed once over the listed nodes and kept for the
// next node asking with the same request until a kept drain changes the
// list; every answer equals the sum made afresh for that node, over
// every shape (a sum kept past a kept drain would not).
func TestDrainFitKeptSumsHold(t *testing.T) {
	c := tallyChecks(scheduling.SetFitCheck)
	defer scheduling.SetFitCheck(nil)
	for _, sh := range workloadgen.Shapes {
		for _, n := range []int{300, 1500} {
			scheduling.Solve(generated(t, sh.Name, n, 1))
		}
	}
	if c.asked == 0 || c.wrong > 0 {
		t.Fatalf("%d of %d kept sums differ from the sums made afresh", c.wrong, c.asked)
	}
}

// TestLocalSearchCutsSpareWork: after packing nearly every node is full
// and the room left is in slivers few pods fit in (a node full in memory
// with CPU over, or the reverse), so
//   - counting only the room where a drained node's smallest request
//     fits spares most of the drains the free-room bound let through,
//     each a walk over the node's classes and their targets undone in the
//     end (at 2,000 pods few-big 599 -> 275 and gpu 343 -> 21; at 50,000
//     pods few-big 18,206 -> 1,006 and many-shapes 4,078 -> 985);
//   - a rebuild's fillPaid, reading its list of the nodes with room,
//     looks at a few nodes where it looked at every open one (at 2,000
//     pods many-shapes 525,000 -> 121,000 and few-big 42,000 -> 800; at
//     50,000 pods many-shapes 9.9 million -> 283,000),
//
// with the same plans; each cut must spare at least half the work.
func TestLocalSearchCutsSpareWork(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(on bool)
		shapes []string
		work   func(scheduling.WorkCounts) int
	}{
		{"drains", scheduling.SetDrainFit, []string{"few-big", "gpu"}, func(w scheduling.WorkCounts) int { return w.Drains }},
		{"nodes looked at for paid room", scheduling.SetRebuildPaid, []string{"many-shapes", "few-big"}, func(w scheduling.WorkCounts) int { return w.PaidLooks }},
	} {
		for _, name := range tc.shapes {
			in := generated(t, name, 1500, 1)
			tc.set(false)
			wantPlan, all := scheduling.SolveCountingWork(in)
			tc.set(true)
			gotPlan, cut := scheduling.SolveCountingWork(in)
			if a, b := planShape(gotPlan), planShape(wantPlan); a != b {
				t.Fatalf("%s, %s: plan differs with the cut:\n%s\n--- without:\n%s", tc.name, name, a, b)
			}
			t.Logf("%s, %s: %d without the cut, %d with it", tc.name, name, tc.work(all), tc.work(cut))
			if tc.work(all) == 0 || 2*tc.work(cut) > tc.work(all) {
				t.Errorf("%s, %s: %d with the cut, %d without: want at most half", tc.name, name, tc.work(cut), tc.work(all))
			}
		}
	}
}

// TestPlansOutliveLaterSolves: a solve gives its tables and slab chunks
// to the next (scratch.go, slabs.go), so nothing in a Plan may point into
// them: every plan reads the same after many later solves have reused
// and rewritten that memory.
func TestPlansOutliveLaterSolves(t *testing.T) {
	encode := func(p scheduling.Plan) string {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	type kept struct {
		name string
		plan scheduling.Plan
		was  string
	}
	var plans []kept
	for _, sh := range workloadgen.Shapes {
		in, err := workloadgen.Input(sh, 60, 1)
		if err != nil {
			t.Fatal(err)
		}
		p := scheduling.Solve(in)
		plans = append(plans, kept{sh.Name, p, encode(p)})
	}
	for _, sh := range workloadgen.Shapes {
		in, err := workloadgen.Input(sh, 300, 2)
		if err != nil {
			t.Fatal(err)
		}
		scheduling.Solve(in)
	}
	for _, k := range plans {
		if len(k.plan.NewNodes) == 0 {
			t.Fatalf("%s: no new nodes, nothing to check", k.name)
		}
		if now := encode(k.plan); now != k.was {
			t.Errorf("%s: the plan changed after later solves", k.name)
		}
	}
}
