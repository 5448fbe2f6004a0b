// Command interruption is the Lambda function fed by the interruption
// queue: AWS's spot interruption warnings, rebalance recommendations,
// state changes, capacity-reservation warnings and Health scheduled
// changes, routed from the default bus. Wiring only — the decisions are
// in pkg/interruption, the actions in pkg/interruption/handler.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/joist-dev/joist/pkg/wiring"
)

func main() {
	env := wiring.MustLoad(context.Background(), "interruption")
	newHandler, err := env.Interruption()
	if err != nil {
		slog.Error("interruption: configuration", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		m := env.Metrics()
		defer env.Flush(m)
		return newHandler(ctx, m).HandleSQS(ctx, ev)
	})
}
