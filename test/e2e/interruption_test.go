package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/testenv"
)

// interruptSpecs is a spot-only v1 NodePool (annotations, when given,
// are the NodePool's) and two pods of 500m that share one node.
func interruptSpecs(cluster, annotations string) string {
	meta := "{name: intr}"
	if annotations != "" {
		meta = "{name: intr, annotations: {" + annotations + "}}"
	}
	return `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: ` + meta + `
spec:
  template:
    metadata:
      labels: {workload: intr}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: intr}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.large, m5.large, t3.xlarge]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: intr}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-` + cluster + `
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
      nodeSelector: {workload: intr}
      containers:
      - name: app
        image: nginx
        resources: {requests: {cpu: 500m, memory: 512Mi}}
`
}

// batches records what the interruption function was handed and what it
// reported as failed.
type batches struct {
	mu      sync.Mutex
	handled map[string]int // message id → deliveries
	failed  map[string]bool
	errs    int
}

func (b *batches) hook(function string, ids, failed []string, err error) {
	if function != "interruption" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.handled == nil {
		b.handled, b.failed = map[string]int{}, map[string]bool{}
	}
	for _, id := range ids {
		b.handled[id]++
	}
	for _, id := range failed {
		b.failed[id] = true
	}
	if err != nil {
		b.errs++
	}
}

func (b *batches) count() (handled, failed, errs int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.handled), len(b.failed), b.errs
}

// interruptGround is a ground for one interruption scenario, with its
// pods bound to one spot node.
func interruptGround(t *testing.T, cluster, annotations string, keepGone bool) (*testenv.Ground, *batches, []*corev1.Pod, *corev1.Node, ec2sim.Instance) {
	return interruptGroundWith(t, cluster, annotations, keepGone, 300*time.Millisecond, 0)
}

// interruptGroundWith is interruptGround with the kubelet's ReadyDelay and
// the reaper's period (0: no reaper, so a retirement begun is not drained).
func interruptGroundWith(t *testing.T, cluster, annotations string, keepGone bool, readyDelay, reaperEvery time.Duration) (*testenv.Ground, *batches, []*corev1.Pod, *corev1.Node, ec2sim.Instance) {
	t.Helper()
	return interruptGroundOpts(t, annotations, testenv.GroundOptions{
		Cluster: cluster, ReadyDelay: readyDelay, ReaperEvery: reaperEvery, KubeletKeepsGoneNodes: keepGone,
	})
}

// interruptGroundOpts is interruptGround with the ground's options given
// (Cluster, ReadyDelay, ReaperEvery, HealthEvery, KubeletKeepsGoneNodes);
// the namespace, specs, environment, batch hook and visibility timeout
// are the interruption scenarios'.
func interruptGroundOpts(t testing.TB, annotations string, o testenv.GroundOptions) (*testenv.Ground, *batches, []*corev1.Pod, *corev1.Node, ec2sim.Instance) {
	t.Helper()
	b := &batches{}
	specs := interruptSpecs(o.Cluster, annotations)
	o.Namespace, o.Specs, o.ExtraEnv, o.OnBatch, o.VisibilityTimeout = o.Cluster, []byte(specs), al2023Env, b.hook, 2
	g := testenv.NewGround(t, o)
	pending := createPending(t, g, deploymentPods(t, []byte(specs)))
	nodes := allBound(t, g, pending, 90*time.Second)
	node := nodes[pending[0].Name]
	if nodes[pending[1].Name].Name != node.Name {
		t.Fatalf("pods on %s and %s, want one node", node.Name, nodes[pending[1].Name].Name)
	}
	inst, ok := g.EC2.Instance(pods.InstanceID(node.Spec.ProviderID))
	if !ok || inst.CapacityType != ec2sim.Spot {
		t.Fatalf("node %s: instance %+v, want a spot instance", node.Name, inst)
	}
	return g, b, pending, node, inst
}

// replicaSet plays a ReplicaSet for pods: each one deleted (evicted) gets
// a pending successor, "<name>-again". It stops with the test.
func replicaSet(t testing.TB, g *testenv.Ground, originals []*corev1.Pod) func() []*corev1.Pod {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var mu sync.Mutex
	var successors []*corev1.Pod
	done := map[string]bool{}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for ; ctx.Err() == nil; waitTick(ctx, tick) {
			for _, p := range originals {
				if done[p.Name] {
					continue
				}
				if _, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					continue
				}
				next := p.DeepCopy()
				next.Name, next.UID, next.ResourceVersion, next.Spec.NodeName, next.Annotations = p.Name+"-again", "", "", "", nil
				next.Status = corev1.PodStatus{}
				created, err := g.CreatePending(ctx, next)
				if err != nil {
					continue
				}
				done[p.Name] = true
				mu.Lock()
				successors = append(successors, created)
				mu.Unlock()
			}
		}
	}()
	return func() []*corev1.Pod {
		mu.Lock()
		defer mu.Unlock()
		return append([]*corev1.Pod(nil), successors...)
	}
}

