package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joistevents "github.com/joist-dev/joist/events"
	"github.com/joist-dev/joist/pkg/forwarder"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/test/testenv"
)

// waitBound waits until every pod is bound and returns the node of each.
func waitBound(t *testing.T, g *testenv.Ground, ps []*corev1.Pod, timeout time.Duration) map[string]string {
	t.Helper()
	ctx := context.Background()
	nodes := map[string]string{}
	eventually(t, timeout, fmt.Sprintf("%d pods bound", len(ps)), func() (bool, error) {
		for _, p := range ps {
			got, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || got.Spec.NodeName == "" {
				return false, err
			}
			nodes[p.Name] = got.Spec.NodeName
		}
		return true, nil
	})
	return nodes
}

// launched is every instance the EC2 simulator launched, whatever its
// state now.
func launched(g *testenv.Ground) []string {
	var ids []string
	for _, i := range g.EC2.Instances() {
		ids = append(ids, i.ID)
	}
	return ids
}

// smallPods are n copies of the seed's nginx pod.
func smallPods(t *testing.T, prefix string, n int) []*corev1.Pod {
	base := deploymentPods(t, seed(t))[0]
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		p := base.DeepCopy()
		p.Name = fmt.Sprintf("%s-%d", prefix, i)
		out = append(out, p)
	}
	return out
}

// dupPut delivers every PutEvents call n times: EventBridge's at-least-once
// delivery at its worst. The first copy goes at once, the others later
// (1.5 s apart, beyond the provisioner's 1 s batching window), so each
// duplicate reaches its function in a batch of its own rather than beside
// the original. It counts the copies delivered by detail type and those
// still to go.
type dupPut struct {
	inner   forwarder.PutEventsAPI
	n       int
	mu      *sync.Mutex
	sent    map[string]int
	waiting *int
}

func newDupPut(inner forwarder.PutEventsAPI, n int) dupPut {
	return dupPut{inner: inner, n: n, mu: &sync.Mutex{}, sent: map[string]int{}, waiting: new(int)}
}

func (d dupPut) put(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	out, err := d.inner.PutEvents(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for j, e := range in.Entries {
		if j < len(out.Entries) && out.Entries[j].ErrorCode == nil {
			d.sent[aws.ToString(e.DetailType)]++
		}
	}
	return out, nil
}

func (d dupPut) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	out, err := d.put(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	d.mu.Lock()
	*d.waiting += d.n - 1
	d.mu.Unlock()
	go func() {
		ctx := context.WithoutCancel(ctx)
		for i := 1; i < d.n; i++ {
			time.Sleep(1500 * time.Millisecond) // the delivery delay being simulated, not a wait for a result
			_, _ = d.put(ctx, in, opts...)
			d.mu.Lock()
			*d.waiting--
			d.mu.Unlock()
		}
	}()
	return out, nil
}

func (d dupPut) delivered(detailType string) (n, waiting int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sent[detailType], *d.waiting
}

// TestE2E_DuplicateEvents: every event the forwarder puts arrives three
// times, the copies 1.5 s and 3 s after the original, while the instance
// the first planned is still booting (its node stays NotReady 8 s): each
// copy is a reconcile that must count the pods planned onto the in-flight
// instance. Once every copy has been handed to its function (counted, not
// slept on) and the queues are idle, exactly the one instance a single
// delivery gives was launched.
func TestE2E_DuplicateEvents(t *testing.T) {
	var dup dupPut
	var handled handledCounts
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "dup", Namespace: "dup", Specs: seed(t), ReadyDelay: 8 * time.Second, OnBatch: handled.hook,
		WrapPut: func(p forwarder.PutEventsAPI) forwarder.PutEventsAPI { dup = newDupPut(p, 3); return dup },
	})
	ps := createPending(t, g, deploymentPods(t, seed(t)))
	waitBound(t, g, ps, 90*time.Second)
	eventually(t, 60*time.Second, "every copy of every event handled", func() (bool, error) {
		pending, waiting := dup.delivered(joistevents.DetailTypePendingPods)
		ready, _ := dup.delivered(joistevents.DetailTypeNodeReady)
		if waiting > 0 || pending < 3 || ready < 3 {
			return false, fmt.Errorf("delivered %d pending-pods and %d node-ready copies (%d copies still to go), want every copy and at least 3 of each", pending, ready, waiting)
		}
		if p, r := handled.get("provisioner"), handled.get("binder"); p < pending || r < ready {
			return false, fmt.Errorf("provisioner handled %d of %d, binder %d of %d", p, pending, r, ready)
		}
		return true, nil
	})
	settled(t, g, 30*time.Second)
	if ids := launched(g); len(ids) != 1 {
		t.Fatalf("launched %v with every event delivered three times, want exactly the one instance a single delivery gives", ids)
	}
}

