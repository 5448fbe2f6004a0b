package scheduling

import (
	"math/rand"
	"testing"
)

// TestPriceIsTheCheapestOfferingInTheMasks: price, which answers masks
// holding every offering from the offering found once, gives for every
// zone and capacity type mask what a pass over the offerings gives (the
// first of the cheapest, none when no offering is in the masks), on
// random types with ties of price.
func TestPriceIsTheCheapestOfferingInTheMasks(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		pt := &ptype{}
		for z := 0; z < 4; z++ {
			for ct := 0; ct < 2; ct++ {
				if rnd.Intn(3) > 0 {
					pt.offers = append(pt.offers, offer{zone: z, ct: ct, price: float64(1 + rnd.Intn(3))})
					pt.zoneMask |= maskOf(z)
					pt.ctMask |= maskOf(ct)
				}
			}
		}
		if len(pt.offers) == 0 {
			continue
		}
		pt.cheap, pt.cheapOK = pt.priceIn(pt.zoneMask, pt.ctMask)
		for zones := uint64(0); zones < 1<<5; zones++ {
			for cts := uint64(0); cts < 1<<3; cts++ {
				var want offer
				found := false
				for _, o := range pt.offers {
					if maskHas(zones, o.zone) && maskHas(cts, o.ct) && (!found || o.price < want.price) {
						want, found = o, true
					}
				}
				got, ok := pt.price(zones, cts)
				if ok != found || got != want {
					t.Fatalf("seed %d, zones %b, cts %b: price %+v %t, want %+v %t (offers %+v)", seed, zones, cts, got, ok, want, found, pt.offers)
				}
			}
		}
	}
}
