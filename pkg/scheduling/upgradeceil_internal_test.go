package scheduling

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestUpgradeCeilKeepsTheBest: upgradeFor stops its scan of the types
// (cheapest first) where beyondCeil says no later type can replace the
// best so far; over random types (prices on a coarse grid, so that equal
// prices, equal efficiencies and the 1 % tie all come up; a type's price
// in the node's zones at or above its minimum price; a current node
// worth more or less than its price times the types' best value per
// dollar) the type it keeps is the one the full scan keeps. The cases
// are many and cheap (a counterexample to a rule one step too loose
// shows up about once in ten thousand), so a seeded loop rather than
// rapid's hundred.
func TestUpgradeCeilKeepsTheBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cut := 0
	for c := 0; c < 300_000; c++ {
		n := 1 + rng.IntN(12)
		ps := &poolState{}
		prices := make([]float64, n)
		minPrice := 0.0
		for i := range n {
			minPrice += float64(rng.IntN(5)) * 0.25
			ps.types = append(ps.types, &ptype{minPrice: minPrice})
			prices[i] = minPrice + float64(rng.IntN(3))*0.25
			ps.values = append(ps.values, float64(rng.IntN(41))*0.1)
		}
		p0 := float64(rng.IntN(9)) * 0.25
		v0 := float64(rng.IntN(31)) * 0.1
		ceil := ps.upgradeCeil()
		scan := func(stop bool) int {
			best, bestEff, bestDp := -1, 0.0, 0.0
			for i := range n {
				if stop && best >= 0 && beyondCeil(ceil[i], ps.types[i].minPrice, v0, p0, bestEff, bestDp) {
					cut++
					break
				}
				dp := prices[i] - p0
				eff := math.Inf(1)
				if dp > 1e-12 {
					eff = (ps.values[i] - v0) / dp
				}
				if best >= 0 && !upgradeBeats(eff, dp, bestEff, bestDp) {
					continue
				}
				best, bestEff, bestDp = i, eff, dp
			}
			return best
		}
		if full, stopped := scan(false), scan(true); full != stopped {
			t.Fatalf("case %d: the scan stopped by the ceiling keeps type %d, the full scan %d (prices %v, minimum %v, values %v, current $%v worth %v)",
				c, stopped, full, prices, minPrices(ps), ps.values, p0, v0)
		}
	}
	if cut == 0 {
		t.Fatal("the ceiling never stopped a scan: the test compares nothing")
	}
	t.Logf("%d of 300,000 scans stopped early", cut)
}

func minPrices(ps *poolState) []float64 {
	var out []float64
	for _, t := range ps.types {
		out = append(out, t.minPrice)
	}
	return out
}

// TestUpgradeCeilIsTheBestValuePerDollarFromEachType: ceil[i] is the
// most value per dollar of minimum price among types i and after, at the
// values in force: new values (setValues, as setup, setPrices and
// restorePrices give them) make it again.
func TestUpgradeCeilIsTheBestValuePerDollarFromEachType(t *testing.T) {
	ps := &poolState{types: []*ptype{{minPrice: 1}, {minPrice: 2}, {minPrice: 4}}, values: []float64{0.5, 1.8, 2}}
	if got, want := ps.upgradeCeil(), []float64{0.9, 0.9, 0.5}; !equalFloats(got, want) {
		t.Fatalf("ceil = %v, want %v", got, want)
	}
	ps.setValues([]float64{1, 1, 4})
	if got, want := ps.upgradeCeil(), []float64{1, 1, 1}; !equalFloats(got, want) {
		t.Fatalf("ceil at new prices = %v, want %v", got, want)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return true
}
