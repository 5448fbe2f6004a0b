package e2e

import (
	"testing"
	"time"

	"github.com/joist-dev/joist/test/testenv"
)

// plainPool is a v1 NodePool "plain" of on-demand nodes and its class, for
// a ground of the cluster.
func plainPool(cluster string) string {
	return `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: plain}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: plain}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: plain}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-` + cluster + `
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
`
}

// twoWebPods is a Deployment of two pods any type holds.
const twoWebPods = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
        resources: {requests: {cpu: 500m, memory: 1Gi}}
`

// readinessSpecs are a heavier pool whose node class's subnet selector
// has a typo (no subnet carries the tag) beside a plain pool, and a pod
// either takes.
var readinessSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: typo}
spec:
  weight: 100
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: typo}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: typo}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-readiness-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: readiness-clustre}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
---` + plainPool("readiness-cluster") + `---
` + twoWebPods

// TestE2E_PoolWhoseNodeClassCannotLaunchIsPassedOver: the heaviest pool's
// node class selects no subnet (a typo in the tag), so no node of it
// could ever launch; as Karpenter leaves a NodePool whose EC2NodeClass is
// not Ready out of scheduling, the provisioner (resolving the classes
// under its own IAM policy) plans the pods onto the next pool, and they
// are bound there. Without the check every pass plans the typo pool and
// its launch fails, and the pods stay pending.
func TestE2E_PoolWhoseNodeClassCannotLaunchIsPassedOver(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "readiness-cluster", Namespace: "readiness", Specs: []byte(readinessSpecs), ReadyDelay: 300 * time.Millisecond, ExtraEnv: al2023Env,
	})
	pending := createPending(t, g, deploymentPods(t, []byte(readinessSpecs)))
	nodes := allBound(t, g, pending, 90*time.Second)
	for _, p := range pending {
		if n := nodes[p.Name]; n.Labels["karpenter.sh/nodepool"] != "plain" {
			t.Errorf("pod %s bound to node %s of pool %q, want plain", p.Name, n.Name, n.Labels["karpenter.sh/nodepool"])
		}
	}
}
