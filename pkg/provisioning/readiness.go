package provisioning

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Node class readiness. Karpenter plans only with NodePools that are
// Ready, and a NodePool is not Ready while its EC2NodeClass is not: no
// subnet, security group or image matches its selectors. It also offers
// an EC2NodeClass's instance types only in the zones its subnets are in.
// Joist plans from specs, not from a controller's status, so it asks the
// same of each node class before planning, the way a launch resolves it
// (the launcher's caches: within their TTL this costs no API call). A
// pool whose class cannot launch a node is left out of planning (its
// nodes still count), so its pods go to the next pool that takes them
// instead of failing to launch on every pass; the others are planned in
// the zones their classes have subnets in only, so a zonal spread is
// never planned into a zone no node can be launched in.

// NodeClassResolver resolves a node class the way a launch would
// (*launch.Launcher).
type NodeClassResolver interface {
	Desired(ctx context.Context, nc *model.NodeClass) (launch.Desired, error)
}

// A class with a placement group also narrows its pools to what a node in
// the group can be (launch.PlacementGroup.Requirements): labelled with
// the group's id, in one of a partition group's partitions (so pods may
// select a partition or spread over them), of a type EC2 launches into a
// cluster group, and in that group's one zone.

// Readiness is what planning may use of a spec's pools now.
type Readiness struct {
	// Pools are the spec's pools in order, each whose node class resolved
	// narrowed to the zones of the class's subnets and to its placement
	// group (more requirements, on a copy; the spec's pools are not
	// changed).
	Pools []*model.Pool
	// NotReady are the pools whose node class cannot launch a node, by
	// name, with why (scheduling.Input.NotReady).
	NotReady map[string]string
	// Unresolved are the pools whose node class could not be read (an AWS
	// call failed, not the class), by name: they are planned as they are,
	// as a passing error must not move pods to another pool.
	Unresolved map[string]error
	// ZoneIDs are the zones' IDs the resolved classes' subnets gave, by
	// zone (scheduling.Input.ZoneIDs).
	ZoneIDs map[string]string
}

// ReadyPools resolves the node class of each of spec's pools (each class
// once) and says which pools planning may use, and where.
func ReadyPools(ctx context.Context, spec *model.Spec, r NodeClassResolver) Readiness {
	out := Readiness{NotReady: map[string]string{}, Unresolved: map[string]error{}, ZoneIDs: map[string]string{}}
	type answer struct {
		d   launch.Desired
		err error
	}
	byClass := map[string]answer{}
	for _, p := range spec.Pools {
		nc := spec.NodeClasses[p.NodeClass]
		if nc == nil {
			out.Pools = append(out.Pools, p)
			continue
		}
		if why := catalog.KubeletNotReady(nc, p.Kubelet); why != "" {
			out.NotReady[p.Name] = why
			out.Pools = append(out.Pools, p)
			continue
		}
		a, ok := byClass[nc.Name]
		if !ok {
			a.d, a.err = r.Desired(ctx, nc)
			byClass[nc.Name] = a
			for z, id := range a.d.ZoneIDs {
				out.ZoneIDs[z] = id
			}
		}
		switch {
		case a.err != nil && passing(a.err):
			out.Unresolved[p.Name] = a.err
			out.Pools = append(out.Pools, p)
		case a.err != nil:
			out.NotReady[p.Name] = a.err.Error()
			out.Pools = append(out.Pools, p)
		case len(a.d.Zones) == 0 && a.d.PlacementGroup == nil:
			out.Pools = append(out.Pools, p)
		default:
			q := *p
			q.Requirements = slices.Clip(p.Requirements)
			if len(a.d.Zones) > 0 {
				q.Requirements = append(q.Requirements, model.Requirement{
					Key: corev1.LabelTopologyZone, Operator: string(corev1.NodeSelectorOpIn), Values: a.d.Zones,
				})
			}
			q.Requirements = append(q.Requirements, a.d.PlacementGroup.Requirements(a.d.Zones)...)
			out.Pools = append(out.Pools, &q)
		}
	}
	return out
}

// Spec is spec with the pools as planning may use them (Pools); launches,
// drift and spec hashes read the spec's own. A nil Readiness (no
// resolver) is spec itself.
func (r *Readiness) Spec(spec *model.Spec) *model.Spec {
	if r == nil {
		return spec
	}
	s := *spec
	s.Pools = r.Pools
	return &s
}

// passing tells whether a node class failed to resolve because an AWS
// call failed (throttled, unreachable, refused) rather than because of
// what the class selects: the launcher wraps the SDK's error in the
// first case and makes its own in the second (no subnet matches, no
// image for the alias, a selector that selects nothing).
func passing(err error) bool {
	var op *smithy.OperationError
	return errors.As(err, &op) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// LogReadiness logs the pools planning leaves out or plans without
// knowing their class, one line each, in the spec's order.
func LogReadiness(log *slog.Logger, r Readiness) {
	for _, p := range r.Pools {
		if why, ok := r.NotReady[p.Name]; ok {
			log.Warn("pool left out of planning: its node class cannot launch a node", "pool", p.Name, "nodeClass", p.NodeClass, "reason", why)
		} else if err, ok := r.Unresolved[p.Name]; ok {
			log.Warn("could not resolve the pool's node class; planning the pool as it is", "pool", p.Name, "nodeClass", p.NodeClass, "error", err.Error())
		}
	}
}

// readiness is the pass's ReadyPools (nil without a resolver), resolved
// and logged once.
func (p *Provisioner) readiness(ctx context.Context, c *cluster) *Readiness {
	if p.NodeClasses == nil {
		return nil
	}
	if c.ready == nil {
		r := ReadyPools(ctx, c.spec, p.NodeClasses)
		LogReadiness(p.Log, r)
		c.ready = &r
	}
	return c.ready
}

// zoneIDs is the pass's ZoneIDs, computed once.
func (p *Provisioner) zoneIDs(ctx context.Context, c *cluster) map[string]string {
	if !c.zoneIDsRead {
		c.zoneIDs, c.zoneIDsRead = ZoneIDs(p.readiness(ctx, c), c.nodes), true
	}
	return c.zoneIDs
}

// ZoneIDs are the zones' IDs (topology.k8s.aws/zone-id) by zone, from the
// node classes' subnets (r, when resolved) and from the nodes' labels (the
// cloud controller manager sets both on every node); nil when none is
// known, so that the simulator leaves the zone ID a label of its own.
func ZoneIDs(r *Readiness, nodes []*corev1.Node) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		if z, id := n.Labels[corev1.LabelTopologyZone], n.Labels[scheduling.LabelZoneID]; z != "" && id != "" {
			out[z] = id
		}
	}
	if r != nil {
		for z, id := range r.ZoneIDs {
			out[z] = id
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