// TestE2E_SpotInterruptionReplacesFirst: a spot node with two pods gets a
// spot warning (a 30 s notice here). The replacement's CreateFleet is
// issued within 5 s of the warning, before anything is evicted, and not
// for the interrupted offering (type, zone, spot); the node's retirement
// is begun through the termination engine, whose drain (the reaper's
// loop) evicts the pods; the test plays their ReplicaSet; every successor
// is bound on the replacement before the notice runs out; the old node
// and instance are gone; nothing else was launched.
//
// JOIST_INTERRUPTION_READY_DELAY (a Go duration, default 300ms) sets the
// simulated kubelet's ReadyDelay; the notice is then 30 s or four times
// that, whichever is longer (30s gives a 120 s notice, AWS's).
func TestE2E_SpotInterruptionReplacesFirst(t *testing.T) {
	readyDelay := 300 * time.Millisecond
	if v := os.Getenv("JOIST_INTERRUPTION_READY_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("JOIST_INTERRUPTION_READY_DELAY: %v", err)
		}
		readyDelay = d
	}
	notice := max(30*time.Second, 4*readyDelay)
	g, b, pending, node, old := interruptGroundWith(t, "intr-spot", "", false, readyDelay, 2*time.Second)
	fleetsBefore := len(g.EC2.CreateFleetOperations())
	successors := replicaSet(t, g, pending)

	warned := time.Now()
	reclaimed, err := g.EC2.InterruptSpot(old.ID, notice)
	if err != nil {
		t.Fatal(err)
	}
	var replacement ec2sim.CreateFleetRecord
	eventually(t, notice, "the replacement's CreateFleet", func() (bool, error) {
		calls := g.EC2.CreateFleetOperations()
		if len(calls) > fleetsBefore {
			replacement = calls[fleetsBefore]
			return true, nil
		}
		return false, nil
	})
	if d := replacement.At.Sub(warned); d > 5*time.Second {
		t.Errorf("replacement CreateFleet %s after the warning, want within 5 s", d)
	}
	t.Logf("warning → replacement CreateFleet: %s", replacement.At.Sub(warned).Round(time.Millisecond))
	if len(replacement.InstanceIDs) != 1 {
		t.Fatalf("replacement fleet launched %v (errors %v)", replacement.InstanceIDs, replacement.Errors)
	}
	repl, _ := g.EC2.Instance(replacement.InstanceIDs[0])
	if repl.InstanceType == old.InstanceType && repl.Zone == old.Zone && repl.CapacityType == old.CapacityType {
		t.Errorf("replacement is the interrupted offering %s/%s/%s", repl.InstanceType, repl.Zone, repl.CapacityType)
	}
	evictedBefore(t, g, "intr-spot", replacement.At)

	successorsBoundOn(t, g, successors, len(pending), repl.ID, notice)
	select {
	case <-reclaimed:
		t.Errorf("the pods were bound on the replacement only after the reclaim")
	default:
	}
	t.Logf("warning → every pod bound on the replacement: %s (ReadyDelay %s, notice %s)", time.Since(warned).Round(time.Millisecond), readyDelay, notice)
	if _, _, errs := b.count(); errs != 0 {
		t.Errorf("%d interruption invocations failed", errs)
	}

	eventually(t, notice+30*time.Second, "the old node and instance gone", func() (bool, error) {
		return nodeGone(t, g, node.Name) && terminated(instanceState(g, old.ID)), nil
	})
	<-reclaimed
	if n := len(g.EC2.CreateFleetOperations()); n != fleetsBefore+1 {
		t.Errorf("%d CreateFleet calls after the warning, want exactly the replacement's", n-fleetsBefore)
	}
}