func TestE2E_CrashAfterLaunch(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "crash", Namespace: "crash", Specs: seed(t), ReadyDelay: 300 * time.Millisecond, VisibilityTimeout: 3,
		// The dead invocation holds the decider lease until its deadline.
		ExtraEnv:    map[string]string{"AWS_LAMBDA_FUNCTION_TIMEOUT": "8"},
		ReaperEvery: 3 * time.Second,
	})
	var once sync.Once
	g.EC2.AfterAction("CreateFleet", func() {
		// The instance exists; the provisioner dies before it hears so,
		// and so before it records anything on the pods. Lambda starts a
		// fresh environment for the redelivered batch.
		once.Do(func() {
			if err := g.RestartProvisioner(); err != nil {
				t.Errorf("restart provisioner: %v", err)
			}
		})
	})
	ps := createPending(t, g, deploymentPods(t, seed(t)))
	nodes := waitBound(t, g, ps, 120*time.Second)
	ids := launched(g)
	if len(ids) != 1 {
		t.Fatalf("launched %v, want the one instance launched before the crash", ids)
	}
	if n := len(g.EC2.CreateFleetOperations()); n != 1 {
		t.Errorf("%d CreateFleet calls, want 1: the second run must count the in-flight instance, not ask EC2 again", n)
	}
	for p, n := range nodes {
		node, err := g.Kube.Client.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pods.InstanceID(node.Spec.ProviderID) != ids[0] {
			t.Errorf("pod %s bound to %s, not to the in-flight instance %s", p, n, ids[0])
		}
	}
}

// pendingEvent is the SQS event a poller would hand the provisioner for one
// pending-pods event naming ps.
func pendingEvent(t *testing.T, cluster string, ps []*corev1.Pod) []byte {
	t.Helper()
	d := joistevents.PendingPods{Cluster: cluster, ObservedAt: time.Now()}
	for _, p := range ps {
		d.Pods = append(d.Pods, joistevents.PodRef{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)})
	}
	detail, _ := json.Marshal(d)
	body, _ := json.Marshal(joistevents.Envelope{DetailType: joistevents.DetailTypePendingPods, Source: joistevents.Source, Detail: detail})
	ev, _ := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: string(body), EventSource: "aws:sqs"}}})
	return ev
}

func TestE2E_OverlappingInvocations(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "overlap", Namespace: "overlap", Specs: seed(t), NoForwarder: true, ReadyDelay: 300 * time.Millisecond,
	})
	second, err := g.StartFunction("provisioner")
	if err != nil {
		t.Fatal(err)
	}
	ps := createPending(t, g, deploymentPods(t, seed(t)))
	ev := pendingEvent(t, "overlap", ps)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, f := range []*testenv.Function{g.Provisioner, second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.Invoke(context.Background(), ev)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
	}
	ids := launched(g)
	if len(ids) != 1 {
		t.Fatalf("two overlapping reconciles launched %v, want exactly one instance", ids)
	}
	for _, p := range ps {
		got, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pods.PlannedInstance(got) != ids[0] {
			t.Errorf("pod %s waits for %q, want %s", p.Name, pods.PlannedInstance(got), ids[0])
		}
	}
}

