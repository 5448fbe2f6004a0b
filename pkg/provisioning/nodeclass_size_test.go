package provisioning

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
)

// TestReconcile_SizesNodesByTheirNodeClass: a node's ephemeral storage is
// its node class's root volume, as on the node Karpenter launches, so a
// pod asking for more than the default 20Gi is planned onto a pool whose
// class gives more, whether on a new node or on an instance of that pool
// still on its way; with the default volume it is unschedulable.
//
// On the real API server: the pass reads and nominates the pods there.
func TestReconcile_SizesNodesByTheirNodeClass(t *testing.T) {
	big := &model.NodeClass{Name: "big", AMIFamily: "AL2023", BlockDeviceMappings: []model.BlockDeviceMapping{
		{DeviceName: "/dev/xvda", RootVolume: true, EBS: &model.EBS{VolumeSize: "200Gi"}},
	}}
	plain := &model.NodeClass{Name: "plain", AMIFamily: "AL2023"}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name                         string
		class                        *model.NodeClass
		inFlight                     []launch.Instance
		launched, nominated, unsched int
	}{
		{name: "a 200Gi root volume holds 60Gi", class: big, launched: 1, nominated: 1},
		{name: "an instance of that class on its way takes it", class: big, nominated: 1,
			inFlight: []launch.Instance{{ID: "i-big", InstanceType: "r9.large", Zone: "us-east-1a", CapacityType: "on-demand", Pool: "default", State: "pending", LaunchTime: now.Add(-time.Minute), Tags: map[string]string{launch.TagCluster: "test"}}}},
		{name: "the default volume does not", class: plain, unsched: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAPIServer(t)
			pod := pendingPod("scratch", "500m")
			pod.Spec.Containers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("60Gi")
			a.pod(pod)
			pool := &model.Pool{Name: "default", API: model.APIV1, NodeClass: c.class.Name}
			p := reservingProvisioner(a, &reservingLauncher{inFlight: c.inFlight}, []*model.Pool{pool}, c.class)
			res, err := p.Reconcile(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Launched) != c.launched || res.Nominated != c.nominated || len(res.Unschedulable) != c.unsched {
				t.Fatalf("launched %v, nominated %d, unschedulable %v; want %d, %d, %d", launched(res), res.Nominated, res.Unschedulable, c.launched, c.nominated, c.unsched)
			}
		})
	}
}