// successorsBoundOn waits until want successors (from replicaSet) exist
// and every one is bound to the node of instance id; a successor bound
// elsewhere fails the test.
func successorsBoundOn(t testing.TB, g *testenv.Ground, successors func() []*corev1.Pod, want int, id string, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	eventually(t, timeout, "every pod's successor bound on the replacement", func() (bool, error) {
		next := successors()
		if len(next) < want {
			return false, nil
		}
		for _, p := range next {
			got, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || got.Spec.NodeName == "" {
				return false, err
			}
			n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, got.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if on := pods.InstanceID(n.Spec.ProviderID); on != id {
				return false, fmt.Errorf("pod %s bound to %s, want the replacement %s", p.Name, on, id)
			}
		}
		return true, nil
	})
}

// evictedBefore fails the test for every pod of the namespace evicted
// before at (the replacement's CreateFleet).
func evictedBefore(t testing.TB, g *testenv.Ground, namespace string, at time.Time) {
	t.Helper()
	evs, err := g.Kube.Client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + termination.ReasonEvicted})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.FirstTimestamp.Time.Before(at) {
			t.Errorf("pod %s evicted at %s, before the replacement's CreateFleet at %s", e.InvolvedObject.Name, e.FirstTimestamp.Time, at)
		}
	}
}

