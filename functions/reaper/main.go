// Command reaper is the Lambda function EventBridge runs every minute. It
// ends instances whose node never registered or is gone and deletes launch
// templates no instance uses (pkg/garbage: the only function whose role
// may terminate or delete them), then runs the safety net: the
// provisioner's reconcile and the binder's pass over every Ready node, so
// lost events and a dead forwarder (a cluster with no nodes cannot run
// one) only cost latency; last, the disruption loop (pkg/reaping) retires
// empty and expired nodes and advances every drain. Each step runs whatever the others did: a failed
// terminate never stops scale-up. Wiring only.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/joist-dev/joist/pkg/binding"
	"github.com/joist-dev/joist/pkg/wiring"
)

func main() {
	env := wiring.MustLoad(context.Background(), "reaper")
	reconcile := env.MustReconciler("reaper")
	collector, err := env.Collector()
	if err != nil {
		slog.Error("reaper: configuration", "error", err.Error())
		os.Exit(1)
	}
	reaper, err := env.Reaper()
	if err != nil {
		slog.Error("reaper: configuration", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, ev events.CloudWatchEvent) error {
		log := wiring.WithRequest(ctx, env.Log)
		// The schedule's tick or the forwarder's wake-up (a Joist node
		// deleting or emptied): either way a full run from the truth; what
		// the event names is never read.
		log.Info("reaper run", "trigger", ev.DetailType)
		m := env.Metrics()
		defer env.Flush(m)
		gc := *collector
		gc.Log = log
		gc.Lock = env.LeaseLock(ctx)
		g, gerr := gc.Collect(ctx)
		if g != nil && (len(g.Terminated) > 0 || len(g.Foreign) > 0 || len(g.TemplatesDeleted) > 0) {
			log.Info("garbage collection", "terminated", g.Terminated, "foreign", g.Foreign, "templatesDeleted", g.TemplatesDeleted)
		}
		res, perr := reconcile(ctx, m)
		if perr == nil {
			log.Info("safety net: reconciled", "pending", res.Pending, "alreadyServed", res.AlreadyServed, "launched", len(res.Launched), "nominated", res.Nominated)
		}
		b, berr := (&binding.Binder{Kube: env.Kube, Log: log, Metrics: m}).BindAll(ctx)
		if berr == nil {
			log.Info("safety net: bound", "bound", b.Bound, "alreadyBound", b.AlreadyBound, "unplanned", b.Unplanned)
		}
		// Last, the disruption loop: retire empty and expired nodes and
		// advance every drain, passing every few seconds while one is in
		// progress (pkg/reaping says why it loops).
		d, derr := reaper(ctx, m).Run(ctx)
		log.Info("disruption", "passes", d.Passes, "stamped", d.Stamped, "retired", len(d.Retired), "finished", d.Finished, "inProgress", d.InProgress)
		return errors.Join(gerr, perr, berr, derr)
	})
}
