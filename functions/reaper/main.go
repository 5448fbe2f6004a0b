// Command reaper is the Lambda function EventBridge runs every minute. For
// now it is the safety net: the provisioner's reconcile and the binder's
// pass over every Ready node, so lost events and a dead forwarder (a
// cluster with no nodes cannot run one) only cost latency. Disruption
// (empty, expired, leaked nodes) will join it. Wiring only.
package main

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/joist-dev/joist/pkg/binding"
	"github.com/joist-dev/joist/pkg/wiring"
)

func main() {
	env := wiring.MustLoad(context.Background(), "reaper")
	reconcile := env.MustReconciler("reaper")
	lambda.Start(func(ctx context.Context, _ events.CloudWatchEvent) error {
		log := wiring.WithRequest(ctx, env.Log)
		m := env.Metrics()
		defer env.Flush(m)
		res, perr := reconcile(ctx, m)
		if perr == nil {
			log.Info("safety net: reconciled", "pending", res.Pending, "alreadyServed", res.AlreadyServed, "launched", len(res.Launched), "nominated", res.Nominated)
		}
		b, berr := (&binding.Binder{Kube: env.Kube, Log: log, Metrics: m}).BindAll(ctx)
		if berr == nil {
			log.Info("safety net: bound", "bound", b.Bound, "alreadyBound", b.AlreadyBound, "unplanned", b.Unplanned)
		}
		return errors.Join(perr, berr)
	})
}
