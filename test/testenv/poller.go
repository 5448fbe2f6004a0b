package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Poller plays Lambda's SQS event-source mapping, which neither kumo nor
// aws-lambda-rie provides: it gathers up to BatchSize messages for at most
// Window, invokes the function with an SQS event, deletes what succeeded
// and leaves the batchItemFailures (or everything, on a function error)
// for redelivery after the visibility timeout.
type Poller struct {
	SQS       *sqs.Client
	QueueURL  string
	QueueARN  string
	BatchSize int
	Window    time.Duration
	Invoke    func(ctx context.Context, payload []byte) ([]byte, error)
	Log       *slog.Logger
	// OnBatch, when set, sees each batch's message ids and the outcome.
	OnBatch func(ids []string, failed []string, err error)
}

// Run polls until ctx ends.
func (p *Poller) Run(ctx context.Context) {
	if p.BatchSize == 0 {
		p.BatchSize = 10
	}
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	for ctx.Err() == nil {
		msgs := p.gather(ctx)
		if len(msgs) == 0 {
			continue
		}
		ev := events.SQSEvent{}
		ids := make([]string, 0, len(msgs))
		for _, m := range msgs {
			ids = append(ids, aws.ToString(m.MessageId))
			ev.Records = append(ev.Records, events.SQSMessage{
				MessageId:      aws.ToString(m.MessageId),
				ReceiptHandle:  aws.ToString(m.ReceiptHandle),
				Body:           aws.ToString(m.Body),
				Attributes:     m.Attributes,
				EventSource:    "aws:sqs",
				EventSourceARN: p.QueueARN,
				AWSRegion:      Region,
			})
		}
		payload, _ := json.Marshal(ev)
		out, err := p.Invoke(ctx, payload)
		var failed []string
		if err != nil {
			log.Warn("poller: invocation failed, batch left for redelivery", "queue", p.QueueURL, "error", err)
			if p.OnBatch != nil {
				p.OnBatch(ids, ids, err)
			}
			continue
		}
		var resp events.SQSEventResponse
		if len(out) > 0 && string(out) != "null" {
			if err := json.Unmarshal(out, &resp); err != nil {
				log.Warn("poller: unreadable response, batch left for redelivery", "error", err, "response", string(out))
				continue
			}
		}
		skip := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			skip[f.ItemIdentifier] = true
			failed = append(failed, f.ItemIdentifier)
		}
		var del []sqstypes.DeleteMessageBatchRequestEntry
		for i, m := range msgs {
			if skip[aws.ToString(m.MessageId)] {
				continue
			}
			del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		for len(del) > 0 {
			n := min(10, len(del))
			if _, err := p.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &p.QueueURL, Entries: del[:n]}); err != nil && ctx.Err() == nil {
				log.Warn("poller: delete failed", "error", err)
			}
			del = del[n:]
		}
		if p.OnBatch != nil {
			p.OnBatch(ids, failed, nil)
		}
	}
}

// gather receives messages until the batch is full or the window has
// passed since the first one arrived.
func (p *Poller) gather(ctx context.Context) []sqstypes.Message {
	var msgs []sqstypes.Message
	var deadline time.Time
	for ctx.Err() == nil && len(msgs) < p.BatchSize {
		wait := int32(1)
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			wait = 0
		}
		out, err := p.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    &p.QueueURL,
			MaxNumberOfMessages:         int32(min(10, p.BatchSize-len(msgs))),
			WaitTimeSeconds:             wait,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		if len(out.Messages) == 0 {
			if deadline.IsZero() {
				continue
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(p.Window)
		}
		msgs = append(msgs, out.Messages...)
	}
	return msgs
}
