// Command benchtable solves each shared benchmark workload and prints one
// table: nodes, $/h, the lower bound, solve time, pods/s, memory, and
// Karpenter's figures beside them. `make bench` runs it:
//
//	go run ./pkg/scheduling/internal/benchtable
//
// Each solve is repeated (-runs, default 5) and the fastest time is shown,
// as a benchmark would; plans are deterministic so the other columns do not
// change between runs. "cpu s" is the process CPU time of the fastest run
// (GC included): on a busy machine it is the fairer figure.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/joist-dev/joist/pkg/internal/benchdata"
	"github.com/joist-dev/joist/pkg/scheduling"
)

func main() {
	runs := flag.Int("runs", 5, "solves per workload; the fastest is reported")
	gen := flag.Bool("generated", true, "also print the generated workloads' table")
	only := flag.String("shape", "", "generated table: only this shape")
	sizes := flag.String("sizes", "50,500,2000,10000", "generated table: pod counts (50000 works, but takes minutes on the shapes with thousands of nodes)")
	shared := flag.Bool("shared", true, "print the shared workloads' table")
	flag.Parse()
	if dumpFlags(*runs, *sizes, *only, *shared) { // dump.go: -dump, -case
		return
	}
	if *gen {
		defer func() {
			var ns []int
			for _, f := range strings.Split(*sizes, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil {
					fmt.Fprintln(os.Stderr, "benchtable: -sizes:", err)
					os.Exit(2)
				}
				ns = append(ns, n)
			}
			fmt.Println()
			if err := generated(os.Stdout, ns, *runs, *only); err != nil {
				fmt.Fprintln(os.Stderr, "benchtable:", err)
				os.Exit(1)
			}
		}()
	}
	if !*shared {
		return
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "workload\tpods\tnodes\t$/h\tbound $/h\tover bound\tsolve s\tcpu s\tpods/s\tMB alloc\tKarpenter nodes\tKarpenter $/h\tKarpenter s\t")
	for _, name := range benchdata.Names {
		in, err := benchdata.Load(name)
		if errors.Is(err, benchdata.ErrNoWorkloads) {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(2)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", name+":", err)
			os.Exit(1)
		}
		var plan scheduling.Plan
		best := time.Duration(1<<63 - 1)
		bestCPU := time.Duration(1<<63 - 1)
		var alloc uint64
		for i := 0; i < max(*runs, 1); i++ {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu0 := cpuTime()
			start := time.Now()
			plan = scheduling.Solve(in)
			d := time.Since(start)
			cpu := cpuTime() - cpu0
			runtime.ReadMemStats(&after)
			alloc = after.TotalAlloc - before.TotalAlloc
			best = min(best, d)
			bestCPU = min(bestCPU, cpu)
		}
		placed := len(in.Pods) - len(plan.Unschedulable) - len(plan.Skipped)
		over := 0.0
		if plan.LowerBoundPricePerHour > 0 {
			over = (plan.TotalPricePerHour/plan.LowerBoundPricePerHour - 1) * 100
		}
		k := benchdata.Karpenter[name]
		fmt.Fprintf(w, "%s\t%d\t%d\t%.2f\t%.2f\t%.1f%%\t%.4f\t%.4f\t%.0f\t%.1f\t%d\t%.2f\t%.1f\t\n",
			name, placed, len(plan.NewNodes), plan.TotalPricePerHour, plan.LowerBoundPricePerHour, over,
			best.Seconds(), bestCPU.Seconds(), float64(len(in.Pods))/best.Seconds(), float64(alloc)/(1<<20),
			k.Nodes, k.Price, k.Seconds)
		if len(plan.Unschedulable) > 0 {
			fmt.Fprintf(os.Stderr, "%s: %d pods unschedulable, first: %s\n", name, len(plan.Unschedulable), plan.Unschedulable[0].Reason)
		}
	}
	w.Flush()
}

// cpuTime is the process's user and system CPU time: on a shared machine
// the wall clock also counts other programs' turns.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
