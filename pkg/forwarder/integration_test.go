package forwarder_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/joist-dev/joist/events"
	"github.com/joist-dev/joist/pkg/eksauth"
	"github.com/joist-dev/joist/pkg/forwarder"
	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestForwarderEventsReachTheQueuesBehindTheBusRules runs the forwarder
// against a real kube-apiserver and puts its events on a kumo bus over the
// wire; the rules the CDK stack creates route them to SQS, where the
// functions' pollers would pick them up.
func TestForwarderEventsReachTheQueuesBehindTheBusRules(t *testing.T) {
	kube := testenv.Kube(t)
	kumo := testenv.Kumo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const cluster = "forwarder-it"
	msg, err := testenv.SetupMessaging(ctx, kumo.AWSConfig(), cluster)
	if err != nil {
		t.Fatalf("messaging: %v", err)
	}
	// The same path the functions take locally: eksauth with a kubeconfig.
	restCfg, err := eksauth.RESTConfig(ctx, eksauth.Options{KubeconfigPath: kube.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(restCfg)

	logs := io.Discard
	if os.Getenv("JOIST_TEST_VERBOSE") != "" {
		logs = os.Stderr
	}
	f, err := forwarder.New(forwarder.Options{
		Client:   client,
		Cluster:  cluster,
		Bus:      msg.Bus,
		Put:      eventbridge.NewFromConfig(kumo.AWSConfig()),
		Debounce: 200 * time.Millisecond,
		MaxWait:  time.Second,
		Resync:   time.Hour, // the test counts events: no resync repeats
		Logger:   slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	waitFor(t, "caches to sync", f.Synced)

	sq := sqs.NewFromConfig(kumo.AWSConfig())

	t.Run("an unschedulable pod becomes exactly one pending-pods event", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fwd-"}}
		ns, err := kube.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod, err := kube.Client.CoreV1().Pods(ns.Name).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "big"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "public.ecr.aws/docker/library/busybox:latest",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}},
			}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// What kube-scheduler writes when no node fits.
		pod.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/0 nodes are available", LastTransitionTime: metav1.Now(),
		}}
		if _, err := kube.Client.CoreV1().Pods(ns.Name).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}

		var mine []events.PodRef
		for _, body := range receive(ctx, t, sq, msg.Pending.URL, 30*time.Second, 3*time.Second) {
			ev, err := events.Parse([]byte(body))
			if err != nil {
				t.Fatalf("message on the pending queue is not a Joist event: %v\n%s", err, body)
			}
			pp, ok := ev.(*events.PendingPods)
			if !ok {
				t.Fatalf("pending queue got %T", ev)
			}
			if pp.Cluster != cluster {
				t.Errorf("cluster = %q", pp.Cluster)
			}
			for _, ref := range pp.Pods {
				if ref.Namespace == ns.Name {
					mine = append(mine, ref)
				}
			}
		}
		if len(mine) != 1 || mine[0].Name != "big" || mine[0].UID != string(pod.UID) {
			t.Errorf("pods of this test in pending-pods events = %+v, want the pod once", mine)
		}
	})

	t.Run("a node turning Ready becomes a node-ready event", func(t *testing.T) {
		node, err := kube.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1.fwd.internal"},
			Spec:       corev1.NodeSpec{ProviderID: "aws:///" + testenv.Region + "a/i-0123456789abcdef0"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.Client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
		})
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}
		if _, err := kube.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}

		var got []*events.NodeReady
		for _, body := range receive(ctx, t, sq, msg.Ready.URL, 30*time.Second, 3*time.Second) {
			ev, err := events.Parse([]byte(body))
			if err != nil {
				t.Fatalf("message on the ready queue is not a Joist event: %v\n%s", err, body)
			}
			if nr, ok := ev.(*events.NodeReady); ok && nr.Node == node.Name {
				got = append(got, nr)
			}
		}
		if len(got) != 1 || got[0].ProviderID != node.Spec.ProviderID || got[0].Cluster != cluster {
			t.Errorf("node-ready events for the node = %+v, want one with its provider id", got)
		}
	})

	t.Run("a Joist node emptied, then deleting, wakes the reaper twice", func(t *testing.T) {
		node, err := kube.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-2.fwd.internal", Finalizers: []string{forwarder.TerminationFinalizer}},
			Spec:       corev1.NodeSpec{ProviderID: "aws:///" + testenv.Region + "a/i-0123456789abcdef1"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			_, _ = kube.Client.CoreV1().Nodes().Patch(context.Background(), node.Name, k8stypes.MergePatchType, patch, metav1.PatchOptions{})
			_ = kube.Client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
		})
		pod, err := kube.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "on-joist-node"},
			Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The watch delivers the pod's creation before its deletion: no
		// need to wait for the forwarder to have seen it.
		zero := int64(0)
		if err := kube.Client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		wakeUps := func() (emptied, deleting [][]string) {
			for _, body := range receive(ctx, t, sq, msg.ReaperWake.URL, 30*time.Second, 3*time.Second) {
				ev, err := events.Parse([]byte(body))
				if err != nil {
					t.Fatalf("message on the reaper wake queue is not a Joist event: %v\n%s", err, body)
				}
				switch e := ev.(type) {
				case *events.NodesEmptied:
					emptied = append(emptied, e.Nodes)
				case *events.NodesDeleting:
					deleting = append(deleting, e.Nodes)
				default:
					t.Fatalf("reaper wake queue got %T", ev)
				}
			}
			return emptied, deleting
		}
		emptied, deleting := wakeUps()
		if fmt.Sprint(emptied) != fmt.Sprint([][]string{{node.Name}}) || len(deleting) != 0 {
			t.Errorf("after the pod left: emptied %v, deleting %v; want the node emptied once", emptied, deleting)
		}
		if err := kube.Client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		emptied, deleting = wakeUps()
		if fmt.Sprint(deleting) != fmt.Sprint([][]string{{node.Name}}) || len(emptied) != 0 {
			t.Errorf("after kubectl delete node: emptied %v, deleting %v; want the node deleting once", emptied, deleting)
		}
	})
}

// receive reads and deletes messages from queue until one has arrived and
// then quiet has passed without another, or until first runs out.
func receive(ctx context.Context, t *testing.T, sq *sqs.Client, queue string, first, quiet time.Duration) []string {
	t.Helper()
	var bodies []string
	deadline := time.Now().Add(first)
	lastAt := time.Time{}
	for {
		if len(bodies) == 0 && time.Now().After(deadline) {
			t.Fatalf("no message on %s within %v", queue, first)
		}
		if len(bodies) > 0 && time.Since(lastAt) > quiet {
			return bodies
		}
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		})
		if err != nil {
			t.Fatalf("receive from %s: %v", queue, err)
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			lastAt = time.Now()
			if _, err := sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queue), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete from %s: %v", queue, err)
			}
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
