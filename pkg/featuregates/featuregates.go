// Package featuregates reads Karpenter's feature gates (its FEATURE_GATES
// setting, "Name=true,Name=false"), so a Karpenter user's setting carries
// over: the functions read it (pkg/wiring) and the stack checks it before
// deploying (infra).
package featuregates

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Gates are the feature gates Joist acts on.
type Gates struct {
	// NodeRepair turns node repair on (docs/disruption.md, "Repair"),
	// off by default as in Karpenter v1.15.
	NodeRepair bool
	// NoSpotToSpot is SpotToSpotConsolidation=false given: Joist
	// replaces a spot node by a cheaper spot one unless told not to
	// (Karpenter v1.15's gate is off by default; docs/disruption.md).
	NoSpotToSpot bool
	// NodeClassCEL turns on kubelet settings given as CEL expressions,
	// evaluated per instance type (model.Spec.WithNodeClassCEL; off by
	// default as in Karpenter v1.15: a node class using them launches
	// nothing).
	NodeClassCEL bool
}

// accepted are Karpenter v1.15's other feature gates (core and AWS):
// Joist always does what they turn on (ReservedCapacity, NodeOverlay,
// StaticCapacity) or does not implement it (the others), so they are
// read and left alone: a Karpenter setting carried over whole must not
// stop the functions.
var accepted = []string{
	"ReservedCapacity", "NodeOverlay", "StaticCapacity", "CapacityBuffer",
	"TerminateFirstDrift", "TerminateFirstRepair", "PodDeletionCostManagement",
	"DRANVIDIAGPU", "DRAEFA", "RebootForRepair",
}

// Parse reads comma-separated Name=true|false pairs (spaces allowed;
// empty is every gate's default). A gate Karpenter does not have, or a
// value that is not a boolean, is an error naming it.
func Parse(raw string) (Gates, error) {
	var g Gates
	for _, pair := range strings.Split(raw, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		on, err := strconv.ParseBool(value)
		if !ok || err != nil {
			return Gates{}, fmt.Errorf("gate %q: want Name=true or Name=false", pair)
		}
		switch {
		case name == "NodeRepair":
			g.NodeRepair = on
		case name == "SpotToSpotConsolidation":
			g.NoSpotToSpot = !on
		case name == "NodeClassCEL":
			g.NodeClassCEL = on
		case !slices.Contains(accepted, name):
			return Gates{}, fmt.Errorf("unknown feature gate %q (Karpenter's are NodeRepair, SpotToSpotConsolidation, NodeClassCEL, %s)", name, strings.Join(accepted, ", "))
		}
	}
	return g, nil
}
