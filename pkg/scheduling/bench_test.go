package scheduling_test

import (
	"testing"
	"time"

	"github.com/joist-dev/joist/pkg/internal/benchdata"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/verify"
)

// loadWorkload reads a benchmark workload (embedded in benchdata, so
// every clone has them).
func loadWorkload(tb testing.TB, name string) scheduling.Input {
	tb.Helper()
	in, err := benchdata.Load(name)
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// BenchmarkSolve solves the shared workloads with the us-east-1 catalog and
// the workloads' own Provisioner (on-demand, amd64, categories c, m, r;
// linux added by the AWS defaults), reporting pods/s, nodes, $/h and the
// lower bound.
func BenchmarkSolve(b *testing.B) {
	for _, name := range benchdata.Names {
		b.Run(name, func(b *testing.B) {
			in := loadWorkload(b, name)
			b.ReportAllocs()
			b.ResetTimer()
			var plan scheduling.Plan
			start := time.Now()
			for i := 0; i < b.N; i++ {
				plan = scheduling.Solve(in)
			}
			elapsed := time.Since(start)
			b.ReportMetric(float64(len(in.Pods)*b.N)/elapsed.Seconds(), "pods/s")
			b.ReportMetric(float64(len(plan.NewNodes)), "nodes")
			b.ReportMetric(plan.TotalPricePerHour, "$/h")
			b.ReportMetric(plan.LowerBoundPricePerHour, "bound$/h")
		})
	}
}

// TestWorkloadPlans checks the benchmark plans are valid and meet the
// cost targets: no dearer than Karpenter's and within 10% of the bound.
func TestWorkloadPlans(t *testing.T) {
	for _, name := range benchdata.Names {
		t.Run(name, func(t *testing.T) {
			if testing.Short() && name != "diverse-1k" {
				t.Skip("short mode: only diverse-1k")
			}
			in := loadWorkload(t, name)
			plan := scheduling.Solve(in)
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("%d unschedulable, first: %s", len(plan.Unschedulable), plan.Unschedulable[0].Reason)
			}
			for _, err := range verify.Plan(in, plan) {
				t.Error(err)
			}
			k := benchdata.Karpenter[name]
			t.Logf("%s: %d nodes, $%.2f/h, bound $%.2f/h (Karpenter: %d nodes, $%.2f/h)", name, len(plan.NewNodes), plan.TotalPricePerHour, plan.LowerBoundPricePerHour, k.Nodes, k.Price)
			if plan.TotalPricePerHour > k.Price {
				t.Errorf("$%.2f/h is dearer than Karpenter's $%.2f/h", plan.TotalPricePerHour, k.Price)
			}
			if plan.TotalPricePerHour > 1.10*plan.LowerBoundPricePerHour {
				t.Errorf("$%.2f/h is more than 10%% over the bound $%.2f/h", plan.TotalPricePerHour, plan.LowerBoundPricePerHour)
			}
		})
	}
}
