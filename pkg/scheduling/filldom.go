package scheduling

import "slices"

// levelDom: covers between the levels of a balanced fill. A level j
// whose requests are at most those of a level i before it (i < j), in
// every resource, never scores higher than i (the score is a sum of its
// requests times the room left, each rounding monotone) and fits
// wherever i fits; ties go to the first level. So while i is in the
// running (pods left, fits), j cannot be chosen, and during a run of
// another level j cannot overtake it before i does (nor before the level
// covering i, if i itself is covered): fillAbove leaves j out of the
// running until i goes out (used up, or no longer fits), and scores only
// the levels no level in the running covers. Where pod shapes are many
// and levels hold a pod or a few (pods sized one by one, as a vertical
// autoscaler leaves them; many-shapes), most levels are covered by a
// bigger one before them (levels are in class order, biggest first):
// 299 pods of 299 sizes spent 2.9 ms of a 5.9 ms solve in the fills,
// 1.0 ms with covers.
//
// Each level keeps one cover, the smallest (it fits longest); the
// levels it covers join when it goes out, and are covered again only by
// their own covers.
type levelDom struct {
	ls  []*level // the levels the covers were made for
	dom []int32  // per level, its cover (-1: none)
	// kidAt and kid: the levels each level covers, kid[kidAt[i]:kidAt[i+1]].
	kidAt, kid []int32
	size       []float64 // scratch (prepare)
}

// prepare makes the covers of ls, for fills over these very levels (the
// caller keeps ls unchanged while it fills).
func (d *levelDom) prepare(ls []*level) {
	d.ls = ls
	d.dom = d.dom[:0]
	if len(ls) == 0 {
		return
	}
	// A level's size: its requests, each a share of the most any level
	// asks of that resource, summed.
	top := make([]float64, len(ls[0].cls.req))
	for _, l := range ls {
		for k, r := range l.cls.req {
			top[k] = max(top[k], float64(r))
		}
	}
	d.size = d.size[:0]
	for _, l := range ls {
		s := 0.0
		for k, v := range l.cls.req {
			if top[k] > 0 {
				s += float64(v) / top[k]
			}
		}
		d.size = append(d.size, s)
	}
	d.kidAt = append(d.kidAt[:0], make([]int32, len(ls)+1)...)
	for j, lj := range ls {
		best := int32(-1)
		rj := lj.cls.req
		for i := range j {
			if (best < 0 || d.size[i] < d.size[best]) && rj.le(ls[i].cls.req) {
				best = int32(i)
			}
		}
		d.dom = append(d.dom, best)
		if best >= 0 {
			d.kidAt[best+1]++
		}
	}
	for i := range ls {
		d.kidAt[i+1] += d.kidAt[i]
	}
	d.kid = append(d.kid[:0], make([]int32, len(ls))...)
	at := slices.Clone(d.kidAt[:len(ls)])
	for j, c := range d.dom {
		if c >= 0 {
			d.kid[at[c]] = int32(j)
			at[c]++
		}
	}
}

// of is d when it was made for ls (the same levels in the same slice),
// nil otherwise: a fill without covers scores every level.
func (d *levelDom) of(ls []*level) *levelDom {
	if domOff || len(ls) == 0 || len(d.ls) != len(ls) || &d.ls[0] != &ls[0] || len(d.dom) != len(ls) {
		return nil
	}
	return d
}

// kids are the levels i covers.
func (d *levelDom) kids(i int) []int32 {
	return d.kid[d.kidAt[i]:d.kidAt[i+1]]
}

// domOff turns the covers off (tests compare).
var domOff bool
