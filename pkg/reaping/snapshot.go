package reaping

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/provisioning"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/fromcatalog"
)

// consolidationInputs fills what consolidation asks pkg/scheduling
// beyond nodes and pods — the catalog's instance types (per pool kubelet
// settings), the region, the DaemonSets, and the volumes and namespaces
// the pods that would move need, read and built as the provisioner does
// (provisioning.ReadCluster, fromcatalog.Input) — when some pool
// consolidates underused nodes. Without them
// (no catalog, or catErr reading it) consolidation can only delete.
func (r *Reaper) consolidationInputs(ctx context.Context, spec *model.Spec, cat *catalog.Catalog, catErr error, reads *reservationReads, snap *disruption.Snapshot) error {
	pools := spec.Pools
	if (cat == nil && catErr == nil) || !anyUnderutilized(pools) {
		return nil
	}
	if catErr != nil {
		return fmt.Errorf("reaper: catalog: %w", catErr)
	}
	var onNodes []*corev1.Pod
	var nodes []*corev1.Node
	for _, n := range slices.Concat(snap.Nodes, snap.Others) {
		onNodes = append(onNodes, n.Pods...)
		nodes = append(nodes, n.Node)
	}
	// Replacements only in pools that can launch, in their subnets'
	// zones, as the provisioner plans (provisioning.ReadyPools).
	var ready *provisioning.Readiness
	if r.Cloud != nil {
		rd := provisioning.ReadyPools(ctx, spec, r.Cloud)
		provisioning.LogReadiness(r.Log, rd)
		ready = &rd
	}
	objs, err := provisioning.ReadCluster(ctx, r.Kube, ready.Spec(spec), onNodes)
	if err != nil {
		return fmt.Errorf("reaper: %w", err)
	}
	objs.ZoneIDs = provisioning.ZoneIDs(ready, nodes)
	snap.Simulation = fromcatalog.Input(cat, objs)
	snap.Simulation.Options = r.Policy
	if ready != nil && len(ready.NotReady) > 0 {
		snap.Simulation.NotReady = ready.NotReady
	}
	if d := provisioning.NewSpreadDefaults(r.Kube, r.SchedulerConfig); d != nil {
		snap.DefaultSpread = func(ps []*corev1.Pod) ([]*corev1.Pod, error) { return d.Apply(ctx, ps) }
	}
	snap.VolumeLimits = objs.VolumeLimits
	snap.Reserved = r.reservedRoom(ctx, cat, spec, reads, snap)
	return nil
}

// reservedRoom is the room the pools' capacity reservations can still
// hold, as the provisioner offers it (provisioning.ReservedNodes), for
// consolidation to move pods into: at most one reserved node per
// reservation and Joist node (a command retires its nodes into at most
// one). A class whose reservations cannot be read offers none (logged).
func (r *Reaper) reservedRoom(ctx context.Context, cat *catalog.Catalog, spec *model.Spec, reads *reservationReads, snap *disruption.Snapshot) []*scheduling.Node {
	classes := provisioning.ReservingClasses(spec)
	if len(classes) == 0 || r.Cloud == nil {
		return nil
	}
	byClass := map[string][]launch.Reservation{}
	for _, name := range classes {
		rs, err := reads.of(ctx, spec.NodeClasses[name])
		if err != nil {
			r.Log.Warn("consolidation: read capacity reservations; consolidating without them", "nodeClass", name, "error", err.Error())
			continue
		}
		byClass[name] = rs
	}
	var existing []*scheduling.Node
	for _, n := range snap.Nodes {
		existing = append(existing, &scheduling.Node{Name: n.Node.Name, Pool: disruption.PoolLabel(n.Node), Capacity: n.Node.Status.Capacity, Allocatable: n.Node.Status.Allocatable})
	}
	// Offerings marked out of capacity are read later, under the
	// decider lease: consolidation passes over their reserved nodes then.
	none := func(string, string, string) bool { return false }
	return provisioning.ReservedNodes(cat, spec, byClass, existing, len(snap.Nodes), snap.Now, none)
}

// pdbs reads the cluster's PodDisruptionBudgets for the graceful rules
// (disruption.Snapshot.PDBs). A budget whose selector cannot be read is
// left out and reported: the eviction API cannot apply it either.
func (r *Reaper) pdbs(ctx context.Context) ([]disruption.PDB, error) {
	list, err := r.Kube.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("reaper: PodDisruptionBudgets: %w", err)
	}
	out := make([]disruption.PDB, 0, len(list.Items))
	var errs []error
	for i := range list.Items {
		p, err := disruption.NewPDB(&list.Items[i])
		if err != nil {
			errs = append(errs, fmt.Errorf("reaper: %w", err))
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

func anyUnderutilized(pools []*model.Pool) bool {
	for _, p := range pools {
		if p.Disruption.ConsolidationPolicy == "WhenEmptyOrUnderutilized" || p.Disruption.ConsolidationPolicy == "Balanced" {
			return true
		}
	}
	return false
}

// unavailableOn is what the provisioner keeps on the decider Lease
// (enc, its unavailable-offerings annotation): the offerings recently out
// of capacity, which a consolidation must not price a replacement on. It
// is nil when none is marked at now (none, only expired marks, or marks
// that cannot be read), so consolidation's solves reuse the pool types
// and option lists kept with the prepared catalog, as the provisioner's
// do (provisioning's solveUnavailable): a solve told of any offering
// prepares its own.
func unavailableOn(enc string, now time.Time, log *slog.Logger) func(instanceType, zone, capacityType string) bool {
	if enc == "" {
		return nil
	}
	u, err := catalog.DecodeUnavailable(enc)
	if err != nil {
		log.Warn("ignoring unreadable unavailable-offerings annotation", "error", err.Error())
		return nil
	}
	if len(u.Keys(now)) == 0 {
		return nil
	}
	return func(t, z, ct string) bool { return u.IsUnavailable(now, t, z, ct) }
}
