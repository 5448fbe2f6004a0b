package scheduling

import "math"

// Growth chains. A class of several pods grows one node a step at a
// time: the packer opens a node with the cheapest type that takes one
// pod, then upgrades it one pod at a time (few-big's 24-CPU pods take a
// c6a.8xlarge to a 48xlarge in four steps), and each step is a search of
// every open node and every pool (bestGrowth). Between two steps for the
// same class only the grown node changes, and no other candidate can get
// better: with the class's pending count and the pending requests going
// down together, what its pending pods can use of a type (usefulPair,
// usefulValue) only falls, and a node's current type holds none of the
// class's pods (the last paid-room pass took all it could, which is why
// placeAt skips it for such classes). So the best efficiency of every
// other candidate at one step bounds theirs at the next, and when the
// grown node's next upgrade beats that bound by more than bestGrowth's
// tie rules could ever reverse, the search would choose it: it is taken
// without the search (same plans: TestGrowChainSamePlans).
//
// The argument needs the paid room of every other node taken, and the
// new-node candidates fixed from step to step: no pool limits (a pool
// filled to its limit hands the step to a lower-weight tier), no
// minValues (allowance may leave room a type list cannot give), no host
// ports (a port taken leaves room unused), no topology. Where the growth
// index answered (growidx.go: only the nodes whose bound can win are
// asked), the nodes it left out are bounded by the first bound left in
// its heap, and the twins a candidate stands for by the candidate's own
// efficiency.

// growChain is what the last growth step leaves for the next: two
// nodes whose upgrades are asked again (the one the step grew, and the
// other upgrade that came closest) and bounds on every other candidate.
type growChain struct {
	ok bool
	l  *level
	// a is the node the last step grew, at version ver; b the other node
	// asked again (nil: none).
	a, b *bin
	ver  uint32
	// up bounds the efficiency of every upgrade of any other node, next
	// that of every new node (-Inf: none).
	up, next float64
}

// growChainOff makes every growth step search (tests compare).
var growChainOff bool

// chainable tells whether steps for level l may chain: see above.
func (s *solver) chainable(l *level) bool {
	return !growChainOff && !s.boundPools && len(l.cls.ports) == 0 && noTopology(l)
}

// chainStep is the growth the search would choose for want more pods
// of l when the chain from the last step holds and one of its two nodes'
// upgrades decides the search; nil otherwise (then search).
func (s *solver) chainStep(l *level, want int) *growth {
	ch := &s.chain
	if !ch.ok || ch.l != l || ch.a.ver != ch.ver {
		return nil
	}
	ga, okA := s.chainAsk(l, ch.a, want)
	var gb growth
	okB := false
	if ch.b != nil {
		gb, okB = s.chainAsk(l, ch.b, want)
	}
	if !okA && !okB {
		return nil
	}
	if !okA || (okB && gb.eff > ga.eff) {
		ga, gb, okB = gb, ga, okA
	}
	other := ch.up
	if okB {
		other = max(other, gb.eff)
	}
	if !decides(ga.eff, other, ch.next) {
		return nil
	}
	ga.ch = s.allowance(l, ga.b, want, ga.typ)
	if ga.ch.k == 0 {
		return nil
	}
	if chainTaken != nil {
		chainTaken()
	}
	s.upBest = ga
	return &s.upBest
}

// chainTaken, when set, is called for every step taken from a chain
// (tests count them).
var chainTaken func()

// chainAsk is node b's candidate growth for want more pods of l, asked
// as bestGrowth's scan asks each of its live nodes.
func (s *solver) chainAsk(l *level, b *bin, want int) (growth, bool) {
	cp, ok := s.growsFor(l, b)
	if !ok || !s.isOpen(b) {
		return growth{}, false
	}
	return s.upgradeAsked(l, b, cp, want)
}

// decides tells whether an upgrade of efficiency e wins bestGrowth's
// sequential comparison against every other upgrade of efficiency at
// most up and every new node of efficiency at most next, in any order:
// beyond growTie of each upgrade (closer, the smaller added price would
// decide), and no new node more than 1 % better.
func decides(e, up, next float64) bool {
	if math.IsInf(e, 0) || math.IsNaN(e) || e <= 0 || math.IsInf(up, 1) || math.IsInf(next, 1) || math.IsNaN(up) || math.IsNaN(next) {
		return false
	}
	if !math.IsInf(up, -1) && !(e-up > growTie*max(math.Abs(e), math.Abs(up))*(1+1e-9)+1e-12) {
		return false
	}
	return next <= e/0.99*(1-1e-9)
}

// chainTrack follows one search's candidates to leave a chain for the
// next step: the three most efficient upgrades (with their nodes), the
// most efficient new node, and a bound on the upgrades of nodes the
// search did not ask (the growth index's).
type chainTrack struct {
	e    [3]float64
	b    [3]*bin
	next float64
	rest float64
}

func newChainTrack() chainTrack {
	inf := math.Inf(-1)
	return chainTrack{e: [3]float64{inf, inf, inf}, next: inf, rest: inf}
}

func (t *chainTrack) upgrade(b *bin, e float64) {
	if math.IsNaN(e) {
		e = math.Inf(1)
	}
	i := len(t.e)
	for i > 0 && e > t.e[i-1] {
		i--
	}
	if i == len(t.e) {
		return
	}
	copy(t.e[i+1:], t.e[i:len(t.e)-1])
	copy(t.b[i+1:], t.b[i:len(t.b)-1])
	t.e[i], t.b[i] = e, b
}

func (t *chainTrack) newNode(e float64) {
	if math.IsNaN(e) {
		e = math.Inf(1)
	}
	t.next = max(t.next, e)
}

// keepChain records the chain after the search chose g for l (noteChain
// finishes it once g is applied): the other node asked again is the best
// upgrade of a node g did not grow, and the bound is the next one's.
func (s *solver) keepChain(l *level, t *chainTrack, g *growth) {
	ch := growChain{ok: true, l: l, up: t.rest, next: t.next}
	for i, b := range t.b {
		switch {
		case b == nil || b == g.b:
		case ch.b == nil:
			ch.b = b
		default:
			ch.up = max(ch.up, t.e[i])
			s.chain = ch
			return
		}
	}
	s.chain = ch
}

// noteChain ends a growth step that grew node b for l: the chain (from
// the search, or the last step's when the step was a chain step) now
// starts from b as it is. A chain step that grew the other node swaps
// the two.
func (s *solver) noteChain(l *level, b *bin) {
	ch := &s.chain
	if !ch.ok || ch.l != l {
		ch.ok = false
		return
	}
	if ch.b == b {
		ch.b = ch.a
	}
	ch.a, ch.ver = b, b.ver
}
