package kube_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/test/testenv"
)

func TestLease_OneHolderAtATime(t *testing.T) {
	env := testenv.Kube(t)
	c := kube.New(env.Client)
	ctx := context.Background()
	clock := testingclock.NewFakeClock(time.Now())
	name := testenv.Fresh("joist-lease-test")
	lease := func(holder string) *kube.Lease {
		return &kube.Lease{Client: c, Namespace: "default", Name: name, Holder: holder, Duration: time.Minute, Clock: clock}
	}
	a, err := lease("a").Acquire(ctx)
	if err != nil {
		t.Fatalf("first acquire: %v", err)
	}
	if _, err := lease("b").Acquire(ctx); !errors.Is(err, kube.ErrLeaseHeld) {
		t.Fatalf("second holder got %v, want ErrLeaseHeld", err)
	}
	mark := "v1 180 m5.large/a/od/1"
	if err := a.Release(ctx, map[string]*string{"joist.sh/note": &mark}); err != nil {
		t.Fatalf("release: %v", err)
	}
	b, err := lease("b").Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	if got := b.Annotations()["joist.sh/note"]; got != mark {
		t.Fatalf("annotation after release = %q, want %q (it carries state across cold starts)", got, mark)
	}
	// b dies without releasing: a waits in vain until b's lease expires.
	if _, err := lease("a").Acquire(ctx); !errors.Is(err, kube.ErrLeaseHeld) {
		t.Fatalf("acquire while b holds = %v, want ErrLeaseHeld", err)
	}
	clock.Step(2 * time.Minute)
	if _, err := lease("a").Acquire(ctx); err != nil {
		t.Fatalf("acquire after b's lease expired: %v", err)
	}
	// A stale holder's release does not free the lease it lost.
	if err := b.Release(ctx, nil); err != nil {
		t.Fatalf("stale release: %v", err)
	}
	if _, err := lease("c").Acquire(ctx); !errors.Is(err, kube.ErrLeaseHeld) {
		t.Fatalf("after a stale release the lease is %v, want still held by a", err)
	}
}

// TestLease_WaitsBrieflyForTheHolder: a lease held by another is waited
// for, up to Wait, and taken once its holder lets go.
func TestLease_WaitsBrieflyForTheHolder(t *testing.T) {
	clock, a, done := contested(t, "joist-lease-wait")
	// a lets go, and b's next try, well within its wait, takes the lease.
	if err := a.Release(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	clock.Step(time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("b did not get the lease once a let go: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b still waiting after a let go and its clock moved on")
	}
}

// contested has a take a lease and b try for it, both with a 5 s wait on
// one fake clock, and returns once b waits on that clock: the clock, a's
// hold, and where b's Acquire reports.
func contested(t *testing.T, prefix string) (*testingclock.FakeClock, *kube.Held, <-chan error) {
	t.Helper()
	env := testenv.Kube(t)
	c := kube.New(env.Client)
	ctx := context.Background()
	clock := testingclock.NewFakeClock(time.Now())
	name := testenv.Fresh(prefix)
	lease := func(holder string) *kube.Lease {
		return &kube.Lease{Client: c, Namespace: "default", Name: name, Holder: holder, Duration: time.Minute, Wait: 5 * time.Second, Clock: clock}
	}
	a, err := lease("a").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := lease("b").Acquire(ctx)
		done <- err
	}()
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return clock.HasWaiters(), nil
	}); err != nil {
		t.Fatal("Acquire does not wait on its clock")
	}
	return clock, a, done
}

// TestLease_WaitsOnItsOwnClock: the wait for a live holder is measured
// and slept on one clock. With a fake clock that nobody steps, Acquire
// keeps waiting (it neither returns nor spins through real time); stepped
// past Wait, it gives up with ErrLeaseHeld.
func TestLease_WaitsOnItsOwnClock(t *testing.T) {
	clock, _, done := contested(t, "joist-lease-clock")
	select {
	case err := <-done:
		t.Fatalf("Acquire returned %v before its clock reached the wait", err)
	case <-time.After(time.Second):
	}
	for range 30 { // 30 × 200 ms of fake time: past the 5 s wait
		clock.Step(200 * time.Millisecond)
		select {
		case err := <-done:
			if !errors.Is(err, kube.ErrLeaseHeld) {
				t.Fatalf("Acquire = %v, want ErrLeaseHeld", err)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatal("Acquire still waiting after its clock passed the wait")
}
