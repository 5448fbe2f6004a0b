package scheduling

import "testing"

// TestScratchHandsOutClearedTables: a table or slot array a solve gave
// back is handed to the next one as new: entries of generation 0 (free in
// any table in use) and zeroed slots. Entries kept as they were would
// read as answers of the former solve in a table that reaches their
// generation.
func TestScratchHandsOutClearedTables(t *testing.T) {
	sc := new(solveScratch)
	e := sc.fitEntries(16)
	for i := range e {
		e[i] = fitEntry{key: uint64(i), cap: 1, code: 3, gen: 2, dp: 0.5}
	}
	sc.putFit(e)
	got := sc.fitEntries(16)
	if &got[0] != &e[0] {
		t.Fatal("the array given back was not handed out again")
	}
	for i, x := range got {
		if x != (fitEntry{}) {
			t.Fatalf("entry %d handed out as %+v", i, x)
		}
	}
	if sc.bytes != 0 {
		t.Errorf("scratch holds %d bytes after handing out all it had", sc.bytes)
	}

	slots := make([][2]upCache, 4, 64)
	for i := range slots {
		slots[i][0] = upCache{ver: 7, code: 1, dp: 2, cap: 0}
	}
	sc.putUp(slots)
	s := &solver{scratch: sc}
	var up [][2]upCache
	p := s.slotsFor(&up, 3)
	if &up[0] != &slots[0] {
		t.Fatal("the slots given back were not handed out again")
	}
	for i := range up {
		if up[i] != ([2]upCache{}) {
			t.Fatalf("slot %d handed out as %+v", i, up[i])
		}
	}
	if p != &up[3] {
		t.Error("slotsFor(3) is not slot 3")
	}
}
