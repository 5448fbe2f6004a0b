package scheduling

import "testing"

func countsOf(dense []int32, far ...int32) domCounts {
	c := domCounts{dense: dense}
	if len(far) > 0 {
		c.far = &farCounts{}
		for i := 0; i < len(far); i += 2 {
			c.far.d = append(c.far.d, far[i])
			c.far.n = append(c.far.n, far[i+1])
		}
	}
	return c
}

// TestRebuildTopoCounts: what a rebuild of constrained pods compares
// (rebuildtopo.go): counts equal in every domain (a missing domain counts
// 0, dense or far), and a count past the old one in some domain.
func TestRebuildTopoCounts(t *testing.T) {
	cases := []struct {
		name       string
		now, was   domCounts
		same, over bool
	}{
		{"equal", countsOf([]int32{3, 1, 2}), countsOf([]int32{3, 1, 2}), true, false},
		{"trailing zeros", countsOf([]int32{3, 1, 0, 0}), countsOf([]int32{3, 1}), true, false},
		{"one moved to another zone", countsOf([]int32{2, 2, 2}), countsOf([]int32{3, 1, 2}), false, true},
		{"one not placed", countsOf([]int32{2, 1, 2}), countsOf([]int32{3, 1, 2}), false, false},
		{"far equal", countsOf(nil, 70, 2, 90, 1), countsOf(nil, 90, 1, 70, 2), true, false},
		{"far moved", countsOf(nil, 70, 1, 90, 2), countsOf(nil, 70, 2, 90, 1), false, true},
		{"far new domain", countsOf([]int32{1}, 80, 1), countsOf([]int32{1}), false, true},
		{"far domain emptied", countsOf([]int32{1}), countsOf([]int32{1}, 80, 1), false, false},
	}
	for _, c := range cases {
		if got := sameCounts(c.now, c.was); got != c.same {
			t.Errorf("%s: sameCounts = %v, want %v", c.name, got, c.same)
		}
		if got := countsOver(c.now, c.was); got != c.over {
			t.Errorf("%s: countsOver = %v, want %v", c.name, got, c.over)
		}
		var cp domCounts
		copyCounts(&cp, c.was)
		copyCounts(&cp, c.now) // reused buffers
		if !sameCounts(cp, c.now) {
			t.Errorf("%s: copyCounts differs from its source", c.name)
		}
		if len(c.now.dense) > 0 {
			c.now.dense[0]++
			if sameCounts(cp, c.now) {
				t.Errorf("%s: the copy shares the source's counts", c.name)
			}
			c.now.dense[0]--
		}
	}
}
