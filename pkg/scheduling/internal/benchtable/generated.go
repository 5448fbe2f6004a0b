package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
	"github.com/joist-dev/joist/pkg/scheduling/verify"
)

// generated prints the table of the generated workloads: every shape at
// every size, seed 1.
func generated(out io.Writer, sizes []int, runs int, only string) error {
	// Rows are printed as they are measured (fixed widths, no buffering):
	// the big sizes take a while.
	w := out
	const row = "| %s | %d | %d | %d | %.2f | %.2f | %.3f | %.4f | %.4f | %d | %.1f | %s |\n"
	fmt.Fprintln(w, "| shape | pods | placed | nodes | $/h | bound $/h | ratio | solve s | cpu s | allocs | MB alloc | bound |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, sh := range workloadgen.Shapes {
		if only != "" && sh.Name != only {
			continue
		}
		for _, n := range sizes {
			in, err := workloadgen.Input(sh, n, 1)
			if err != nil {
				return err
			}
			r := runs
			if n >= 10000 {
				r = min(r, 2)
			}
			plan, wall, cpu, allocs, bytes := timeSolve(in, r)
			placed := len(in.Pods) - len(plan.Unschedulable) - len(plan.Skipped)
			ratio := 0.0
			if plan.LowerBoundPricePerHour > 0 {
				ratio = plan.TotalPricePerHour / plan.LowerBoundPricePerHour
			}
			note := "tight"
			if sh.Loose != "" {
				note = "loose: " + sh.Loose
			}
			fmt.Fprintf(w, row,
				sh.Name, n, placed, len(plan.NewNodes), plan.TotalPricePerHour, plan.LowerBoundPricePerHour, ratio,
				wall.Seconds(), cpu.Seconds(), allocs, float64(bytes)/(1<<20), note)
			if len(plan.Unschedulable) > 0 {
				fmt.Fprintf(os.Stderr, "%s/%d: %d pods unschedulable, first: %s\n", sh.Name, n, len(plan.Unschedulable), plan.Unschedulable[0].Reason)
			}
			if errs := verify.Plan(in, plan); len(errs) > 0 {
				fmt.Fprintf(os.Stderr, "%s/%d: Verify: %v\n", sh.Name, n, errs[0])
			}
		}
	}
	return nil
}

// timeSolve solves runs times and returns the plan with the fastest wall
// and CPU times and the allocations of one solve.
func timeSolve(in scheduling.Input, runs int) (plan scheduling.Plan, wall, cpu time.Duration, allocs, bytes uint64) {
	wall, cpu = time.Duration(1<<63-1), time.Duration(1<<63-1)
	for i := 0; i < max(runs, 1); i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c0 := cpuTime()
		start := time.Now()
		plan = scheduling.Solve(in)
		d := time.Since(start)
		c := cpuTime() - c0
		runtime.ReadMemStats(&after)
		allocs, bytes = after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc
		wall, cpu = min(wall, d), min(cpu, c)
	}
	return plan, wall, cpu, allocs, bytes
}
