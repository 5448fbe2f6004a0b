package disruption

import (
	"testing"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling/fromcatalog"
)

// TestConsolidationPricesNodesAsTheirPoolPlansThem: a node's price, and
// its replacements', are its pool's (a NodeOverlay's price where one
// applies), as planning's. An m5.xlarge holding one small pod is
// replaced by a smaller type at the catalog's prices; with an overlay
// pricing m5.xlarge at $0.001/h in its pool, nothing is cheaper and it
// stays.
func TestConsolidationPricesNodesAsTheirPoolPlansThem(t *testing.T) {
	cat, err := catalog.Offline("us-east-1", testZones)
	if err != nil {
		t.Fatal(err)
	}
	pool := consolidating(model.CapacityTypeOnDemand)
	for _, tc := range []struct {
		name     string
		overlays []*model.Overlay
		want     []string
	}{
		{"catalog prices", nil, []string{"a:replace"}},
		{"the node's type nearly free in its pool", []*model.Overlay{{Name: "deal", Price: "0.001",
			Requirements: []model.Requirement{{Key: "node.kubernetes.io/instance-type", Operator: "In", Values: []string{"m5.xlarge"}}}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := fromcatalog.Input(cat, fromcatalog.Cluster{Pools: []*model.Pool{pool}, Overlays: tc.overlays})
			in.Region = "us-east-1"
			nodes := []Node{typed(in.InstanceTypes, "a", "m5.xlarge", model.CapacityTypeOnDemand, app("p", "500m"))}
			_, second := twoPassesWith(in, []*model.Pool{pool}, nodes)
			if got := describe(second.Retire); len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("decisions %v, want %v", got, tc.want)
			}
		})
	}
}
