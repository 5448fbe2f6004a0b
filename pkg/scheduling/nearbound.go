package scheduling

// The local search (improve.go, regroup.go, refill.go) rebuilds groups of
// new nodes, dozens of times per solve, and keeps a rebuild only when the
// plan gets cheaper. No plan costs less than the lower bound (bound.go),
// so once the new nodes cost within nearBoundGap of it, no rebuild can
// save more than that gap: the rebuilds stop there, as a MIP solver stops
// at its gap tolerance. The moves that cost nothing to try (drains,
// merges, right-sizing) go on.
//
// On a plan that gets near the bound early this is most of a small
// solve: the rebuilds were ~80 % of a 250-pod memory-heavy solve
// (4.1 ms -> 0.8 ms of CPU), ~60 % of zonal-volumes at 250 pods
// (2.1 -> 1.0 ms). Over the generated shapes at 50 to 2,000 pods, seeds
// 1-3 (225 plans), the plans cost 0.08 % more in all, at most 1.6 % more
// in one, with a fixed 2 % gap; the gap now shrinks past 300 pods
// (stopGap), which made 25 of those plans cheaper again and every plan of
// 5,000 and 10,000 pods the full search's (docs/scheduling.md, "Stopping
// near the bound"). Plans that do not get within the gap (few-big, and
// the constrained shapes whose bound is loose) are the plans they were.

// nearBoundGap is the gap, relative to the bound, within which rebuilds
// stop, for plans of up to nearBoundPods pods. The stop is there for the
// small solves (the target: under 300 pods in under 2 ms), where 2 % is
// cents an hour; on bigger plans the same 2 % is dollars (small-uniform
// at 10,000 pods: $161.64 against the full search's $159.32 an hour) for
// milliseconds nobody waits for. So past nearBoundPods the gap shrinks in
// proportion to the pods on new nodes: what a stop may leave on the table
// stays about what it may on a plan of nearBoundPods pods.
const (
	nearBoundGap  = 0.02
	nearBoundPods = 300
)

// stopGap is the gap for a plan that puts pods on new nodes.
func stopGap(pods int) float64 {
	if pods <= nearBoundPods {
		return nearBoundGap
	}
	return nearBoundGap * nearBoundPods / float64(pods)
}

// nearBoundOff makes the rebuilds go on to the end (tests compare).
var nearBoundOff bool

// nearBound tells whether the new nodes cost within nearBoundGap of the
// bound (set before the local search: stopPrice). Just over it, it first
// has the whole-node search raise the bound, and the stop with it
// (intbound.go; the plan reports the raised bound).
func (s *solver) nearBound() bool {
	if s.stopPrice <= 0 {
		return false
	}
	p := s.newPrice()
	if p <= s.stopPrice {
		return true
	}
	if s.ip == nil || s.ip.spent() || p > s.stopPrice*(1+intReach) {
		return false
	}
	if b := s.ip.raise(p / (1 + s.gap)); b > s.bound {
		s.bound, s.stopPrice = b, b*(1+s.gap)
	}
	return p <= s.stopPrice
}

// boundNow is lowerBound, computed once while the same pods are placed:
// the local search moves pods, never places or drops any, so the bound
// it stops by is the one the plan reports.
func (s *solver) boundNow() float64 {
	left := 0
	for _, c := range s.classes {
		left += c.remaining
	}
	if !s.boundSet || left != s.boundLeft {
		s.bound, s.boundLeft, s.boundSet = s.lowerBound(), left, true
	}
	return s.bound
}

// newNodePods counts the pods the plan puts on new nodes: the part of the
// plan the bound and the rebuilds are about (pods placed on existing
// nodes' room cost nothing either way).
func (s *solver) newNodePods() int {
	n := 0
	for _, b := range s.bins {
		if b.node != nil {
			continue
		}
		for _, e := range b.entries {
			n += e.n
		}
	}
	return n
}
