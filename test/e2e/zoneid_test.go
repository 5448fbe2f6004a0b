package e2e

import (
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/test/testenv"
)

// TestE2E_PodSelectingAZoneIDGetsANodeThere: a pod selecting a zone by
// its ID (topology.k8s.aws/zone-id, the same in every account) is planned
// in the zone of that ID, learnt from the node class's subnets under the
// provisioner's own IAM policy, and bound to a node there, which carries
// the ID as EKS's nodes do.
func TestE2E_PodSelectingAZoneIDGetsANodeThere(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "zoneid-cluster", Namespace: "zoneid", Specs: []byte(plainPool("zoneid-cluster")), ReadyDelay: 300 * time.Millisecond, ExtraEnv: al2023Env,
	})
	zone, ids := lastZoneByID(t, g)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: "zoneid"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"topology.k8s.aws/zone-id": ids[zone]},
			Containers: []corev1.Container{{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
		},
	}
	pending := createPending(t, g, []*corev1.Pod{pod})
	n := allBound(t, g, pending, 90*time.Second)["pinned"]
	if n.Labels[corev1.LabelTopologyZone] != zone || n.Labels["topology.k8s.aws/zone-id"] != ids[zone] {
		t.Fatalf("pod bound to node %s in zone %q (ID %q), want %s (%s)", n.Name, n.Labels[corev1.LabelTopologyZone], n.Labels["topology.k8s.aws/zone-id"], zone, ids[zone])
	}
}

// lastZoneByID is the last zone (by name) of the ground's subnets, which
// the plan would not pick unasked, and every subnet zone's ID.
func lastZoneByID(t *testing.T, g *testenv.Ground) (string, map[string]string) {
	t.Helper()
	var zones []string
	ids := map[string]string{}
	for _, sn := range g.EC2.Subnets() {
		if sn.ZoneID != "" && ids[sn.Zone] == "" {
			zones = append(zones, sn.Zone)
			ids[sn.Zone] = sn.ZoneID
		}
	}
	sort.Strings(zones)
	if len(zones) < 2 {
		t.Fatalf("subnets in zones %v, want two or more", zones)
	}
	return zones[len(zones)-1], ids
}
