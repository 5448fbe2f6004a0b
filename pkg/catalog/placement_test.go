package catalog

import (
	"slices"
	"testing"
)

// TestSupportsPlacement: EC2's rule for cluster placement groups (no
// burstable types, Mac1 or M7i-flex; of the previous generation only
// A1, C3, C4, I2, M4, R3, R4); partition and spread groups take any type.
func TestSupportsPlacement(t *testing.T) {
	for _, tc := range []struct {
		typ      string
		strategy string
		want     bool
	}{
		{"m5.large", PlacementCluster, true},
		{"c5n.18xlarge", PlacementCluster, true},
		{"t3.large", PlacementCluster, false},
		{"t4g.medium", PlacementCluster, false},
		{"m7i-flex.large", PlacementCluster, false},
		{"m4.large", PlacementCluster, true},
		{"c4.large", PlacementCluster, true},
		{"m3.medium", PlacementCluster, false},
		{"t3.large", PlacementPartition, true},
		{"t3.large", PlacementSpread, true},
	} {
		it, ok := Lookup(tc.typ)
		if !ok {
			t.Fatalf("%s is not in the catalog", tc.typ)
		}
		if got := it.SupportsPlacement(tc.strategy); got != tc.want {
			t.Errorf("%s in a %s group: %v, want %v", tc.typ, tc.strategy, got, tc.want)
		}
	}
	fams := FamiliesNotPlaceable(PlacementCluster)
	for _, f := range []string{"t2", "t3", "t3a", "t4g", "m3", "m7i-flex"} {
		if !slices.Contains(fams, f) {
			t.Errorf("families not placeable in a cluster group %v: missing %s", fams, f)
		}
	}
	for _, f := range []string{"m5", "c5n", "m4", "p5"} {
		if slices.Contains(fams, f) {
			t.Errorf("families not placeable in a cluster group %v: has %s", fams, f)
		}
	}
	if got := FamiliesNotPlaceable(PlacementPartition); got != nil {
		t.Errorf("partition groups leave out %v, want nothing", got)
	}
}
