package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/testenv"
)

// placementSpecs are a pool whose node class names the partition
// placement group "racks", and three pods that must spread over its
// partitions (maxSkew 1): one small node would hold them all.
var placementSpecs = strings.Replace(plainPool("placement-cluster"), "  amiSelectorTerms:", "  placementGroupSelector: {name: racks}\n  amiSelectorTerms:", 1) + `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: kafka}
spec:
  replicas: 3
  selector: {matchLabels: {app: kafka}}
  template:
    metadata: {labels: {app: kafka}}
    spec:
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: karpenter.k8s.aws/placement-group-partition
        whenUnsatisfiable: DoNotSchedule
        labelSelector: {matchLabels: {app: kafka}}
      containers:
      - name: kafka
        image: kafka
        resources: {requests: {cpu: 500m, memory: 1Gi}}
`

// TestE2E_PodsSpreadOverPlacementGroupPartitions: the functions, under
// their own IAM policies (DescribePlacementGroups, CreateFleet on the
// group), plan one node per partition of the class's partition group,
// launch each into its partition, and the pods bind: each node registers
// with the group's id and its partition, and EC2 has each instance in
// that partition.
func TestE2E_PodsSpreadOverPlacementGroupPartitions(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "placement-cluster", Namespace: "placement", Specs: []byte(placementSpecs), ReadyDelay: 300 * time.Millisecond, ExtraEnv: al2023Env,
	})
	id := g.EC2.AddPlacementGroup(ec2sim.PlacementGroup{Name: "racks", Strategy: "partition", PartitionCount: 3})
	pending := createPending(t, g, deploymentPods(t, []byte(placementSpecs)))
	nodes := allBound(t, g, pending, 90*time.Second)
	api := ec2.NewFromConfig(g.AWS, func(o *ec2.Options) { o.BaseEndpoint = aws.String(g.EC2URL) })
	var parts []string
	seen := map[string]bool{}
	for _, n := range nodes {
		if seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		if n.Labels[model.LabelPlacementGroupID] != id {
			t.Errorf("node %s labels %v, want the group %s", n.Name, n.Labels, id)
		}
		part := n.Labels[model.LabelPlacementGroupPartition]
		parts = append(parts, part)
		out, err := api.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{pods.InstanceID(n.Spec.ProviderID)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Reservations) != 1 {
			t.Fatalf("node %s: %d reservations in EC2", n.Name, len(out.Reservations))
		}
		p := out.Reservations[0].Instances[0].Placement
		if aws.ToString(p.GroupId) != id || fmt.Sprint(aws.ToInt32(p.PartitionNumber)) != part {
			t.Errorf("node %s (partition %s): EC2 has it in group %q partition %d", n.Name, part, aws.ToString(p.GroupId), aws.ToInt32(p.PartitionNumber))
		}
	}
	slices.Sort(parts)
	if want := []string{"1", "2", "3"}; !slices.Equal(parts, want) {
		t.Errorf("partitions %v, want %v (a node in each)", parts, want)
	}
}
