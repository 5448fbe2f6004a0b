package disruption

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestConsolidation_RoomPromisedToIncomingPodsIsTaken: a node's room
// promised to pods on their way to it (a pending pod planned onto its
// instance, or a pod waiting for it as its replacement) is not room a
// consolidation can move another node's pods into: with the incoming pod
// the underused node is replaced by a cheaper one instead of deleted onto
// the promised room (Karpenter simulates the pending pods beside a
// candidate's for the same reason).
func TestConsolidation_RoomPromisedToIncomingPodsIsTaken(t *testing.T) {
	types := testTypes(t)
	for _, tc := range []struct {
		name     string
		incoming bool
		want     []string
	}{
		{"no pod on its way: the pod moves into the room", false, []string{"a:delete"}},
		{"the room is promised: a cheaper node instead", true, []string{"a:replace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1", AnnotationDoNotDisrupt))
			if tc.incoming {
				b.AddIncoming(app("on-its-way", "2500m"), nil)
			}
			nodes := []Node{typed(types, "a", "m5.xlarge", "on-demand", app("p1", "1")), b}
			first, second := twoPasses(types, []*model.Pool{consolidating(model.CapacityTypeOnDemand)}, nodes)
			if got := describe(second.Retire); !slices.Equal(got, tc.want) {
				t.Fatalf("retired %v, want %v (first pass stamped %v, blocked %+v)", got, tc.want, first.StampConsolidation, second.Blocked)
			}
		})
	}
}

// TestConsolidation_OntoNodesNotJoists ports Karpenter v1.15's "can
// delete nodes, when non-Karpenter capacity can fit pods"
// (disruption/consolidation_test.go): a node that is not Joist's to
// retire (Snapshot.Others: a managed node group's) takes moved pods into
// its room, and is never retired itself.
func TestConsolidation_OntoNodesNotJoists(t *testing.T) {
	types := testTypes(t)
	for _, tc := range []struct {
		name   string
		others bool
		want   []string
	}{
		{"without the other node: a cheaper node instead", false, []string{"a:replace"}},
		{"can delete nodes, when non-Karpenter capacity can fit pods", true, []string{"a:delete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Snapshot{Now: now, Pools: []*model.Pool{consolidating(model.CapacityTypeOnDemand)},
				Nodes:      []Node{typed(types, "a", "m5.xlarge", "on-demand", app("p1", "1"))},
				Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}}
			if tc.others {
				mng := typed(types, "mng", "m5.2xlarge", "on-demand", app("p2", "1"))
				delete(mng.Node.Labels, model.LabelNodePool)
				s.Others = []Node{mng}
			}
			first, second := twoPassesOf(s)
			if got := describe(second.Retire); !slices.Equal(got, tc.want) {
				t.Fatalf("retired %v, want %v (first pass stamped %v)", got, tc.want, first.StampConsolidation)
			}
		})
	}
}

// TestConsolidation_NotOntoANodeUnderItsConsolidateAfter ports Karpenter
// v1.15's destination rule (disruption/consolidation_test.go, "Delete"):
// no pod is moved onto a node of Joist's that turned Ready less than its
// pool's consolidateAfter ago; under consolidateAfter Never, and once the
// time has passed, it is a destination again. A replacement is not held
// back by it (Karpenter's "should replace a node with a cheaper one even
// when consolidateAfter has not expired" holds by construction: a new
// node has no Ready time yet).
func TestConsolidation_NotOntoANodeUnderItsConsolidateAfter(t *testing.T) {
	types := testTypes(t)
	minute := time.Minute
	cheapOD, _ := cheapestFor(types, consolidating(model.CapacityTypeOnDemand), app("x", "1"))
	for _, tc := range []struct {
		name  string
		after *time.Duration
		at    time.Duration // when Decide runs, after the destination turned Ready
		want  []string      // stamped
	}{
		{"should not consolidate pods onto a destination node that is under its consolidateAfter window", &minute, 10 * time.Second, nil},
		{"once the window has passed it is a destination again", &minute, time.Minute, []string{"a"}},
		{"should consolidate pods onto a destination node with consolidateAfter set to Never", nil, 10 * time.Second, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// a consolidates at once; b's pool has the consolidateAfter
			// of the case (as in Karpenter's cases, a destination of
			// another pool for Never).
			pool := consolidating(model.CapacityTypeOnDemand)
			dest := consolidating(model.CapacityTypeOnDemand)
			dest.Name, dest.Disruption.ConsolidateAfter = "dest", tc.after
			// a: the cheapest type for its pod (no replacement is
			// cheaper): it can only be deleted onto b.
			a := typed(types, "a", cheapOD, "on-demand", app("p1", "1"))
			b := typed(types, "b", "m5.2xlarge", "on-demand", app("p2", "1", AnnotationDoNotDisrupt))
			b.Node.Labels[model.LabelNodePool] = dest.Name
			b.Node.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-tc.at))
			s := Snapshot{Now: now, Pools: []*model.Pool{pool, dest}, Nodes: []Node{a, b},
				Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}}
			if got := Decide(s).StampConsolidation; !slices.Equal(got, tc.want) {
				t.Errorf("stamped %v, want %v", got, tc.want)
			}
		})
	}
}
