// Command binder is the Lambda function that binds planned pods once their
// node is Ready. Fed by the "ready" SQS queue; wiring only — the logic is
// in pkg/binding.
package main

import (
	"context"
	"sort"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/joist-dev/joist/events"
	"github.com/joist-dev/joist/pkg/binding"
	"github.com/joist-dev/joist/pkg/trigger"
	"github.com/joist-dev/joist/pkg/wiring"
)

func main() {
	env := wiring.MustLoad(context.Background(), "binder")
	lambda.Start(trigger.SQS(env.Log, func(ctx context.Context, evs []any) error {
		log := wiring.WithRequest(ctx, env.Log)
		m := env.Metrics()
		defer env.Flush(m)
		b := &binding.Binder{Kube: env.Kube, Log: log, Metrics: m}
		nodes := map[string]bool{}
		for _, e := range evs {
			if nr, ok := e.(*events.NodeReady); ok && nr.Cluster == env.Cluster {
				nodes[nr.Node] = true
			}
		}
		names := make([]string, 0, len(nodes))
		for n := range nodes {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			res, err := b.BindNode(ctx, n)
			if err != nil {
				return err
			}
			log.Info("node reconciled", "node", n, "bound", res.Bound, "alreadyBound", res.AlreadyBound, "unplanned", res.Unplanned)
		}
		return nil
	}))
}
