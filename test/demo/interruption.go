package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/test/testenv"
)

// interruptionSpecs is a spot-only NodePool and a Deployment of two pods
// that share one node.
const interruptionSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  template:
    metadata:
      labels: {workload: web}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: spot}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.large, m5.large, t3.xlarge]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: spot}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-hoon-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {workload: web}
      containers:
      - name: app
        image: nginx
        resources: {requests: {cpu: 500m, memory: 512Mi}}
`

// interruptionNotice is the spot warning's notice here (two minutes in
// AWS): long enough for the replacement to boot (ReadyDelay 2 s) and the
// pods to move, short enough to watch the reclaim.
const interruptionNotice = 30 * time.Second

// interruptionDemo: two pods on a spot node; EC2 warns that it reclaims
// the instance. Joist launches the replacement at once, then retires the
// node (the reaper drains it, the demo plays the pods' ReplicaSet), the
// pods' successors are bound on the replacement, and only then does the
// reclaim come.
func interruptionDemo(kube *testenv.KubeEnv, kumo *testenv.KumoEnv, rie string, logs *os.File) error {
	fmt.Println("Joist demo: a spot interruption, handled replacement-first")
	groundCtx, stopGround := context.WithCancel(context.Background())
	defer stopGround()
	n := &narrator{seen: map[string]bool{}}
	g, err := testenv.StartGround(groundCtx, kube, kumo, rie, testenv.GroundOptions{
		Cluster: "hoon-cluster", Namespace: "default", Specs: []byte(interruptionSpecs), ReadyDelay: 2 * time.Second, Logs: logs,
		ExtraEnv: map[string]string{"CLUSTER_SERVICE_CIDR": "10.100.0.0/16"},
		// The reaper drains retiring nodes; rate(1 minute) in AWS, its
		// loop passing every 5 s while a drain is in progress.
		ReaperEvery: 2 * time.Second,
		OnBatch: func(fn string, ids, failed []string, err error) {
			if fn == "reaper" {
				return // every 2 s: too chatty to narrate
			}
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					n.say("λ %s failed: %v", fn, err)
				}
				return
			}
			n.say("λ %s invoked with %d message(s) (%d failed)", fn, len(ids), len(failed))
		},
	}, testenv.Build)
	if err != nil {
		return fmt.Errorf("start the test ground: %w", err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(groundCtx, scenarioTimeout)
	defer cancel()
	fmt.Println("  a spot-only NodePool; the Deployment's two pods fit one node")
	fmt.Println()

	originals, err := seedPods([]byte(interruptionSpecs))
	if err != nil {
		return err
	}
	n.start = time.Now()
	for _, p := range originals {
		if _, err := g.CreatePending(ctx, p); err != nil {
			return err
		}
	}
	n.say("pods %s and %s pending", originals[0].Name, originals[1].Name)
	var node *corev1.Node
	for node == nil {
		if err := pause(ctx, fmt.Errorf("waited %s for the pods to be bound to the spot node", scenarioTimeout)); err != nil {
			return err
		}
		on := map[string]bool{}
		for _, p := range originals {
			got, err := g.Kube.Client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			on[got.Spec.NodeName] = true
		}
		if len(on) != 1 || on[""] {
			continue // not both bound, or not on one node yet
		}
		for name := range on {
			if node, err = g.Kube.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
	}
	old, _ := g.EC2.Instance(pods.InstanceID(node.Spec.ProviderID))
	n.say("both pods bound on node %s: instance %s, %s %s in %s", node.Name, old.ID, old.CapacityType, old.InstanceType, old.Zone)
	fmt.Println()

	fmt.Printf("EC2 reclaims %s: the spot interruption warning goes on the default bus, %s notice (two minutes in AWS)\n", old.ID, interruptionNotice)
	fleetsBefore := len(g.EC2.CreateFleetOperations())
	n.start, n.seen = time.Now(), map[string]bool{}
	// Only what the interruption brings is narrated.
	before, err := g.Kube.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, e := range before.Items {
		n.seen["event/"+e.Name] = true
	}
	reclaimed, err := g.EC2.InterruptSpot(old.ID, interruptionNotice)
	if err != nil {
		return err
	}
	n.say("EC2 Spot Instance Interruption Warning for %s", old.ID)
	successors := map[string]string{} // original → successor
	var replacement string
	var evicted, boundOnReplacement time.Time
	done := false
	for !done {
		if err := pause(ctx, fmt.Errorf("waited until %s into the scenario for the interruption to be handled; it was not", scenarioTimeout)); err != nil {
			return err
		}
		if calls := g.EC2.CreateFleetOperations(); len(calls) > fleetsBefore && replacement == "" && len(calls[fleetsBefore].InstanceIDs) == 1 {
			replacement = calls[fleetsBefore].InstanceIDs[0]
			r, _ := g.EC2.Instance(replacement)
			n.say("replacement CreateFleet: %s, %s %s in %s (not the interrupted offering %s in %s); nothing evicted yet",
				r.ID, r.CapacityType, r.InstanceType, r.Zone, old.InstanceType, old.Zone)
		}
		evs, err := g.Kube.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Source.Component != "joist" {
				continue
			}
			if e.Reason == "Evicted" && evicted.IsZero() {
				evicted = time.Now()
			}
			n.once("event/"+e.Name, "Event %s/%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
		cur, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			n.once("gone/"+node.Name, "node %s released: drained, its instance terminated", node.Name)
		case err != nil:
			return err
		case cur.DeletionTimestamp != nil:
			n.once("retiring/"+node.Name, "node %s tainted karpenter.sh/disrupted:NoSchedule and deleted; the finalizer holds it while the reaper drains it", node.Name)
		}
		// The Deployment's ReplicaSet: a successor for each evicted pod.
		for _, p := range originals {
			if successors[p.Name] != "" {
				continue
			}
			if _, err := g.Kube.Client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				continue
			}
			next := p.DeepCopy()
			next.Name = p.Name + "-2"
			if _, err := g.CreatePending(ctx, next); err != nil {
				return err
			}
			successors[p.Name] = next.Name
			n.say("pod %s evicted; its ReplicaSet creates %s", p.Name, next.Name)
		}
		all := len(successors) == len(originals)
		for _, s := range successors {
			got, err := g.Kube.Client.CoreV1().Pods("default").Get(ctx, s, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Spec.NodeName == "" {
				all = false
				continue
			}
			on, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, got.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.once("bound/"+s, "pod %s bound to %s (instance %s)", s, on.Name, pods.InstanceID(on.Spec.ProviderID))
			if pods.InstanceID(on.Spec.ProviderID) != replacement {
				return fmt.Errorf("pod %s bound on %s, not on the replacement %s", s, pods.InstanceID(on.Spec.ProviderID), replacement)
			}
		}
		if all && boundOnReplacement.IsZero() {
			boundOnReplacement = time.Now()
		}
		select {
		case <-reclaimed:
			if n.seen["gone/"+node.Name] {
				n.once("reclaimed", "the notice ran out: EC2's reclaim finds %s already drained and terminated by Joist", old.ID)
			} else {
				n.once("reclaimed", "the notice ran out: EC2 reclaims %s", old.ID)
			}
			done = !boundOnReplacement.IsZero()
		default:
		}
	}
	fmt.Println()
	if calls := g.EC2.CreateFleetOperations(); len(calls) > fleetsBefore {
		fmt.Printf("warning → replacement CreateFleet: %.2fs", calls[fleetsBefore].At.Sub(n.start).Seconds())
		if !evicted.IsZero() {
			fmt.Printf("; the first eviction seen %.2fs after it", evicted.Sub(calls[fleetsBefore].At).Seconds())
		}
		fmt.Println()
	}
	fmt.Printf("warning → both pods bound on the replacement: %.1fs, %.1fs before the reclaim (Karpenter launches the replacement only after the drain)\n",
		boundOnReplacement.Sub(n.start).Seconds(), interruptionNotice.Seconds()-boundOnReplacement.Sub(n.start).Seconds())
	fmt.Printf("Function logs: %s\n", logPath)
	fmt.Println("cleaning up ...")
	return nil
}

// pause waits one polling period, or fails with err once ctx is done.
func pause(ctx context.Context, err error) error {
	select {
	case <-ctx.Done():
		return err
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}
