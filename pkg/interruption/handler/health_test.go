package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/interruption"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/provisioning"
)

// fakeHealth is EC2's view of the cluster's instances and their health.
type fakeHealth struct {
	insts    []launch.Instance
	statuses map[string]launch.InstanceStatus
	asked    [][]string
	err      error
}

func (f *fakeHealth) Instances(context.Context) ([]launch.Instance, error) { return f.insts, nil }

func (f *fakeHealth) Statuses(_ context.Context, ids ...string) ([]launch.InstanceStatus, error) {
	f.asked = append(f.asked, ids)
	if f.err != nil {
		return nil, f.err
	}
	var out []launch.InstanceStatus
	for _, id := range ids {
		if s, ok := f.statuses[id]; ok {
			out = append(out, s)
		}
	}
	return out, nil
}

func healthRig(t *testing.T, status launch.InstanceStatus) (*rig, *fakeHealth) {
	r := newRig(t, ours, nil)
	inst := r.h.Instances.(*fakeEC2).insts[0]
	f := &fakeHealth{
		insts:    []launch.Instance{inst, {ID: "i-0000000000000pend", State: "pending", Tags: ours}},
		statuses: map[string]launch.InstanceStatus{id: status},
	}
	r.h.Health = f
	return r, f
}

func TestCheckHealth_UnhealthyInstanceIsReplacedFirstThenRetired(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status launch.InstanceStatus
		kind   interruption.Kind
	}{
		{"instance status impaired", launch.InstanceStatus{ID: id, State: "running", InstanceStatus: "impaired", SystemStatus: "ok"}, interruption.KindInstanceStatus},
		{"system status impaired", launch.InstanceStatus{ID: id, State: "running", InstanceStatus: "ok", SystemStatus: "impaired"}, interruption.KindSystemStatus},
		{"scheduled retirement", launch.InstanceStatus{ID: id, State: "running", InstanceStatus: "ok", SystemStatus: "ok",
			Events: []launch.InstanceEvent{{Code: "instance-retirement", NotBefore: time.Now().Add(time.Hour)}}}, interruption.KindScheduledEvent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, f := healthRig(t, tc.status)
			var order []string
			replace, retire := r.h.Replace, r.h.Retire
			r.h.Replace = func(ctx context.Context, ret provisioning.Retiring) (*provisioning.Result, error) {
				order = append(order, "replace")
				return replace(ctx, ret)
			}
			r.h.Retire = func(ctx context.Context, n *corev1.Node) error {
				order = append(order, "retire")
				return retire(ctx, n)
			}
			res, err := r.h.CheckHealth(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f.asked, [][]string{{id}}) {
				t.Errorf("statuses asked for %v, want the running instance only", f.asked)
			}
			if res.Checked != 1 || len(res.Unhealthy) != 1 || res.Unhealthy[0].Kind != tc.kind {
				t.Fatalf("result %+v, want one %s finding", res, tc.kind)
			}
			if !reflect.DeepEqual(order, []string{"replace", "retire"}) {
				t.Fatalf("order %v, want replace then retire", order)
			}
			if got := r.replaced[0]; !reflect.DeepEqual(got.Nodes, []string{"n1"}) || len(got.Unavailable) != 0 {
				t.Errorf("replace %+v, want node n1 and no offering avoided (a sick host is not a sick pool)", got)
			}
			evs, _ := r.cs.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
			if len(evs.Items) != 1 || evs.Items[0].Reason != "InstanceUnhealthy" {
				t.Errorf("events %+v, want one InstanceUnhealthy", evs.Items)
			}
			var buf bytes.Buffer
			if err := r.h.Metrics.Flush(&buf); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), metrics.InterruptionInstanceStatusUnhealthy) || !strings.Contains(buf.String(), string(tc.kind)) {
				t.Errorf("metrics %s, want %s by %s", buf.String(), metrics.InterruptionInstanceStatusUnhealthy, tc.kind)
			}
		})
	}
}

func TestCheckHealth_HealthyInstancesAreLeftAlone(t *testing.T) {
	r, _ := healthRig(t, launch.InstanceStatus{ID: id, State: "running", InstanceStatus: "ok", SystemStatus: "ok",
		Events: []launch.InstanceEvent{{Code: "system-reboot", Description: "[Completed] Scheduled reboot"}}})
	res, err := r.h.CheckHealth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Checked != 1 || len(res.Unhealthy) != 0 || len(r.replaced) != 0 || len(r.retired) != 0 {
		t.Fatalf("result %+v, replaced %v, retired %v; want nothing done", res, r.replaced, r.retired)
	}
}

func TestCheckHealth_ANodeAlreadyRetiringIsNotReplacedAgain(t *testing.T) {
	r, _ := healthRig(t, launch.InstanceStatus{ID: id, State: "running", InstanceStatus: "impaired", SystemStatus: "ok"})
	n, _ := r.cs.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	n.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if _, err := r.cs.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := r.h.CheckHealth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unhealthy) != 1 || len(r.replaced) != 0 || len(r.retired) != 0 {
		t.Fatalf("result %+v, replaced %v, retired %v; want the finding and nothing done", res, r.replaced, r.retired)
	}
}

func TestCheckHealth_EC2FailureIsAnError(t *testing.T) {
	r, f := healthRig(t, launch.InstanceStatus{})
	f.err = errors.New("throttled")
	if _, err := r.h.CheckHealth(context.Background()); err == nil || !strings.Contains(err.Error(), "throttled") {
		t.Fatalf("error %v, want EC2's", err)
	}
}

func TestInvoke_DispatchesOnTheEventsShape(t *testing.T) {
	r, f := healthRig(t, launch.InstanceStatus{ID: id, State: "running", InstanceStatus: "ok", SystemStatus: "ok"})
	ctx := context.Background()

	// The schedule's event runs the health check.
	scheduled := `{"version":"0","id":"53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa","detail-type":"Scheduled Event","source":"aws.events","account":"123456789012","time":"2026-12-02T01:00:00Z","region":"us-east-2","resources":["arn:aws:events:us-east-2:123456789012:rule/health"],"detail":{}}`
	out, err := r.h.Invoke(ctx, json.RawMessage(scheduled))
	if err != nil || out != nil {
		t.Fatalf("scheduled event: %v, %v", out, err)
	}
	if len(f.asked) != 1 {
		t.Fatalf("the scheduled event read statuses %d times, want once", len(f.asked))
	}

	// An SQS batch is the queue's: the answer is its response.
	batch, _ := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: "not an event"}}})
	out, err = r.h.Invoke(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if resp, ok := out.(events.SQSEventResponse); !ok || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("SQS batch answered %#v, want an SQSEventResponse without failures", out)
	}
	if len(f.asked) != 1 {
		t.Errorf("an SQS batch ran the health check")
	}

	// Anything else is refused.
	for _, bad := range []string{`{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning"}`, `[1,2]`, `nope`} {
		if _, err := r.h.Invoke(ctx, json.RawMessage(bad)); err == nil {
			t.Errorf("invocation %s accepted", bad)
		}
	}
}
