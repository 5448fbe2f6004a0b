package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/test/testenv"
)

// TestE2E_BadInputIsSkipped: an SSM parameter that is not a valid spec is
// reported by name and skipped while the other pools are served, and an
// SQS body that is not a Joist event is dropped: no failed batch, no
// retry, nothing in the DLQ.
func TestE2E_BadInputIsSkipped(t *testing.T) {
	logs := &testenv.LogBuffer{}
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "bad-input", Namespace: "bad-input", Specs: seed(t), ReadyDelay: 200 * time.Millisecond, Logs: logs,
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	ctx := context.Background()
	s := ssm.NewFromConfig(g.AWS)
	for name, body := range map[string]string{
		"/joist/bad-input/provisioner/typo": "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: typo}\nspec:\n  providerRef: {name: service-lt}\n  requirements:\n  - {key: node.kubernetes.io/instance-type, operator: Inn, values: [t3.large]}\n",
		"/joist/bad-input/junk":             "{{ this is: not yaml",
	} {
		if _, err := s.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(body), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	q := sqs.NewFromConfig(g.AWS)
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(g.Msg.Pending.URL), MessageBody: aws.String("this is not an event")}); err != nil {
		t.Fatal(err)
	}

	pending := createPending(t, g, deploymentPods(t, seed(t)))
	eventually(t, 90*time.Second, "the seed pods bound despite the bad input", func() (bool, error) {
		for _, p := range pending {
			got, err := g.Kube.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || got.Spec.NodeName == "" {
				return false, err
			}
		}
		return true, nil
	})

	out := logs.String()
	for _, want := range []string{
		`Provisioner \"typo\": spec.requirements[0].operator: unsupported value \"Inn\"`,
		"/joist/bad-input/junk",
		"dropping a message that is not a Joist event",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q", want)
		}
	}
	for _, qu := range []*testenv.Queue{g.Msg.Pending, g.Msg.Pending.DLQ} {
		a, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(qu.URL), AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		}})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range a.Attributes {
			if v != "0" {
				t.Errorf("queue %s: %s = %s, want 0 (nothing retried or dead-lettered)", qu.URL, k, v)
			}
		}
	}
}
