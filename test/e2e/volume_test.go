package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/test/testenv"
)

// volumeSpecs are a pool whose node class gives its nodes a 200Gi root
// volume, and pods that each ask for more ephemeral storage than the
// default 20Gi holds.
const volumeSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: scratch}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: big-disk}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: big-disk}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-volume-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  blockDeviceMappings:
  - deviceName: /dev/xvda
    rootVolume: true
    ebs: {volumeSize: 200Gi, volumeType: gp3, encrypted: true}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: builder}
spec:
  replicas: 2
  selector: {matchLabels: {app: builder}}
  template:
    metadata: {labels: {app: builder}}
    spec:
      containers:
      - name: build
        image: builder
        resources: {requests: {cpu: 500m, memory: 1Gi, ephemeral-storage: 60Gi}}
`

// TestE2E_RootVolumeHoldsEphemeralStorage: pods asking for 60Gi of
// ephemeral storage each are planned onto the pool whose node class has
// a 200Gi root volume (with the default 20Gi they fit nowhere), launched
// with that volume, and bound once the node reports it (the simulated
// kubelet sizes ephemeral storage from the launch template's volume, as a
// kubelet from its disk).
func TestE2E_RootVolumeHoldsEphemeralStorage(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "volume-cluster", Namespace: "volume", Specs: []byte(volumeSpecs), ReadyDelay: 300 * time.Millisecond, ExtraEnv: al2023Env,
	})
	pending := createPending(t, g, deploymentPods(t, []byte(volumeSpecs)))
	nodes := allBound(t, g, pending, 90*time.Second)
	// 200Gi less the kubelet's reserve and 10% eviction threshold.
	least := resource.MustParse("150Gi")
	for _, p := range pending {
		n := nodes[p.Name]
		if got := n.Status.Allocatable[corev1.ResourceEphemeralStorage]; got.Cmp(least) < 0 {
			t.Errorf("pod %s bound to node %s with %s ephemeral storage allocatable, want the 200Gi volume's (at least %s)", p.Name, n.Name, got.String(), least.String())
		}
	}
}
