package scheduling_test

import (
	"math"
	"testing"
)

// TestShapeBoundSeesPodShapes: pods of 1 CPU and 3 GiB on c (about 2 GiB
// per CPU) and m (4 GiB per CPU) types. The resource LP covers the
// demand's CPU and memory with a c/m mixture at about $1.36/h for 30
// pods, but no node can hold that mixture: on a c node memory runs out at
// 10 pods of 16 CPU. Per pod, an m.4xlarge (15.9 CPU allocatable, $0.80)
// is cheapest, at $0.80/15.9; the shape bound is 30 times that, and every
// plan costs at least that much.
func TestShapeBoundSeesPodShapes(t *testing.T) {
	in := input(pods("web", 30, "1", "3Gi"), pool("default", withReq("karpenter.k8s.aws/instance-category", "In", "c", "m")))
	plan := solve(t, in)
	want := 30 * 0.80 / 15.9
	if math.Abs(plan.LowerBoundPricePerHour-want) > 1e-6 {
		t.Errorf("bound $%.4f/h, want $%.4f/h", plan.LowerBoundPricePerHour, want)
	}
	if plan.TotalPricePerHour < plan.LowerBoundPricePerHour {
		t.Errorf("plan $%.4f/h under its bound $%.4f/h", plan.TotalPricePerHour, plan.LowerBoundPricePerHour)
	}
}
