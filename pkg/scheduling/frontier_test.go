package scheduling

import (
	"math/rand"
	"sort"
	"testing"
)

// TestFrontierIsTheUndominatedTypes checks the one-pass frontier against
// the definition (compare every pair) on random types with many ties of
// price and resources.
func TestFrontierIsTheUndominatedTypes(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		n := 1 + rnd.Intn(60)
		ps := &poolState{}
		for i := 0; i < n; i++ {
			pt := &ptype{net: vec{int64(1 + rnd.Intn(4)), int64(1 + rnd.Intn(4)), 10, 0}}
			for z := 0; z < 3; z++ {
				if rnd.Intn(3) > 0 {
					o := offer{zone: z, ct: rnd.Intn(2), price: float64(1 + rnd.Intn(4))}
					pt.offers = append(pt.offers, o)
					pt.zoneMask |= maskOf(o.zone)
					pt.ctMask |= maskOf(o.ct)
					if len(pt.offers) == 1 || o.price < pt.minPrice {
						pt.minPrice = o.price
					}
				}
			}
			if len(pt.offers) > 0 {
				ps.types = append(ps.types, pt)
			}
		}
		sort.SliceStable(ps.types, func(i, j int) bool { return ps.types[i].minPrice < ps.types[j].minPrice })
		ps.frontierBits = newBitset(len(ps.types))
		(&solver{}).buildFrontier(ps)
		var want []int
		for i, pt := range ps.types {
			dominated := false
			for j, o := range ps.types {
				if j != i && dominates(o, pt) && (!dominates(pt, o) || j < i) {
					dominated = true
					break
				}
			}
			if !dominated {
				want = append(want, i)
			}
		}
		if len(want) != len(ps.frontier) {
			t.Fatalf("seed %d: frontier %v, want %v", seed, ps.frontier, want)
		}
		for i := range want {
			if want[i] != ps.frontier[i] || !ps.frontierBits.has(want[i]) {
				t.Fatalf("seed %d: frontier %v, want %v", seed, ps.frontier, want)
			}
		}
	}
}
