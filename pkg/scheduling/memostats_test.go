package scheduling

import "testing"

// TestMemoStats_StopsWhenItDoesNotPay: a memo by node shape is asked
// through its trial, then only while it hits at least once per four
// misses.
func TestMemoStats_StopsWhenItDoesNotPay(t *testing.T) {
	for _, tc := range []struct {
		name         string
		hits, misses int
		want         bool
	}{
		{"fresh", 0, 0, true},
		{"in its trial, never hit", 0, memoTrial - 1, true},
		{"trial over, never hit", 0, memoTrial, false},
		{"trial over, a hit per four misses", memoTrial / 4, memoTrial, true},
		{"trial over, fewer hits", memoTrial/4 - 1, memoTrial, false},
		{"hits more than misses", 3 * memoTrial, memoTrial, true},
	} {
		m := memoStats{hits: tc.hits, misses: tc.misses}
		if got := m.serves(); got != tc.want {
			t.Errorf("%s: serves() = %v with %d hits and %d misses, want %v", tc.name, got, tc.hits, tc.misses, tc.want)
		}
	}
}
