package scheduling

import (
	"math"
	"testing"
)

// TestLimRec_HoldsWhileTheLimitsAnswerAlike: a record holds while every
// type the scan let through still fits the limits and every type it
// refused is still refused (the usage no lower anywhere).
func TestLimRec_HoldsWhileTheLimitsAnswerAlike(t *testing.T) {
	unlimited := int64(math.MaxInt64)
	// Limits: 100 CPU, memory unlimited, 10 nodes.
	pool := func(cpu, mem, nodes int64) *poolState {
		return &poolState{limit: vec{100, unlimited}, limitNodes: 10, usage: vec{cpu, mem}, usageNodes: nodes}
	}
	at := pool(60, 500, 4)
	passed := func() *limRec {
		r := &limRec{}
		r.begin(0)
		r.pass(vec{16, 64}, vec{4, 16})  // grows 12 CPU
		r.pass(vec{32, 128}, vec{4, 16}) // grows 28 CPU
		return r
	}
	newNode := func() *limRec { // a new node's walk: it adds a node
		r := &limRec{}
		r.begin(1)
		r.pass(vec{16, 64}, nil) // grows 16 CPU
		return r
	}
	refused := func() *limRec {
		r := passed()
		r.refuse(at) // a type growing more than 40 CPU
		return r
	}
	for _, tc := range []struct {
		name string
		rec  *limRec
		now  *poolState
		want bool
	}{
		{"no scan recorded", &limRec{}, at, false},
		{"limits not asked", func() *limRec { r := &limRec{}; r.begin(0); return r }(), pool(99, 0, 10), true},
		{"same usage", refused(), at, true},
		{"largest growth still fits", passed(), pool(72, 0, 4), true},
		{"largest growth no longer fits", passed(), pool(73, 0, 4), false},
		{"nodes over the limit", passed(), pool(10, 0, 11), false},
		{"a new node within the node limit", newNode(), pool(84, 0, 9), true},
		{"a new node past the node limit", newNode(), pool(10, 0, 10), false},
		{"a new node past the CPU limit", newNode(), pool(85, 0, 9), false},
		{"memory is not limited", passed(), pool(60, 1e12, 4), true},
		{"usage rose: refused stays refused", refused(), pool(70, 900, 5), true},
		{"cpu fell: a refused type may fit", refused(), pool(59, 500, 4), false},
		{"node count fell", refused(), pool(60, 500, 3), false},
		{"memory fell: not limited", refused(), pool(60, 0, 4), true},
	} {
		if got := tc.rec.holds(tc.now); got != tc.want {
			t.Errorf("%s: holds = %v, want %v", tc.name, got, tc.want)
		}
	}
}
