package launch

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// TestStatuses reads the health of more instances than one
// DescribeInstanceStatus call takes: two calls, every instance once, the
// impaired check and the scheduled retirement carried over.
func TestStatuses(t *testing.T) {
	e := newEnv(t, "1.32")
	var ids []string
	for range 105 {
		id, err := e.sim.AddRunningInstance("m5.large", zoneA, map[string]string{TagCluster: testCluster})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := e.sim.Impair(ids[3]); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.ImpairSystem(ids[4]); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 16, 10, 0, 0, 0, time.UTC)
	if err := e.sim.ScheduleRetirement(ids[104], at); err != nil {
		t.Fatal(err)
	}
	// The calls are counted as Statuses makes them, not as ec2sim
	// receives them: the SDK retries an attempt whose response body it
	// failed to read ("use of closed network connection" on a loaded
	// machine), which made the count 3 now and then.
	counted := &statusCalls{EC2API: e.l.EC2}
	e.l.EC2 = counted
	got, err := e.l.Statuses(e.ctx, ids...)
	if err != nil {
		t.Fatal(err)
	}
	if counted.n != 2 {
		t.Errorf("%d DescribeInstanceStatus calls for 105 ids, want 2", counted.n)
	}
	if len(got) != len(ids) {
		t.Fatalf("%d statuses for %d instances", len(got), len(ids))
	}
	by := map[string]InstanceStatus{}
	for _, s := range got {
		by[s.ID] = s
	}
	if s := by[ids[0]]; s.State != "running" || s.InstanceStatus != "ok" || s.SystemStatus != "ok" || len(s.Events) != 0 {
		t.Errorf("healthy instance %+v", s)
	}
	if s := by[ids[3]]; s.InstanceStatus != "impaired" || s.SystemStatus != "ok" {
		t.Errorf("impaired instance %+v", s)
	}
	if s := by[ids[4]]; s.InstanceStatus != "ok" || s.SystemStatus != "impaired" {
		t.Errorf("impaired host %+v", s)
	}
	if s := by[ids[104]]; len(s.Events) != 1 || s.Events[0].Code != "instance-retirement" || !s.Events[0].NotBefore.Equal(at) {
		t.Errorf("retiring instance %+v, want an instance-retirement event not before %s", s, at)
	}
	if _, err := e.l.Statuses(e.ctx, "i-0000000000000dead"); err == nil {
		t.Error("an unknown id was not an error")
	}
}

// statusCalls counts the DescribeInstanceStatus calls made through it.
type statusCalls struct {
	EC2API
	n int
}

func (c *statusCalls) DescribeInstanceStatus(ctx context.Context, in *ec2.DescribeInstanceStatusInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error) {
	c.n++
	return c.EC2API.DescribeInstanceStatus(ctx, in, opts...)
}
