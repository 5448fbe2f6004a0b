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
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/fromcatalog"
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

// Reconcile runs one pass: read the truth, plan the pods no live instance
// waits for, launch the new nodes, and record each pod's instance. An
// offering out of capacity is marked unavailable and the plan is redone
// in the same pass without it.
func (p *Provisioner) Reconcile(ctx context.Context) (*Result, error) {
	if p.Unavailable == nil {
		p.Unavailable = catalog.NewUnavailable(0)
	}
	res := &Result{Unschedulable: map[string]string{}}
	c, err := p.read(ctx)
	if err != nil {
		return nil, err
	}
	res.Pending = len(c.pending)
	for _, pl := range c.planned {
		res.AlreadyServed += len(pl)
	}
	if len(c.todo) == 0 {
		return res, nil
	}
	shared, perPool := fromcatalog.ForPools(p.Catalog, c.spec.Pools)
	todo := c.todo
	for attempt := 0; attempt < maxPlanAttempts && len(todo) > 0; attempt++ {
		now := p.now()
		unavailable := func(t, z, ct string) bool { return p.Unavailable.IsUnavailable(now, t, z, ct) }
		in := scheduling.Input{
			Pods: todo, Nodes: p.simulatorNodes(c), DaemonSets: c.daemonSets, Pools: c.spec.Pools,
			InstanceTypes: shared, PoolInstanceTypes: perPool, Region: p.Catalog.Region(), Unavailable: unavailable,
			PersistentVolumeClaims: c.pvcs, PersistentVolumes: c.pvs, StorageClasses: c.classes,
		}
		start := time.Now()
		plan := scheduling.Solve(in)
		p.Log.Info("planned", "pods", len(todo), "newNodes", len(plan.NewNodes), "unschedulable", len(plan.Unschedulable),
			"pricePerHour", plan.TotalPricePerHour, "lowerBoundPricePerHour", plan.LowerBoundPricePerHour, "seconds", time.Since(start).Seconds())
		for _, f := range plan.Unschedulable {
			res.Unschedulable[pods.Key(f.Pod)] = f.Reason
		}
		// Pods the simulator put on in-flight instances wait for them.
		for _, pl := range plan.Existing {
			if !pl.InFlight {
				continue // a registered node: kube-scheduler (or the binder) places them
			}
			for _, pod := range pl.Pods {
				if err := p.nominate(ctx, pod, pl.Node, now, res); err != nil {
					return res, err
				}
			}
		}
		var retry []*corev1.Pod
		for _, n := range plan.NewNodes {
			inst, err := p.launch(ctx, c.spec, n, unavailable)
			var ce *launch.CapacityError
			if errors.As(err, &ce) {
				for _, o := range ce.Offerings {
					p.Unavailable.Mark(now, o.InstanceType, o.Zone, o.CapacityType)
				}
				p.Log.Warn("offerings out of capacity; planning again without them", "pool", n.Pool, "codes", strings.Join(ce.Codes, ","), "offerings", len(ce.Offerings))
				retry = append(retry, n.Pods...)
				continue
			}
			if err != nil {
				p.Log.Error("launch failed", "pool", n.Pool, "error", err.Error())
				for _, pod := range n.Pods {
					res.Unschedulable[pods.Key(pod)] = err.Error()
				}
				continue
			}
			res.Launched = append(res.Launched, *inst)
			p.Log.Info("launched", "pool", n.Pool, "instance", inst.ID, "instanceType", inst.InstanceType, "zone", inst.Zone, "capacityType", inst.CapacityType, "pods", len(n.Pods))
			// The new instance holds these pods now; a replan in this pass
			// must see it as in flight.
			c.instances = append(c.instances, *inst)
			for _, pod := range n.Pods {
				if err := p.nominate(ctx, pod, inst.ID, now, res); err != nil {
					return res, err
				}
				c.planned[inst.ID] = append(c.planned[inst.ID], pod)
			}
		}
		todo = retry
	}
	return res, nil
}

// maxPlanAttempts bounds the replans after capacity errors in one pass;
// what is still unplaced waits for the next event or the safety net.
const maxPlanAttempts = 4

func (p *Provisioner) nominate(ctx context.Context, pod *corev1.Pod, instance string, now time.Time, res *Result) error {
	if err := p.Kube.Nominate(ctx, pod, instance, now); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // changed since read; the next pass sees the truth
		}
		return err
	}
	res.Nominated++
	return nil
}

func (p *Provisioner) launch(ctx context.Context, spec *model.Spec, n scheduling.NewNode, unavailable func(t, z, ct string) bool) (*launch.Instance, error) {
	var pool *model.Pool
	for _, pl := range spec.Pools {
		if pl.Name == n.Pool {
			pool = pl
		}
	}
	if pool == nil {
		return nil, fmt.Errorf("pool %q not found", n.Pool)
	}
	nc, ok := spec.NodeClasses[pool.NodeClass]
	if !ok {
		return nil, fmt.Errorf("pool %q: node class %q not found", pool.Name, pool.NodeClass)
	}
	opts := launchOptions(p.Catalog, n, unavailable)
	if len(opts) == 0 {
		return nil, fmt.Errorf("pool %q: no launchable offering left for the planned node", pool.Name)
	}
	uids := make([]string, len(n.Pods))
	for i, pod := range n.Pods {
		uids[i] = string(pod.UID)
	}
	sort.Strings(uids)
	// The token covers the pods and the options: a retry of the same plan
	// (a crashed invocation, a duplicate event) gets the same instance back
	// from CreateFleet, while a plan changed by a capacity error is a new
	// request.
	parts := append([]string{p.Cluster, pool.Name}, uids...)
	for _, o := range opts {
		parts = append(parts, o.InstanceType+"/"+o.Zone+"/"+o.CapacityType)
	}
	return p.Launcher.Launch(ctx, launch.Request{Pool: pool, Class: nc, Options: opts, Labels: nodeLabels(n.Labels), Token: launch.Token(parts...)})
}

// nodeLabels are the labels a node is told to register with: the plan's,
// less those the kubelet and the cloud set themselves (and kubelet refuses
// to take from --node-labels).
func nodeLabels(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		switch k {
		case model.LabelInstanceType, model.LabelZone, model.LabelRegion, model.LabelArch, model.LabelOS, model.LabelHostname:
			continue
		}
		out[k] = v
	}
	return out
}
