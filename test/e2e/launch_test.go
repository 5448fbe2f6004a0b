package e2e

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/kubeletsim"
	"github.com/joist-dev/joist/test/testenv"
)

// al2023Env is what AL2023 nodes need besides the ground's defaults: the
// cluster's service range for nodeadm's NodeConfig.
var al2023Env = map[string]string{"CLUSTER_SERVICE_CIDR": "10.100.0.0/16"}

// allBound waits until every pod is bound and returns their nodes by pod.
func allBound(t testing.TB, g *testenv.Ground, pods []*corev1.Pod, timeout time.Duration) map[string]*corev1.Node {
	t.Helper()
	ctx := context.Background()
	nodes := map[string]*corev1.Node{}
	eventually(t, timeout, fmt.Sprintf("%d pods bound", len(pods)), func() (bool, error) {
		for _, p := range pods {
			got, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || got.Spec.NodeName == "" {
				return false, err
			}
			n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, got.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			nodes[p.Name] = n
		}
		return true, nil
	})
	return nodes
}

func poolInstances(g *testenv.Ground, pool string) []ec2sim.Instance {
	var out []ec2sim.Instance
	for _, i := range g.EC2.Instances() {
		if i.Tags[launch.TagNodePool] == pool {
			out = append(out, i)
		}
	}
	return out
}

// TestE2E_InsufficientCapacityFallback: the seed's service pool prefers
// t3.large, which is out of on-demand capacity in both of its zones. The
// same reconcile launches the next option, t3.xlarge; both nginx pods end
// bound to it, and there is no retry storm of CreateFleet calls.
func TestE2E_InsufficientCapacityFallback(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "ice-cluster", Namespace: "ice", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
	})
	for _, z := range []string{"ap-northeast-2a", "ap-northeast-2c"} {
		g.EC2.SetInsufficientCapacity("t3.large", z, "on-demand", true)
	}
	pending := createPending(t, g, deploymentPods(t, seed(t)))
	nodes := allBound(t, g, pending, 90*time.Second)

	service := poolInstances(g, "service")
	if len(service) != 1 {
		t.Fatalf("service instances = %+v, want exactly one", service)
	}
	if service[0].InstanceType != "t3.xlarge" || service[0].CapacityType != "on-demand" {
		t.Errorf("service instance is %s %s, want on-demand t3.xlarge", service[0].CapacityType, service[0].InstanceType)
	}
	for _, n := range nodes {
		if n.Labels["node.kubernetes.io/instance-type"] != "t3.xlarge" {
			t.Errorf("pod bound to node %s of type %s", n.Name, n.Labels["node.kubernetes.io/instance-type"])
		}
	}
	// Once every message is handled, still no storm: the fleet fell back
	// within one call (or very few), and nothing else launched.
	settled(t, g, 60*time.Second)
	calls := g.EC2.CreateFleetOperations()
	if len(calls) > 3 {
		t.Errorf("CreateFleet calls = %d, want at most 3", len(calls))
	}
	var iceSeen bool
	for _, c := range calls {
		for _, e := range c.Errors {
			if e.InstanceType == "t3.large" && e.Code == "InsufficientInstanceCapacity" {
				iceSeen = true
			}
		}
	}
	if !iceSeen {
		t.Error("no CreateFleet reported t3.large out of capacity: the fallback was not exercised")
	}
	if n := len(g.EC2.Instances()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

// spotSpecs is a v1 NodePool allowing spot and on-demand, on AL2023.
const spotSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: flex}
spec:
  template:
    metadata:
      labels: {workload: flex}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: flex}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.large, m5.large, t3.xlarge]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: flex}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-spot-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: flexible}
spec:
  replicas: 1
  selector: {matchLabels: {app: flexible}}
  template:
    metadata: {labels: {app: flexible}}
    spec:
      nodeSelector: {workload: flex}
      containers:
      - name: app
        image: nginx
        resources: {requests: {cpu: "1", memory: 1Gi}}
