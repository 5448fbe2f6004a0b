package reaping_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/model"
)

// TestPoolCostGauges: every pass the reaper sets each pool's running
// cost and node count from its nodes, priced from the catalog by their
// instance type, zone and capacity type (a spot node at the spot price, a
// node in a capacity reservation at 0); a pool without nodes reads 0, and
// a node that is not Joist's (its instance not tagged) is not counted.
// A NodeOverlay's price on a node's offering is the node's price, as the
// provisioner plans and launches with it.
func TestPoolCostGauges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		overlays []*model.Overlay
		odPrice  func(catalogPrice float64) float64 // the on-demand m5.xlarge's
	}{
		{"catalog prices", nil, func(p float64) float64 { return p }},
		{"an overlay's price", []*model.Overlay{{Name: "discount", Price: "0.05",
			Requirements: []model.Requirement{{Key: "node.kubernetes.io/instance-type", Operator: "In", Values: []string{"m5.xlarge"}}}}},
			func(float64) float64 { return 0.05 }},
		{"an overlay's adjustment", []*model.Overlay{{Name: "savings-plan", PriceAdjustment: "-50%",
			Requirements: []model.Requirement{{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"on-demand"}}}}},
			func(p float64) float64 { return p / 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) { testPoolCostGauges(t, tc.overlays, tc.odPrice) })
	}
}

func testPoolCostGauges(t *testing.T, overlays []*model.Overlay, odPrice func(float64) float64) {
	g := newConsolidating(t, "costly")
	g.pool.Disruption.ConsolidationPolicy = "WhenEmpty" // nothing to decide here
	idle := &model.Pool{Name: "idle", API: model.APIV1}
	g.node(t, "costly-od", "m5.xlarge", cpuPod("costly-od-pod", "1", nil))
	g.node(t, "costly-spot", "m5.large", cpuPod("costly-spot-pod", "1", nil))
	g.node(t, "costly-reserved", "m5.2xlarge", cpuPod("costly-reserved-pod", "1", nil))
	g.node(t, "costly-foreign", "m5.24xlarge", cpuPod("costly-foreign-pod", "1", nil))
	for name, ct := range map[string]string{"costly-spot": model.CapacityTypeSpot, "costly-reserved": model.CapacityTypeReserved} {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{model.LabelCapacityType: ct}}})
		if _, err := g.c.CoreV1().Nodes().Patch(g.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := g.reaper("i-costly-od", "i-costly-spot", "i-costly-reserved")
	r.Specs = func(context.Context) (*model.Spec, error) {
		return &model.Spec{Pools: []*model.Pool{g.pool, idle}, Overlays: overlays}, nil
	}
	r.Metrics = metrics.New("c", r.fc)
	if _, err := r.Pass(g.ctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := r.Metrics.Flush(&out); err != nil {
		t.Fatal(err)
	}
	got := map[string][2]float64{} // pool: cost, nodes
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		pool, _ := m["pool"].(string)
		if c, ok := m[metrics.NodePoolCost].(float64); ok {
			v := got[pool]
			v[0] = c
			got[pool] = v
		}
		if n, ok := m[metrics.NodePoolNodes].(float64); ok {
			v := got[pool]
			v[1] = n
			got[pool] = v
		}
	}
	od, _ := g.cat.OfferingPrice("m5.xlarge", "us-east-1a", model.CapacityTypeOnDemand)
	od = odPrice(od)
	spot, _ := g.cat.OfferingPrice("m5.large", "us-east-1a", model.CapacityTypeSpot)
	if c := got["costly"]; math.Abs(c[0]-(od+spot)) > 1e-9 || c[1] != 3 {
		t.Errorf("pool costly: $%v/h, %v nodes; want $%v/h (on-demand m5.xlarge + spot m5.large + reserved at 0), 3 nodes\n%s", c[0], c[1], od+spot, out.String())
	}
	if c, ok := got["idle"]; !ok || c != [2]float64{} {
		t.Errorf("pool idle: %v (recorded %v), want 0 and 0", c, ok)
	}
}
