package launch

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
)

// recordingRetryer is the retryer EC2Options set, except that it records
// the delay the policy asks for and waits none, so the test sees the whole
// policy in milliseconds.
type recordingRetryer struct {
	aws.RetryerV2
	delays []time.Duration
}

func (r *recordingRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	d, err := r.RetryerV2.RetryDelay(attempt, err)
	r.delays = append(r.delays, d)
	return 0, err
}

// TestRetryerIsTuned: an EC2 client configured as the functions configure
// theirs (EC2Options) retries throttling and 5xx up to eight attempts in
// all, with delays capped at 20 s, and does not retry an authorization
// failure.
func TestRetryerIsTuned(t *testing.T) {
	e := newEnv(t, "1.32")
	rec := &recordingRetryer{}
	client := ec2.New(ec2.Options{
		Region: testRegion, BaseEndpoint: aws.String(e.sim.Start(t)),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
	}, EC2Options, func(o *ec2.Options) {
		v2, ok := o.Retryer.(aws.RetryerV2)
		if !ok {
			t.Fatalf("EC2Options set retryer %T, want an aws.RetryerV2", o.Retryer)
		}
		rec.RetryerV2 = v2
		o.Retryer = rec
	})
	calls := func(f func() error) (int, error) {
		before := e.sim.Calls("DescribeSubnets")
		err := f()
		return e.sim.Calls("DescribeSubnets") - before, err
	}
	describe := func() error {
		_, err := client.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
		return err
	}
	for _, c := range []struct {
		name      string
		code      string
		status    int
		failures  int
		wantCalls int
		wantErr   bool
	}{
		{"throttled seven times", "RequestLimitExceeded", 503, 7, 8, false},
		{"throttled eight times", "RequestLimitExceeded", 503, 8, 8, true},
		{"a 5xx twice", "InternalError", 500, 2, 3, false},
		{"refused", "UnauthorizedOperation", 403, 1, 1, true},
	} {
		e.sim.FailNext("DescribeSubnets", c.code, c.status, c.failures)
		n, err := calls(describe)
		if n != c.wantCalls || (err != nil) != c.wantErr {
			t.Errorf("%s: %d requests, error %v; want %d requests, error %v", c.name, n, err, c.wantCalls, c.wantErr)
		}
	}
	if len(rec.delays) == 0 {
		t.Fatal("the retryer was never asked for a delay")
	}
	for _, d := range rec.delays {
		if d > RetryMaxBackoff {
			t.Errorf("delay %s above the %s cap", d, RetryMaxBackoff)
		}
	}
	// The backoff grows: late attempts wait seconds, not milliseconds
	// (full jitter draws from [0, 20 s) there).
	throttled := &smithy.GenericAPIError{Code: "RequestLimitExceeded", Message: "Request limit exceeded."}
	var longest time.Duration
	for i := 0; i < 200; i++ {
		d, err := rec.RetryerV2.RetryDelay(7, throttled)
		if err != nil {
			t.Fatal(err)
		}
		longest = max(longest, d)
	}
	if longest < 10*time.Second || longest > RetryMaxBackoff {
		t.Errorf("longest of 200 delays at the 7th attempt = %s, want between 10 s and the %s cap", longest, RetryMaxBackoff)
	}
}
