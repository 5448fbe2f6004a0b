package trigger

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	joistevents "github.com/joist-dev/joist/events"
)

func sample(t *testing.T, name string) string {
	b, err := os.ReadFile("../../events/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSQS_DropsForeignMessagesAndReconcilesOnce(t *testing.T) {
	calls := 0
	var got []joistevents.Event
	h := SQS(slog.New(slog.NewTextHandler(io.Discard, nil)), func(_ context.Context, evs []joistevents.Event) error {
		calls++
		got = evs
		return nil
	})
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "1", Body: sample(t, "pending-pods.json")},
		{MessageId: "2", Body: "not json at all"},
		{MessageId: "3", Body: sample(t, "pending-pods.json")},
		{MessageId: "4", Body: `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{}}`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || len(got) != 2 {
		t.Fatalf("reconciled %d times with %d events, want once with 2", calls, len(got))
	}
	if _, ok := got[0].(*joistevents.PendingPods); !ok {
		t.Fatalf("event 0 is %T", got[0])
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v, want none (foreign messages are dropped, not retried)", resp.BatchItemFailures)
	}
}

func TestSQS_FailedReconcileReportsEveryJoistMessage(t *testing.T) {
	h := SQS(slog.New(slog.NewTextHandler(io.Discard, nil)), func(context.Context, []joistevents.Event) error { return errors.New("api server down") })
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "a", Body: sample(t, "pending-pods.json")},
		{MessageId: "b", Body: "garbage"},
		{MessageId: "c", Body: sample(t, "node-ready.json")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	if len(ids) != 2 || ids[0] != "a" || ids[1] != "c" {
		t.Fatalf("batchItemFailures = %v, want [a c]", ids)
	}
}

func TestSQS_OnlyForeignMessagesSkipTheReconcile(t *testing.T) {
	h := SQS(slog.New(slog.NewTextHandler(io.Discard, nil)), func(context.Context, []joistevents.Event) error {
		t.Fatal("reconcile ran for a batch with no Joist event")
		return nil
	})
	if _, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "x", Body: "{}"}}}); err != nil {
		t.Fatal(err)
	}
}
