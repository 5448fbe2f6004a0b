package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/testenv"
)

// reservedSpecs: a v1 pool that may run reserved or on-demand capacity,
// whose class selects the capacity reservations tagged team=ml, and two
// pods that each need an m5.large of their own.
const reservedSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: ml}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: ml}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [reserved, on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
      - {key: topology.kubernetes.io/zone, operator: In, values: [ap-northeast-2a, ap-northeast-2b]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: ml}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-reserved-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  capacityReservationSelectorTerms: [{tags: {team: ml}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer}
spec:
  replicas: 2
  selector: {matchLabels: {app: trainer}}
  template:
    metadata: {labels: {app: trainer}}
    spec:
      containers:
      - name: app
        image: trainer
        resources: {requests: {cpu: 1500m, memory: 1Gi}}
`

// TestE2E_CapacityReservationFilledFirst: the class selects one targeted
// reservation with room for one m5.large (and not another team's). Of
// the two nodes the pods need, one is launched into the reservation (the
// account pays for it anyway) and registers as reserved with the
// reservation's labels, the other is bought on demand; the reservation
// is then full, the other team's untouched. The pass reads the
// reservations and launches into one under the functions' own IAM
// policies (the ground checks every call).
func TestE2E_CapacityReservationFilledFirst(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "reserved-cluster", Namespace: "reserved", Specs: []byte(reservedSpecs), ReadyDelay: 300 * time.Millisecond, ExtraEnv: al2023Env,
	})
	ml := g.EC2.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "m5.large", Zone: "ap-northeast-2b",
		MatchCriteria: ec2sim.MatchTargeted, Total: 1, Tags: map[string]string{"team": "ml"}})
	other := g.EC2.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "m5.large", Zone: "ap-northeast-2a",
		MatchCriteria: ec2sim.MatchTargeted, Total: 3, Tags: map[string]string{"team": "search"}})
	pending := createPending(t, g, deploymentPods(t, []byte(reservedSpecs)))
	nodes := allBound(t, g, pending, 90*time.Second)

	ctx := context.Background()
	reserved, onDemand := 0, 0
	for _, p := range pending {
		n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, nodes[p.Name].Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		switch ct := n.Labels["karpenter.sh/capacity-type"]; ct {
		case "reserved":
			reserved++
			if n.Labels["karpenter.k8s.aws/capacity-reservation-id"] != ml || n.Labels["karpenter.k8s.aws/capacity-reservation-type"] != "default" ||
				n.Labels["topology.kubernetes.io/zone"] != "ap-northeast-2b" {
				t.Errorf("reserved node %s labels %v, want reservation %s (default) in ap-northeast-2b", n.Name, sortedPairs(n.Labels), ml)
			}
		case "on-demand":
			onDemand++
			if _, ok := n.Labels["karpenter.k8s.aws/capacity-reservation-id"]; ok {
				t.Errorf("on-demand node %s carries a reservation label: %v", n.Name, sortedPairs(n.Labels))
			}
		default:
			t.Errorf("node %s capacity type %q", n.Name, ct)
		}
	}
	if reserved != 1 || onDemand != 1 {
		t.Fatalf("%d reserved and %d on-demand nodes, want one of each", reserved, onDemand)
	}
	var inReservation []string
	for _, i := range poolInstances(g, "ml") {
		if i.CapacityReservationID != "" {
			inReservation = append(inReservation, i.ID+" in "+i.CapacityReservationID)
		}
	}
	if len(inReservation) != 1 {
		t.Fatalf("instances in reservations: %v, want one, in %s", inReservation, ml)
	}
	if left, _ := g.EC2.CapacityReservationAvailable(ml); left != 0 {
		t.Errorf("reservation %s has %d left, want 0", ml, left)
	}
	if left, _ := g.EC2.CapacityReservationAvailable(other); left != 3 {
		t.Errorf("the other team's reservation %s has %d left, want all 3", other, left)
	}
}

// TestE2E_ConsolidationMovesIntoAReservation: a pod runs on a bought
// t3.large; then a capacity reservation the class selects gets room for
// a t3.large. The room is paid for anyway, so consolidation replaces the
// bought node by one launched into the reservation (Ready before the
// bought one is drained), and the pod ends there.
func TestE2E_ConsolidationMovesIntoAReservation(t *testing.T) {
	specs := strings.Replace(consolidationSpecs, "values: [on-demand]}", "values: [reserved, on-demand]}", 1)
	specs = strings.Replace(specs, "  securityGroupSelectorTerms:", "  capacityReservationSelectorTerms: [{tags: {team: general}}]\n  securityGroupSelectorTerms:", 1)
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "reserve-consolidate", Namespace: "reserve-consolidate", Specs: []byte(fmt.Sprintf(specs, "reserve-consolidate")), ReadyDelay: 300 * time.Millisecond,
		ExtraEnv: al2023Env, ReaperEvery: 5 * time.Second,
	})
	ctx := context.Background()
	app := createPending(t, g, []*corev1.Pod{workloadPod("app", "general", "1")})
	bought := waitBound(t, g, app, 90*time.Second)["app"]
	n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, bought, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ct := n.Labels["karpenter.sh/capacity-type"]; ct != "on-demand" {
		t.Fatalf("the first node is %s, want on-demand (no reservation yet)", ct)
	}
	boughtID := pods.InstanceID(n.Spec.ProviderID)

	cr := g.EC2.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "t3.large", Zone: "ap-northeast-2a",
		MatchCriteria: ec2sim.MatchTargeted, Total: 1, Tags: map[string]string{"team": "general"}})
	// The pod is a bare one (no controller runs on this ground to make it
	// again): watch its eviction and the replacement's readiness.
	var evicted, ready time.Time
	var replacement *corev1.Node
	eventually(t, 180*time.Second, "the bought instance terminated", func() (bool, error) {
		if evicted.IsZero() {
			if _, err := g.Kube.Client.CoreV1().Pods(g.Opts.Namespace).Get(ctx, "app", metav1.GetOptions{}); err != nil {
				evicted = time.Now()
			}
		}
		if replacement == nil {
			nodes, err := g.Kube.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/capacity-type=reserved"})
			if err != nil {
				return false, err
			}
			for i, n := range nodes.Items {
				if pods.NodeReady(&n) {
					replacement = &nodes.Items[i]
					for _, c := range n.Status.Conditions {
						if c.Type == corev1.NodeReady {
							ready = c.LastTransitionTime.Time
						}
					}
				}
			}
		}
		return terminated(instanceState(g, boughtID)), nil
	})
	if replacement == nil {
		t.Fatal("no node in the reservation became Ready before the bought one went")
	}
	if replacement.Labels["karpenter.k8s.aws/capacity-reservation-id"] != cr || replacement.Labels["node.kubernetes.io/instance-type"] != "t3.large" {
		t.Errorf("replacement %s labels %v, want a t3.large in %s", replacement.Name, sortedPairs(replacement.Labels), cr)
	}
	if !evicted.IsZero() && evicted.Before(ready) {
		t.Errorf("the pod was evicted %s before the replacement %s was Ready", ready.Sub(evicted), replacement.Name)
	}
	var inReservation int
	for _, i := range poolInstances(g, "general") {
		if i.CapacityReservationID == cr {
			inReservation++
		}
	}
	if inReservation != 1 {
		t.Errorf("%d instances launched into %s, want one", inReservation, cr)
	}
}
