// Package provisioning is the provisioner's reconcile: it reads the truth
// (pending pods, nodes, the cluster's EC2 instances, the specs), decides
// what to launch, launches it and records on each pod which instance it
// waits for. Events only wake it; it never trusts what they name.
package provisioning

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
)

// SpecReader reads the cluster's valid pools and node classes. It reports
// bad objects itself and skips them; an error means the source could not
// be read at all (specstore.Read is one).
type SpecReader func(ctx context.Context) (*model.Spec, error)

// Launcher is the EC2 side.
type Launcher interface {
	Instances(ctx context.Context) ([]launch.Instance, error)
	Launch(ctx context.Context, req launch.Request) (*launch.Instance, error)
}

// Provisioner reconciles pending pods into launched instances.
type Provisioner struct {
	Cluster  string
	Kube     *kube.Client
	Specs    SpecReader
	Catalog  *catalog.Catalog
	Launcher Launcher
	Log      *slog.Logger
	Now      func() time.Time
	// Unavailable holds offerings that recently ran out of capacity.
	Unavailable *catalog.Unavailable
}

// Result is what one reconcile did.
type Result struct {
	Pending       int
	AlreadyServed int
	Launched      []launch.Instance
	Nominated     int
	Unschedulable map[string]string // pod → reason
}

func (p *Provisioner) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Reconcile runs one pass.
func (p *Provisioner) Reconcile(ctx context.Context) (*Result, error) {
	if p.Unavailable == nil {
		p.Unavailable = catalog.NewUnavailable(0)
	}
	res := &Result{Unschedulable: map[string]string{}}
	spec, err := p.Specs(ctx)
	if err != nil {
		return nil, fmt.Errorf("read specs: %w", err)
	}
	// Instances before pods: an instance launched between the two reads
	// is then seen as in flight rather than missed (Karpenter snapshots
	// nodes before pods for the same reason).
	instances, err := p.Launcher.Instances(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := p.Kube.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	pending, err := p.Kube.PendingPods(ctx)
	if err != nil {
		return nil, err
	}
	res.Pending = len(pending)
	live := map[string]bool{}
	for _, i := range instances {
		live[i.ID] = true
	}
	registered := map[string]bool{}
	for _, n := range nodes {
		if id := pods.InstanceID(n.Spec.ProviderID); id != "" {
			registered[id] = true
		}
	}
	var todo []*corev1.Pod
	for _, pod := range pending {
		if id := pods.PlannedInstance(pod); id != "" && live[id] {
			// Its instance is coming (or registered and the binder is on
			// it): served.
			res.AlreadyServed++
			continue
		}
		todo = append(todo, pod)
	}
	if len(todo) == 0 {
		return res, nil
	}
	for attempt := 0; attempt < 3; attempt++ {
		now := p.now()
		avail := func(t string) []catalog.Offering { return p.Catalog.Available(t, p.Unavailable, now) }
		plan, why := naivePlan(todo, spec, p.Catalog, avail)
		for pod, reason := range why {
			res.Unschedulable[pods.Key(pod)] = reason
		}
		var retry []*corev1.Pod
		for _, n := range plan {
			inst, err := p.launch(ctx, spec, n)
			var ce *launch.CapacityError
			if errors.As(err, &ce) {
				for _, o := range ce.Offerings {
					p.Unavailable.Mark(now, o.InstanceType, o.Zone, o.CapacityType)
				}
				p.Log.Warn("offerings out of capacity; planning again without them", "pool", n.pool.Name, "codes", strings.Join(ce.Codes, ","), "offerings", len(ce.Offerings))
				retry = append(retry, n.pods...)
				continue
			}
			if err != nil {
				p.Log.Error("launch failed", "pool", n.pool.Name, "error", err.Error())
				for _, pod := range n.pods {
					res.Unschedulable[pods.Key(pod)] = err.Error()
				}
				continue
			}
			res.Launched = append(res.Launched, *inst)
			p.Log.Info("launched", "pool", n.pool.Name, "instance", inst.ID, "instanceType", inst.InstanceType, "zone", inst.Zone, "capacityType", inst.CapacityType, "pods", len(n.pods))
			for _, pod := range n.pods {
				if err := p.Kube.Nominate(ctx, pod, inst.ID, now); err != nil {
					if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
						continue // changed since read; the next pass sees the truth
					}
					return res, err
				}
				res.Nominated++
			}
		}
		if len(retry) == 0 {
			break
		}
		todo = retry
	}
	return res, nil
}

func (p *Provisioner) launch(ctx context.Context, spec *model.Spec, n newNode) (*launch.Instance, error) {
	nc, ok := spec.NodeClasses[n.pool.NodeClass]
	if !ok {
		return nil, fmt.Errorf("pool %q: node class %q not found", n.pool.Name, n.pool.NodeClass)
	}
	var opts []launch.Option
	for _, o := range n.options {
		variant := "standard"
		if o.typ.GPUCount > 0 && o.typ.GPUManufacturer == "nvidia" {
			variant = "nvidia"
		} else if o.typ.AcceleratorManufacturer == "aws" {
			variant = "neuron"
		}
		opts = append(opts, launch.Option{
			InstanceType: o.typ.Name, Arch: o.typ.Arch, Variant: variant,
			Zone: o.offering.Zone, CapacityType: o.offering.CapacityType, Price: o.offering.Price,
		})
	}
	uids := make([]string, len(n.pods))
	for i, pod := range n.pods {
		uids[i] = string(pod.UID)
	}
	sort.Strings(uids)
	// The token covers the pods and the options: a retry of the same plan
	// (a crashed invocation, a duplicate event) gets the same instance back
	// from CreateFleet, while a plan changed by a capacity error is a new
	// request.
	parts := append([]string{p.Cluster, n.pool.Name}, uids...)
	for _, o := range opts {
		parts = append(parts, o.InstanceType+"/"+o.Zone+"/"+o.CapacityType)
	}
	token := launch.Token(parts...)
	return p.Launcher.Launch(ctx, launch.Request{Pool: n.pool, Class: nc, Options: opts, Labels: n.labels, Token: token})
}
