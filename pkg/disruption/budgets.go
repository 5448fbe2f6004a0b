package disruption

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/joist-dev/joist/pkg/model"
)

// Reasons a node is disrupted, as Karpenter names them (budgets select by
// them).
const (
	ReasonEmpty         = "Empty"
	ReasonUnderutilized = "Underutilized"
	ReasonDrifted       = "Drifted"
	ReasonExpired       = "Expired"
	// ReasonUnhealthy is node repair's (repair.go).
	ReasonUnhealthy = "Unhealthy"
	// ReasonPoolDeleted retires the nodes of a pool whose Provisioner or
	// NodePool is gone, as Karpenter's NodePool deletion cascades to its
	// NodeClaims: forceful (no budget, no replacement: the pool that
	// launched them is what was removed), drained gracefully.
	ReasonPoolDeleted = "PoolDeleted"
	// ReasonStaticScaleDown retires the nodes a static pool (replicas)
	// has past its count, as Karpenter's static deprovisioning deletes
	// them: no budget, no replacement, drained gracefully.
	ReasonStaticScaleDown = "StaticScaleDown"
)

// Unlimited is the allowance of a pool without budgets.
const Unlimited = math.MaxInt32

// Allowed is how many of a pool's nodes may be disrupted for reason at now,
// before subtracting those already being disrupted: the minimum over the
// pool's active budgets that apply to the reason (a budget without reasons
// applies to all). total is the pool's node count; a percentage is rounded
// up, as Karpenter does. A budget that cannot be read (bad cron, bad
// value) allows nothing: it fails closed.
func Allowed(budgets []model.Budget, reason string, total int, now time.Time) int {
	allowed := Unlimited
	for _, b := range budgets {
		if len(b.Reasons) > 0 && !slices.Contains(b.Reasons, reason) {
			continue
		}
		active, err := Active(b, now)
		if err != nil {
			return 0
		}
		if !active {
			continue
		}
		n, err := budgetNodes(b.Nodes, total)
		if err != nil {
			return 0
		}
		allowed = min(allowed, n)
	}
	return allowed
}

// Active reports whether a budget applies at now: always without a
// schedule, else when a hit of its cron schedule (UTC, as Karpenter) lies
// within the last duration.
func Active(b model.Budget, now time.Time) (bool, error) {
	if b.Schedule == "" {
		return true, nil
	}
	if b.Duration == nil {
		return false, fmt.Errorf("budget schedule %q without a duration", b.Schedule)
	}
	sched, err := cron.ParseStandard(b.Schedule)
	if err != nil {
		return false, fmt.Errorf("budget schedule %q: %w", b.Schedule, err)
	}
	now = now.UTC()
	// The first hit after (now - duration) opens a window still open now
	// if it is not after now.
	next := sched.Next(now.Add(-*b.Duration))
	return !next.After(now), nil
}

func budgetNodes(v string, total int) (int, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		pct, err := strconv.Atoi(p)
		if err != nil || pct < 0 || pct > 100 {
			return 0, fmt.Errorf("budget nodes %q", v)
		}
		return int(math.Ceil(float64(pct) * float64(total) / 100)), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("budget nodes %q", v)
	}
	return n, nil
}

// Forceful reports whether a reason retires nodes whatever budgets and
// node-level do-not-disrupt say (expiry, as in Karpenter v1).
func Forceful(reason string) bool { return reason == ReasonExpired }
