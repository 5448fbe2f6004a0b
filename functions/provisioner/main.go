// Command provisioner is the Lambda function that turns pending pods into
// launched instances. Fed by the "pending" SQS queue (a batch is one
// reconcile); wiring only — the logic is in pkg/provisioning.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/joist-dev/joist/pkg/trigger"
	"github.com/joist-dev/joist/pkg/wiring"
)

func main() {
	ctx := context.Background()
	env, err := wiring.Load(ctx)
	if err != nil {
		slog.Error("provisioner: configuration", "error", err.Error())
		os.Exit(1)
	}
	reconcile, err := env.Reconciler()
	if err != nil {
		env.Log.Error("provisioner: "+err.Error(), "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(trigger.SQS(env.Log, func(ctx context.Context, _ []any) error {
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
