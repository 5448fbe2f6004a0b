// Command binder is the Lambda function that binds planned pods once their
// node is Ready. Fed by the "ready" SQS queue; wiring only — the logic is
// in pkg/binding.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/joist-dev/joist/events"
	"github.com/joist-dev/joist/pkg/binding"
	"github.com/joist-dev/joist/pkg/trigger"
	"github.com/joist-dev/joist/pkg/wiring"
)

func main() {
	env := wiring.MustLoad(context.Background(), "binder")
	lambda.Start(trigger.SQS(env.Log, func(ctx context.Context, evs []events.Event) error {
		m := env.Metrics()
		defer env.Flush(m)
		b := &binding.Binder{Kube: env.Kube, Log: wiring.WithRequest(ctx, env.Log), Metrics: m, Instances: env.Launcher(), Cluster: env.Cluster}
		return b.HandleReady(ctx, env.Cluster, evs)
	}))
}
