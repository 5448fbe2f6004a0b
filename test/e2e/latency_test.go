package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/testenv"
)

// BenchmarkE2E_UnschedulableToCreateFleet measures, on the local loop, the
// time from a pod turning Unschedulable to the CreateFleet call for it:
// forwarder debounce, EventBridge, the pending queue's batching window, a
// cold or warm provisioner, the plan and the launch. Each iteration's pod
// needs a node of its own. Run with -benchtime=Nx:
//
//	JOIST_TOOLS=$PWD/bin/tools go test ./test/e2e -run '^$' -bench UnschedulableToCreateFleet -benchtime=20x
func BenchmarkE2E_UnschedulableToCreateFleet(b *testing.B) {
	g := testenv.NewGround(b, testenv.GroundOptions{Cluster: "latency", Namespace: "latency", Specs: seed(b), ReadyDelay: time.Hour})
	ctx := context.Background()
	base := deploymentPods(b, seed(b))[0]
	var waits []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := base.DeepCopy()
		p.Name = fmt.Sprintf("latency-%d", i)
		// One t3.large holds one such pod: every pod is a new node.
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}
		before := len(g.EC2.CreateFleetOperations())
		start := time.Now()
		if _, err := g.CreatePending(ctx, p); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for len(g.EC2.CreateFleetOperations()) == before {
			if time.Now().After(deadline) {
				b.Fatalf("no CreateFleet for pod %d within a minute", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
		calls := g.EC2.CreateFleetOperations()
		waits = append(waits, calls[len(calls)-1].At.Sub(start).Seconds())
		// Let the debounce windows of this pod close before the next.
		time.Sleep(500 * time.Millisecond)
	}
	b.StopTimer()
	sort.Float64s(waits)
	b.ReportMetric(waits[len(waits)/2], "p50-s")
	b.ReportMetric(waits[len(waits)*9/10], "p90-s")
	b.ReportMetric(waits[len(waits)-1], "max-s")
}

// BenchmarkE2E_InterruptionReplacement measures, on the local loop, what a
// spot warning costs the pods of the interrupted node, with the kubelet's
// ReadyDelay at a realistic 30 s (JOIST_BENCH_READY_DELAY, a Go duration,
// changes it) and AWS's two-minute notice, the reaper draining every 2 s:
//
//   - warning → replacement CreateFleet: from the simulator putting the
//     warning on the default bus (kumo's rule delivery to the queue, the
//     poller, the interruption invocation, the plan, the launch);
//   - warning → bound: until every pod's successor (the benchmark plays
//     their ReplicaSet) is bound on the replacement.
//
// Each iteration interrupts the node the previous one moved the pods to.
// Run with -benchtime=Nx:
//
//	JOIST_REQUIRE_TOOLS=1 JOIST_TOOLS=$PWD/bin/tools go test ./test/e2e -run '^$' -bench InterruptionReplacement -benchtime=5x -timeout 20m
func BenchmarkE2E_InterruptionReplacement(b *testing.B) {
	readyDelay := 30 * time.Second
	if v := os.Getenv("JOIST_BENCH_READY_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("JOIST_BENCH_READY_DELAY: %v", err)
		}
		readyDelay = d
	}
	const notice = 2 * time.Minute
	g, _, current, _, inst := interruptGroundOpts(b, "", testenv.GroundOptions{
		Cluster: "intr-bench", ReadyDelay: readyDelay, ReaperEvery: 2 * time.Second,
	})
	interrupted := inst.ID
	var toFleet, toBound []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := len(g.EC2.CreateFleetOperations())
		successors := replicaSet(b, g, current)
		warned := time.Now()
		if _, err := g.EC2.InterruptSpot(interrupted, notice); err != nil {
			b.Fatal(err)
		}
		var replacement ec2sim.CreateFleetRecord
		eventually(b, notice, "the replacement's CreateFleet", func() (bool, error) {
			if calls := g.EC2.CreateFleetOperations(); len(calls) > before {
				replacement = calls[before]
				return true, nil
			}
			return false, nil
		})
		if len(replacement.InstanceIDs) != 1 {
			b.Fatalf("iteration %d: replacement fleet launched %v (errors %v)", i, replacement.InstanceIDs, replacement.Errors)
		}
		toFleet = append(toFleet, replacement.At.Sub(warned).Seconds())
		successorsBoundOn(b, g, successors, len(current), replacement.InstanceIDs[0], notice)
		toBound = append(toBound, time.Since(warned).Seconds())
		b.Logf("iteration %d: warning → CreateFleet %.3f s, → every pod bound on the replacement %.3f s", i, toFleet[i], toBound[i])
		current, interrupted = successors(), replacement.InstanceIDs[0]
	}
	b.StopTimer()
	sort.Float64s(toFleet)
	sort.Float64s(toBound)
	b.ReportMetric(toFleet[len(toFleet)/2], "fleet-p50-s")
	b.ReportMetric(toFleet[len(toFleet)-1], "fleet-max-s")
	b.ReportMetric(toBound[len(toBound)/2], "bound-p50-s")
	b.ReportMetric(toBound[len(toBound)-1], "bound-max-s")
}
