package reaping

import (
	"context"
	"fmt"
	"sort"

	"github.com/joist-dev/joist/pkg/disruption"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
)

// Cloud tells what the cluster's instances run with and what their node
// classes resolve to now (*launch.Launcher), for the drift rule.
type Cloud interface {
	Instances(ctx context.Context) ([]launch.Instance, error)
	Desired(ctx context.Context, nc *model.NodeClass) (launch.Desired, error)
}

// driftFacts fills the snapshot's instance and class facts. A class that
// cannot be resolved is left out (its nodes are judged on their labels
// only) and reported; it never stops the pass.
func (r *Reaper) driftFacts(ctx context.Context, spec *model.Spec, snap *disruption.Snapshot) error {
	if r.Catalog != nil {
		if cat, err := r.Catalog(ctx); err == nil {
			snap.OfferedTypes = map[string]bool{}
			for _, t := range cat.Types() {
				snap.OfferedTypes[t.Name] = true
			}
		} else {
			r.Log.Warn("drift: catalog unreadable; no instance type is judged gone", "error", err.Error())
		}
	}
	if r.Cloud == nil {
		return nil
	}
	insts, err := r.Cloud.Instances(ctx)
	if err != nil {
		return fmt.Errorf("drift: %w", err)
	}
	snap.Instances = make(map[string]disruption.InstanceFacts, len(insts))
	for _, i := range insts {
		snap.Instances[i.ID] = disruption.InstanceFacts{SpecHash: i.Tags[launch.TagSpecHash], ImageID: i.ImageID, SubnetID: i.SubnetID, SecurityGroups: i.SecurityGroups}
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
		snap.Classes[name] = disruption.ClassFacts{ImageIDs: d.ImageIDs, SubnetIDs: d.SubnetIDs, SecurityGroups: d.SecurityGroups}
	}
	return nil
}