// TestE2E_InterruptedPodsKeepTheirRoomOnTheReplacement: with no drain
// running (no reaper), the interrupted node's pods keep running; a pod
// that arrives during the notice and would fit only in the room they will
// need on the replacement gets a node of its own.
func TestE2E_InterruptedPodsKeepTheirRoomOnTheReplacement(t *testing.T) {
	ctx := context.Background()
	g, _, _, node, old := interruptGround(t, "intr-room", "", false)
	fleetsBefore := len(g.EC2.CreateFleetOperations())
	reclaimed, err := g.EC2.InterruptSpot(old.ID, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var repl string
	eventually(t, 10*time.Second, "the replacement launched", func() (bool, error) {
		calls := g.EC2.CreateFleetOperations()
		if len(calls) > fleetsBefore && len(calls[fleetsBefore].InstanceIDs) == 1 {
			repl = calls[fleetsBefore].InstanceIDs[0]
			return true, nil
		}
		return false, nil
	})
	late := deploymentPods(t, []byte(interruptSpecs("intr-room", "")))[0]
	late.Name = "latecomer"
	late.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
	for name, n := range allBound(t, g, createPending(t, g, []*corev1.Pod{late}), 30*time.Second) {
		if id := pods.InstanceID(n.Spec.ProviderID); id == repl || id == old.ID {
			t.Errorf("%s bound to %s, whose room is the interrupted node's pods'", name, id)
		}
	}
	// Let the reclaim happen inside the test: its events must not reach a
	// later scenario's queue.
	<-reclaimed
	eventually(t, 30*time.Second, "the old node gone", func() (bool, error) {
		_, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// TestE2E_ScheduledChangeReplacesFirst: AWS Health schedules the
// retirement of a node's instance. The replacement is launched at once
// while the instance keeps running; the offering is not avoided (the host
// is retiring, not the pool). The drain that should follow is the
// termination engine's (issue 11, not wired): the old node is left alone.
func TestE2E_ScheduledChangeReplacesFirst(t *testing.T) {
	ctx := context.Background()
	g, b, _, node, inst := interruptGround(t, "intr-retire", "", false)
	fleetsBefore := len(g.EC2.CreateFleetOperations())
	if err := g.EC2.ScheduleRetirement(inst.ID, time.Now().Add(14*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the replacement's CreateFleet", func() (bool, error) {
		return len(g.EC2.CreateFleetOperations()) > fleetsBefore, nil
	})
	queueDrained(t, g, g.Msg.Interruption.URL)
	if _, failed, errs := b.count(); failed != 0 || errs != 0 {
		t.Errorf("%d messages failed, %d invocations errored", failed, errs)
	}
	if n := len(g.EC2.CreateFleetOperations()) - fleetsBefore; n != 1 {
		t.Errorf("%d CreateFleet calls, want the replacement's only", n)
	}
	if got, _ := g.EC2.Instance(inst.ID); got.State != "running" {
		t.Errorf("the retiring instance is %s, want running (Joist terminates nothing here)", got.State)
	}
	if _, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the retiring node: %v, want it kept until the drain", err)
	}
}

// TestE2E_StateChangeTerminatedDeletesNode: an instance ends without
// warning. The kubelet simulator is told to leave its node (in EKS the
// cloud controller takes its time), so only Joist's handling of the
// "terminated" state change deletes the node.
func TestE2E_StateChangeTerminatedDeletesNode(t *testing.T) {
	ctx := context.Background()
	g, _, _, node, inst := interruptGround(t, "intr-gone", "", true)
	if err := g.EC2.TerminateExternally(inst.ID); err != nil {
		t.Fatal(err)
	}
	g.EC2.EmitStateChange(inst.ID, "terminated")
	eventually(t, 20*time.Second, "the node of the terminated instance deleted", func() (bool, error) {
		_, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// TestE2E_InterruptionForForeignInstanceIsNoop: another cluster's spot
// instance (tagged for it) gets a warning and then terminates. The
// default bus routes both events to this cluster's queue too; Joist
// handles both messages without error and does nothing: no launch, and
// the node that claims the instance (planted here) stays.
func TestE2E_InterruptionForForeignInstanceIsNoop(t *testing.T) {
	ctx := context.Background()
	b := &batches{}
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "intr-foreign", Namespace: "intr-foreign", Specs: []byte(interruptSpecs("intr-foreign", "")),
		ExtraEnv: al2023Env, OnBatch: b.hook, KubeletKeepsGoneNodes: true, VisibilityTimeout: 2,
	})
	zone := g.Opts.Zones[0]
	id, err := g.EC2.AddRunningInstance("m5.large", zone, map[string]string{launch.TagCluster: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	planted := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "foreign-node"}, Spec: corev1.NodeSpec{ProviderID: "aws:///" + zone + "/" + id}}
	if _, err := g.Kube.Client.CoreV1().Nodes().Create(ctx, planted, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Nodes are cluster-wide and the next ground's instance ids start
	// again at 1: leave nothing behind.
	t.Cleanup(func() {
		_ = g.Kube.Client.CoreV1().Nodes().Delete(context.Background(), planted.Name, metav1.DeleteOptions{})
	})
	if _, err := g.EC2.InterruptSpot(id, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "both messages handled", func() (bool, error) {
		h, _, _ := b.count()
		return h >= 2, nil
	})
	queueDrained(t, g, g.Msg.Interruption.URL)
	if _, failed, errs := b.count(); failed != 0 || errs != 0 {
		t.Errorf("%d messages failed, %d invocations errored; want none", failed, errs)
	}
	if n := len(g.EC2.CreateFleetOperations()); n != 0 {
		t.Errorf("%d CreateFleet calls for another cluster's instance", n)
	}
	if _, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, planted.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the node claiming the foreign instance: %v, want it kept", err)
	}
}

// TestE2E_MalformedInterruptionMessageDropped: a body that is not JSON
// (sent straight to the queue) and an aws.ec2 warning whose instance-id
// is no instance id (through the default bus) are logged and deleted:
// the queue drains at once, nothing reaches the DLQ, nothing is retried.
func TestE2E_MalformedInterruptionMessageDropped(t *testing.T) {
	ctx := context.Background()
	b := &batches{}
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "intr-bad", Namespace: "intr-bad", Specs: []byte(interruptSpecs("intr-bad", "")),
		ExtraEnv: al2023Env, OnBatch: b.hook, VisibilityTimeout: 1,
	})
	sq := sqs.NewFromConfig(g.AWS)
	if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(g.Msg.Interruption.URL), MessageBody: aws.String("this is not an event")}); err != nil {
		t.Fatal(err)
	}
	if _, err := eventbridge.NewFromConfig(g.AWS).PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String("default"), Source: aws.String("aws.ec2"), DetailType: aws.String("EC2 Spot Instance Interruption Warning"),
		Detail: aws.String(`{"instance-id":"../../etc/passwd","instance-action":"terminate"}`),
	}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "both messages handled", func() (bool, error) {
		h, _, _ := b.count()
		return h >= 2, nil
	})
	queueDrained(t, g, g.Msg.Interruption.URL)
	if n := queueDepth(t, g, g.Msg.Interruption.DLQ.URL); n != 0 {
		t.Errorf("%d messages in the DLQ", n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, n := range b.handled {
		if n != 1 || b.failed[id] {
			t.Errorf("message %s delivered %d times (failed %v), want once, not failed", id, n, b.failed[id])
		}
	}
}

// TestE2E_RebalanceIgnoredUnlessPoolOptsIn: a rebalance recommendation
// for a node of a pool without joist.sh/rebalance=replace is a Warning
// Event on the node and nothing else: no launch, the instance runs on.
func TestE2E_RebalanceIgnoredUnlessPoolOptsIn(t *testing.T) {
	g, b, _, node, inst := interruptGround(t, "intr-rebal", "", false)
	fleetsBefore := len(g.EC2.CreateFleetOperations())
	if err := g.EC2.RecommendRebalance(inst.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the recommendation handled", func() (bool, error) {
		h, _, _ := b.count()
		return h >= 1, nil
	})
	queueDrained(t, g, g.Msg.Interruption.URL)
	rebalanceEvent(t, g, node.Name)
	if launched := len(g.EC2.CreateFleetOperations()) - fleetsBefore; launched != 0 {
		t.Errorf("%d CreateFleet calls after the recommendation, want none", launched)
	}
	if got, _ := g.EC2.Instance(inst.ID); got.State != "running" {
		t.Errorf("the recommended instance is %s, want running (a recommendation ends nothing)", got.State)
	}
	if _, err := g.Kube.Client.CoreV1().Nodes().Get(context.Background(), node.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the recommended node: %v, want it kept", err)
	}
}

