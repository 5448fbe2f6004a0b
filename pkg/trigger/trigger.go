// Package trigger turns a batch of SQS messages carrying Joist events into
// one reconcile. Events only say "look again": a batch of a hundred is one
// pass over the truth, not a hundred.
package trigger

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	joistevents "github.com/joist-dev/joist/events"
)

// SQS is the shape of every Joist function fed by an SQS queue: the
// batch is only a wake-up, so the whole batch is one reconcile. Messages
// that are not Joist events are logged and dropped (they can never
// succeed, so retrying them would only storm). When the reconcile fails,
// every Joist message is reported in batchItemFailures so SQS delivers
// it again, and after maxReceiveCount moves it to the DLQ.
func SQS(log *slog.Logger, reconcile func(ctx context.Context, evs []joistevents.Event) error) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		var ids []string
		var parsed []joistevents.Event
		for _, r := range ev.Records {
			e, err := joistevents.Parse([]byte(r.Body))
			if err != nil {
				if errors.Is(err, joistevents.ErrNotJoist) {
					log.Warn("dropping a message that is not a Joist event", "messageId", r.MessageId, "error", err.Error())
					continue
				}
				return resp, err
			}
			ids = append(ids, r.MessageId)
			parsed = append(parsed, e)
		}
		if len(parsed) == 0 {
			return resp, nil
		}
		if err := reconcile(ctx, parsed); err != nil {
			log.Error("reconcile failed; the batch will be delivered again", "error", err.Error(), "messages", len(ids))
			for _, id := range ids {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
			}
		}
		return resp, nil
	}
}
