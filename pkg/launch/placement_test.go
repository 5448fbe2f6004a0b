package launch

import (
	"fmt"
	"slices"
	"testing"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
)

// TestPlacementGroupRequirements: what planning adds to a pool whose
// class has a placement group: the group's id always; a partition
// group's partitions; a cluster group's unplaceable families.
func TestPlacementGroupRequirements(t *testing.T) {
	var none *PlacementGroup
	if got := none.Requirements(); got != nil {
		t.Errorf("no group: %v, want nothing", got)
	}
	byKey := func(pg *PlacementGroup) map[string]model.Requirement {
		out := map[string]model.Requirement{}
		for _, r := range pg.Requirements() {
			out[r.Key] = r
		}
		return out
	}
	part := byKey(&PlacementGroup{ID: "pg-1", Strategy: catalog.PlacementPartition, Partitions: 3})
	if r := part[model.LabelPlacementGroupID]; r.Operator != "In" || !slices.Equal(r.Values, []string{"pg-1"}) {
		t.Errorf("partition group id requirement %v", r)
	}
	if r := part[model.LabelPlacementGroupPartition]; r.Operator != "In" || !slices.Equal(r.Values, []string{"1", "2", "3"}) {
		t.Errorf("partition requirement %v, want In 1 2 3", r)
	}
	if _, ok := part[catalog.LabelInstanceFamily]; ok {
		t.Error("a partition group leaves out families")
	}
	cluster := byKey(&PlacementGroup{ID: "pg-2", Strategy: catalog.PlacementCluster})
	if r := cluster[catalog.LabelInstanceFamily]; r.Operator != "NotIn" || !slices.Contains(r.Values, "t3") {
		t.Errorf("cluster family requirement %v, want NotIn with t3", r)
	}
	if _, ok := cluster[model.LabelPlacementGroupPartition]; ok {
		t.Error("a cluster group has partitions")
	}
	if spread := byKey(&PlacementGroup{ID: "pg-3", Strategy: catalog.PlacementSpread}); len(spread) != 1 {
		t.Errorf("spread group requirements %v, want the id only", spread)
	}
}

// TestPlacementGroupPartition: a node launches into the partition its
// plan labelled it with, else the lowest (Karpenter's choice); a label
// out of range is not trusted; other groups have no partition.
func TestPlacementGroupPartition(t *testing.T) {
	part := &PlacementGroup{ID: "pg-1", Strategy: catalog.PlacementPartition, Partitions: 3}
	for _, tc := range []struct {
		pg    *PlacementGroup
		label string
		want  int32
	}{
		{part, "2", 2},
		{part, "3", 3},
		{part, "", 1},
		{part, "4", 1},
		{part, "x", 1},
		{&PlacementGroup{ID: "pg-2", Strategy: catalog.PlacementCluster}, "2", 0},
		{nil, "2", 0},
	} {
		labels := map[string]string{}
		if tc.label != "" {
			labels[model.LabelPlacementGroupPartition] = tc.label
		}
		if got := tc.pg.partition(labels); got != tc.want {
			t.Errorf("%s with label %q: partition %d, want %d", fmt.Sprint(tc.pg), tc.label, got, tc.want)
		}
	}
}
