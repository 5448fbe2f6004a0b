package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joistevents "github.com/joist-dev/joist/events"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/test/testenv"
)

// TestE2E_UnservablePodsDoNotStarveOthers: 300 pods no pool can serve are
// pending; a pod that can be served, created after them, is planned onto a
// new instance in the next pass, not after that pass has told the 300 why
// they wait (a few hundred Events at the API server's pace).
func TestE2E_UnservablePodsDoNotStarveOthers(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "starve", Namespace: "starve", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
	})
	nobody := smallPods(t, "nobody", 300)
	for _, p := range nobody {
		p.Spec.NodeSelector = map[string]string{"topology.kubernetes.io/zone": "mars-1a"}
	}
	createPending(t, g, nobody)
	ctx := context.Background()
	eventually(t, 120*time.Second, "a pass has seen the unservable pods", func() (bool, error) {
		evs, err := g.Kube.Client.CoreV1().Events("starve").List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedProvisioning"})
		return err == nil && len(evs.Items) > 0, err
	})
	served := createPending(t, g, smallPods(t, "served", 1))[0]
	// One pass, with the Lease wait and the debounce: far less than the
	// minute the 300 Events took at client-go's default pace.
	eventually(t, 30*time.Second, "the servable pod planned onto a new instance", func() (bool, error) {
		p, err := g.Kube.Client.CoreV1().Pods("starve").Get(ctx, served.Name, metav1.GetOptions{})
		return err == nil && pods.PlannedInstance(p) != "", err
	})
}

// TestE2E_PoisonMessageDroppedAlone: a node-ready message with a name no
// node can have arrives in the same batch as a good one. The good one
// binds its pod; the bad one is logged and dropped, not retried with its
// batch and not sent to the DLQ.
func TestE2E_PoisonMessageDroppedAlone(t *testing.T) {
	var mu sync.Mutex
	var failed []string
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "poison", Namespace: "poison", Specs: seed(t), NoForwarder: true, ReadyDelay: 300 * time.Millisecond,
		OnBatch: func(fn string, _, f []string, _ error) {
			if fn == "binder" {
				mu.Lock()
				failed = append(failed, f...)
				mu.Unlock()
			}
		},
	})
	ctx := context.Background()
	p := createPending(t, g, smallPods(t, "poison", 1))[0]
	// No forwarder: the harness says what it would have said.
	detail := fmt.Sprintf(`{"cluster":"poison","pods":[{"namespace":"poison","name":%q,"uid":%q}]}`, p.Name, p.UID)
	if _, err := eventbridge.NewFromConfig(g.AWS).PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(g.Msg.Bus), Source: aws.String(joistevents.Source),
		DetailType: aws.String(joistevents.DetailTypePendingPods), Detail: aws.String(detail),
	}}}); err != nil {
		t.Fatal(err)
	}
	var node string
	eventually(t, 90*time.Second, "the planned pod's node Ready", func() (bool, error) {
		cur, err := g.Kube.Client.CoreV1().Pods("poison").Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || pods.PlannedInstance(cur) == "" {
			return false, err
		}
		nodes, err := g.Kube.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, n := range nodes.Items {
			if pods.InstanceID(n.Spec.ProviderID) == pods.PlannedInstance(cur) && pods.NodeReady(&n) {
				node = n.Name
				return true, nil
			}
		}
		return false, nil
	})
	body := func(node string) *string {
		d, _ := json.Marshal(joistevents.NodeReady{Cluster: "poison", Node: node})
		b, _ := json.Marshal(joistevents.Envelope{Version: "0", ID: "e-" + node, DetailType: joistevents.DetailTypeNodeReady, Source: joistevents.Source, Detail: d})
		return aws.String(string(b))
	}
	if _, err := sqs.NewFromConfig(g.AWS).SendMessageBatch(ctx, &sqs.SendMessageBatchInput{
		QueueUrl: aws.String(g.Msg.Ready.URL),
		Entries: []sqstypes.SendMessageBatchRequestEntry{
			{Id: aws.String("poison"), MessageBody: body("../../not a node")},
			{Id: aws.String("good"), MessageBody: body(node)},
		},
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the pod bound", func() (bool, error) {
		cur, err := g.Kube.Client.CoreV1().Pods("poison").Get(ctx, p.Name, metav1.GetOptions{})
		return err == nil && cur.Spec.NodeName == node, err
	})
	mu.Lock()
	defer mu.Unlock()
	if len(failed) > 0 {
		t.Fatalf("binder batches reported failures %v; the poison message must be dropped alone", failed)
	}
}