func TestE2E_InFlightCapacityReused(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "inflight", Namespace: "inflight", Specs: seed(t), ReadyDelay: 12 * time.Second,
	})
	first := createPending(t, g, smallPods(t, "first", 2))
	eventually(t, 60*time.Second, "the first instance launched", func() (bool, error) { return len(launched(g)) == 1, nil })
	// The node is still booting; more pods that fit arrive.
	later := createPending(t, g, smallPods(t, "later", 3))
	id := launched(g)[0]
	eventually(t, 30*time.Second, "the later pods planned onto the booting instance", func() (bool, error) {
		for _, p := range later {
			got, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
			if err != nil || pods.PlannedInstance(got) != id {
				return false, err
			}
		}
		return true, nil
	})
	waitBound(t, g, append(first, later...), 60*time.Second)
	if ids := launched(g); len(ids) != 1 {
		t.Fatalf("launched %v, want the booting instance reused", ids)
	}
}

func TestE2E_ZeroNodeBootstrap(t *testing.T) {
	// No forwarder (it would be pending itself on a cluster with no
	// nodes), no events at all: only the scheduled safety net.
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "zero", Namespace: "zero", Specs: seed(t), NoForwarder: true, ReaperEvery: 2 * time.Second, ReadyDelay: 300 * time.Millisecond,
	})
	ps := createPending(t, g, deploymentPods(t, seed(t)))
	waitBound(t, g, ps, 90*time.Second)
	if ids := launched(g); len(ids) != 1 {
		t.Fatalf("launched %v, want one instance", ids)
	}
}

func TestE2E_ForgedEvents(t *testing.T) {
	var mu sync.Mutex
	batches := 0
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "forged", Namespace: "forged", Specs: seed(t), NoForwarder: true,
		OnBatch: func(fn string, ids, _ []string, _ error) {
			if fn == "provisioner" {
				mu.Lock()
				batches += len(ids) // messages, not batches
				mu.Unlock()
			}
		},
	})
	ctx := context.Background()
	// A pod that exists but kube-scheduler never found unschedulable.
	calm := deploymentPods(t, seed(t))[0]
	calm.Namespace = "forged"
	calm.Name = "not-pending"
	if _, err := g.Kube.Client.CoreV1().Pods("forged").Create(ctx, calm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	detail := `{"cluster":"forged","pods":[{"namespace":"forged","name":"no-such-pod","uid":"1"},{"namespace":"forged","name":"not-pending"},{"namespace":"kube-system","name":"ghost"}]}`
	eb := eventbridge.NewFromConfig(g.AWS)
	for i := 0; i < 3; i++ {
		if _, err := eb.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
			EventBusName: aws.String(g.Msg.Bus), Source: aws.String(joistevents.Source),
			DetailType: aws.String(joistevents.DetailTypePendingPods), Detail: aws.String(detail),
		}}}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "the three forged events handled", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return batches >= 3, nil
	})
	settled(t, g, 30*time.Second)
	if n := len(g.EC2.CreateFleetOperations()); n != 0 {
		t.Fatalf("forged events led to %d CreateFleet calls, want none", n)
	}
}

