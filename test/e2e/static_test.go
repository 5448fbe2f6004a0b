package e2e

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/test/testenv"
)

// staticSpecs are a static NodePool (Karpenter's spec.replicas) of
// REPLICAS nodes, and its class.
const staticSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: warm}
spec:
  replicas: REPLICAS
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: warm}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [m]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: warm}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-static-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
`

// TestE2E_StaticPoolKeepsItsNodes: a static pool of two nodes gets them
// with no pod pending (the safety net's provisioner pass launches them,
// under the functions' own IAM policies and RBAC), and keeps exactly two
// across three more passes; lowered to one, the reaper retires one node
// (drained, its instance terminated) and the pool keeps the other.
func TestE2E_StaticPoolKeepsItsNodes(t *testing.T) {
	var ticks atomic.Int64 // the reaper's scheduled runs done
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "static-cluster", Namespace: "static", Specs: []byte(strings.Replace(staticSpecs, "REPLICAS", "2", 1)),
		ReadyDelay: 300 * time.Millisecond, ExtraEnv: al2023Env, ReaperEvery: 5 * time.Second,
		OnBatch: func(fn string, ids, _ []string, _ error) {
			if fn == "reaper" && slices.Contains(ids, "tick") {
				ticks.Add(1)
			}
		},
	})
	ctx := context.Background()
	// live are the instances EC2 runs (pending or running).
	live := func() (ids []string) {
		for _, i := range g.EC2.Instances() {
			if i.State == "pending" || i.State == "running" {
				ids = append(ids, i.ID)
			}
		}
		return ids
	}
	readyNodes := func() (names []string, err error) {
		list, err := g.Kube.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=warm"})
		if err != nil {
			return nil, err
		}
		for _, n := range list.Items {
			if pods.NodeReady(&n) && n.DeletionTimestamp == nil {
				names = append(names, n.Name)
			}
		}
		return names, nil
	}
	eventually(t, 90*time.Second, "two Ready nodes of the static pool", func() (bool, error) {
		names, err := readyNodes()
		return len(names) == 2, err
	})
	from := ticks.Load()
	eventually(t, 60*time.Second, "three more passes of the safety net", func() (bool, error) { return ticks.Load() >= from+3, nil })
	if ids := live(); len(ids) != 2 {
		t.Fatalf("EC2 runs %v after three more passes, want the static pool's two instances alone", ids)
	}

	if err := g.PushSpecs(ctx, []byte(strings.Replace(staticSpecs, "REPLICAS", "1", 1))); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "one node and one instance of the static pool left", func() (bool, error) {
		names, err := readyNodes()
		all, lerr := g.Kube.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=warm"})
		if err == nil {
			err = lerr
		}
		return err == nil && len(names) == 1 && len(all.Items) == 1 && len(live()) == 1, err
	})
}
