package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/joist-dev/joist/pkg/interruption"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/metrics"
)

// Health reads the cluster's instances and their EC2 health
// (*launch.Launcher).
type Health interface {
	// Instances are the cluster's pending and running instances (by tag).
	Instances(ctx context.Context) ([]launch.Instance, error)
	// Statuses are DescribeInstanceStatus's answers for the ids.
	Statuses(ctx context.Context, ids ...string) ([]launch.InstanceStatus, error)
}

// HealthResult is what one health check found and did.
type HealthResult struct {
	// Checked is how many of the cluster's instances were read.
	Checked int
	// Unhealthy are the findings, in instance order.
	Unhealthy []interruption.Finding
}

// CheckHealth is the once-a-minute health check: it reads
// DescribeInstanceStatus for the cluster's running instances and treats
// every one found unhealthy (an impaired instance or system status check,
// a scheduled event that is not over) as a scheduled change, through the
// very path of the queue's messages: Decide, then the replacement first,
// then the retirement. A finding whose handling failed is logged and
// reported; the next check, a minute later, finds it again.
func (h *Handler) CheckHealth(ctx context.Context) (*HealthResult, error) {
	if h.Health == nil {
		return nil, errors.New("health check: no EC2 health reader wired")
	}
	insts, err := h.Health.Instances(ctx)
	if err != nil {
		return nil, fmt.Errorf("health check: list the cluster's instances: %w", err)
	}
	res := &HealthResult{}
	var ids []string
	for _, i := range insts {
		if i.State == "running" {
			ids = append(ids, i.ID)
		}
	}
	res.Checked = len(ids)
	if len(ids) == 0 {
		return res, nil
	}
	sts, err := h.Health.Statuses(ctx, ids...)
	if err != nil {
		return res, fmt.Errorf("health check: %w", err)
	}
	statuses := make([]interruption.Status, 0, len(sts))
	for _, s := range sts {
		st := interruption.Status{ID: s.ID, State: s.State, InstanceStatus: s.InstanceStatus, SystemStatus: s.SystemStatus}
		for _, e := range s.Events {
			st.Events = append(st.Events, interruption.ScheduledEvent{Code: e.Code, Description: e.Description, NotBefore: e.NotBefore})
		}
		statuses = append(statuses, st)
	}
	res.Unhealthy = interruption.CheckHealth(statuses)
	var errs []error
	for _, f := range res.Unhealthy {
		h.Metrics.Count(metrics.InterruptionInstanceStatusUnhealthy, 1, map[string]string{metrics.DimMessageType: string(f.Kind)})
		m := interruption.HealthMessage(f)
		log := h.Log.With("kind", string(f.Kind), "instances", m.Instances, "finding", f.Reason)
		// No receive time: the finding is not an event with a time, so
		// it is kept out of the message-to-replacement metric.
		if err := h.handle(ctx, log, m, time.Time{}); err != nil {
			log.Error("health check: handling an unhealthy instance failed; the next check retries", "error", err.Error())
			errs = append(errs, fmt.Errorf("instance %s: %w", f.ID, err))
		}
	}
	return res, errors.Join(errs...)
}

// invocation is the union of the shapes the function is invoked with: an
// SQS batch (Records) from the interruption queue, or EventBridge's
// scheduled event (source aws.events, detail-type "Scheduled Event").
type invocation struct {
	Records    []json.RawMessage `json:"Records"`
	Source     string            `json:"source"`
	DetailType string            `json:"detail-type"`
}

// Invoke dispatches on the event's shape: an SQS batch is handled as the
// queue's messages (the answer is the batch's response); the schedule's
// event runs the health check (no answer). Anything else is an error: the
// function has no other trigger.
func (h *Handler) Invoke(ctx context.Context, payload json.RawMessage) (any, error) {
	var in invocation
	if err := json.Unmarshal(payload, &in); err != nil {
		return nil, fmt.Errorf("interruption: the invocation is not a JSON event: %w", err)
	}
	switch {
	case in.Records != nil:
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, fmt.Errorf("interruption: read the SQS batch: %w", err)
		}
		return h.HandleSQS(ctx, ev)
	case in.Source == "aws.events" && in.DetailType == "Scheduled Event":
		res, err := h.CheckHealth(ctx)
		if res != nil {
			h.Log.Info("health check", "checked", res.Checked, "unhealthy", len(res.Unhealthy))
		}
		return nil, err
	}
	return nil, fmt.Errorf("interruption: an invocation that is neither an SQS batch nor the schedule's event (source %q, detail-type %q)", in.Source, in.DetailType)
}
