package disruption

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// InstanceFacts is what EC2 says a node's instance runs with.
type InstanceFacts struct {
	// SpecHash is the instance's joist.sh/spec-hash tag ("" on instances
	// launched before Joist tagged it: never drifted for it).
	SpecHash       string
	ImageID        string
	SubnetID       string
	SecurityGroups []string
}

// ClassFacts is what a node class resolves to now: the images, subnets,
// security groups and capacity reservations a new node of it would get
// (launch.Desired).
type ClassFacts struct {
	ImageIDs       map[string]bool
	SubnetIDs      map[string]bool
	SecurityGroups []string
	// ReservationIDs are the active capacity reservations the class
	// selects (nil: it selects none).
	ReservationIDs map[string]bool
	// PlacementGroupID is the placement group the class's
	// placementGroupSelector resolves to ("": the class names none).
	PlacementGroupID string
}

// DriftOf says why a node of pool p has drifted from what the pool would
// launch now, or "" when it has not (or when the facts to judge it are
// missing: no drift is ever inferred from what could not be read):
//
//   - its pool's or class's spec changed since it was launched (the
//     instance's spec hash is not the pool's now: Snapshot.SpecHashes);
//   - its labels no longer satisfy the pool's requirements (on the keys
//     the node carries);
//   - its instance type is no longer offered (gone from the catalog);
//   - its instance runs an image its class no longer resolves to (a new
//     AMI released under an alias, an AMI selector changed);
//   - its subnet is no longer selected by its class;
//   - its security groups are no longer the class's;
//   - it runs in a capacity reservation its class no longer selects
//     (expired, cancelled, or its selector terms changed), as Karpenter's
//     CapacityReservationDrift;
//   - it is not in the placement group its class resolves to now (the
//     selector was added, removed or changed, or the group was recreated
//     under the same name), as Karpenter's PlacementGroupDrift: the
//     node's placement-group-id label is not the group's id.
func DriftOf(n Node, p *model.Pool, s Snapshot) string {
	if !scheduling.LabelsStillSatisfy(p.Requirements, n.Node.Labels) {
		return "labels no longer satisfy the pool's requirements"
	}
	if t := n.Node.Labels[corev1.LabelInstanceTypeStable]; t != "" && s.OfferedTypes != nil && !s.OfferedTypes[t] {
		return fmt.Sprintf("instance type %s is no longer offered", t)
	}
	inst, ok := s.Instances[pods.InstanceID(n.Node.Spec.ProviderID)]
	if !ok {
		return ""
	}
	if want := s.SpecHashes[p.Name]; inst.SpecHash != "" && want != "" && inst.SpecHash != want {
		return fmt.Sprintf("pool %s or node class %s changed since the node was launched", p.Name, p.NodeClass)
	}
	class, ok := s.Classes[p.NodeClass]
	if !ok {
		return ""
	}
	if inst.ImageID != "" && len(class.ImageIDs) > 0 && !class.ImageIDs[inst.ImageID] {
		return fmt.Sprintf("image %s is no longer one node class %s resolves to", inst.ImageID, p.NodeClass)
	}
	if inst.SubnetID != "" && len(class.SubnetIDs) > 0 && !class.SubnetIDs[inst.SubnetID] {
		return fmt.Sprintf("subnet %s is no longer selected by node class %s", inst.SubnetID, p.NodeClass)
	}
	if id := n.Node.Labels[model.LabelReservationID]; id != "" && n.Node.Labels[model.LabelCapacityType] == model.CapacityTypeReserved && !class.ReservationIDs[id] {
		return fmt.Sprintf("capacity reservation %s is no longer one node class %s selects", id, p.NodeClass)
	}
	if id := n.Node.Labels[model.LabelPlacementGroupID]; id != class.PlacementGroupID {
		if id == "" {
			return fmt.Sprintf("node is not in placement group %s of node class %s", class.PlacementGroupID, p.NodeClass)
		}
		return fmt.Sprintf("placement group %s is no longer node class %s's", id, p.NodeClass)
	}
	if len(inst.SecurityGroups) > 0 && len(class.SecurityGroups) > 0 && !sameSet(inst.SecurityGroups, class.SecurityGroups) {
		return fmt.Sprintf("security groups %v are no longer node class %s's %v", inst.SecurityGroups, p.NodeClass, class.SecurityGroups)
	}
	return ""
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// drift plans the drifted nodes (within the Drifted budget):
// every empty one, and the first busy one, replaced first (its pods get
// their new place before it drains; one at a time, as Karpenter).
func drift(s Snapshot, nodes []Node, state func(pool string) (total int, disrupting *int), plan *Plan) {
	busy := false
	for _, n := range nodes {
		p := PoolOf(n.Node, s.Pools)
		why := DriftOf(n, p, s)
		if why == "" {
			continue
		}
		empty := Empty(n)
		if !empty && busy {
			continue
		}
		// Karpenter v1.15 drifts as "eventual" disruption: a pool whose
		// terminationGracePeriod bounds the drain drifts a node whatever
		// its pods' do-not-disrupt and budgets say (the drain honours
		// them until the deadline); without one they block it, as they
		// block the graceful rules. The node's own annotation always does.
		block := nodeBlock(n)
		if block == "" && p.Disruption.TerminationGracePeriod == nil {
			block = podBlock(n, s.Now, s.pdbs)
		}
		if block != "" {
			plan.Blocked = append(plan.Blocked, Blocked{Node: n.Node.Name, Reason: ReasonDrifted, Why: block})
			continue
		}
		total, disrupting := state(p.Name)
		if *disrupting >= Allowed(p.Disruption.Budgets, ReasonDrifted, total, s.Now) {
			plan.Blocked = append(plan.Blocked, Blocked{Node: n.Node.Name, Reason: ReasonDrifted, Why: "disruption budget of pool " + p.Name + " exhausted"})
			continue
		}
		*disrupting++
		busy = busy || !empty
		plan.Retire = append(plan.Retire, Decision{Node: n.Node.Name, Pool: p.Name, Reason: ReasonDrifted, Replace: !empty, Detail: why})
	}
}
