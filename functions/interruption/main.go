// Command interruption is the Lambda function fed by the interruption
// queue: AWS's spot interruption warnings, rebalance recommendations,
// state changes, capacity-reservation warnings and Health scheduled
// changes, routed from the default bus. EventBridge also runs it once a
// minute for the health check (DescribeInstanceStatus). Wiring only —
// the handler dispatches on the event's shape; the decisions are in
// pkg/interruption, the actions in pkg/interruption/handler.
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"

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
	lambda.Start(func(ctx context.Context, ev json.RawMessage) (any, error) {
		m := env.Metrics()
		defer env.Flush(m)
		return newHandler(ctx, m).Invoke(ctx, ev)
	})
}
