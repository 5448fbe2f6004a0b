// Package garbage ends what Joist launched and no longer accounts for:
// instances with no Node past the registration timeout (Karpenter's
// registration TTL): never registered, or their Node deleted without
// draining; Nodes whose instance is gone (terminated outside Joist:
// nothing is left to drain, so the Node is released and deleted, as
// Karpenter's termination controller does); and the cluster's launch
// templates no live instance was launched from. It runs in the reaper
// only, the one function whose role may terminate instances and delete
// launch templates.
//
// An instance is only ever terminated as garbage when EC2's own
// aws:ec2launchtemplate:id tag, which EC2 sets at launch and nobody can
// change, names one of the cluster's launch templates. The cluster tag
// alone proves nothing: anyone allowed ec2:CreateTags in the account can
// put joist.sh/cluster on any instance, and Joist must never end an
// instance it did not launch.
package garbage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/termination"
)

// DefaultRegistrationTimeout is how long an instance may run without its
// node registering before it is terminated (Karpenter's registration TTL).
const DefaultRegistrationTimeout = 15 * time.Minute

// EC2 is the launcher's side the collector uses.
type EC2 interface {
	// Tagged lists the cluster's instances in every state EC2 still
	// shows; Instances only the pending and running ones.
	Tagged(ctx context.Context) ([]launch.Instance, error)
	Instances(ctx context.Context) ([]launch.Instance, error)
	Templates(ctx context.Context) ([]launch.Template, error)
	Terminate(ctx context.Context, ids ...string) error
}

// Nodes lists the cluster's nodes.
type Nodes interface {
	Nodes(ctx context.Context) ([]*corev1.Node, error)
}

// NodeReleaser removes a Node whose instance is gone, finalizer and all
// (termination.Release).
type NodeReleaser interface {
	Release(ctx context.Context, node string) error
}

// DefaultNodeGrace is how old a Node must be before its missing instance
// makes it garbage: EC2's listing may lag a launch.
const DefaultNodeGrace = time.Minute

// TemplateCleaner deletes the cluster's launch templates no live instance
// was launched from (launch.Launcher.DeleteUnusedTemplates).
type TemplateCleaner interface {
	DeleteUnusedTemplates(ctx context.Context, live []launch.Instance, minAge time.Duration) ([]string, error)
}

// Lock takes the cluster's decider lease and returns its release; it
// returns an error wrapping kube.ErrLeaseHeld when another decider holds
// it.
type Lock func(ctx context.Context) (unlock func(), err error)

// DefaultTemplateMinAge is how old an unused launch template must be
// before it is deleted.
const DefaultTemplateMinAge = 10 * time.Minute

// Collector is one garbage collection of the cluster (Collect).
type Collector struct {
	EC2   EC2
	Nodes Nodes
	// Release, when set, deletes Joist's Nodes whose instance is gone
	// (shutting down or terminated: a node is Joist's by its instance's
	// cluster tag, termination.Owned, and EC2 shows an ended instance for
	// about an hour; a node whose instance EC2 no longer knows at all is
	// left to its owner).
	Release NodeReleaser
	// Cluster is the cluster's name, as its instances are tagged.
	Cluster string
	// Templates, when set, deletes the cluster's launch templates that
	// no pending or running instance was launched from and that are
	// older than TemplateMinAge (DefaultTemplateMinAge when zero). It
	// runs under Lock, when set, with the instances listed again inside
	// it: a launch (which holds the same lease) can then never pick a
	// template that is being deleted, nor launch from one after the
	// listing that decided it was unused. A lease held elsewhere only
	// postpones the cleanup to the next collection.
	Templates      TemplateCleaner
	TemplateMinAge time.Duration
	Lock           Lock
	Log            *slog.Logger
	// Clock is the clock (nil: the real one; tests pass a
	// k8s.io/utils/clock/testing clock).
	Clock clock.PassiveClock
	// RegistrationTimeout overrides DefaultRegistrationTimeout.
	RegistrationTimeout time.Duration
}

// Result is what one collection found and did.
type Result struct {
	// Terminated are instances ended because their node never registered.
	Terminated []string
	// Foreign are instances tagged for the cluster, past the timeout with
	// no node, that no launch template of the cluster launched: left
	// alone, and reported.
	Foreign []string
	// NodesDeleted are Joist's Nodes whose instance was gone.
	NodesDeleted []string
	// TemplatesDeleted are launch templates no live instance used.
	TemplatesDeleted []string
}

// Expired reports whether an instance launched at launched, with no node,
// is past the registration timeout at now.
func Expired(launched, now time.Time, timeout time.Duration) bool {
	if timeout <= 0 {
		timeout = DefaultRegistrationTimeout
	}
	return !launched.IsZero() && now.Sub(launched) >= timeout
}

