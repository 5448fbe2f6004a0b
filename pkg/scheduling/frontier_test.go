package scheduling

import (
	"math"
	"math/rand"
	"sort"
	"testing"
)

// TestFrontierIsTheUndominatedTypes checks the one-pass frontier against
// the definition (compare every pair) on random types with many ties of
// price and resources; in a pool limited on CPU (odd seeds), a type
// counting more CPU against the limit does not dominate.
func TestFrontierIsTheUndominatedTypes(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		n := 1 + rnd.Intn(60)
		ps := &poolState{}
		limited := seed%2 == 1
		if limited {
			ps.limit = vec{100, math.MaxInt64, math.MaxInt64, math.MaxInt64}
		}
		dom := func(a, b *ptype) bool {
			return dominates(a, b) && (!limited || a.capv[0] <= b.capv[0])
		}
		for i := 0; i < n; i++ {
			pt := &ptype{net: vec{int64(1 + rnd.Intn(4)), int64(1 + rnd.Intn(4)), 10, 0}}
			pt.capv = vec{pt.net[0] + int64(rnd.Intn(2)), pt.net[1], 10, 0}
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
				if j != i && dom(o, pt) && (!dom(pt, o) || j < i) {
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

// TestFrontierHoldsIsAnyTypeCheaperHolding: tryMerge's quick check
// (frontierHolds, on the frontier only, and cheaperHolds, through the fit
// index) answers what a walk over every type cheaper than the price
// would, on random types, requests and prices.
func TestFrontierHoldsIsAnyTypeCheaperHolding(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		ps := &poolState{}
		for i := 0; i < 1+rnd.Intn(60); i++ {
			pt := &ptype{net: vec{int64(1 + rnd.Intn(8)), int64(1 + rnd.Intn(8)), 10, int64(rnd.Intn(2))}}
			o := offer{zone: rnd.Intn(3), ct: rnd.Intn(2), price: float64(1 + rnd.Intn(6))}
			pt.offers, pt.zoneMask, pt.ctMask, pt.minPrice = []offer{o}, maskOf(o.zone), maskOf(o.ct), o.price
			ps.types = append(ps.types, pt)
		}
		sort.SliceStable(ps.types, func(i, j int) bool { return ps.types[i].minPrice < ps.types[j].minPrice })
		ps.frontierBits = newBitset(len(ps.types))
		(&solver{}).buildFrontier(ps)
		for q := 0; q < 50; q++ {
			need := vec{int64(rnd.Intn(9)), int64(rnd.Intn(9)), int64(rnd.Intn(11)), int64(rnd.Intn(2))}
			price := float64(rnd.Intn(8)) + 0.5
			want := false
			for _, pt := range ps.types {
				if pt.minPrice < price && need.le(pt.net) {
					want = true
				}
			}
			if got := frontierHolds(ps, need, price); got != want {
				t.Fatalf("seed %d: need %v under $%.1f: got %v, want %v", seed, need, price, got, want)
			}
			if got := (&solver{}).cheaperHolds(ps, need, price); got != want {
				t.Fatalf("seed %d: need %v under $%.1f: through the fit index got %v, want %v", seed, need, price, got, want)
			}
		}
	}
}
