package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/testenv"
)

// driftSpecs is a v1 NodePool on the al2023@latest alias whose nodes are
// never retired for emptiness or age.
const driftSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: drifty}
spec:
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: Never
  template:
    metadata:
      labels: {workload: drifty}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: drifty}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.large]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: drifty}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-drift
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
`

// TestE2E_DriftedAMIReplaced: AWS publishes a new AL2023 AMI under the
// alias a node class follows (the SSM parameter changes); the node running
// the old image is drifted: its replacement boots the new image and is
// Ready before the old node drains, the pod's successor is bound on it,
// and the old instance is terminated. The replacement is not drifted.
func TestE2E_DriftedAMIReplaced(t *testing.T) {
	env := map[string]string{"JOIST_CACHE_TTL": "2s"}
	for k, v := range al2023Env {
		env[k] = v
	}
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "drift", Namespace: "drift", Specs: []byte(driftSpecs), ReadyDelay: 3 * time.Second,
		ExtraEnv: env, ReaperEvery: 5 * time.Second,
	})
	ctx := context.Background()
	ps := createPending(t, g, []*corev1.Pod{workloadPod("app", "drifty", "500m")})
	nodeName := waitBound(t, g, ps, 90*time.Second)["app"]
	node, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := pods.InstanceID(node.Spec.ProviderID)
	old, _ := g.EC2.Instance(id)
	successors := replicaSet(t, g, ps)
	fleetsBefore := len(g.EC2.CreateFleetOperations())

	// A new release of the image the alias follows.
	newAMI := g.EC2.AddImage(ec2sim.ImageSpec{Name: "amazon-eks-node-al2023-x86_64-standard-" + g.Opts.K8sVersion + "-v2", Architecture: "x86_64", OwnerAlias: "amazon", CreationDate: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)})
	param := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/x86_64/standard/recommended/image_id", g.Opts.K8sVersion)
	if _, err := ssm.NewFromConfig(g.AWS).PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(param), Value: aws.String(newAMI), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true),
	}); err != nil {
		t.Fatal(err)
	}
	if old.ImageID == newAMI || old.ImageID == "" {
		t.Fatalf("old instance runs %q; the new image is %s", old.ImageID, newAMI)
	}

	repl, _, _ := replacedFirst(t, g, nodeName, fleetsBefore, successors, 90*time.Second)
	ri, _ := g.EC2.Instance(pods.InstanceID(repl.Spec.ProviderID))
	if ri.ImageID != newAMI {
		t.Errorf("replacement runs %s, want the new image %s", ri.ImageID, newAMI)
	}
	eventually(t, 60*time.Second, "the drifted node's instance terminated and node gone", func() (bool, error) {
		return terminated(instanceState(g, id)) && nodeGone(t, g, nodeName), nil
	})
	// The replacement is what the class resolves to: it stays.
	if n := len(g.EC2.CreateFleetOperations()); n != fleetsBefore+1 {
		t.Errorf("%d CreateFleet calls after the new image, want exactly the replacement's", n-fleetsBefore)
	}
	if got, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, repl.Name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
		t.Errorf("replacement node %s: %v (deleting %v), want it kept", repl.Name, err, got.DeletionTimestamp)
	}
}
