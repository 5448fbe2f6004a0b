package provisioning

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/model"
)

// TestReconcile_PlansAndLaunchesAtOverlaidPrices: NodeOverlays in the
// spec reach planning and the launch. One adds a device to r9.xlarge
// (without it the pod asking for one is unschedulable), another makes
// the r9 types cheap; the launch carries the overlay's prices (marked,
// so the fleet launches by priority), and the launch's price metric is
// the overlay's price.
//
// On the real API server: the pass reads and nominates the pod there.
func TestReconcile_PlansAndLaunchesAtOverlaidPrices(t *testing.T) {
	a := newAPIServer(t)
	pod := pendingPod("web", "1500m")
	pod.Spec.Containers[0].Resources.Requests["example.com/dongle"] = resource.MustParse("1")
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"example.com/dongle": resource.MustParse("1")}
	a.pod(pod)
	l := &reservingLauncher{}
	pools := []*model.Pool{{Name: "default", API: model.APIV1, NodeClass: "plain"}}
	p := reservingProvisioner(a, l, pools, &model.NodeClass{Name: "plain"})
	overlays := []*model.Overlay{
		{Name: "dongles", Weight: 2, Capacity: corev1.ResourceList{"example.com/dongle": resource.MustParse("1")},
			Requirements: []model.Requirement{{Key: "node.kubernetes.io/instance-type", Operator: "In", Values: []string{"r9.xlarge"}}}},
		{Name: "r9-deal", Weight: 1, Price: "0.05", Requirements: []model.Requirement{{Key: "karpenter.k8s.aws/instance-family", Operator: "In", Values: []string{"r9"}}}},
	}
	specs := p.Specs
	p.Specs = func(ctx context.Context) (*model.Spec, error) {
		s, err := specs(ctx)
		if err != nil {
			return nil, err
		}
		s.Overlays = overlays
		return s, nil
	}
	rec := metrics.New("test", p.Clock)
	p.Metrics = rec
	res, err := p.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.requests) != 1 || len(res.Unschedulable) != 0 {
		t.Fatalf("%d launches, unschedulable %v; want one launch", len(l.requests), res.Unschedulable)
	}
	if got := res.Launched[0].InstanceType; got != "r9.xlarge" {
		t.Errorf("launched %s, want the r9.xlarge the device overlay selects", got)
	}
	for _, o := range l.requests[0].Options {
		if o.InstanceType != "r9.xlarge" {
			t.Errorf("option %s: only r9.xlarge has the device", o.InstanceType)
		}
		if o.Price != 0.05 || !o.PriceOverlaid {
			t.Errorf("%s option at $%v/h overlaid=%v, want the overlay's $0.05/h", o.InstanceType, o.Price, o.PriceOverlaid)
		}
	}
	var out bytes.Buffer
	if err := rec.Flush(&out); err != nil {
		t.Fatal(err)
	}
	var price []float64
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if v, ok := m[metrics.LaunchedPricePerHour].(float64); ok {
			price = append(price, v)
		}
	}
	if len(price) != 1 || price[0] != 0.05 {
		t.Errorf("%s %v, want the overlay's 0.05\n%s", metrics.LaunchedPricePerHour, price, out.String())
	}
}
