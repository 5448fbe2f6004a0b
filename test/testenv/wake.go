package testenv

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// AsyncInvoker plays an EventBridge rule whose target is a Lambda
// function (the stack's reaper wake rule): EventBridge invokes the
// function asynchronously with the event itself as the payload, once per
// event; the function's invoke config (no retries) decides what a failure
// costs. kumo cannot invoke a function running under aws-lambda-rie, so
// the ground's rule delivers to a queue standing in for the invoke, and
// this loop invokes the function with each event and drops it, whatever
// the outcome.
type AsyncInvoker struct {
	SQS      *sqs.Client
	QueueURL string
	Invoke   func(ctx context.Context, payload []byte) ([]byte, error)
	Log      *slog.Logger
	// OnStart, when set, hears each invocation begin; OnInvoke its
	// outcome.
	OnStart  func()
	OnInvoke func(err error)
}

// Run invokes until ctx ends.
func (a *AsyncInvoker) Run(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := a.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &a.QueueURL, MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
		if err != nil || len(out.Messages) == 0 {
			continue
		}
		m := out.Messages[0]
		if _, err := a.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &a.QueueURL, ReceiptHandle: m.ReceiptHandle}); err != nil && ctx.Err() == nil {
			a.Log.Warn("async invoke: delete event", "error", err)
		}
		if a.OnStart != nil {
			a.OnStart()
		}
		_, err = a.Invoke(ctx, []byte(aws.ToString(m.Body)))
		if err != nil && ctx.Err() == nil {
			a.Log.Warn("async invoke: function failed (not retried)", "error", err)
		}
		if a.OnInvoke != nil {
			a.OnInvoke(err)
		}
	}
}
