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
// in one (docs/scheduling.md, "Stopping near the bound"). Plans that do
// not get within the gap (few-big, and the constrained shapes whose
// bound is loose) are the plans they were.

// nearBoundGap is the gap, relative to the bound, within which rebuilds
// stop.
const nearBoundGap = 0.02

// nearBoundOff makes the rebuilds go on to the end (tests compare).
var nearBoundOff bool

// nearBound tells whether the new nodes cost within nearBoundGap of the
// bound (set before the local search: stopPrice).
func (s *solver) nearBound() bool {
	return s.stopPrice > 0 && s.newPrice() <= s.stopPrice
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
