package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/test/testenv"
)

// TestE2E_SeedServiceScaleUp is the walking skeleton: the user's Karpenter
// v0.20 manifests in SSM, the nginx Deployment's two pods unschedulable,
// and the forwarder, provisioner, binder and a simulated kubelet bring
// exactly one service node and bind both pods to it.
func TestE2E_SeedServiceScaleUp(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "hoon-cluster", Namespace: "seed", Specs: seed(t), ReadyDelay: 500 * time.Millisecond,
	})
	ctx := context.Background()
	pending := createPending(t, g, deploymentPods(t, seed(t)))
	if len(pending) != 2 {
		t.Fatalf("seed Deployment expanded to %d pods, want 2", len(pending))
	}

	var node *corev1.Node
	eventually(t, 90*time.Second, "both nginx pods bound", func() (bool, error) {
		for _, p := range pending {
			got, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || got.Spec.NodeName == "" {
				return false, err
			}
			n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, got.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			node = n
		}
		return true, nil
	})

	var service, management []string
	for _, i := range g.EC2.Instances() {
		switch i.Tags[launch.TagNodePool] {
		case "service":
			service = append(service, i.ID)
			if i.InstanceType != "t3.large" && i.InstanceType != "t3.xlarge" {
				t.Errorf("service instance %s is %s, want t3.large or t3.xlarge", i.ID, i.InstanceType)
			}
			if i.Zone != "ap-northeast-2a" && i.Zone != "ap-northeast-2c" {
				t.Errorf("service instance %s is in %s, want ap-northeast-2a or 2c", i.ID, i.Zone)
			}
			if i.CapacityType != "on-demand" {
				t.Errorf("service instance %s is %s, want on-demand", i.ID, i.CapacityType)
			}
			if i.Tags[launch.TagCluster] != "hoon-cluster" || i.Tags["kubernetes.io/cluster/hoon-cluster"] != "owned" {
				t.Errorf("service instance %s tags %v lack the cluster tags", i.ID, i.Tags)
			}
		case "management":
			management = append(management, i.ID)
		}
	}
	if len(service) != 1 || len(management) != 0 {
		t.Fatalf("instances: service %v, management %v; want exactly one service instance and none for management", service, management)
	}
	if node.Labels["nodeType"] != "service-2023" {
		t.Errorf("node %s labels %v lack nodeType=service-2023", node.Name, node.Labels)
	}
	if node.Labels["karpenter.sh/provisioner-name"] != "service" {
		t.Errorf("node %s labels %v lack karpenter.sh/provisioner-name=service", node.Name, node.Labels)
	}
	hasTaint := false
	for _, tn := range node.Spec.Taints {
		if tn.Key == "service" && tn.Value == "true" && tn.Effect == corev1.TaintEffectNoSchedule {
			hasTaint = true
		}
	}
	if !hasTaint {
		t.Errorf("node %s taints %v lack service=true:NoSchedule", node.Name, node.Spec.Taints)
	}
	if node.Spec.ProviderID != "aws:///"+service0Zone(g, service[0])+"/"+service[0] {
		t.Errorf("node %s providerID %q does not name instance %s", node.Name, node.Spec.ProviderID, service[0])
	}
	// What happened is visible where an operator looks: kubectl describe.
	// A pod's Bound event is written after its binding, so the pods being
	// bound does not mean the event is there yet: wait for it.
	eventually(t, 30*time.Second, "each pod's Nominated and Bound events", func() (bool, error) {
		evs, err := g.Kube.Client.CoreV1().Events("seed").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		reasons := map[string]map[string]bool{}
		for _, e := range evs.Items {
			if e.Source.Component != "joist" {
				continue
			}
			if reasons[e.InvolvedObject.Name] == nil {
				reasons[e.InvolvedObject.Name] = map[string]bool{}
			}
			reasons[e.InvolvedObject.Name][e.Reason] = true
		}
		for _, p := range pending {
			if !reasons[p.Name]["Nominated"] || !reasons[p.Name]["Bound"] {
				return false, fmt.Errorf("pod %s has Joist events %v, want Nominated and Bound", p.Name, reasons[p.Name])
			}
		}
		return true, nil
	})
	nodeEvs, err := g.Kube.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,reason=Launched"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodeEvs.Items) == 0 {
		t.Errorf("no Launched event on a node")
	}
	// Nothing was left undone or retried: no message waits in a queue or
	// sits in a DLQ.
	settled(t, g, 60*time.Second)
	if n := len(g.EC2.Instances()); n != 1 {
		t.Fatalf("%d instances after the pods were bound, want still 1", n)
	}
}

func service0Zone(g *testenv.Ground, id string) string {
	for _, i := range g.EC2.Instances() {
		if i.ID == id {
			return i.Zone
		}
	}
	return ""
}

// TestE2E_SeedFromCRDs is the seed scenario with the specs kept as objects
// of Joist's CRDs instead of SSM parameters (SPEC_SOURCE=crd).
func TestE2E_SeedFromCRDs(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "crd-specs", Namespace: "crd-specs", SpecSource: "crd", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
	})
	ps := createPending(t, g, deploymentPods(t, seed(t)))
	nodes := waitBound(t, g, ps, 90*time.Second)
	node, err := g.Kube.Client.CoreV1().Nodes().Get(context.Background(), nodes[ps[0].Name], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels["nodeType"] != "service-2023" || node.Labels["karpenter.sh/provisioner-name"] != "service" {
		t.Fatalf("node labels %v: want the service Provisioner's", node.Labels)
	}
	if ids := launched(g); len(ids) != 1 {
		t.Fatalf("launched %v, want one instance", ids)
	}
}
