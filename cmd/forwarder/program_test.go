package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/events"
	"github.com/joist-dev/joist/pkg/forwarder"
	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestProgramForwardsPendingPodsToTheBus runs the program's wiring (the
// kubeconfig, the AWS default chain pointed at kumo by AWS_ENDPOINT_URL,
// the health server) against a real kube-apiserver and kumo.
func TestProgramForwardsPendingPodsToTheBus(t *testing.T) {
	kube := testenv.Kube(t)
	kumo := testenv.Kumo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const cluster = "forwarder-cmd"
	msg, err := testenv.SetupMessaging(ctx, kumo.AWSConfig(), cluster)
	if err != nil {
		t.Fatalf("messaging: %v", err)
	}
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL":            kumo.Endpoint,
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	healthAddr := fmt.Sprintf("127.0.0.1:%d", port)

	logs := io.Discard
	if os.Getenv("JOIST_TEST_VERBOSE") != "" {
		logs = os.Stderr
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, settings{
			cluster: cluster, bus: msg.Bus, kubeconfig: kube.Kubeconfig, region: testenv.Region,
			healthAddr: healthAddr, debounce: 200 * time.Millisecond, maxWait: time.Second,
			resync: forwarder.DefaultResync,
		}, slog.New(slog.NewJSONHandler(logs, nil)))
	}()
	waitFor(t, "/readyz", func() bool {
		resp, err := http.Get("http://" + healthAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	ns, err := kube.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fwd-cmd-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := kube.Client.CoreV1().Pods(ns.Name).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "waiting"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		LastTransitionTime: metav1.Now(),
	}}
	if _, err := kube.Client.CoreV1().Pods(ns.Name).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	sq := sqs.NewFromConfig(kumo.AWSConfig())
	var found bool
	waitFor(t, "the pod in a pending-pods event", func() bool {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(msg.Pending.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		for _, m := range out.Messages {
			ev, err := events.Parse([]byte(aws.ToString(m.Body)))
			if err != nil {
				t.Fatalf("not a Joist event: %v", err)
			}
			if pp, ok := ev.(*events.PendingPods); ok {
				for _, ref := range pp.Pods {
					found = found || (ref.Namespace == ns.Name && ref.UID == string(pod.UID))
				}
			}
		}
		return found
	})

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v after cancel, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
