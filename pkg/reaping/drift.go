package reaping

import (
	"context"
	"fmt"
	"sort"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
)

// Cloud tells which instances Joist launched for the cluster, what they
// run with, and what their node classes resolve to now (*launch.Launcher).
type Cloud interface {
	Tagged(ctx context.Context) ([]launch.Instance, error)
	Desired(ctx context.Context, nc *model.NodeClass) (launch.Desired, error)
	Reservations(ctx context.Context, nc *model.NodeClass) ([]launch.Reservation, error)
}

// tagged lists the cluster's instances in every state EC2 still shows.
func (r *Reaper) tagged(ctx context.Context) ([]launch.Instance, error) {
	if r.Cloud == nil {
		return nil, fmt.Errorf("reaper: no EC2 to tell which nodes are Joist's")
	}
	insts, err := r.Cloud.Tagged(ctx)
	if err != nil {
		return nil, fmt.Errorf("reaper: list the cluster's instances: %w", err)
	}
	return insts, nil
}

// driftFacts fills the snapshot's instance and class facts from the
// cluster's instances (tagged). A class that cannot be resolved is left
// out (its nodes are judged on their labels only) and reported; it never
// stops the pass.
func (r *Reaper) driftFacts(ctx context.Context, spec *model.Spec, cat *catalog.Catalog, catErr error, tagged []launch.Instance, reads *reservationReads, snap *disruption.Snapshot) {
	switch {
	case catErr != nil:
		r.Log.Warn("drift: catalog unreadable; no instance type is judged gone", "error", catErr.Error())
	case cat != nil:
		snap.OfferedTypes = map[string]bool{}
		for _, t := range cat.Types() {
			snap.OfferedTypes[t.Name] = true
		}
	}
	snap.Instances = make(map[string]disruption.InstanceFacts, len(tagged))
	for _, i := range tagged {
		if i.Live() {
			snap.Instances[i.ID] = disruption.InstanceFacts{SpecHash: i.Tags[launch.TagSpecHash], ImageID: i.ImageID, SubnetID: i.SubnetID, SecurityGroups: i.SecurityGroups}
		}
	}
	snap.SpecHashes = map[string]string{}
	for _, p := range spec.Pools {
		if nc := spec.NodeClasses[p.NodeClass]; nc != nil {
			snap.SpecHashes[p.Name] = model.SpecHash(p, nc)
		}
	}
	used := map[string]bool{}
	for _, n := range snap.Nodes {
		if p := disruption.PoolOf(n.Node, snap.Pools); p != nil && p.NodeClass != "" {
			used[p.NodeClass] = true
		}
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	snap.Classes = map[string]disruption.ClassFacts{}
	for _, name := range names {
		nc := spec.NodeClasses[name]
		if nc == nil {
			continue
		}
		d, err := r.Cloud.Desired(ctx, nc)
		if err != nil {
			r.Log.Warn("drift: cannot resolve node class; its nodes are judged on their labels only", "nodeClass", name, "error", err.Error())
			continue
		}
		facts := disruption.ClassFacts{ImageIDs: d.ImageIDs, SubnetIDs: d.SubnetIDs, SecurityGroups: d.SecurityGroups}
		if d.PlacementGroup != nil {
			facts.PlacementGroupID = d.PlacementGroup.ID
		}
		if len(nc.CapacityReservationSelector) > 0 {
			rs, err := reads.of(ctx, nc)
			if err != nil {
				r.Log.Warn("drift: cannot read node class's capacity reservations; its nodes are judged on their labels only", "nodeClass", name, "error", err.Error())
				continue
			}
			facts.ReservationIDs = map[string]bool{}
			for _, res := range rs {
				// A capacity block about to end is no longer one to be
				// in: its nodes drift, and are replaced before EC2 ends
				// them.
				if !res.Ending(snap.Now) {
					facts.ReservationIDs[res.ID] = true
				}
			}
		}
		snap.Classes[name] = facts
	}
}

// reservationReads reads each node class's capacity reservations once
// per pass, for consolidation's reserved room and drift alike.
type reservationReads struct {
	cloud Cloud
	read  map[string]reservationRead
}

type reservationRead struct {
	res []launch.Reservation
	err error
}

func (r *reservationReads) of(ctx context.Context, nc *model.NodeClass) ([]launch.Reservation, error) {
	if got, ok := r.read[nc.Name]; ok {
		return got.res, got.err
	}
	if r.read == nil {
		r.read = map[string]reservationRead{}
	}
	res, err := r.cloud.Reservations(ctx, nc)
	r.read[nc.Name] = reservationRead{res, err}
	return res, err
}
