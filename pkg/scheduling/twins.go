package scheduling

import "slices"

// Merge twins. improve's merges try, for each of the least utilised new
// nodes (a), every other new node (b), and most tries are refused before
// anything changes: no type of the pool cheaper than the two holds both
// (frontierHolds), or none is offered where both may be. That refusal
// reads only what a and b are: for a given a, b's pool, offering price,
// zones, capacity types, requests and allowed types. After packing, many
// nodes are twins in all of those (few-big at 50,000 pods: 3,700 nodes
// of a few types, most full of the same pods), and each twin was asked
// again. A small table (a fixed number of slots, by a hash of b's
// signature; a collision only overwrites a slot) remembers the nodes
// refused early for the current a; a node whose signature equals one
// there is refused without asking. The table is emptied for each a and
// whenever a merge got further (it may have changed, then put back,
// nodes), so the nodes it holds are as they were when refused, and every
// answer skipped is the one tryMerge would have given
// (TestMergeTwinsSamePlans).
type twinTable struct {
	slot [twinSlots]*bin
	any  bool
}

const twinSlots = 32

// mergeTwinsOff makes the merges ask every node (tests compare).
var mergeTwinsOff bool

func (t *twinTable) reset() {
	if t.any {
		clear(t.slot[:])
		t.any = false
	}
}

// mergeTwin tells whether b and r agree on everything an early refusal
// reads.
func mergeTwin(b, r *bin) bool {
	return r.pool == b.pool && r.offer.price == b.offer.price && r.zoneMask == b.zoneMask && r.ctMask == b.ctMask &&
		slices.Equal(r.used, b.used) && slices.Equal(r.types, b.types)
}

// seen tells whether a twin of b was refused early since the last reset.
func (t *twinTable) seen(b *bin) bool {
	if mergeTwinsOff || !t.any {
		return false
	}
	r := t.slot[contentsHash(b)%twinSlots]
	return r != nil && r != b && mergeTwin(b, r)
}

// note records how a merge into b was refused: early, b's twins will be
// too; later, the table is emptied.
func (t *twinTable) note(b *bin, early bool) {
	if mergeTwinsOff {
		return
	}
	if !early {
		t.reset()
		return
	}
	t.slot[contentsHash(b)%twinSlots] = b
	t.any = true
}
