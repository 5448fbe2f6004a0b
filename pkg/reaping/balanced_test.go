package reaping_test

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/termination"
)

// TestBalancedPoolKeepsAMoveNotWorthIt: on the API server, a pool whose
// consolidationPolicy is Balanced keeps an m5.2xlarge that an m5a.2xlarge
// or an m6a.2xlarge would replace for about 10% less (in a pool of that one node, a move must save
// half its cost: it disrupts all of it); the reaper says why on the node
// (a DisruptionBlocked event) and counts the refused move
// (joist_consolidation_moves_total, decision rejected). Under
// WhenEmptyOrUnderutilized the same node is replaced.
func TestBalancedPoolKeepsAMoveNotWorthIt(t *testing.T) {
	g := newConsolidating(t, "balanced")
	g.pool.Disruption.ConsolidationPolicy = "Balanced"
	g.node(t, "balanced-src", "m5.2xlarge", cpuPod("balanced-mover", "5", nil))
	r := g.reaper("i-balanced-src")
	r.Metrics = metrics.New("c", r.fc)
	if res := g.decide(t, r); len(res.Retired) != 0 {
		t.Fatalf("retired %+v under Balanced", res.Retired)
	}
	var out bytes.Buffer
	if err := r.Metrics.Flush(&out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, `"joist_consolidation_moves_total":2`) || !strings.Contains(s, `"decision":"rejected"`) || !strings.Contains(s, `"pool":"balanced"`) {
		t.Errorf("metrics lack two rejected moves of pool balanced (one per pass):\n%s", s)
	}
	evs, err := g.c.CoreV1().Events("default").List(g.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=balanced-src,reason=" + termination.ReasonDisruptionBlocked})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) == 0 || !strings.Contains(evs.Items[0].Message, "consolidates Balanced") {
		t.Errorf("events %+v, want one saying the Balanced score refused the move", evs.Items)
	}

	g.pool.Disruption.ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	if res := g.decide(t, g.reaper("i-balanced-src")); len(res.Retired) != 1 || !res.Retired[0].Replace {
		t.Errorf("retired %+v under WhenEmptyOrUnderutilized, want balanced-src replaced", res.Retired)
	}
}
