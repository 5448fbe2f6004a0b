package scheduling_test

import (
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestUpgradeMemoSamePlans: upgradeFor's answers kept by node contents
// (pool, type and price, zones, capacity types, used resources, types,
// price cap) give the plans that asking upgradeFor for every node version
// gives. An answer served to a node differing in anything upgradeFor
// reads would make plans differ.
func TestUpgradeMemoSamePlans(t *testing.T) {
	samePlans(t, "upgrade answers kept by node contents", scheduling.SetUpgradeMemo)
}

// TestBoundMemoSamePlans: the growth index's bounds kept by node shape
// and smallest pending request give the plans that computing every bound
// gives. A bound kept across a change of the dual prices (regroup's
// rebuilds price their groups) would make plans differ.
func TestBoundMemoSamePlans(t *testing.T) {
	samePlans(t, "growth bounds kept by node shape", scheduling.SetBoundMemo)
}

// TestSlabsSamePlans: the memos' entries and their copies of a node's
// requests and types taken from slabs, and the growth index's emptied
// groups reused for new shapes, give the plans that allocating each
// gives. Copies sharing room (a slice's capacity reaching into the
// next one's), or a group reused while a node or the map still refers
// to it, would make plans differ.
func TestSlabsSamePlans(t *testing.T) {
	samePlans(t, "memo entries from slabs", scheduling.SetSlabs)
}