// TestE2E_KubeSchedulerRace: a real kube-scheduler runs beside Joist. It
// finds the pods unschedulable (so the forwarder sees them pending), Joist
// plans them and launches one instance, and when its node is Ready both
// kube-scheduler and Joist's binder go for the pods. Left alone on this
// ground the binder (300 ms from Ready) always beats kube-scheduler's
// backoff and no race happens; in AWS the node-ready event crosses
// EventBridge, SQS and a Lambda start first. So the forwarder's node-ready
// events are held until kube-scheduler has bound a pod onto Joist's node,
// then released: the binder then runs against pods kube-scheduler bound
// under its plan. Every pod is bound exactly once, nothing is handed back,
// nothing fails or is retried, and one instance was launched.
func TestE2E_KubeSchedulerRace(t *testing.T) {
	var handled handledCounts
	logs := &logBuffer{}
	hold := &holdReady{release: make(chan struct{})}
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "race", Namespace: "race", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
		OnBatch: handled.hook, Logs: logs,
		WrapPut: func(p forwarder.PutEventsAPI) forwarder.PutEventsAPI { hold.inner = p; return hold },
	})
	stop := startScheduler(t, g)
	defer stop()
	ctx := context.Background()
	var ps []*corev1.Pod
	for _, p := range deploymentPods(t, seed(t)) {
		p.Namespace = "race"
		created, err := g.Kube.Client.CoreV1().Pods("race").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, created)
	}
	// kube-scheduler itself marks them unschedulable (no node fits); once
	// Joist's node is Ready it binds what fits there.
	eventually(t, 120*time.Second, "kube-scheduler to bind a pod onto Joist's node", func() (bool, error) {
		for _, p := range ps {
			got, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got.Spec.NodeName != "" {
				return true, nil
			}
		}
		return false, nil
	})
	close(hold.release)
	nodes := waitBound(t, g, ps, 120*time.Second)
	eventually(t, 60*time.Second, "the binder to handle the released node-ready events", func() (bool, error) {
		return handled.get("binder") > 0, nil
	})
	settled(t, g, 60*time.Second)
	// Who bound each pod: kube-scheduler records Scheduled, Joist's binder
	// Bound. Events are written asynchronously: wait for one per pod.
	var byScheduler, byJoist map[string]int
	var sawUnschedulable map[string]bool
	eventually(t, 30*time.Second, "an event naming who bound each pod", func() (bool, error) {
		evs, err := g.Kube.Client.CoreV1().Events("race").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		byScheduler, byJoist, sawUnschedulable = map[string]int{}, map[string]int{}, map[string]bool{}
		for _, e := range evs.Items {
			fromScheduler := e.Source.Component == "default-scheduler" || e.ReportingController == "default-scheduler"
			switch {
			case fromScheduler && e.Reason == "Scheduled":
				byScheduler[e.InvolvedObject.Name]++
			case fromScheduler && e.Reason == "FailedScheduling":
				sawUnschedulable[e.InvolvedObject.Name] = true
			case e.Source.Component == "joist" && e.Reason == kube.ReasonBound:
				byJoist[e.InvolvedObject.Name]++
			}
		}
		for _, p := range ps {
			if byScheduler[p.Name]+byJoist[p.Name] == 0 {
				return false, fmt.Errorf("no event says who bound %s", p.Name)
			}
		}
		return true, nil
	})
	schedulerWon := 0
	for _, p := range ps {
		if !sawUnschedulable[p.Name] {
			t.Errorf("kube-scheduler never found pod %s unschedulable: it was not in the race", p.Name)
		}
		if n := byScheduler[p.Name] + byJoist[p.Name]; n != 1 {
			t.Errorf("pod %s bound %d times (kube-scheduler %d, Joist %d), want once", p.Name, n, byScheduler[p.Name], byJoist[p.Name])
		}
		schedulerWon += byScheduler[p.Name]
		got, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != nodes[p.Name] {
			t.Errorf("pod %s moved from %s to %s: bound twice", p.Name, nodes[p.Name], got.Spec.NodeName)
		}
	}
	binderLost := logs.count("already bound by someone else")
	t.Logf("kube-scheduler bound %d of %d pods; the binder found %d bound under it", schedulerWon, len(ps), binderLost)
	if schedulerWon == 0 && binderLost == 0 {
		t.Errorf("no race: kube-scheduler bound no pod on Joist's node and the binder never found one bound by someone else")
	}
	if n := logs.count("handing it back to the provisioner"); n != 0 {
		t.Errorf("the binder handed %d planned pods back: kube-scheduler's pods on the node were not told from its own", n)
	}
	for _, fn := range []string{"provisioner", "binder"} {
		if n := handled.failures(fn); n != 0 {
			t.Errorf("%d failed %s messages, want none", n, fn)
		}
	}
	if ids := launched(g); len(ids) != 1 {
		t.Fatalf("launched %v, want one instance", ids)
	}
}

// holdReady holds the forwarder's node-ready events until release is
// closed (other events pass): a slow path from node Ready to the binder.
type holdReady struct {
	inner   forwarder.PutEventsAPI
	release chan struct{}
}

