package scheduling_test

import (
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// testZoneIDs are the test zones' IDs, as an account's subnets give them.
var testZoneIDs = map[string]string{"test-1a": "tst1-az3", "test-1b": "tst1-az1", "test-1c": "tst1-az2"}

// TestZoneIDs: with the zones' IDs known, a pod (or a pool) selecting a
// zone ID gets a node in that zone, NotIn keeps it out of those zones,
// a spread over zone IDs spreads over the zones, and anti-affinity by
// zone ID keeps a pod out of the zone of an existing node (labelled with
// both, as EKS's nodes are). Without the IDs a zone ID is a label no pool
// defines, as before.
func TestZoneIDs(t *testing.T) {
	zid := scheduling.LabelZoneID
	withIDs := func(in scheduling.Input) scheduling.Input { in.ZoneIDs = testZoneIDs; return in }
	zonesOf := func(plan scheduling.Plan) []string {
		var out []string
		for _, n := range plan.NewNodes {
			out = append(out, n.Cheapest.Zone)
		}
		sort.Strings(out)
		return out
	}
	runK(t, []kcase{
		{name: "a nodeSelector on a zone ID picks its zone", in: func() scheduling.Input {
			return withIDs(input(pods("p", 1, "1", "1Gi", nodeSelector(zid, "tst1-az1"))))
		}, check: podNodeHas("p-0", corev1.LabelTopologyZone, "test-1b")},
		{name: "NotIn zone IDs keeps the pod out of their zones", in: func() scheduling.Input {
			return withIDs(input(pods("p", 1, "1", "1Gi", nodeReq(req(zid, corev1.NodeSelectorOpNotIn, "tst1-az1", "tst1-az3")))))
		}, check: podNodeHas("p-0", corev1.LabelTopologyZone, "test-1c")},
		{name: "a pool requiring a zone ID launches in its zone", in: func() scheduling.Input {
			return withIDs(input(pods("p", 1, "1", "1Gi"), pool("p", withReq(zid, "In", "tst1-az2"))))
		}, check: podNodeHas("p-0", corev1.LabelTopologyZone, "test-1c")},
		{name: "a spread over zone IDs spreads over the zones", in: func() scheduling.Input {
			return withIDs(input(pods("s", 3, "1", "1Gi", spread(zid, 1, corev1.DoNotSchedule, "s"))))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if got := zonesOf(plan); len(got) != 3 || got[0] == got[1] || got[1] == got[2] {
				t.Errorf("nodes in zones %v, want one in each", got)
			}
		}},
		{name: "anti-affinity by zone ID avoids the existing pod's zone", in: func() scheduling.Input {
			held := pods("db", 1, "1", "1Gi")
			n := existingNode("old", "test-1a", held...)
			n.Labels[zid] = "tst1-az3"
			in := withIDs(input(pods("web", 1, "1", "1Gi", antiAffinity(zid, "db"))))
			in.Nodes = []*scheduling.Node{n}
			return in
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			for _, z := range zonesOf(plan) {
				if z == "test-1a" {
					t.Errorf("web in %s with db, want another zone", z)
				}
			}
			if len(plan.NewNodes) != 1 {
				t.Errorf("%d new nodes, want 1", len(plan.NewNodes))
			}
		}},
		{name: "without the zones' IDs a zone ID is a label no pool defines", in: func() scheduling.Input {
			return input(pods("p", 1, "1", "1Gi", nodeSelector(zid, "tst1-az1")))
		}, unschedulable: 1, reason: "not defined"},
	})
}
