package scheduling

import "slices"

// domCounts counts pods per domain of a topology key (a group's selected
// pods, its owners, pods per pinned value). Most keys have few domains
// (zones, capacity types) and are kept by domain in dense. A hostname
// key's domains are node ids: a group of a few pods (a Deployment with
// anti-affinity on hostname) would hold a slot for every node, and mix at
// 50,000 pods has 1,200 such groups over 10,000 nodes (a tenth of its
// solve went to growing and clearing them). So domains past dense are
// kept as a short list (far) until it holds farMax of them; then
// everything goes dense.
type domCounts struct {
	dense []int32
	far   *farCounts
}

// farCounts are domains past dense and their counts.
type farCounts struct{ d, n []int32 }

const (
	// denseBelow: a domain below it goes dense at once (zones,
	// capacity types, label values).
	denseBelow = 64
	// farMax is the most domains kept in far.
	farMax = 16
)

// at is the count of domain d (0 for d < 0).
func at(a domCounts, d int) int32 {
	if uint(d) < uint(len(a.dense)) {
		return a.dense[d]
	}
	if a.far != nil && d >= 0 {
		for i, x := range a.far.d {
			if int(x) == d {
				return a.far.n[i]
			}
		}
	}
	return 0
}

// inc adds k to domain d's count (nothing for d < 0).
func inc(a *domCounts, d int, k int32) {
	if d < 0 {
		return
	}
	if d < len(a.dense) {
		a.dense[d] += k
		return
	}
	if f := a.far; f != nil {
		for i, x := range f.d {
			if int(x) == d {
				f.n[i] += k
				return
			}
		}
	}
	if d >= denseBelow && (a.far == nil || len(a.far.d) < farMax) {
		if a.far == nil {
			a.far = &farCounts{}
		}
		a.far.d = append(a.far.d, int32(d))
		a.far.n = append(a.far.n, k)
		return
	}
	// Dense from here on: wide enough for d and every far domain.
	top := d
	if f := a.far; f != nil {
		for _, x := range f.d {
			top = max(top, int(x))
		}
	}
	n := len(a.dense)
	a.dense = slices.Grow(a.dense, top+1-n)[:top+1]
	clear(a.dense[n:])
	if f := a.far; f != nil {
		for i, x := range f.d {
			a.dense[x] += f.n[i]
		}
		a.far = nil
	}
	a.dense[d] += k
}
