package launch

import (
	"context"
	"fmt"
	"sort"

	"github.com/joist-dev/joist/pkg/model"
)

// Desired is what a node class resolves to now: drift compares each
// instance with it (Karpenter's AMI, subnet and security-group drift).
type Desired struct {
	// ImageIDs are the images a new node of the class would boot, for
	// every architecture and variant the class has one for.
	ImageIDs map[string]bool
	// SubnetIDs are every subnet the class selects (not only the one per
	// zone a launch picks).
	SubnetIDs map[string]bool
	// Zones are the zones of those subnets, sorted: the only zones a node
	// of the class can launch in (Karpenter's EC2NodeClass zone info,
	// which limits its instance types' offerings).
	Zones []string
	// ZoneIDs are those zones' IDs (topology.k8s.aws/zone-id), by zone.
	ZoneIDs map[string]string
	// SecurityGroups are the groups a new node would get.
	SecurityGroups []string
	// PlacementGroup is the placement group a new node would launch into
	// (nil: the class names none).
	PlacementGroup *PlacementGroup
}

// Desired resolves a node class the way a launch would, from the same
// caches (so a drift check every reaper pass costs no more API calls than
// the cache's TTL allows).
func (l *Launcher) Desired(ctx context.Context, nc *model.NodeClass) (Desired, error) {
	version, err := l.KubernetesVersion(ctx)
	if err != nil {
		return Desired{}, fmt.Errorf("node class %q: kubernetes version: %w", nc.Name, err)
	}
	var keys []ImageKey
	for _, arch := range []string{"amd64", "arm64"} {
		for _, v := range []string{VariantStandard, VariantNvidia, VariantNeuron} {
			keys = append(keys, ImageKey{Arch: arch, Variant: v})
		}
	}
	amis, err := l.ResolveAMIs(ctx, nc, version, keys)
	if err != nil {
		return Desired{}, err
	}
	d := Desired{ImageIDs: map[string]bool{}, SubnetIDs: map[string]bool{}, ZoneIDs: map[string]string{}}
	for _, a := range amis {
		d.ImageIDs[a.ID] = true
	}
	subnets, err := l.allSubnets(ctx, nc)
	if err != nil {
		return Desired{}, err
	}
	zones := map[string]bool{}
	for _, s := range subnets {
		d.SubnetIDs[s.ID] = true
		if s.Zone != "" && !zones[s.Zone] {
			zones[s.Zone] = true
			d.Zones = append(d.Zones, s.Zone)
		}
		if s.Zone != "" && s.ZoneID != "" {
			d.ZoneIDs[s.Zone] = s.ZoneID
		}
	}
	sort.Strings(d.Zones)
	if d.SecurityGroups, err = l.SecurityGroups(ctx, nc); err != nil {
		return Desired{}, err
	}
	if d.PlacementGroup, err = l.PlacementGroup(ctx, nc); err != nil {
		return Desired{}, err
	}
	return d, nil
}
