package ec2sim

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestCallLatency_DelaysOnlyThatAction: an action given a latency is
// answered only after it, in wall-clock time, while other actions are
// answered meanwhile (the wait holds no lock), and a caller that gives up
// is not kept waiting.
func TestCallLatency_DelaysOnlyThatAction(t *testing.T) {
	f := newFixture(t, Options{CallLatency: map[string]time.Duration{"DescribeInstances": time.Hour, "DescribeImages": 50 * time.Millisecond}})
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := f.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
		done <- err
	}()
	// Once it is waiting, another action is answered.
	if err := wait.PollUntilContextTimeout(f.ctx, time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return f.sim.Calls("DescribeInstances") > 0, nil }); err != nil {
		t.Fatalf("DescribeInstances never reached the simulator: %v", err)
	}
	if _, err := f.ec2.DescribeSubnets(f.ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("DescribeInstances answered (%v) before its hour", err)
	default:
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("DescribeInstances answered although its caller gave up")
	}
	start := time.Now()
	if _, err := f.ec2.DescribeImages(f.ctx, &ec2.DescribeImagesInput{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("DescribeImages answered after %v, before its 50ms", d)
	}
}
