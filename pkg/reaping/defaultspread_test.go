package reaping_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/reaping"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

// TestConsolidationPlansWithTheDefaultSpread: the reaper's consolidation
// gives the pods it would move the scheduler config's default spread
// constraints (disruption's own test shows what they change), reading
// the Services of their namespace as the provisioner does; without a
// config it reads none. Either way it retires the underused node.
func TestConsolidationPlansWithTheDefaultSpread(t *testing.T) {
	env := testenv.Kube(t)
	ctx := context.Background()
	c := kube.New(env.Client)
	var mu sync.Mutex
	listedServices := 0
	cfgREST := rest.CopyConfig(env.Config)
	cfgREST.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return testenv.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/namespaces/default/services") {
				mu.Lock()
				listedServices++
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	recorded := kube.New(kubernetes.NewForConfigOrDie(cfgREST))
	cat, err := catalog.Offline("us-east-1", []string{"us-east-1a"})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := c.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "spread-web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "spread-web"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Services("default").Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
	})
	cfg, err := scheduling.ParseSchedulerConfig("podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}]}")
	if err != nil {
		t.Fatal(err)
	}
	after := time.Duration(0)
	for _, tc := range []struct {
		name      string
		config    *scheduling.SchedulerConfig
		wantLists bool
	}{
		{"nodefault", nil, false},
		{"hostspread", cfg, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := &model.Pool{Name: "spread-" + tc.name, API: model.APIV1, Requirements: []model.Requirement{
				{Key: model.LabelCapacityType, Operator: "In", Values: []string{"on-demand"}},
				{Key: "karpenter.k8s.aws/instance-category", Operator: "In", Values: []string{"m"}},
			}, Disruption: model.Disruption{ConsolidationPolicy: "WhenEmptyOrUnderutilized", ConsolidateAfter: &after}}
			mkNode := func(name string, annotations map[string]string) {
				pod := cpuPod(name+"-web", "1", annotations)
				pod.Labels = map[string]string{"app": "spread-web"}
				catalogNode(t, c, cat, pool.Name, name, "m5.xlarge", pod)
			}
			a, b := "spread-a-"+tc.name, "spread-b-"+tc.name
			mkNode(a, nil)
			mkNode(b, map[string]string{disruption.AnnotationDoNotDisrupt: "true"})
			fc := clocktesting.NewFakeClock(time.Now())
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			r := &reaping.Reaper{
				Kube: recorded, Log: log, Clock: fc, Cloud: launched{"i-" + a, "i-" + b}, Cluster: "c", SchedulerConfig: tc.config,
				Specs:      func(context.Context) (*model.Spec, error) { return &model.Spec{Pools: []*model.Pool{pool}}, nil },
				Catalog:    func(context.Context) (*catalog.Catalog, error) { return cat, nil },
				Terminator: &termination.Terminator{Kube: c, EC2: &fakeEC2{}, Log: log},
			}
			mu.Lock()
			listedServices = 0
			mu.Unlock()
			if _, err := r.Pass(ctx); err != nil {
				t.Fatal(err)
			}
			fc.Step(disruption.ValidationDelay + time.Second)
			res, err := r.Pass(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Retired) != 1 || res.Retired[0].Node != a {
				t.Fatalf("retired %+v, want %s retired", res.Retired, a)
			}
			mu.Lock()
			defer mu.Unlock()
			if (listedServices > 0) != tc.wantLists {
				t.Errorf("listed the namespace's Services %d times; want some: %v", listedServices, tc.wantLists)
			}
		})
	}
}
