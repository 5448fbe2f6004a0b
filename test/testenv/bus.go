package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/joist-dev/joist/events"
)

// Queue is an SQS queue on the emulator.
type Queue struct {
	URL, ARN string
	DLQ      *Queue
}

// Messaging is what the CDK stack creates for one cluster's events: the
// bus, and a rule per Joist detail type delivering to a queue with a DLQ.
type Messaging struct {
	Bus     string
	Pending *Queue
	Ready   *Queue
	// Interruption takes AWS's EC2 and Health events from the default
	// bus (InterruptionRules).
	Interruption *Queue
	// ReaperWake stands in for the stack's wake rule's Lambda target
	// (the reaper): what it receives, AsyncInvoker hands the reaper.
	ReaperWake *Queue
}

// InterruptionRule is one of the stack's rules on the default bus that
// route AWS's events to the interruption queue.
type InterruptionRule struct {
	Name    string
	Pattern string
}

// InterruptionRules mirror infra/stack's (defineRules): the spot warning,
// the rebalance recommendation, the capacity-reservation warning, the
// state changes that end an instance, and EC2's Health scheduled changes.
func InterruptionRules(cluster string) []InterruptionRule {
	pattern := func(source, detailType string, detail map[string][]string) string {
		p := map[string]any{"source": []string{source}, "detail-type": []string{detailType}}
		if detail != nil {
			p["detail"] = detail
		}
		b, _ := json.Marshal(p)
		return string(b)
	}
	prefix := "joist-" + cluster + "-"
	return []InterruptionRule{
		{prefix + "spot-interruption", pattern("aws.ec2", "EC2 Spot Instance Interruption Warning", nil)},
		{prefix + "rebalance", pattern("aws.ec2", "EC2 Instance Rebalance Recommendation", nil)},
		{prefix + "capacity-reservation", pattern("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", nil)},
		{prefix + "state-change", pattern("aws.ec2", "EC2 Instance State-change Notification",
			map[string][]string{"state": {"stopping", "stopped", "shutting-down", "terminated"}})},
		{prefix + "scheduled-change", pattern("aws.health", "AWS Health Event",
			map[string][]string{"service": {"EC2"}, "eventTypeCategory": {"scheduledChange"}})},
	}
}

// BusName is the name the CDK stack gives a cluster's bus.
func BusName(cluster string) string { return "joist-" + cluster }

// SetupMessaging creates the bus, the rules and the queues on kumo the way
// the CDK stack does (infra/stack), with a 60 s visibility timeout.
func SetupMessaging(ctx context.Context, cfg aws.Config, cluster string) (*Messaging, error) {
	return SetupMessagingWith(ctx, cfg, cluster, 60)
}

// SetupMessagingWith is SetupMessaging with the queues' visibility timeout
// in seconds: how long a failed batch waits before it is delivered again.
func SetupMessagingWith(ctx context.Context, cfg aws.Config, cluster string, visibility int) (*Messaging, error) {
	eb := eventbridge.NewFromConfig(cfg)
	sq := sqs.NewFromConfig(cfg)
	m := &Messaging{Bus: BusName(cluster)}
	if _, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: &m.Bus}); err != nil {
		// A second ground for the same cluster (a benchmark's rerun) reuses
		// the bus, as a redeployed stack would.
		var exists *ebtypes.ResourceAlreadyExistsException
		if !errors.As(err, &exists) {
			return nil, fmt.Errorf("create bus %s: %w", m.Bus, err)
		}
	}
	var err error
	if m.Pending, err = CreateQueue(ctx, sq, "joist-"+cluster+"-pending", visibility); err != nil {
		return nil, err
	}
	if m.Ready, err = CreateQueue(ctx, sq, "joist-"+cluster+"-ready", visibility); err != nil {
		return nil, err
	}
	if m.Interruption, err = CreateQueue(ctx, sq, "joist-"+cluster+"-interruption", visibility); err != nil {
		return nil, err
	}
	if m.ReaperWake, err = CreateQueue(ctx, sq, "joist-"+cluster+"-reaper-wake", visibility); err != nil {
		return nil, err
	}
	for _, r := range InterruptionRules(cluster) {
		if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{
			Name: aws.String(r.Name), EventBusName: aws.String("default"), EventPattern: aws.String(r.Pattern),
		}); err != nil {
			return nil, fmt.Errorf("put rule %s: %w", r.Name, err)
		}
		if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{
			Rule: aws.String(r.Name), EventBusName: aws.String("default"),
			Targets: []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String(m.Interruption.ARN)}},
		}); err != nil {
			return nil, fmt.Errorf("put targets %s: %w", r.Name, err)
		}
	}
	for _, r := range []struct {
		name        string
		detailTypes []string
		q           *Queue
	}{
		{"joist-" + cluster + "-pending-pods", []string{events.DetailTypePendingPods}, m.Pending},
		{"joist-" + cluster + "-node-ready", []string{events.DetailTypeNodeReady}, m.Ready},
		{"joist-" + cluster + "-reaper-wake", events.ReaperWakeDetailTypes, m.ReaperWake},
	} {
		if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{
			Name: aws.String(r.name), EventBusName: &m.Bus, EventPattern: aws.String(events.Pattern(r.detailTypes...)),
		}); err != nil {
			return nil, fmt.Errorf("put rule %s: %w", r.name, err)
		}
		if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{
			Rule: aws.String(r.name), EventBusName: &m.Bus,
			Targets: []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String(r.q.ARN)}},
		}); err != nil {
			return nil, fmt.Errorf("put targets %s: %w", r.name, err)
		}
	}
	return m, nil
}

// CreateQueue creates a queue with a dead-letter queue that takes a
// message after 5 receives.
func CreateQueue(ctx context.Context, sq *sqs.Client, name string, visibility int) (*Queue, error) {
	dlq, err := createQueue(ctx, sq, name+"-dlq", nil)
	if err != nil {
		return nil, err
	}
	q, err := createQueue(ctx, sq, name, map[string]string{
		string(sqstypes.QueueAttributeNameVisibilityTimeout): fmt.Sprint(visibility),
		string(sqstypes.QueueAttributeNameRedrivePolicy):     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"5"}`, dlq.ARN),
	})
	if err != nil {
		return nil, err
	}
	q.DLQ = dlq
	return q, nil
}

func createQueue(ctx context.Context, sq *sqs.Client, name string, attrs map[string]string) (*Queue, error) {
	out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name, Attributes: attrs})
	if err != nil {
		return nil, fmt.Errorf("create queue %s: %w", name, err)
	}
	a, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return nil, fmt.Errorf("queue %s arn: %w", name, err)
	}
	return &Queue{URL: aws.ToString(out.QueueUrl), ARN: a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]}, nil
}