func (h *holdReady) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	for _, e := range in.Entries {
		if aws.ToString(e.DetailType) == joistevents.DetailTypeNodeReady {
			select {
			case <-h.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			break
		}
	}
	return h.inner.PutEvents(ctx, in, opts...)
}

// startScheduler runs a real kube-scheduler against the test API server.
func startScheduler(t *testing.T, g *testenv.Ground) func() {
	t.Helper()
	bin := testenv.Tool(t, "kube-scheduler")
	cmd := exec.Command(bin, "--kubeconfig", g.Kube.Kubeconfig, "--leader-elect=false", "--secure-port=0", "-v=1")
	if os.Getenv("JOIST_TEST_VERBOSE") != "" {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
}

// TestE2E_InstanceTypeLabelsReachTheNode: a pod that selects on a label
// only Joist knows (karpenter.k8s.aws/instance-family) is planned, and its
// node carries that label before the binder checks the pod fits, as
// Karpenter labels nodes at registration. Without it the pod would be
// handed back and planned again forever.
func TestE2E_InstanceTypeLabelsReachTheNode(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "typelabels", Namespace: "typelabels", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
	})
	ps := smallPods(t, "family", 1)
	ps[0].Spec.NodeSelector["karpenter.k8s.aws/instance-family"] = "t3"
	ps[0].Spec.NodeSelector["karpenter.k8s.aws/instance-cpu"] = "2"
	ps = createPending(t, g, ps)
	nodes := waitBound(t, g, ps, 90*time.Second)
	node, err := g.Kube.Client.CoreV1().Nodes().Get(context.Background(), nodes[ps[0].Name], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels["karpenter.k8s.aws/instance-family"] != "t3" || node.Labels["karpenter.k8s.aws/instance-cpu"] != "2" {
		t.Fatalf("node labels %v lack the instance type's labels", node.Labels)
	}
	if ids := launched(g); len(ids) != 1 {
		t.Fatalf("launched %v, want one instance", ids)
	}
}

// TestE2E_UnavailableOfferingsSurviveAColdStart: an offering that ran out of
// capacity stays out of the next plans for its three minutes even when the
// next reconcile runs in a fresh execution environment (the marks live on
// the decider Lease, not in memory only).
func TestE2E_UnavailableOfferingsSurviveAColdStart(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "ice-cold", Namespace: "ice-cold", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
	})
	for _, z := range []string{"ap-northeast-2a", "ap-northeast-2c"} {
		g.EC2.SetInsufficientCapacity("t3.large", z, "on-demand", true)
	}
	// Both pods want host port 8080: each needs a node of its own, and a
	// t3.large (the cheapest, out of capacity) would hold either.
	withPort := func(name string) []*corev1.Pod {
		ps := smallPods(t, name, 1)
		ps[0].Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		return ps
	}
	waitBound(t, g, createPending(t, g, withPort("first")), 90*time.Second)
	// The first launch asked for t3.large and EC2 refused it for capacity:
	// that is what marks the offering unavailable.
	ran := map[string]bool{}
	for _, c := range g.EC2.CreateFleetOperations() {
		for _, e := range c.Errors {
			if e.InstanceType == "t3.large" && e.Code == "InsufficientInstanceCapacity" {
				ran[e.Zone] = true
			}
		}
	}
	if len(ran) == 0 {
		t.Fatalf("no CreateFleet was refused t3.large for capacity (calls %+v): the first launch never ran out, so the test proves nothing", g.EC2.CreateFleetOperations())
	}
	if err := g.RestartProvisioner(); err != nil {
		t.Fatal(err)
	}
	before := len(g.EC2.CreateFleetOperations())
	waitBound(t, g, createPending(t, g, withPort("next")), 90*time.Second)
	calls := g.EC2.CreateFleetOperations()[before:]
	if len(calls) == 0 {
		t.Fatal("no CreateFleet for the second pod")
	}
	for _, c := range calls {
		for _, cfg := range c.LaunchTemplateConfigs {
			for _, o := range cfg.Overrides {
				if o.InstanceType == "t3.large" {
					t.Fatalf("after a cold start the provisioner offered t3.large again (override %+v): the unavailable mark was lost", o)
				}
			}
		}
	}
}
