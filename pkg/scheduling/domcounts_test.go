package scheduling

import (
	"math/rand"
	"testing"
)

// TestDomCountsCountAsADenseSlice: whatever mix of small and large
// domains (zones; node ids), the counts read back are those of a plain
// slice by domain.
func TestDomCountsCountAsADenseSlice(t *testing.T) {
	cases := []struct {
		name    string
		domains int // domains drawn from [0, domains)
		ops     int
	}{
		{"zones", 3, 50},
		{"a few node ids", 10000, 10},
		{"past the far list", 10000, 200},
		{"small and large together", 200, 500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rnd := rand.New(rand.NewSource(1))
			var a domCounts
			want := map[int]int32{}
			for i := 0; i < c.ops; i++ {
				d := rnd.Intn(c.domains+1) - 1 // -1: no domain
				k := int32(rnd.Intn(5) - 1)
				inc(&a, d, k)
				if d >= 0 {
					want[d] += k
				}
				for e := -1; e < c.domains+2; e++ {
					if got := at(a, e); got != want[e] {
						t.Fatalf("after %d ops: domain %d counts %d, want %d", i+1, e, got, want[e])
					}
				}
			}
		})
	}
}
