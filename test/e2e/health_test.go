package e2e

import (
	"testing"
	"time"

	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/testenv"
)

// TestE2E_ImpairedInstanceReplaced: a node's instance fails its status
// check. No event says so: the interruption function's health check
// (DescribeInstanceStatus, invoked by the ground's schedule every second
// here, every minute in the stack) finds it, launches the replacement
// before anything is evicted, and begins the node's retirement; the
// reaper drains it; the pods' successors (the test plays their
// ReplicaSet) end bound on the replacement; the impaired instance is
// terminated and its node gone; the checks that follow launch nothing
// more.
func TestE2E_ImpairedInstanceReplaced(t *testing.T) {
	g, b, pending, node, old := interruptGroundOpts(t, "", testenv.GroundOptions{
		Cluster: "intr-health", ReadyDelay: 300 * time.Millisecond, ReaperEvery: 2 * time.Second, HealthEvery: time.Second,
	})
	fleetsBefore := len(g.EC2.CreateFleetOperations())
	successors := replicaSet(t, g, pending)

	impaired := time.Now()
	if err := g.EC2.Impair(old.ID); err != nil {
		t.Fatal(err)
	}
	var replacement ec2sim.CreateFleetRecord
	eventually(t, 30*time.Second, "the replacement's CreateFleet", func() (bool, error) {
		if calls := g.EC2.CreateFleetOperations(); len(calls) > fleetsBefore {
			replacement = calls[fleetsBefore]
			return true, nil
		}
		return false, nil
	})
	t.Logf("impaired → replacement CreateFleet: %s (health check every %s)", replacement.At.Sub(impaired).Round(time.Millisecond), g.Opts.HealthEvery)
	if len(replacement.InstanceIDs) != 1 {
		t.Fatalf("replacement fleet launched %v (errors %v)", replacement.InstanceIDs, replacement.Errors)
	}
	evictedBefore(t, g, "intr-health", replacement.At)
	successorsBoundOn(t, g, successors, len(pending), replacement.InstanceIDs[0], 60*time.Second)
	t.Logf("impaired → every pod's successor bound on the replacement: %s", time.Since(impaired).Round(time.Millisecond))
	eventually(t, 60*time.Second, "the impaired instance terminated and its node gone", func() (bool, error) {
		return nodeGone(t, g, node.Name) && terminated(instanceState(g, old.ID)), nil
	})
	t.Logf("impaired → instance terminated, node gone: %s", time.Since(impaired).Round(time.Millisecond))
	// Two more health checks, to see they launch nothing.
	checks := g.EC2.Calls("DescribeInstanceStatus")
	eventually(t, 30*time.Second, "two more health checks", func() (bool, error) {
		return g.EC2.Calls("DescribeInstanceStatus") >= checks+2, nil
	})
	t.Logf("impaired → two more health checks done: %s", time.Since(impaired).Round(time.Millisecond))
	if n := len(g.EC2.CreateFleetOperations()) - fleetsBefore; n != 1 {
		t.Errorf("%d CreateFleet calls after the impairment, want the replacement's only", n)
	}
	if _, failed, errs := b.count(); failed != 0 || errs != 0 {
		t.Errorf("%d messages failed, %d invocations (health checks included) errored", failed, errs)
	}
}
