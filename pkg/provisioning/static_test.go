package provisioning

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
)

// TestReconcile_LaunchesTheNodesStaticPoolsLack: a static pool (replicas)
// gets its nodes with no pod pending, each its own CreateFleet token; a
// pass that finds them launched launches nothing more; limits.nodes caps
// the count; and a pod pending beside them is planned onto the static
// node coming rather than onto a node bought for it.
//
// On the real API server: the passes read nodes and pods there.
func TestReconcile_LaunchesTheNodesStaticPoolsLack(t *testing.T) {
	two, three := int64(2), int64(3)
	t.Run("replicas without pods", func(t *testing.T) {
		a := newAPIServer(t)
		l := &reservingLauncher{}
		warm := &model.Pool{Name: "warm", API: model.APIV1, NodeClass: "plain", Replicas: &two}
		p := reservingProvisioner(a, l, []*model.Pool{warm}, &model.NodeClass{Name: "plain"})
		res, err := p.Reconcile(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Static != 2 || len(l.requests) != 2 || l.requests[0].Token == l.requests[1].Token {
			t.Fatalf("launched %v (%d static), want 2 nodes with tokens of their own", launched(res), res.Static)
		}
		for _, r := range l.requests {
			if r.Pool.Name != "warm" {
				t.Errorf("launched for pool %s, want warm", r.Pool.Name)
			}
		}
		l.inFlight = res.Launched
		res, err = p.Reconcile(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Launched) != 0 {
			t.Fatalf("second pass launched %v, want nothing: the pool has its nodes", launched(res))
		}
	})
	t.Run("limits.nodes caps the replicas", func(t *testing.T) {
		a := newAPIServer(t)
		l := &reservingLauncher{}
		capped := &model.Pool{Name: "capped", API: model.APIV1, NodeClass: "plain", Replicas: &three,
			Limits: corev1.ResourceList{"nodes": resource.MustParse("2")}}
		p := reservingProvisioner(a, l, []*model.Pool{capped}, &model.NodeClass{Name: "plain"})
		res, err := p.Reconcile(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Static != 2 {
			t.Fatalf("launched %v, want 2 (limits.nodes)", launched(res))
		}
	})
	t.Run("in the node class's subnets' zones", func(t *testing.T) {
		a := newAPIServer(t)
		l := &reservingLauncher{}
		warm := &model.Pool{Name: "warm", API: model.APIV1, NodeClass: "east-b", Replicas: &two}
		p := reservingProvisioner(a, l, []*model.Pool{warm}, &model.NodeClass{Name: "east-b"})
		p.NodeClasses = &classResolver{zones: map[string][]string{"east-b": {"us-east-1b"}}}
		res, err := p.Reconcile(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := launched(res); len(got) != 2 || got[0] != "r9.large/us-east-1b/on-demand/" || got[1] != got[0] {
			t.Fatalf("launched %v, want two nodes in us-east-1b", got)
		}
	})
	t.Run("a pending pod goes onto the static node coming", func(t *testing.T) {
		a := newAPIServer(t)
		a.pod(pendingPod("p0", "500m"))
		l := &reservingLauncher{}
		one := int64(1)
		pools := []*model.Pool{
			{Name: "warm", API: model.APIV1, NodeClass: "plain", Replicas: &one},
			{Name: "default", API: model.APIV1, NodeClass: "plain"},
		}
		p := reservingProvisioner(a, l, pools, &model.NodeClass{Name: "plain"})
		res, err := p.Reconcile(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(l.requests) != 1 || l.requests[0].Pool.Name != "warm" || res.Nominated != 1 {
			t.Fatalf("launched %v, %d nominated; want the static node alone, the pod nominated to it", launched(res), res.Nominated)
		}
		got, err := a.cs.CoreV1().Pods("default").Get(context.Background(), "p0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if id := pods.PlannedInstance(got); id != res.Launched[0].ID {
			t.Fatalf("pod planned onto %q, want the static node %s", id, res.Launched[0].ID)
		}
	})
}

// TestStaticCounts: a pool's count is its nodes not deleting nor
// retiring, and its instances not registered yet, each once.
func TestStaticCounts(t *testing.T) {
	node := func(name, pool, id string, deleting bool) *corev1.Node {
		n := &corev1.Node{}
		n.Name, n.Labels, n.Spec.ProviderID = name, map[string]string{model.LabelNodePool: pool}, "aws:///us-east-1a/"+id
		if deleting {
			now := metav1.Now()
			n.DeletionTimestamp = &now
		}
		return n
	}
	nodes := []*corev1.Node{node("a", "warm", "i-a", false), node("b", "warm", "i-b", true), node("c", "warm", "i-c", false), node("d", "other", "i-d", false)}
	var instances []launch.Instance
	for _, id := range []string{"i-a", "i-b", "i-c", "i-e"} {
		instances = append(instances, launch.Instance{ID: id, Pool: "warm"})
	}
	instances = append(instances, launch.Instance{ID: "i-d", Pool: "other"})
	got := (&cluster{nodes: nodes, instances: instances, retiring: map[string]bool{"c": true}}).staticCounts()
	if got["warm"] != 2 || got["other"] != 1 {
		t.Fatalf("counts %v, want warm 2 (a, and i-e coming), other 1", got)
	}
}