// TestE2E_RebalanceOptInReplaces: the pool carries
// joist.sh/rebalance=replace, so a rebalance recommendation is handled as
// a spot warning: the replacement's CreateFleet before any eviction, the
// node retired through the termination engine and drained by the reaper,
// the pods' successors bound on the replacement, the recommended instance
// terminated by Joist (AWS ends nothing on a recommendation) and its node
// gone; one launch only.
func TestE2E_RebalanceOptInReplaces(t *testing.T) {
	g, b, pending, node, old := interruptGroundOpts(t, `joist.sh/rebalance: replace`, testenv.GroundOptions{
		Cluster: "intr-rebal-in", ReadyDelay: 300 * time.Millisecond, ReaperEvery: 2 * time.Second,
	})
	fleetsBefore := len(g.EC2.CreateFleetOperations())
	successors := replicaSet(t, g, pending)
	if err := g.EC2.RecommendRebalance(old.ID); err != nil {
		t.Fatal(err)
	}
	var replacement ec2sim.CreateFleetRecord
	eventually(t, 20*time.Second, "the replacement's CreateFleet", func() (bool, error) {
		if calls := g.EC2.CreateFleetOperations(); len(calls) > fleetsBefore {
			replacement = calls[fleetsBefore]
			return true, nil
		}
		return false, nil
	})
	if len(replacement.InstanceIDs) != 1 {
		t.Fatalf("replacement fleet launched %v (errors %v)", replacement.InstanceIDs, replacement.Errors)
	}
	evictedBefore(t, g, "intr-rebal-in", replacement.At)
	rebalanceEvent(t, g, node.Name)
	successorsBoundOn(t, g, successors, len(pending), replacement.InstanceIDs[0], 60*time.Second)
	eventually(t, 60*time.Second, "the recommended instance terminated and its node gone", func() (bool, error) {
		return nodeGone(t, g, node.Name) && terminated(instanceState(g, old.ID)), nil
	})
	if n := len(g.EC2.CreateFleetOperations()) - fleetsBefore; n != 1 {
		t.Errorf("%d CreateFleet calls after the recommendation, want the replacement's only", n)
	}
	if _, failed, errs := b.count(); failed != 0 || errs != 0 {
		t.Errorf("%d messages failed, %d invocations errored", failed, errs)
	}
}

// rebalanceEvent fails the test unless the node has a
// SpotRebalanceRecommendation Event.
func rebalanceEvent(t *testing.T, g *testenv.Ground, node string) {
	t.Helper()
	evs, err := g.Kube.Client.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == kube.ReasonSpotRebalanceRecommendation && e.InvolvedObject.Name == node {
			return
		}
	}
	t.Errorf("no %s Event on node %s", kube.ReasonSpotRebalanceRecommendation, node)
}

// queueDepth is the queue's visible plus in-flight messages.
func queueDepth(t *testing.T, g *testenv.Ground, url string) int {
	t.Helper()
	out, err := sqs.NewFromConfig(g.AWS).GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, k := range []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		var v int
		fmt.Sscan(out.Attributes[string(k)], &v)
		n += v
	}
	return n
}

// queueDrained waits until the queue holds nothing, visible or in flight.
func queueDrained(t *testing.T, g *testenv.Ground, url string) {
	t.Helper()
	eventually(t, 20*time.Second, "the queue "+url[strings.LastIndex(url, "/")+1:]+" drained", func() (bool, error) {
		return queueDepth(t, g, url) == 0, nil
	})
}
