package catalog

import (
	"slices"
	"sync"
)

// Placement group strategies (EC2's names; Karpenter's too).
const (
	PlacementCluster   = "cluster"
	PlacementPartition = "partition"
	PlacementSpread    = "spread"
)

// clusterPreviousGeneration are the previous-generation families EC2 lets
// into a cluster placement group (EC2 User Guide, "Placement strategies":
// A1, C3, C4, I2, M4, R3 and R4).
var clusterPreviousGeneration = []string{"a1", "c3", "c4", "i2", "m4", "r3", "r4"}

// SupportsPlacement tells whether EC2 launches t into a placement group of
// the strategy. Karpenter reads this from DescribeInstanceTypes
// (PlacementGroupInfo.SupportedStrategies); the snapshot the catalog is
// built from does not carry it, so it follows the EC2 User Guide: a
// cluster group takes current-generation types except burstable ones,
// Mac1 and M7i-flex, and of the previous generation only A1, C3, C4, I2,
// M4, R3 and R4; partition and spread groups take every type.
func (t *InstanceType) SupportsPlacement(strategy string) bool {
	if strategy != PlacementCluster {
		return true
	}
	switch {
	case t.Burstable, t.Family == "mac1", t.Family == "m7i-flex":
		return false
	case !t.CurrentGeneration:
		return slices.Contains(clusterPreviousGeneration, t.Family)
	}
	return true
}

// clusterUnplaceable are the catalog's families with a type EC2 does not
// launch into a cluster group, sorted; the catalog does not change, so
// once.
var clusterUnplaceable = sync.OnceValue(func() []string {
	var out []string
	for _, t := range All() {
		if !t.SupportsPlacement(PlacementCluster) && !slices.Contains(out, t.Family) {
			out = append(out, t.Family)
		}
	}
	slices.Sort(out)
	return out
})

// FamiliesNotPlaceable are the families of the catalog with a type EC2
// does not launch into a placement group of the strategy, sorted (nil
// for partition and spread): what a pool whose node class selects such a
// group must leave out (`karpenter.k8s.aws/instance-family NotIn`).
func FamiliesNotPlaceable(strategy string) []string {
	if strategy != PlacementCluster {
		return nil
	}
	return clusterUnplaceable()
}
