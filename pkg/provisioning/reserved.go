package provisioning

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Reserved capacity: the instances EC2 capacity reservations (on-demand
// capacity reservations and capacity blocks) the pools' node classes
// select can still hold are offered to the simulator as empty in-flight
// nodes of the pool that would launch them. The account pays for a
// reservation whether it runs anything or not, so such a node costs the
// plan nothing: the simulator fills it before it buys a new node, as it
// fills any capacity that exists, and one it leaves empty is simply not
// launched. The simulator needs to know nothing of reservations; the pass
// turns each one it used into a launch into that reservation.

// reservedSlot is one instance a reservation can still hold, offered as
// the simulator node of that name.
type reservedSlot struct {
	res  launch.Reservation
	pool *model.Pool
	node *scheduling.Node
}

// readReservations reads, for every node class a pool that may launch
// reserved capacity uses, the active reservations it selects. A class
// whose reservations cannot be read is planned without them (logged):
// one class's error never stops the pass.
func (p *Provisioner) readReservations(ctx context.Context, c *cluster) {
	c.reservations = map[string][]launch.Reservation{}
	for _, name := range ReservingClasses(c.spec) {
		res, err := p.Launcher.Reservations(ctx, c.spec.NodeClasses[name])
		if err != nil {
			p.Log.Warn("read capacity reservations; planning without them", "nodeClass", name, "error", err.Error())
			continue
		}
		c.reservations[name] = res
	}
}

// ReservingClasses are the node classes, by name, that select capacity
// reservations and that some dynamic pool allowing the reserved capacity
// type launches with.
func ReservingClasses(spec *model.Spec) []string {
	seen := map[string]bool{}
	var out []string
	for _, pl := range spec.Pools {
		nc := spec.NodeClasses[pl.NodeClass]
		if nc == nil || len(nc.CapacityReservationSelector) == 0 || pl.Replicas != nil || seen[pl.NodeClass] {
			continue
		}
		if !scheduling.LabelsStillSatisfy(pl.Requirements, map[string]string{model.LabelCapacityType: model.CapacityTypeReserved}) {
			continue
		}
		seen[pl.NodeClass] = true
		out = append(out, pl.NodeClass)
	}
	sort.Strings(out)
	return out
}

// reservedNodes are the simulator nodes for the instances the pools'
// reservations can still hold: at most one per pod to plan (each node
// it uses holds at least one), none for an offering marked out of
// capacity or a capacity block about to end (launch.Reservation.Ending),
// none past a pool's limits (the simulator counts every node of a pool
// against them, used or not, so a limited pool is offered no more
// reserved instances than its limits leave room for). A reservation
// several pools could launch into goes to the first of them by weight,
// then name. existing are the cluster's nodes and in-flight instances as
// simulatorNodes describes them.
func (p *Provisioner) reservedNodes(c *cluster, existing []*scheduling.Node, want int, unavailable func(t, z, ct string) bool) ([]*scheduling.Node, map[string]reservedSlot) {
	return reservedSlots(p.Catalog, c.spec, c.reservations, c.reservedUsed, existing, want, p.now(), unavailable)
}

// ReservedNodes are the nodes reservedNodes offers the provisioner's
// simulation, for consolidation's: room a running pod may move to, in a
// node launched into its reservation first (disruption.Snapshot.Reserved).
// reservations are the reservations each node class selects, by class;
// existing the pools' nodes (their limits' usage); want the most nodes
// per reservation.
func ReservedNodes(cat *catalog.Catalog, spec *model.Spec, reservations map[string][]launch.Reservation, existing []*scheduling.Node, want int, now time.Time, unavailable func(t, z, ct string) bool) []*scheduling.Node {
	nodes, _ := reservedSlots(cat, spec, reservations, nil, existing, want, now, unavailable)
	return nodes
}

// reservedLabels adds to a type's labels those of a node in reservation r.
func reservedLabels(labels map[string]string, r launch.Reservation, region string) map[string]string {
	labels[model.LabelZone] = r.Zone
	labels[model.LabelRegion] = region
	labels[model.LabelCapacityType] = model.CapacityTypeReserved
	labels[model.LabelReservationID] = r.ID
	labels[model.LabelReservationType] = reservationType(r)
	return labels
}

// reservedSlots is reservedNodes of a catalog, a spec, the reservations
// by class and the instances launched into each in this pass (used).
func reservedSlots(cat *catalog.Catalog, spec *model.Spec, reservations map[string][]launch.Reservation, used map[string]int, existing []*scheduling.Node, want int, now time.Time, unavailable func(t, z, ct string) bool) ([]*scheduling.Node, map[string]reservedSlot) {
	if len(reservations) == 0 || want == 0 {
		return nil, nil
	}
	pools := append([]*model.Pool(nil), spec.Pools...)
	sort.SliceStable(pools, func(i, j int) bool {
		if pools[i].Weight != pools[j].Weight {
			return pools[i].Weight > pools[j].Weight
		}
		return pools[i].Name < pools[j].Name
	})
	selects := map[string]map[string]bool{} // class -> reservation IDs
	var all []launch.Reservation
	seen := map[string]bool{}
	for class, rs := range reservations {
		selects[class] = map[string]bool{}
		for _, r := range rs {
			selects[class][r.ID] = true
			if !seen[r.ID] {
				seen[r.ID] = true
				all = append(all, r)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	room := newLimitRoom(existing)
	var out []*scheduling.Node
	slots := map[string]reservedSlot{}
	for _, r := range all {
		left := r.Available - used[r.ID]
		t, ok := cat.Lookup(r.InstanceType)
		if left <= 0 || !ok || r.Ending(now) || unavailable(r.InstanceType, r.Zone, model.CapacityTypeReserved) {
			continue
		}
		// The first pool by weight that may use it; a node's type labels
		// depend on its class (a Windows class's are os=windows and its
		// build), so on the pool.
		var (
			pool   *model.Pool
			nc     *model.NodeClass
			labels map[string]string
		)
		for _, pl := range pools {
			c := spec.NodeClasses[pl.NodeClass]
			if pl.Replicas != nil || !selects[pl.NodeClass][r.ID] || !t.Runs(c) {
				continue
			}
			if l := reservedLabels(t.LabelsFor(c), r, cat.Region()); poolAdmits(pl.Requirements, l) {
				pool, nc, labels = pl, c, l
				break
			}
		}
		if pool == nil {
			continue
		}
		for k, v := range poolLabels(pool) {
			labels[k] = v
		}
		capacity := t.CapacityFor(pool.Kubelet, nc)
		n := min(left, want, room.fits(pool, capacity))
		for i := range n {
			name := fmt.Sprintf("%s-%d", r.ID, i)
			l := make(map[string]string, len(labels)+1)
			for k, v := range labels {
				l[k] = v
			}
			l[model.LabelHostname] = name
			node := &scheduling.Node{
				Name: name, Pool: pool.Name, InFlight: true, Labels: l, Taints: pool.Taints,
				Capacity: capacity, Allocatable: t.AllocatableFor(pool.Kubelet, nc),
			}
			room.take(pool, capacity)
			out = append(out, node)
			slots[name] = reservedSlot{res: r, pool: pool, node: node}
		}
	}
	return out, slots
}

// poolAdmits tells whether a pool's requirements admit a reserved node
// with these labels: on the keys the node carries, as drift reads them
// (scheduling.LabelsStillSatisfy); and a requirement on an instance-type
// label the type does not carry (a GPU label of a type without GPUs)
// fails unless it is NotIn or DoesNotExist, as it rules the type out of
// the pool's new nodes.
func poolAdmits(reqs []model.Requirement, labels map[string]string) bool {
	for _, r := range reqs {
		k := model.NormalizeLabelKey(r.Key)
		typeKey := k == model.LabelInstanceType || k == model.LabelArch || k == model.LabelOS || k == model.LabelWindowsBuild || strings.HasPrefix(k, "karpenter.k8s.aws/instance-")
		if _, ok := labels[k]; typeKey && !ok && r.Operator != string(corev1.NodeSelectorOpNotIn) && r.Operator != string(corev1.NodeSelectorOpDoesNotExist) {
			return false
		}
	}
	return scheduling.LabelsStillSatisfy(reqs, labels)
}

// reservation is the reservation of that ID some node class selects, as
// the pass read them.
func (c *cluster) reservation(id string) (launch.Reservation, bool) {
	for _, rs := range c.reservations {
		for _, r := range rs {
			if r.ID == id {
				return r, true
			}
		}
	}
	return launch.Reservation{}, false
}

// reservationType is a reservation's type label: EC2's "default" for an
// on-demand capacity reservation when it does not say.
func reservationType(r launch.Reservation) string {
	if r.Type == "" {
		return "default"
	}
	return r.Type
}

// reservedLaunches takes the placements on reserved slots out of the
// plan's placements and makes each a new node to launch into its
// reservation: one instance of the reservation's type in its zone,
// carrying the pool's labels and taints and the reservation's labels.
func reservedLaunches(placements []scheduling.Placement, slots map[string]reservedSlot) ([]scheduling.Placement, []scheduling.NewNode) {
	if len(slots) == 0 {
		return placements, nil
	}
	var kept []scheduling.Placement
	var out []scheduling.NewNode
	for _, pl := range placements {
		s, ok := slots[pl.Node]
		if !ok {
			kept = append(kept, pl)
			continue
		}
		// As a new node's: the pool's labels, those of its offering
		// (the capacity type, the reservation's); its type's come with
		// the type.
		labels := poolLabels(s.pool)
		for _, k := range []string{model.LabelCapacityType, model.LabelReservationID, model.LabelReservationType} {
			labels[k] = s.node.Labels[k]
		}
		out = append(out, scheduling.NewNode{
			Pool:   s.pool.Name,
			Labels: labels,
			Taints: s.pool.Taints,
			InstanceTypeOptions: []scheduling.InstanceTypeOption{{
				Name: s.res.InstanceType, Zone: s.res.Zone, CapacityType: model.CapacityTypeReserved,
			}},
			Zones:         []string{s.res.Zone},
			CapacityTypes: []string{model.CapacityTypeReserved},
			Pods:          pl.Pods,
		})
	}
	return kept, out
}

// limitRoom is what the pools' limits leave for more nodes, from the
// capacity of the nodes each pool has.
type limitRoom struct {
	used  map[string]corev1.ResourceList
	nodes map[string]int64
}

func newLimitRoom(existing []*scheduling.Node) *limitRoom {
	r := &limitRoom{used: map[string]corev1.ResourceList{}, nodes: map[string]int64{}}
	for _, n := range existing {
		if n.Pool == "" {
			continue
		}
		c := n.Capacity
		if len(c) == 0 {
			c = n.Allocatable
		}
		r.take(&model.Pool{Name: n.Pool}, c)
	}
	return r
}

func (r *limitRoom) take(pool *model.Pool, capacity corev1.ResourceList) {
	u := r.used[pool.Name]
	if u == nil {
		u = corev1.ResourceList{}
		r.used[pool.Name] = u
	}
	for name, q := range capacity {
		sum := u[name]
		sum.Add(q)
		u[name] = sum
	}
	r.nodes[pool.Name]++
}

// fits is how many more nodes of this capacity the pool's limits allow
// (a large number when it has none).
func (r *limitRoom) fits(pool *model.Pool, capacity corev1.ResourceList) int {
	n := int64(1 << 30)
	for name, limit := range pool.Limits {
		if name == "nodes" {
			n = min(n, limit.Value()-r.nodes[pool.Name])
			continue
		}
		per, ok := capacity[name]
		if !ok || per.IsZero() {
			continue
		}
		left := limit.DeepCopy()
		left.Sub(r.used[pool.Name][name])
		n = min(n, quotient(left, per))
	}
	return int(max(n, 0))
}

// quotient is how many whole per fit in left (0 when none does).
func quotient(left, per resource.Quantity) int64 {
	if left.Sign() <= 0 {
		return 0
	}
	return left.MilliValue() / per.MilliValue()
}
