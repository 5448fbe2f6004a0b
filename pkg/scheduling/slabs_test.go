package scheduling

import (
	"slices"
	"testing"
)

// TestSlabCopy_KeepsEveryCopyApart: copies taken from one slab, across
// chunk boundaries, each keep their own content, and appending to one
// never writes over the next (a memo's shape must stay as it was kept;
// the memos compare shapes in full, so a copy overwritten would only
// show in plans by chance).
func TestSlabCopy_KeepsEveryCopyApart(t *testing.T) {
	var sl []int64
	var copies [][]int64
	for i := range 500 {
		v := make([]int64, 1+i%7)
		for k := range v {
			v[k] = int64(i*10 + k)
		}
		c := slabCopy(&sl, v)
		v[0] = -1 // the copy is not the original
		copies = append(copies, c)
	}
	for i, c := range copies {
		if len(c) != 1+i%7 || cap(c) != len(c) {
			t.Fatalf("copy %d: len %d cap %d, want both %d", i, len(c), cap(c), 1+i%7)
		}
		_ = append(c, 99) // must reallocate, not write into the next copy
		for k, x := range c {
			if want := int64(i*10 + k); x != want {
				t.Fatalf("copy %d[%d] = %d, want %d", i, k, x, want)
			}
		}
	}
}

// TestSlabNew_EntriesStayPut: entries handed out keep their address and
// content while later ones are taken (a new chunk, never a grown one).
func TestSlabNew_EntriesStayPut(t *testing.T) {
	var sl []boundMemo
	var got []*boundMemo
	for i := range 1000 {
		m := slabNew(&sl)
		if m.ub != 0 || m.min != nil {
			t.Fatalf("entry %d not zeroed: %+v", i, *m)
		}
		m.ub = float64(i)
		got = append(got, m)
	}
	for i, m := range got {
		if m.ub != float64(i) {
			t.Fatalf("entry %d holds %v, want %d", i, m.ub, i)
		}
	}
	if slices.ContainsFunc(got[1:], func(m *boundMemo) bool { return m == got[0] }) {
		t.Fatal("an entry was handed out twice")
	}
}
