package scheduling

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTypeWalkIsTheTypesHolding: a fit index's walk visits, in frontier
// order, exactly the frontier types with at least the CPU and memory
// asked (just enough of either counts), across several words of
// positions; a request no type holds walks nothing.
func TestTypeWalkIsTheTypesHolding(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ps := &poolState{}
	for range 150 {
		net := make(vec, 3)
		net[dimCPU] = int64(1+rng.IntN(16)) * 1000
		net[dimMemory] = int64(1+rng.IntN(32)) << 30
		ps.types = append(ps.types, &ptype{net: net})
	}
	// A frontier of every other type but a few (positions and indices
	// differ).
	var frontier []int
	for i := range ps.types {
		if i%3 != 1 {
			frontier = append(frontier, i)
		}
	}
	fi := &fitIndex{list: frontier, words: (len(frontier) + 63) / 64}
	fi.cpuVals, fi.cpuGE = fi.rowsBy(ps, dimCPU)
	fi.memVals, fi.memGE = fi.rowsBy(ps, dimMemory)
	for c := range 200 {
		need := make(vec, 3)
		need[dimCPU] = int64(rng.IntN(18)) * 1000
		need[dimMemory] = int64(rng.IntN(34)) << 30
		if c == 0 { // exactly a type's amounts
			need[dimCPU], need[dimMemory] = ps.types[frontier[7]].net[dimCPU], ps.types[frontier[7]].net[dimMemory]
		}
		var want, got []int
		for _, i := range frontier {
			if n := ps.types[i].net; n[dimCPU] >= need[dimCPU] && n[dimMemory] >= need[dimMemory] {
				want = append(want, i)
			}
		}
		w := fi.walk(need)
		for i, ok := w.next(); ok; i, ok = w.next() {
			got = append(got, i)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("need %v: walk visits %v, want %v", need, got, want)
		}
	}
	l := listWalk([]int{4, 2, 9})
	var got []int
	for i, ok := l.next(); ok; i, ok = l.next() {
		got = append(got, i)
	}
	if !slices.Equal(got, []int{4, 2, 9}) {
		t.Fatalf("list walk visits %v", got)
	}
}
