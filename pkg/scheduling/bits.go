package scheduling

// bitset is a fixed-size set of small integers (instance types of a pool),
// so that intersecting what several pods allow is a few word ANDs.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int)      { b[i>>6] |= 1 << uint(i&63) }
func (b bitset) has(i int) bool { return b[i>>6]&(1<<uint(i&63)) != 0 }
func (b bitset) clear(i int)    { b[i>>6] &^= 1 << uint(i&63) }

func (b bitset) clone() bitset { return append(bitset(nil), b...) }

// and narrows b to b ∩ o.
func (b bitset) and(o bitset) {
	for i := range b {
		b[i] &= o[i]
	}
}

func (b bitset) any() bool {
	for _, w := range b {
		if w != 0 {
			return true
		}
	}
	return false
}

// mask helpers for zones and capacity types (at most 64 of each).
func maskHas(m uint64, i int) bool { return i >= 0 && i < 64 && m&(1<<uint(i)) != 0 }
func maskOf(i int) uint64 {
	if i < 0 || i >= 64 {
		return 0
	}
	return 1 << uint(i)
}

// meets tells whether b and o share a bit.
func (b bitset) meets(o bitset) bool {
	for i := range b {
		if b[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// contains tells whether every bit of o is set in b.
func (b bitset) contains(o bitset) bool {
	for i := range o {
		if o[i]&^b[i] != 0 {
			return false
		}
	}
	return true
}
