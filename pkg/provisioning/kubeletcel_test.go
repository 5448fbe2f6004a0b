package provisioning

import (
	"context"
	"fmt"
	"testing"

	"github.com/joist-dev/joist/pkg/model"
)

// TestReconcile_EvaluatesKubeletExpressionsPerType: with the NodeClassCEL
// gate on (model.Spec.WithNodeClassCEL, as the functions read
// FEATURE_GATES), a class whose maxPods is an expression plans and
// launches, each option carrying the settings its type evaluates to (the
// launch writes them into the node's user data), also for types only
// this catalog knows. Gate off, the pool launches nothing.
//
// On the real API server: the pass reads and nominates the pods there.
func TestReconcile_EvaluatesKubeletExpressionsPerType(t *testing.T) {
	for _, gate := range []bool{false, true} {
		a := newAPIServer(t)
		for _, name := range []string{"a", "b", "c", "d", "e"} {
			a.pod(pendingPod(fmt.Sprintf("cel-%v-%s", gate, name), "100m"))
		}
		l := &reservingLauncher{}
		// A v1 pool carries its class's kubelet settings (specs.Build).
		kubelet := &model.Kubelet{MaxPodsExpression: "vcpus * 2"}
		pools := []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "dense", Kubelet: kubelet}}
		p := reservingProvisioner(a, l, pools, &model.NodeClass{Name: "dense", Kubelet: kubelet})
		p.NodeClasses = &classResolver{zones: map[string][]string{"dense": {"us-east-1a", "us-east-1b"}}}
		specs := p.Specs
		p.Specs = func(ctx context.Context) (*model.Spec, error) {
			s, err := specs(ctx)
			return s.WithNodeClassCEL(gate), err
		}
		res, err := p.Reconcile(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !gate {
			if len(l.requests) != 0 || len(res.Unschedulable) != 5 {
				t.Errorf("gate off: %d launches, %d unschedulable; want none and all 5", len(l.requests), len(res.Unschedulable))
			}
			continue
		}
		if len(l.requests) == 0 || len(res.Unschedulable) != 0 {
			t.Fatalf("gate on: %d launches, unschedulable %v; want the pods launched for", len(l.requests), res.Unschedulable)
		}
		for _, r := range l.requests {
			for _, o := range r.Options {
				vcpus := map[string]int64{"r9.large": 2, "r9.xlarge": 4}[o.InstanceType]
				if o.MaxPods != 2*vcpus || o.Kubelet == nil || o.Kubelet.MaxPods == nil || int64(*o.Kubelet.MaxPods) != 2*vcpus || o.Kubelet.MaxPodsExpression != "" {
					t.Errorf("%s option: max pods %d, kubelet %+v; want %d, evaluated", o.InstanceType, o.MaxPods, o.Kubelet, 2*vcpus)
				}
			}
		}
	}
}
