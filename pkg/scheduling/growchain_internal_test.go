package scheduling

import (
	"math"
	"testing"
)

// TestDecidesBeyondEveryTie: an upgrade is taken from a chain only when
// bestGrowth's sequential rule would choose it against any other
// candidate within the bounds, in any order: more than growTie above
// every other upgrade (within it the smaller added price decides) and
// no new node more than 1 % above it (an upgrade within 1 % of a new
// node wins).
func TestDecidesBeyondEveryTie(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name        string
		e, up, next float64
		want        bool
	}{
		{"no other candidate", 1.0, -inf, -inf, true},
		{"clearly above the other upgrades", 1.01, 1.0, 0.9, true},
		{"within the upgrades' tie", 1.0005, 1.0, 0.9, false},
		{"equal to another upgrade", 1.0, 1.0, -inf, false},
		{"below another upgrade", 0.98, 1.01, -inf, false},
		{"a new node within 1 % above", 1.0, 0.5, 1.009, true},
		{"a new node more than 1 % above", 1.0, 0.5, 1.0102, false},
		{"an unbounded upgrade elsewhere", 1.0, inf, -inf, false},
		{"an unbounded new node", 1.0, -inf, inf, false},
		{"an unbounded upgrade itself", inf, 1.0, 1.0, false},
		{"not a number", math.NaN(), 1.0, 1.0, false},
		{"worth nothing", 0, -inf, -inf, false},
	}
	for _, c := range cases {
		if got := decides(c.e, c.up, c.next); got != c.want {
			t.Errorf("%s: decides(%v, %v, %v) = %v, want %v", c.name, c.e, c.up, c.next, got, c.want)
		}
	}
}
