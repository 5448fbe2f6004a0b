package scheduling

import (
	"math"
	"testing"
)

// A covering LP with a known optimum: cpu 10, memory 40.
//
//	c: 2 cpu 4 mem $1; m: 2 cpu 8 mem $1.2; r: 2 cpu 16 mem $1.6
//
// Only c: 10 needed by memory ($10). The optimum mixes c and r:
// 2a+2b ≥ 10, 4a+16b ≥ 40 → a = 10/3, b = 5/3 → $6.00.
func TestSolveCoverKnownOptimum(t *testing.T) {
	cols := []lpColumn{
		{cost: 1, cap: []float64{2, 4}},
		{cost: 1.2, cap: []float64{2, 8}},
		{cost: 1.6, cap: []float64{2, 16}},
	}
	bound, y := solveCover(cols, []float64{10, 40})
	if math.Abs(bound-6) > 1e-6 {
		t.Errorf("bound %.6f, want 6", bound)
	}
	for _, c := range cols {
		if v := c.cap[0]*y[0] + c.cap[1]*y[1]; v > c.cost+1e-9 {
			t.Errorf("dual infeasible: %.6f > %.6f", v, c.cost)
		}
	}
}

func TestSolveCoverEdgeCases(t *testing.T) {
	if b, _ := solveCover(nil, []float64{1}); b != 0 {
		t.Errorf("no columns: %v", b)
	}
	if b, _ := solveCover([]lpColumn{{cost: 1, cap: []float64{1, 0}}}, []float64{0, 5}); b != 0 {
		t.Errorf("uncoverable dimension must be left out: %v", b)
	}
	b, y := solveCover([]lpColumn{{cost: 3, cap: []float64{4}}}, []float64{10})
	if math.Abs(b-7.5) > 1e-9 || math.Abs(y[0]-0.75) > 1e-9 {
		t.Errorf("single column: %v %v", b, y)
	}
}
