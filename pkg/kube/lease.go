package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// ErrLeaseHeld means another decider holds the cluster's Lease and did not
// let go within the wait. The caller exits cleanly: the holder is working
// from the same truth, and the next event or the safety net runs again.
var ErrLeaseHeld = errors.New("lease held by another decider")

// Lease is the cluster's one-decider-at-a-time lock: a
// coordination.k8s.io Lease that a function takes before it decides and
// releases after. A holder that died is replaced once its lease expires.
// Its annotations carry the little state that must outlive a Lambda cold
// start (the offerings recently out of capacity).
type Lease struct {
	Client    *Client
	Namespace string
	Name      string
	// Holder identifies this decider (function name and request id).
	Holder string
	// Duration is how long a holder owns the lease without renewing; it
	// must outlast one reconcile.
	Duration time.Duration
	// Wait is how long Acquire waits for another holder to let go.
	Wait time.Duration
	// Clock gives both the time a holder's lease is judged by and the
	// waits between tries, so one clock decides how long Acquire waits
	// (nil: the real one; tests pass a k8s.io/utils/clock/testing clock).
	Clock clock.Clock
}

func (l *Lease) clock() clock.Clock {
	if l.Clock != nil {
		return l.Clock
	}
	return clock.RealClock{}
}

func (l *Lease) now() time.Time { return l.clock().Now() }

// Held is an acquired lease.
type Held struct {
	l     *Lease
	lease *coordinationv1.Lease
}

// Annotations are the lease's annotations as they were when acquired.
func (h *Held) Annotations() map[string]string {
	if h.lease.Annotations == nil {
		return map[string]string{}
	}
	return h.lease.Annotations
}

// retryLeaseEvery is how often Acquire tries again while it waits.
const retryLeaseEvery = 200 * time.Millisecond

// Acquire takes the lease, waiting up to l.Wait for a live holder to
// release it. It returns ErrLeaseHeld when that holder keeps it.
func (l *Lease) Acquire(ctx context.Context) (*Held, error) {
	deadline := l.now().Add(l.Wait)
	for {
		h, err := l.try(ctx)
		if err == nil {
			return h, nil
		}
		if !errors.Is(err, ErrLeaseHeld) && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		if errors.Is(err, ErrLeaseHeld) && !l.now().Before(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.clock().After(retryLeaseEvery):
		}
	}
}

func (l *Lease) try(ctx context.Context) (*Held, error) {
	api := l.Client.CoordinationV1().Leases(l.Namespace)
	now := metav1.NewMicroTime(l.now())
	secs := int32(l.Duration / time.Second)
	cur, err := api.Get(ctx, l.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		created, err := api.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: l.Namespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: &l.Holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		return &Held{l: l, lease: created}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get lease %s/%s: %w", l.Namespace, l.Name, err)
	}
	if holder := deref(cur.Spec.HolderIdentity); holder != "" && holder != l.Holder && !expired(cur, l.now()) {
		return nil, fmt.Errorf("%w: %s", ErrLeaseHeld, holder)
	}
	cur = cur.DeepCopy()
	cur.Spec.HolderIdentity = &l.Holder
	cur.Spec.LeaseDurationSeconds = &secs
	cur.Spec.AcquireTime = &now
	cur.Spec.RenewTime = &now
	updated, err := api.Update(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return &Held{l: l, lease: updated}, nil
}

func expired(le *coordinationv1.Lease, now time.Time) bool {
	if le.Spec.RenewTime == nil || le.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return le.Spec.RenewTime.Add(time.Duration(*le.Spec.LeaseDurationSeconds) * time.Second).Before(now)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Release lets the lease go and stores annotations on it (nil values
// remove a key). A lease someone else took over in the meantime (ours had
// expired) is left alone.
func (h *Held) Release(ctx context.Context, annotations map[string]*string) error {
	api := h.l.Client.CoordinationV1().Leases(h.l.Namespace)
	for attempt := 0; attempt < 5; attempt++ {
		cur, err := api.Get(ctx, h.l.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("release lease %s/%s: %w", h.l.Namespace, h.l.Name, err)
		}
		if deref(cur.Spec.HolderIdentity) != h.l.Holder {
			return nil
		}
		cur = cur.DeepCopy()
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		for k, v := range annotations {
			if v == nil {
				delete(cur.Annotations, k)
			} else {
				cur.Annotations[k] = *v
			}
		}
		empty := ""
		cur.Spec.HolderIdentity = &empty
		if _, err := api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				continue
			}
			return fmt.Errorf("release lease %s/%s: %w", h.l.Namespace, h.l.Name, err)
		}
		return nil
	}
	return fmt.Errorf("release lease %s/%s: kept conflicting", h.l.Namespace, h.l.Name)
}
