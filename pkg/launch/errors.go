package launch

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/joist-dev/joist/pkg/catalog"
)

// CapacityError is a launch that failed because every offering tried was
// out of capacity or over a limit (InsufficientInstanceCapacity,
// MaxSpotInstanceCountExceeded, VcpuLimitExceeded, UnfulfillableCapacity,
// InsufficientFreeAddressesInSubnet, ...: catalog.IsCapacityError). The
// caller marks Offerings unavailable and plans again without them, which
// also gives the new plan a new client token.
type CapacityError struct {
	Pool      string
	Offerings []catalog.OfferingKey
	Codes     []string
	// Subnets are the subnets that reported no free address; the Launcher
	// already skips them for a while.
	Subnets []string
}

func (e *CapacityError) Error() string {
	var offs []string
	for _, o := range e.Offerings {
		offs = append(offs, o.InstanceType+" "+o.Zone+" "+o.CapacityType)
	}
	return fmt.Sprintf("launch for pool %q: no capacity (%s) for %s", e.Pool, strings.Join(e.Codes, ", "), strings.Join(offs, "; "))
}

// LaunchError is a launch that failed for a reason other than capacity:
// a bad node class, a missing permission, an image EC2 refuses. It names
// the pool and every distinct cause EC2 gave.
type LaunchError struct {
	Pool   string
	Causes []string
}

func (e *LaunchError) Error() string {
	return fmt.Sprintf("launch for pool %q failed: %s", e.Pool, strings.Join(e.Causes, "; "))
}

// Retry policy for Joist's EC2 calls: throttling (RequestLimitExceeded)
// and 5xx are retried by the SDK with exponential backoff and full jitter.
// Eight attempts with backoff capped at 20 s ride out a throttled account
// for about a minute, within the provisioner's timeout. CreateFleet
// retries are safe: they carry the same client token, so an attempt whose
// response was lost returns the instance it launched instead of launching
// another.
const (
	RetryMaxAttempts = 8
	RetryMaxBackoff  = 20 * time.Second
)

// Retryer is the SDK retryer Joist's EC2 client should use (see
// EC2Options).
func Retryer() aws.Retryer { return newRetryer(RetryMaxBackoff, nil) }

// EC2Options applies Joist's retry policy to an EC2 client:
// ec2.NewFromConfig(cfg, launch.EC2Options).
func EC2Options(o *ec2.Options) { o.Retryer = Retryer() }

// newRetryer builds the standard retryer; tests pass a short backoff.
func newRetryer(maxBackoff time.Duration, backoff retry.BackoffDelayer) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = RetryMaxAttempts
		o.MaxBackoff = maxBackoff
		if backoff != nil {
			o.Backoff = backoff
		}
	})
}

// sortedCodes returns the distinct codes, sorted.
func sortedCodes(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
