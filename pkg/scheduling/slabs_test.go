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
	var sl slab[int64]
	var copies [][]int64
	for i := range 500 {
		v := make([]int64, 1+i%7)
		for k := range v {
			v[k] = int64(i*10 + k)
		}
		c := slabCopy(&sl, nil, spareInts, v)
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
	var sl slab[boundMemo]
	var got []*boundMemo
	for i := range 1000 {
		m := slabNew(&sl, nil, spareBounds)
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

// TestSlabChunks_ComeBackCleared: a solve's chunks go to its scratch when
// it ends (release) and the next solve's slabs take them again, each
// entry handed out zeroed (a bin of the earlier solve must not leak its
// pods or sizes into a new node), and chunks of words whole.
func TestSlabChunks_ComeBackCleared(t *testing.T) {
	sc := new(solveScratch)
	var bins slab[bin]
	var words slab[uint64]
	for i := range 40 {
		b := slabNew(&bins, sc, spareBins)
		b.id, b.typ = i+1, 7
		b.entries = []entry{{n: 3}}
		slabCopy(&words, sc, spareWords, []uint64{uint64(i), 1, 2})
	}
	chunkStarts := func(sl *slab[bin]) []*bin {
		var out []*bin
		for _, c := range append(slices.Clone(sl.full), sl.cur) {
			out = append(out, &c[:1][0])
		}
		return out
	}
	given := chunkStarts(&bins)
	bins.giveBack(sc, spareBins, true)
	words.giveBack(sc, spareWords, false)
	if len(sc.chunks.bins) == 0 || len(sc.chunks.words) == 0 || sc.bytes == 0 {
		t.Fatalf("chunks not kept: %d bins, %d words, %d bytes", len(sc.chunks.bins), len(sc.chunks.words), sc.bytes)
	}
	for i := range 40 {
		b := slabNew(&bins, sc, spareBins)
		if b.id != 0 || b.typ != 0 || b.entries != nil {
			t.Fatalf("bin %d handed out as id %d typ %d entries %v", i, b.id, b.typ, b.entries)
		}
		if c := slabCopy(&words, sc, spareWords, []uint64{9, 9, 9}); !slices.Equal(c, []uint64{9, 9, 9}) {
			t.Fatalf("copy %d is %v", i, c)
		}
	}
	for _, p := range chunkStarts(&bins) {
		if !slices.Contains(given, p) {
			t.Errorf("a new chunk was made where %d given back had room", len(given))
		}
	}
}
