package scheduling

import (
	"slices"
	"testing"
)

// TestBalancedFillFillsEveryResource: balancedFill fills a node in CPU
// and memory together (two pods of 1 CPU/1 GiB and two of 250m/3 GiB
// fill a 4 CPU/8 GiB node's memory), where the biggest pods first (four
// of 1 CPU) fill its CPU and leave half its memory idle.
func TestBalancedFillFillsEveryResource(t *testing.T) {
	const gi = 1 << 30
	lv := func(cpu, mem int64) *level { return &level{cls: &class{req: vec{cpu, mem, 0, 1}}} }
	tests := []struct {
		name   string
		net    vec
		ls     []*level
		counts []int
		want   []int
	}{
		{"cpu-heavy and memory-heavy pods mixed", vec{4000, 8 * gi, 0, 110},
			[]*level{lv(1000, 1*gi), lv(250, 3*gi)}, []int{8, 8}, []int{2, 2}},
		{"only one shape: as many as fit", vec{4000, 8 * gi, 0, 110},
			[]*level{lv(1000, 1*gi)}, []int{8}, []int{4}},
		{"no more than there are", vec{4000, 8 * gi, 0, 110},
			[]*level{lv(1000, 1*gi), lv(250, 3*gi)}, []int{1, 1}, []int{1, 1}},
		{"pod slots count", vec{4000, 8 * gi, 0, 2},
			[]*level{lv(100, 1*gi)}, []int{8}, []int{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := balancedFill(tc.ls, tc.counts, tc.net); !slices.Equal(got, tc.want) {
				t.Errorf("balancedFill = %v, want %v", got, tc.want)
			}
		})
	}
}
