// Command installer serves the stack's two custom resources.
// Custom::JoistInstall: on create and update it server-side applies Joist's
// in-cluster objects (pkg/install: the functions' RBAC, the Lease's Role,
// the admission policy, the forwarder, and in CRD mode the CRDs the cluster
// lacks), on update it also removes what the new properties no longer
// install, and on delete it removes them all, so `cdk deploy` is the only
// deploy step. Custom::JoistTeardown (-c teardown=true): on delete it has
// every Joist node retired before the functions go. Wiring only.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/joist-dev/joist/pkg/install"
	"github.com/joist-dev/joist/pkg/wiring"
)

func main() {
	env := wiring.MustLoad(context.Background(), "installer")
	lambda.Start(cfn.LambdaWrap(func(ctx context.Context, ev cfn.Event) (string, map[string]any, error) {
		log := wiring.WithRequest(ctx, env.Log)
		if ev.ResourceType == install.TeardownResourceType {
			return (&install.Teardown{Kube: env.Kube, Instances: env.Launcher(), Log: log}).Handle(ctx, ev)
		}
		return (&install.Resource{Dynamic: env.Dynamic, Mapper: env.Mapper, Log: log}).Handle(ctx, ev)
	}))
}
