package provisioning

import (
	"context"
	"fmt"
	"testing"

	"github.com/joist-dev/joist/pkg/model"
)

// TestReconcile_ReservedENIsLowerPodDensity: 25 small pods fit one
// r9.large (the pool's only type) by CPU and memory, and by its 29 ENI-limited pods (3 ENIs of
// 10 addresses); with one ENI reserved (Karpenter's RESERVED_ENIS, which
// the functions set on the specs' node classes) the type holds 20 pods,
// so the plan takes two nodes, each launched with max pods 20 among its
// options.
//
// On the real API server: the pass reads and nominates the pods there.
func TestReconcile_ReservedENIsLowerPodDensity(t *testing.T) {
	for _, tc := range []struct {
		reserved int64
		nodes    int
		maxPods  int64
	}{
		{0, 1, 29},
		{1, 2, 20},
	} {
		t.Run(fmt.Sprintf("%d reserved", tc.reserved), func(t *testing.T) {
			a := newAPIServer(t)
			for i := range 25 {
				a.pod(pendingPod(fmt.Sprintf("p%d", i), "10m"))
			}
			l := &reservingLauncher{}
			pool := &model.Pool{Name: "default", API: model.APIV1, NodeClass: "plain", Requirements: []model.Requirement{
				{Key: "node.kubernetes.io/instance-type", Operator: "In", Values: []string{"r9.large"}},
			}}
			p := reservingProvisioner(a, l, []*model.Pool{pool}, &model.NodeClass{Name: "plain"})
			specs := p.Specs
			p.Specs = func(ctx context.Context) (*model.Spec, error) {
				s, err := specs(ctx)
				return s.WithReservedENIs(tc.reserved), err
			}
			res, err := p.Reconcile(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Unschedulable) != 0 {
				t.Fatalf("unschedulable: %v", res.Unschedulable)
			}
			if len(l.requests) != tc.nodes {
				t.Fatalf("launched %d nodes (%v), want %d", len(l.requests), launched(res), tc.nodes)
			}
			for _, r := range l.requests {
				for _, o := range r.Options {
					if o.MaxPods != tc.maxPods {
						t.Errorf("option %s max pods %d, want %d", o.InstanceType, o.MaxPods, tc.maxPods)
					}
				}
			}
		})
	}
}
