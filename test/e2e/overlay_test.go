package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/joist-dev/joist/test/testenv"
)

// overlaySpecs are a plain pool, a NodeOverlay pricing r5.xlarge nearly
// free in it, and two pods any type holds.
var overlaySpecs = plainPool("overlay-cluster") + `---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: r5-deal}
spec:
  weight: 10
  price: "0.001"
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [plain]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [r5.xlarge]}
---` + twoWebPods

// TestE2E_NodeOverlayPricesThePlanAndTheLaunch: with the NodeOverlay
// among the specs (SSM parameters), the provisioner plans the pods on
// the r5.xlarge the overlay makes cheapest and launches it (CreateFleet
// prioritized by the overlaid prices, under the function's own IAM
// policy); EC2's lowest-price would have picked a cheaper real type.
func TestE2E_NodeOverlayPricesThePlanAndTheLaunch(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "overlay-cluster", Namespace: "overlay", Specs: []byte(overlaySpecs), ReadyDelay: 300 * time.Millisecond, ExtraEnv: al2023Env,
	})
	pending := createPending(t, g, deploymentPods(t, []byte(overlaySpecs)))
	nodes := allBound(t, g, pending, 90*time.Second)
	for _, p := range pending {
		if n := nodes[p.Name]; n.Labels["node.kubernetes.io/instance-type"] != "r5.xlarge" {
			t.Errorf("pod %s bound to node %s of type %q, want the overlay's r5.xlarge", p.Name, n.Name, n.Labels["node.kubernetes.io/instance-type"])
		}
	}
}

// TestE2E_NodeOverlaySelectsAZoneByID: a NodeOverlay that prices
// r5.xlarge nearly free only in one zone ID (topology.k8s.aws/zone-id,
// as the AWS provider puts on every offering) makes the provisioner plan
// and launch the pods there: the zones' IDs come from the node class's
// subnets, under the function's own IAM policy, for the plan's prices and
// for CreateFleet's priorities alike.
func TestE2E_NodeOverlaySelectsAZoneByID(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "overlay-zoneid", Namespace: "overlay-zoneid", Specs: []byte(plainPool("overlay-zoneid")), ReadyDelay: 300 * time.Millisecond, ExtraEnv: al2023Env,
	})
	zone, ids := lastZoneByID(t, g)
	specs := plainPool("overlay-zoneid") + `---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: r5-deal-in-one-zone}
spec:
  weight: 10
  price: "0.001"
  requirements:
  - {key: node.kubernetes.io/instance-type, operator: In, values: [r5.xlarge]}
  - {key: topology.k8s.aws/zone-id, operator: In, values: [` + ids[zone] + `]}
`
	if err := g.PushSpecs(context.Background(), []byte(specs)); err != nil {
		t.Fatal(err)
	}
	pending := createPending(t, g, deploymentPods(t, []byte(twoWebPods)))
	nodes := allBound(t, g, pending, 90*time.Second)
	for _, p := range pending {
		n := nodes[p.Name]
		if n.Labels["node.kubernetes.io/instance-type"] != "r5.xlarge" || n.Labels["topology.kubernetes.io/zone"] != zone {
			t.Errorf("pod %s bound to node %s of type %q in zone %q, want the overlay's r5.xlarge in %s (%s)", p.Name, n.Name,
				n.Labels["node.kubernetes.io/instance-type"], n.Labels["topology.kubernetes.io/zone"], zone, ids[zone])
		}
	}
}
