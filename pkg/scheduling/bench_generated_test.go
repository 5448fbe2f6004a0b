package scheduling_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
)

// processCPU is the process's user and system CPU time: on a shared
// machine it is a fairer figure than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchGenerated solves one generated workload b.N times, reporting the
// CPU time per solve (cpu-ns/op) beside the wall time, and the plan's
// nodes and ratio to the bound.
func benchGenerated(b *testing.B, shape workloadgen.Shape, pods int) {
	in, err := workloadgen.Input(shape, pods, 1)
	if err != nil {
		b.Fatal(err)
	}
	benchInput(b, in)
}

// BenchmarkSolveTypeSelectors solves generated shapes whose Deployments
// select instance types by label (withTypeSelectors: node selectors,
// required and preferred node affinity), which no generated shape does:
// such nodes and classes search their own types, not the pool's frontier.
func BenchmarkSolveTypeSelectors(b *testing.B) {
	for _, shape := range []string{"web-six", "many-shapes", "few-big"} {
		for _, n := range []int{250, 2000} {
			b.Run(fmt.Sprintf("%s/%d", shape, n), func(b *testing.B) { benchInput(b, withTypeSelectors(generated(b, shape, n, 1))) })
		}
	}
}

// benchInput solves in b.N times, as benchGenerated.
func benchInput(b *testing.B, in scheduling.Input) {
	b.ReportAllocs()
	b.ResetTimer()
	var plan scheduling.Plan
	c0 := processCPU()
	for i := 0; i < b.N; i++ {
		plan = scheduling.Solve(in)
	}
	cpu := processCPU() - c0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(len(plan.NewNodes)), "nodes")
	if plan.LowerBoundPricePerHour > 0 {
		b.ReportMetric(plan.TotalPricePerHour/plan.LowerBoundPricePerHour, "xbound")
	}
}

// BenchmarkSolveSmall solves every generated shape at 50 and 250 pods:
// the target is under 2 ms of CPU for anything under 300 pods.
func BenchmarkSolveSmall(b *testing.B) {
	for _, sh := range workloadgen.Shapes {
		for _, n := range []int{50, 250} {
			b.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(b *testing.B) { benchGenerated(b, sh, n) })
		}
	}
}

// BenchmarkSolveMid solves every generated shape at 2,000 pods: where
// Karpenter's scheduler needs seconds, the target is 100× less (make
// bench-karpenter compares them in one run).
func BenchmarkSolveMid(b *testing.B) {
	for _, sh := range workloadgen.Shapes {
		b.Run(fmt.Sprintf("%s/2000", sh.Name), func(b *testing.B) { benchGenerated(b, sh, 2000) })
	}
}

// BenchmarkSolve50k solves every generated shape at 50,000 pods: the
// target is under a second (make bench runs it once per shape: the shapes
// needing thousands of nodes still take minutes).
func BenchmarkSolve50k(b *testing.B) {
	for _, sh := range workloadgen.Shapes {
		b.Run(sh.Name, func(b *testing.B) { benchGenerated(b, sh, 50000) })
	}
}

// BenchmarkSolvePrepared shows what preparing the catalog once saves: the
// same 50-pod solves with the catalog prepared by every solve (cold: the
// first solve against a catalog, or a caller that prepares nothing) and
// prepared once (warm: what fromcatalog.Input gives every later solve).
func BenchmarkSolvePrepared(b *testing.B) {
	for _, name := range []string{"small-uniform", "many-shapes"} {
		in := generated(b, name, 50, 1)
		cold := in
		cold.Prepared = nil
		for _, c := range []struct {
			name string
			in   scheduling.Input
		}{{"cold", cold}, {"warm", in}} {
			b.Run(name+"/50/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				c0 := processCPU()
				for i := 0; i < b.N; i++ {
					scheduling.Solve(c.in)
				}
				b.ReportMetric(float64((processCPU()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
