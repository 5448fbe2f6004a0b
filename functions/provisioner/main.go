// Command provisioner is the Lambda function that turns pending pods into
// launched instances. Fed by the "pending" SQS queue (a batch is one
// reconcile); wiring only — the logic is in pkg/provisioning.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/joist-dev/joist/events"
	"github.com/joist-dev/joist/pkg/trigger"
	"github.com/joist-dev/joist/pkg/wiring"
)

func main() {
	env := wiring.MustLoad(context.Background(), "provisioner")
	reconcile := env.MustReconciler("provisioner")
	lambda.Start(trigger.SQS(env.Log, func(ctx context.Context, _ []events.Event) error {
		m := env.Metrics()
		defer env.Flush(m)
		res, err := reconcile(ctx, m)
		if err != nil {
			return err
		}
		wiring.WithRequest(ctx, env.Log).Info("reconciled", "pending", res.Pending, "alreadyServed", res.AlreadyServed,
			"launched", len(res.Launched), "nominated", res.Nominated, "unschedulable", len(res.Unschedulable))
		return nil
	}))
}
