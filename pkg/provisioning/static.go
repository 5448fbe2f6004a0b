package provisioning

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/fromcatalog"
)

// Static pools: Karpenter's static NodePools (spec.replicas, alpha behind
// its StaticCapacity gate) keep exactly that many nodes whatever the pods
// ask, for warm capacity. The simulator never grows them (a static pool
// takes no new node for a pod); each provisioner pass launches the nodes
// a static pool lacks, before it plans the pending pods (which may then
// go onto them). The reaper's safety net runs a pass every minute, as
// Karpenter's controller looks again every minute, and retires the nodes
// a static pool has too many (pkg/reaping). As in Karpenter, the count is
// the pool's live nodes and launched instances, at most its limits.nodes;
// nodes being deleted or replaced in this pass do not count, so a static
// node interrupted or drifted gets its replacement first.

// staticCounts are the nodes each pool has, by pool name: its nodes not
// being deleted nor retiring in this pass, and its instances launched
// whose node has not registered yet.
func (c *cluster) staticCounts() map[string]int {
	out := map[string]int{}
	for _, n := range c.nodes {
		if pool := n.Labels[model.LabelNodePool]; pool != "" && n.DeletionTimestamp == nil && !c.retiring[n.Name] {
			out[pool]++
		}
	}
	registered := c.registered()
	for _, inst := range c.instances {
		if inst.Pool != "" && !registered[inst.ID] {
			out[inst.Pool]++
		}
	}
	return out
}

// labelStatic marks the placeholder pods of a static pool's missing nodes.
const labelStatic = "joist.sh/static-pool"

// staticPlaceholders are one pod per node static pool p lacks: a pod of
// no request that only p takes, tolerating every taint and alone on its
// node, so that Solve plans each missing node as it would plan a node of
// p for a pod (requirements, DaemonSets, options, zone, price). Its UID
// names the pool, the slot and the pool's instances now: a pass retried
// with the same instances asks CreateFleet with the same token (and gets
// the instance the first one launched), while a slot filled again after
// its node died is a new request.
func staticPlaceholders(p *model.Pool, have, want int, instances []launch.Instance) []*corev1.Pod {
	var ids []string
	for _, inst := range instances {
		if inst.Pool == p.Name {
			ids = append(ids, inst.ID)
		}
	}
	sort.Strings(ids)
	gen := launch.Token(append([]string{"static", p.Name}, ids...)...)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{labelStatic: p.Name}}
	var out []*corev1.Pod
	for slot := have + 1; slot <= want; slot++ {
		out = append(out, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: p.Name + "-" + strconv.Itoa(slot), Namespace: "joist-static",
				UID:    types.UID("static/" + p.Name + "/" + strconv.Itoa(slot) + "/" + gen),
				Labels: map[string]string{labelStatic: p.Name},
			},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{p.Label(): p.Name},
				Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: sel}},
				}},
				Containers: []corev1.Container{{Name: "static", Image: "none"}},
			},
		})
	}
	return out
}

// scaleStatic launches the nodes the static pools lack. A pool whose
// nodes cannot be planned (no type holds its DaemonSets, its node class
// cannot launch) or launched (out of capacity) is logged and tried again
// by the next pass.
func (p *Provisioner) scaleStatic(ctx context.Context, c *cluster, res *Result) error {
	if !slices.ContainsFunc(c.spec.Pools, func(pl *model.Pool) bool { return pl.Replicas != nil }) {
		return nil
	}
	counts := c.staticCounts()
	var static []*model.Pool
	var placeholders []*corev1.Pod
	// The pools as planning may use them: in their node classes'
	// subnets' zones (ReadyPools).
	ready := p.readiness(ctx, c)
	for _, pl := range ready.Spec(c.spec).Pools {
		if pl.Replicas == nil {
			continue
		}
		have, want := counts[pl.Name], pl.StaticTarget()
		if have >= want {
			continue
		}
		p.Log.Info("static pool lacks nodes; launching them", "pool", pl.Name, "nodes", have, "replicas", *pl.Replicas, "launching", want-have)
		q := *pl
		q.Replicas = nil // planned like any pool, for its placeholders alone
		static = append(static, &q)
		placeholders = append(placeholders, staticPlaceholders(pl, have, want, c.instances)...)
	}
	if len(static) == 0 {
		return nil
	}
	spec := *c.spec
	spec.Pools = static
	objs, err := ReadCluster(ctx, p.Kube, &spec, nil)
	if err != nil {
		return err
	}
	now := p.now()
	unavailable := func(t, z, ct string) bool { return p.Unavailable.IsUnavailable(now, t, z, ct) }
	objs.ZoneIDs = p.zoneIDs(ctx, c)
	in := fromcatalog.Input(p.Catalog, objs)
	in.Options = p.Policy
	in.Pods, in.Unavailable = placeholders, p.solveUnavailable(now, unavailable)
	if ready != nil && len(ready.NotReady) > 0 {
		in.NotReady = ready.NotReady
	}
	plan := scheduling.Solve(in)
	for _, f := range plan.Unschedulable {
		p.Log.Warn("static pool node cannot be planned", "pool", f.Pod.Labels[labelStatic], "reason", f.Reason)
	}
	for _, n := range plan.NewNodes {
		inst, err := p.launch(ctx, c, n, unavailable)
		var ce *launch.CapacityError
		if errors.As(err, &ce) {
			for _, o := range ce.Offerings {
				p.Unavailable.Mark(now, o.InstanceType, o.Zone, o.CapacityType)
			}
		}
		if err != nil {
			p.Log.Error("static pool node launch failed", "pool", n.Pool, "error", err.Error())
			continue
		}
		res.Launched = append(res.Launched, *inst)
		res.Static++
		empty := n
		empty.Pods = nil
		p.recordLaunch(ctx, c, empty, inst, now)
		p.Log.Info("launched", "pool", n.Pool, "instance", inst.ID, "instanceType", inst.InstanceType, "zone", inst.Zone, "capacityType", inst.CapacityType, "static", true)
		// Capacity coming: the pods planned after this see it in flight.
		c.instances = append(c.instances, *inst)
		c.byID, c.indexed = nil, 0
	}
	return nil
}