`

// TestE2E_SpotPreferred: a pool that allows spot and on-demand gets a
// spot instance, launched with price-capacity-optimized.
func TestE2E_SpotPreferred(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "spot-cluster", Namespace: "spot", Specs: []byte(spotSpecs), ReadyDelay: 300 * time.Millisecond, ExtraEnv: al2023Env,
	})
	pending := createPending(t, g, deploymentPods(t, []byte(spotSpecs)))
	nodes := allBound(t, g, pending, 90*time.Second)

	flex := poolInstances(g, "flex")
	if len(flex) != 1 || flex[0].CapacityType != "spot" {
		t.Fatalf("flex instances = %+v, want one spot instance", flex)
	}
	for _, n := range nodes {
		if n.Labels["karpenter.sh/capacity-type"] != "spot" {
			t.Errorf("node %s capacity-type label = %q, want spot", n.Name, n.Labels["karpenter.sh/capacity-type"])
		}
	}
	c := g.EC2.CreateFleetOperations()[0]
	if c.DefaultTargetCapacityType != "spot" || c.SpotAllocationStrategy != "price-capacity-optimized" {
		t.Errorf("CreateFleet capacity %s with spot strategy %q, want spot with price-capacity-optimized", c.DefaultTargetCapacityType, c.SpotAllocationStrategy)
	}
}

// labelSpecs is a v1 NodePool with labels, taints and startup taints on
// AL2023, and kubelet settings.
const labelSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: tagged}
spec:
  template:
    metadata:
      labels: {team: payments, example.com/tier: gold}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: tagged}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, t3.large]}
      - {key: topology.kubernetes.io/zone, operator: In, values: [ap-northeast-2a, ap-northeast-2b]}
      taints:
      - {key: payments, value: "true", effect: NoSchedule}
      startupTaints:
      - {key: example.com/agent-not-ready, effect: NoExecute}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: tagged}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-label-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  kubelet: {maxPods: 50, systemReserved: {cpu: 100m}}
  tags: {cost-center: "7"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: payments}
spec:
  replicas: 1
  selector: {matchLabels: {app: payments}}
  template:
    metadata: {labels: {app: payments}}
    spec:
      nodeSelector: {team: payments}
      tolerations:
      - {key: payments, operator: Equal, value: "true", effect: NoSchedule}
      - {key: example.com/agent-not-ready, operator: Exists, effect: NoExecute}
      containers:
      - name: app
        image: nginx
        resources: {requests: {cpu: 500m, memory: 512Mi}}
`

// TestE2E_NodeRegistersWithExactlyThePoolsLabelsAndTaints: a v1 NodePool
// on AL2023 brings a node whose labels are exactly the pool's, the pool
// and capacity-type labels, and what a kubelet sets itself; whose taints
// are exactly the pool's taints and startup taints; and which the kubelet
// learned from a NodeConfig in the AL2023 image's user data.
func TestE2E_NodeRegistersWithExactlyThePoolsLabelsAndTaints(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "label-cluster", Namespace: "labels", Specs: []byte(labelSpecs), ReadyDelay: 300 * time.Millisecond, ExtraEnv: al2023Env,
	})
	ctx := context.Background()
	pending := createPending(t, g, deploymentPods(t, []byte(labelSpecs)))

	var node *corev1.Node
	eventually(t, 90*time.Second, "the tagged pool's node Ready", func() (bool, error) {
		list, err := g.Kube.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=tagged"})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		n := &list.Items[0]
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				for _, tn := range n.Spec.Taints {
					if tn.Key == corev1.TaintNodeNotReady {
						return false, nil
					}
				}
				node = n
				return true, nil
			}
		}
		return false, nil
	})
	insts := poolInstances(g, "tagged")
	if len(insts) != 1 {
		t.Fatalf("tagged instances = %+v, want one", insts)
	}
	inst := insts[0]
	want := map[string]string{
		"team": "payments", "example.com/tier": "gold",
		"karpenter.sh/nodepool": "tagged", "karpenter.sh/capacity-type": "on-demand",
		// A v1 node names its EC2NodeClass, as Karpenter's do.
		"karpenter.k8s.aws/ec2nodeclass": "tagged",
		// What the kubelet (here its simulator) sets from the instance.
		"kubernetes.io/hostname": node.Name, "topology.kubernetes.io/zone": inst.Zone, "topology.kubernetes.io/region": "ap-northeast-2",
		// What EKS's cloud controller manager sets (here the kubelet
		// simulator): the zone's ID.
		"topology.k8s.aws/zone-id":         inst.ZoneID,
		"node.kubernetes.io/instance-type": inst.InstanceType, "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
		"joist.sh/simulated": "true",
	}
	if !reflect.DeepEqual(node.Labels, want) {
		t.Errorf("node labels:\n%v\nwant exactly\n%v", sortedPairs(node.Labels), sortedPairs(want))
	}
	var taints []string
	for _, tn := range node.Spec.Taints {
		taints = append(taints, tn.Key+"="+tn.Value+":"+string(tn.Effect))
	}
	sort.Strings(taints)
	if wantTaints := []string{"example.com/agent-not-ready=:NoExecute", "payments=true:NoSchedule"}; !reflect.DeepEqual(taints, wantTaints) {
		t.Errorf("node taints = %v, want exactly %v", taints, wantTaints)
	}
	reg, err := kubeletsim.ParseUserData(inst.UserData)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Format != "AL2023" || reg.MaxPods != 50 || reg.ServiceCIDR != "10.100.0.0/16" || reg.ClusterName != "label-cluster" {
		t.Errorf("user data: format %s, max pods %d, cidr %s, cluster %s; want AL2023, 50, 10.100.0.0/16, label-cluster", reg.Format, reg.MaxPods, reg.ServiceCIDR, reg.ClusterName)
	}
	if got := node.Status.Capacity.Pods().Value(); got != 50 {
		t.Errorf("node pod capacity = %d, want the kubelet's maxPods 50", got)
	}
	if !strings.Contains(inst.LaunchTemplateName, "joist/label-cluster/") || inst.Tags["cost-center"] != "7" || inst.Tags["kubernetes.io/cluster/label-cluster"] != "owned" {
		t.Errorf("instance template %s, tags %v", inst.LaunchTemplateName, inst.Tags)
	}
	_ = allBound(t, g, pending, 30*time.Second)
}

func sortedPairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
