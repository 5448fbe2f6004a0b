package scheduling_test

import (
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestRefillTriedSamePlans: refill skips a group (x and the nodes tried
// with it) it met before in the same round in another order: every try
// of the round so far failed, so the plan is as it was, and the try sees
// the same levels and counts in either order. Keying by the nodes
// without x (x is the node refilled to its type) or keeping the keys
// past a kept refill would make plans differ.
func TestRefillTriedSamePlans(t *testing.T) {
	samePlans(t, "refill skipping groups tried before", scheduling.SetRefillTried)
}

// TestEstimateCutSamePlans: refillEstimate stops once its price reached
// the group's price (what it adds is never negative, so the whole would
// not have been cheaper either), so refill gates the same tries. Stopping
// short of the price would make plans differ.
func TestEstimateCutSamePlans(t *testing.T) {
	samePlans(t, "refill's estimate cut at the group's price", scheduling.SetEstimateCut)
}
