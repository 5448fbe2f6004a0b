package e2e

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
		before := len(g.EC2.CreateFleetCalls())
		start := time.Now()
		if _, err := g.CreatePending(ctx, p); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for len(g.EC2.CreateFleetCalls()) == before {
			if time.Now().After(deadline) {
				b.Fatalf("no CreateFleet for pod %d within a minute", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
		calls := g.EC2.CreateFleetCalls()
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
