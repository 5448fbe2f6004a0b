package scheduling_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
	"github.com/joist-dev/joist/pkg/scheduling/verify"
)

// TestRebuildTopo_KeepsZoneSpread: the local search rebuilds nodes of
// constrained pods too, keeping a rebuild only when every group's count
// per zone (capacity type, label value) is as before. The property test's
// cluster that broke a zone spread when that check was left out (shrunk
// by rapid): five pods spread over zones with maxSkew 2 beside pods pinned
// to a zone, an empty node in another zone, and three pools.
func TestRebuildTopo_KeepsZoneSpread(t *testing.T) {
	var all []*corev1.Pod
	all = append(all, pods("app0", 1, "100m", "100Mi", nodeSelector(corev1.LabelArchStable, "amd64"))...)
	all = append(all, pods("app1", 1, "100m", "100Mi")...)
	all = append(all, pods("app2", 2, "100m", "100Mi", nodeSelector(corev1.LabelArchStable, "amd64"), nodeSelector("tier", "web"), antiAffinity(corev1.LabelHostname, "app2"))...)
	all = append(all, pods("app3", 1, "100m", "100Mi", nodeSelector(corev1.LabelTopologyZone, "test-1a"))...)
	all = append(all, pods("app4", 5, "100m", "4Gi", spread(corev1.LabelTopologyZone, 2, corev1.DoNotSchedule, "app4"))...)
	in := input(all,
		pool("p0", withTaint("team", "0", corev1.TaintEffectNoSchedule), withReq(corev1.LabelTopologyZone, "In", "test-1a")),
		pool("p1", withLabel("tier", "web")),
		pool("p2", withTaint("team", "2", corev1.TaintEffectNoSchedule)))
	n := existingNode("n0", "test-1b")
	n.Pool = "p0"
	in.Nodes = append(in.Nodes, n)
	plan := scheduling.Solve(in)
	for _, err := range verify.Plan(in, plan) {
		t.Error(err)
	}
	if len(plan.Unschedulable) > 0 {
		t.Errorf("%d pods unschedulable", len(plan.Unschedulable))
	}
}

// TestRebuildTopo_ZoneSpreadTailCheaper: a zone-spread workload's least
// utilised nodes are packed again within their zones, so its plan costs
// less than with only nodes of free pods rebuilt ($10.40 -> $9.95/h at 500
// pods), and stays valid.
func TestRebuildTopo_ZoneSpreadTailCheaper(t *testing.T) {
	defer scheduling.SetRebuildTopo(true)
	in := generated(t, "zone-spread", 500, 1)
	scheduling.SetRebuildTopo(false)
	before := scheduling.Solve(in)
	scheduling.SetRebuildTopo(true)
	after := scheduling.Solve(in)
	for _, err := range verify.Plan(in, after) {
		t.Fatal(err)
	}
	if len(after.Unschedulable) > 0 {
		t.Fatalf("%d pods unschedulable", len(after.Unschedulable))
	}
	if after.TotalPricePerHour >= before.TotalPricePerHour-0.1 {
		t.Fatalf("plan $%.3f/h with constrained rebuilds, $%.3f/h without: want cheaper", after.TotalPricePerHour, before.TotalPricePerHour)
	}
	t.Logf("$%.3f/h -> $%.3f/h (bound $%.3f/h)", before.TotalPricePerHour, after.TotalPricePerHour, after.LowerBoundPricePerHour)
}

// TestRebuildTopoSamePlans: workloads of free pods only are planned as
// before (the switch changes only which nodes of constrained pods are
// rebuilt).
func TestRebuildTopoSamePlans(t *testing.T) {
	defer scheduling.SetRebuildTopo(true)
	for _, sh := range workloadgen.Shapes {
		if !sh.Unconstrained {
			continue
		}
		in, err := workloadgen.Input(sh, 250, 1)
		if err != nil {
			t.Fatal(err)
		}
		scheduling.SetRebuildTopo(false)
		off := summarize(scheduling.Solve(in))
		scheduling.SetRebuildTopo(true)
		on := summarize(scheduling.Solve(in))
		if !reflect.DeepEqual(off, on) {
			t.Errorf("%s: plans differ with constrained rebuilds on", sh.Name)
		}
	}
}