// Collect terminates every instance of the cluster, launched from one of
// its launch templates, whose node has not registered within the timeout
// (never registered, or its Node deleted without draining), deletes
// Joist's Nodes whose instance is gone, and, with Templates set, the
// launch templates no live instance uses. A failed step is reported in
// the error and never stops the rest.
func (c *Collector) Collect(ctx context.Context) (*Result, error) {
	now := time.Now()
	if c.Clock != nil {
		now = c.Clock.Now()
	}
	tagged, err := c.EC2.Tagged(ctx)
	if err != nil {
		return nil, fmt.Errorf("garbage collection: list instances: %w", err)
	}
	var instances []launch.Instance
	for _, i := range tagged {
		if i.Live() {
			instances = append(instances, i)
		}
	}
	nodes, err := c.Nodes.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("garbage collection: list nodes: %w", err)
	}
	registered := map[string]bool{}
	for _, n := range nodes {
		registered[pods.InstanceID(n.Spec.ProviderID)] = true
	}
	res := &Result{}
	var errs []error
	if c.Release != nil {
		live := map[string]bool{}
		for _, inst := range instances {
			live[inst.ID] = true
		}
		owned := termination.Owned(c.Cluster, tagged)
		for _, n := range nodes {
			id := pods.InstanceID(n.Spec.ProviderID)
			if !owned.Node(n) || live[id] || now.Sub(n.CreationTimestamp.Time) < DefaultNodeGrace {
				continue
			}
			c.Log.Warn("node's instance is gone; deleting the node", "node", n.Name, "instance", id)
			if err := c.Release.Release(ctx, n.Name); err != nil {
				errs = append(errs, fmt.Errorf("delete node %s without instance: %w", n.Name, err))
				continue
			}
			res.NodesDeleted = append(res.NodesDeleted, n.Name)
		}
	}
	var expired []launch.Instance
	for _, inst := range instances {
		if !registered[inst.ID] && Expired(inst.LaunchTime, now, c.RegistrationTimeout) {
			expired = append(expired, inst)
		}
	}
	if len(expired) > 0 {
		errs = append(errs, c.terminateExpired(ctx, expired, res))
	}
	if c.Templates != nil {
		errs = append(errs, c.deleteUnusedTemplates(ctx, res))
	}
	return res, errors.Join(errs...)
}

// terminateExpired ends the expired instances launched from one of the
// cluster's templates and reports the others as foreign.
func (c *Collector) terminateExpired(ctx context.Context, expired []launch.Instance, res *Result) error {
	templates, err := c.EC2.Templates(ctx)
	if err != nil {
		return fmt.Errorf("garbage collection: list launch templates: %w", err)
	}
	var errs []error
	own := map[string]bool{}
	for _, t := range templates {
		own[t.ID] = true
	}
	for _, inst := range expired {
		if !own[inst.LaunchTemplateID] {
			res.Foreign = append(res.Foreign, inst.ID)
			c.Log.Warn("instance carries the cluster tag but was not launched from one of the cluster's launch templates; leaving it alone",
				"instance", inst.ID, "launchTemplate", inst.LaunchTemplateID, "launched", inst.LaunchTime)
			continue
		}
		c.Log.Warn("instance never registered; terminating it", "instance", inst.ID, "pool", inst.Pool,
			"launched", inst.LaunchTime, "timeout", c.timeout().String())
		if err := c.EC2.Terminate(ctx, inst.ID); err != nil {
			errs = append(errs, fmt.Errorf("terminate unregistered %s: %w", inst.ID, err))
			continue
		}
		res.Terminated = append(res.Terminated, inst.ID)
	}
	return errors.Join(errs...)
}

// deleteUnusedTemplates deletes, under the lease, the launch templates no
// live instance uses.
func (c *Collector) deleteUnusedTemplates(ctx context.Context, res *Result) error {
	if c.Lock != nil {
		unlock, err := c.Lock(ctx)
		if errors.Is(err, kube.ErrLeaseHeld) {
			c.Log.Info("decider lease held elsewhere; unused launch templates are left for the next collection")
			return nil
		}
		if err != nil {
			return fmt.Errorf("garbage collection: launch templates: %w", err)
		}
		defer unlock()
	}
	live, err := c.EC2.Instances(ctx)
	if err != nil {
		return fmt.Errorf("garbage collection: launch templates: list instances: %w", err)
	}
	minAge := c.TemplateMinAge
	if minAge <= 0 {
		minAge = DefaultTemplateMinAge
	}
	deleted, err := c.Templates.DeleteUnusedTemplates(ctx, live, minAge)
	res.TemplatesDeleted = deleted
	if err != nil {
		return fmt.Errorf("garbage collection: %w", err)
	}
	return nil
}

func (c *Collector) timeout() time.Duration {
	if c.RegistrationTimeout <= 0 {
		return DefaultRegistrationTimeout
	}
	return c.RegistrationTimeout
}
