// Command installer is the stack's custom resource (Custom::JoistInstall):
// on create and update it server-side applies Joist's in-cluster objects
// (pkg/install: the functions' RBAC, the Lease's Role, the admission
// policy, the forwarder), on update it also removes what the new
// properties no longer install, and on delete it removes them all, so
// `cdk deploy` is the only deploy step. Wiring only.
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
	r := &install.Resource{Dynamic: env.Dynamic, Mapper: env.Mapper, Log: env.Log}
	lambda.Start(cfn.LambdaWrap(func(ctx context.Context, ev cfn.Event) (string, map[string]any, error) {
		rr := *r
		rr.Log = wiring.WithRequest(ctx, env.Log)
		return rr.Handle(ctx, ev)
	}))
}
