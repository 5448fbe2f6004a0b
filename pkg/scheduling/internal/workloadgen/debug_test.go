package workloadgen

import (
	"os"
	"testing"

	"github.com/joist-dev/joist/pkg/scheduling"
)

func TestDebugPlan(t *testing.T) {
	name := os.Getenv("SHAPE")
	if name == "" {
		t.Skip()
	}
	sh, _ := ShapeByName(name)
	n := 500
	in, err := Input(sh, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	plan := scheduling.Solve(in)
	for _, nn := range plan.NewNodes {
		t.Logf("%s %s $%.3f pods %d req %v opts %d", nn.Pool, nn.Cheapest.InstanceType, nn.Cheapest.PricePerHour, len(nn.Pods), nn.Requests, len(nn.InstanceTypeOptions))
	}
	t.Logf("total %.2f bound %.2f", plan.TotalPricePerHour, plan.LowerBoundPricePerHour)
}
