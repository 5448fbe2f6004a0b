// Command pass runs one provisioner pass (or one reaper pass), built exactly as the
// function builds it (pkg/wiring, from the function's
// environment), and prints what it did and cost as one JSON line: the
// scale benchmark (test/scale) runs it as its own process so that the
// pass's peak RSS is the pass's alone.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/wiring"
)

// Report is what the pass prints.
type Report struct {
	WallSeconds   float64 `json:"wallSeconds"`
	PeakHeapBytes uint64  `json:"peakHeapBytes"`
	AllocBytes    uint64  `json:"allocBytes"`
	Pending       int     `json:"pending"`
	Launched      int     `json:"launched"`
	Nominated     int     `json:"nominated"`
	Unschedulable int     `json:"unschedulable"`
	// PeakRSSBytes is the process's VmHWM (/proc/self/status): the
	// parent's rusage maxrss would count the test process's RSS at fork.
	PeakRSSBytes uint64 `json:"peakRSSBytes"`
	// Reaper passes (JOIST_PASS_FUNCTION=reaper): nodes retired.
	Retired int    `json:"retired"`
	Error   string `json:"error,omitempty"`
}

// peakRSS is the process's resident set high-water mark (VmHWM), 0 if
// unknown.
func peakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func main() {
	ctx := context.Background()
	// JOIST_PASS_FUNCTION=reaper runs one pass of the reaper's disruption
	// loop (pkg/reaping) instead of the provisioner's.
	function := "provisioner"
	if os.Getenv("JOIST_PASS_FUNCTION") == "reaper" {
		function = "reaper"
	}
	// JOIST_SCALE_POD_PAGE_SIZE reads pods that many a page (a small
	// cluster's read then takes several pages, and is split by namespace).
	if n, err := strconv.ParseInt(os.Getenv("JOIST_SCALE_POD_PAGE_SIZE"), 10, 64); err == nil && n > 0 {
		kube.SetPodPageSize(n)
	}
	env := wiring.MustLoad(ctx, function)
	var pass func() (Report, error)
	if function == "reaper" {
		newReaper, err := env.Reaper()
		if err != nil {
			fmt.Println("JOIST-PASS {\"error\":" + fmt.Sprintf("%q", err.Error()) + "}")
			os.Exit(1)
		}
		pass = func() (Report, error) {
			res, err := newReaper(ctx, env.Metrics()).Pass(ctx)
			return Report{Retired: len(res.Retired)}, err
		}
	} else {
		reconcile := env.MustReconciler(function)
		pass = func() (Report, error) {
			res, err := reconcile(ctx, env.Metrics())
			if err != nil {
				return Report{}, err
			}
			return Report{Pending: res.Pending, Launched: len(res.Launched), Nominated: res.Nominated, Unschedulable: len(res.Unschedulable)}, nil
		}
	}

	// The heap is sampled every 2 ms: its peak is the pass's memory.
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	read := func() (heap, allocs uint64) {
		metrics.Read(samples)
		return samples[0].Value.Uint64(), samples[1].Value.Uint64()
	}
	_, alloc0 := read()
	// JOIST_PASS_PROFILE names a directory for a heap profile written at
	// each new peak (live objects as of the last collection) and a CPU
	// profile of the pass, each named for the process (one per pass of a
	// run: pass-<pid>-cpu.pprof, pass-<pid>-heap.pprof).
	profile := os.Getenv("JOIST_PASS_PROFILE")
	if profile != "" {
		profile = fmt.Sprintf("%s/pass-%d-", profile, os.Getpid())
		f, err := os.Create(profile + "cpu.pprof")
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
		}
	}
	var written uint64
	go func() {
		defer close(done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if h, _ := read(); h > peak.Load() {
				peak.Store(h)
				if profile != "" && h > written+written/5 {
					written = h
					if f, err := os.Create(profile + "heap.pprof"); err == nil {
						_ = pprof.Lookup("heap").WriteTo(f, 0)
						_ = f.Close()
					}
				}
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	r, err := pass()
	wall := time.Since(start)
	close(stop)
	<-done
	_, alloc1 := read()
	r.WallSeconds, r.PeakHeapBytes, r.AllocBytes = wall.Seconds(), peak.Load(), alloc1-alloc0
	r.PeakRSSBytes = peakRSS()
	if err != nil {
		r.Error = err.Error()
	}
	b, _ := json.Marshal(r)
	fmt.Println("JOIST-PASS " + string(b))
	if err != nil {
		os.Exit(1)
	}
}
