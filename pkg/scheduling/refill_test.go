package scheduling

import (
	"math/rand"
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

// balancedFillPodByPod is balancedFill one pod at a time, as it was
// written first: the reference its runs must agree with.
func balancedFillPodByPod(ls []*level, counts []int, net vec) []int {
	sel := make([]int, len(ls))
	room := net.clone()
	inv := make([]float64, len(net))
	for d, v := range net {
		if v > 0 {
			inv[d] = 1 / (float64(v) * float64(v))
		}
	}
	for {
		best, bestScore := -1, 0.0
		for i, l := range ls {
			if sel[i] >= counts[i] || !l.cls.req.le(room) {
				continue
			}
			score := 0.0
			for d, r := range l.cls.req {
				score += float64(r) * float64(room[d]) * inv[d]
			}
			if best < 0 || score > bestScore {
				best, bestScore = i, score
			}
		}
		if best < 0 {
			return sel
		}
		sel[best]++
		room.addScaled(ls[best].cls.req, -1)
	}
}

// TestBalancedFillRunsAsPodByPod: balancedFill, which takes a level's
// pods in runs, chooses what choosing one pod at a time chooses, over
// random nodes and pods (equal requests, ties, pods that do not fit,
// many small pods on a big node, hundreds of levels of a pod or three),
// and so does a fill that scores a level only once the levels covering
// it are out (levelDom).
func TestBalancedFillRunsAsPodByPod(t *testing.T) {
	const gi = 1 << 30
	rnd := rand.New(rand.NewSource(1))
	var covered fillScratch
	joined := 0
	for n := 0; n < 4000; n++ {
		net := vec{int64(2000 + rnd.Intn(190000)), int64(4*gi + rnd.Int63n(760*gi)), 0, int64(8 + rnd.Intn(730))}
		nl := 1 + rnd.Intn(12)
		many := n >= 3000 // hundreds of levels of a pod or three each
		if many {
			nl = 50 + rnd.Intn(250)
		}
		ls := make([]*level, nl)
		counts := make([]int, nl)
		for i := range ls {
			cpu := int64(50 * (1 + rnd.Intn(80)))
			mem := int64(64<<20) * int64(1+rnd.Intn(256))
			if i > 0 && rnd.Intn(4) == 0 { // the same requests as another level
				r := ls[rnd.Intn(i)].cls.req
				cpu, mem = r[0], r[1]
			}
			ls[i] = &level{cls: &class{req: vec{cpu, mem, 0, 1}}}
			counts[i] = rnd.Intn(300)
			if many {
				counts[i] = rnd.Intn(4)
			}
		}
		want := balancedFillPodByPod(ls, counts, net)
		if got := balancedFill(ls, counts, net); !slices.Equal(got, want) {
			t.Fatalf("case %d: net %v counts %v: balancedFill = %v, pod by pod %v", n, net, counts, got, want)
		}
		covered.dom.prepare(ls)
		if got := covered.fill(ls, counts, net); !slices.Equal(got, want) {
			t.Fatalf("case %d: net %v counts %v: with covers %v, pod by pod %v", n, net, counts, got, want)
		}
		for j := range ls {
			if c := covered.dom.dom[j]; c >= 0 && want[j] > 0 && want[c] > 0 {
				joined++ // covered, and both chosen: j joined as c went out
			}
		}
	}
	if joined == 0 {
		t.Error("no covered level chosen beside its cover: the covers were never let go")
	}
}

// TestFillAboveIsTheFillOrLoses: fillAbove gives the fill itself, or
// nothing only when the fill is worth less than the floor at the prices
// (the bound it stops by never falls below the fill's worth).
func TestFillAboveIsTheFillOrLoses(t *testing.T) {
	const gi = 1 << 30
	rnd := rand.New(rand.NewSource(2))
	var f fillScratch
	cut := 0
	for n := 0; n < 3000; n++ {
		net := vec{int64(2000 + rnd.Intn(190000)), int64(4*gi + rnd.Int63n(760*gi)), 0, int64(8 + rnd.Intn(730))}
		nl := 1 + rnd.Intn(60)
		ls := make([]*level, nl)
		counts := make([]int, nl)
		for i := range ls {
			cpu := int64(50 * (1 + rnd.Intn(80)))
			mem := int64(64<<20) * int64(1+rnd.Intn(256))
			ls[i] = &level{cls: &class{req: vec{cpu, mem, 0, 1}}}
			counts[i] = rnd.Intn(12)
		}
		prices := []float64{rnd.Float64() * 1e-4, rnd.Float64() * 1e-11, 0, rnd.Float64() * 1e-3}
		want := slices.Clone(balancedFill(ls, counts, net))
		worth := 0.0
		for i, l := range ls {
			for d, p := range prices {
				worth += p * float64(l.cls.req[d]) * float64(want[i])
			}
		}
		floor := worth * (0.9 + 0.2*rnd.Float64())
		f.dom.ls = nil
		if n%2 == 0 {
			f.dom.prepare(ls) // half the cases with covers (levelDom)
		}
		got := f.fillAbove(ls, counts, net, prices, floor)
		if got == nil {
			cut++
			if worth >= floor*(1-1e-9) {
				t.Fatalf("case %d: gave up under floor %.6g, the fill is worth %.6g", n, floor, worth)
			}
			continue
		}
		if !slices.Equal(got, want) {
			t.Fatalf("case %d: fillAbove = %v, the fill %v", n, got, want)
		}
	}
	if cut == 0 {
		t.Error("no fill given up: the cut never ran")
	}
}
