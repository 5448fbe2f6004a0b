// Package fromcatalog converts pkg/catalog's instance types into the
// simulator's input, per pool kubelet configuration. It lives apart from
// pkg/scheduling so the simulator does not depend on the catalog; both are
// pure, and so is this package.
package fromcatalog

import (
	"encoding/json"
	"sort"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// InstanceTypes converts every type of a catalog with the allocatable a
// node would have under the given kubelet settings (nil: defaults).
func InstanceTypes(cat *catalog.Catalog, k *model.Kubelet) []*scheduling.InstanceType {
	return InstanceTypesFor(cat, k, nil)
}

// InstanceTypesFor is InstanceTypes for nodes of a node class (nil:
// AL2023 with defaults): its AMI family, root volume, instance store
// policy and EFA interfaces change capacity and allocatable
// (catalog.SizeKey), and a Windows family changes the labels and leaves
// out the types its AMIs do not run on (catalog.LabelKey: os=windows and
// the build, no arm64 type).
func InstanceTypesFor(cat *catalog.Catalog, k *model.Kubelet, nc *model.NodeClass) []*scheduling.InstanceType {
	types := cat.Types()
	out := make([]*scheduling.InstanceType, 0, len(types))
	for _, t := range types {
		if !t.Runs(nc) {
			continue
		}
		offs := cat.Offerings(t.Name)
		it := &scheduling.InstanceType{
			Name:        t.Name,
			Labels:      t.LabelsFor(nc),
			Capacity:    t.CapacityFor(k, nc),
			Allocatable: t.AllocatableFor(k, nc),
			Offerings:   make([]scheduling.Offering, 0, len(offs)),
		}
		for _, o := range offs {
			it.Offerings = append(it.Offerings, scheduling.Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price})
		}
		out = append(out, it)
	}
	return out
}

// ForPools fills an Input's instance types for a set of pools: the shared
// list for pools with default kubelet settings whose node class sizes and
// labels nodes as the default one does (classKey), and a list of their own
// for the others (lists are shared between pools of equal settings and
// sizes). classes are the pools' node classes by name (a pool whose class
// is missing is sized with defaults). The lists come from Prepared:
// callers must not change them.
func ForPools(cat *catalog.Catalog, pools []*model.Pool, classes map[string]*model.NodeClass) ([]*scheduling.InstanceType, map[string][]*scheduling.InstanceType) {
	l := forPools(cat, pools, classes, nil, nil)
	return l.shared, l.per
}

// poolLists are the pools' instance types (ForPools) and, with overlays,
// what they changed.
type poolLists struct {
	shared   []*scheduling.InstanceType
	per      map[string][]*scheduling.InstanceType
	prepared []*scheduling.PreparedTypes
	over     *overlaidEntry // nil without overlays
}

// forPools is ForPools with the overlays applied (overlay.go): a pool
// an overlay changes gets a list of its own. zoneIDs are the zones' IDs
// (Cluster.ZoneIDs), for overlays that select offerings by them.
func forPools(cat *catalog.Catalog, pools []*model.Pool, classes map[string]*model.NodeClass, overlays []*model.Overlay, zoneIDs map[string]string) poolLists {
	shared := Prepared(cat, nil)
	prepared := []*scheduling.PreparedTypes{shared}
	per := map[string][]*scheduling.InstanceType{}
	byConfig := map[string][]*scheduling.InstanceType{}
	sorted := append([]*model.Pool(nil), pools...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	defaultClass := classKey(nil)
	keys := map[string]string{}
	for _, p := range sorted {
		nc := classes[p.NodeClass]
		class := classKey(nc)
		if p.Kubelet == nil && class == defaultClass {
			continue
		}
		key := kubeletKey(p.Kubelet) + "|" + class
		keys[p.Name] = key
		list, ok := byConfig[key]
		if !ok {
			pt := PreparedFor(cat, p.Kubelet, nc)
			prepared = append(prepared, pt)
			list = pt.Types()
			byConfig[key] = list
		}
		per[p.Name] = list
	}
	out := poolLists{shared: shared.Types(), per: per, prepared: prepared}
	if len(overlays) == 0 {
		return out
	}
	listOf := func(p *model.Pool) []*scheduling.InstanceType {
		if l, ok := per[p.Name]; ok {
			return l
		}
		return out.shared
	}
	out.over = overlaid(cat, overlays, sorted, listOf, func(p *model.Pool) string { return keys[p.Name] }, zoneIDs)
	for _, p := range sorted {
		if pt := out.over.per[p.Name]; pt != nil {
			per[p.Name] = pt.Types()
			out.prepared = append(out.prepared, pt)
		}
	}
	return out
}

// classKey names what of a node class changes its instance types: their
// sizes (catalog.SizeKey) and labels (catalog.LabelKey).
func classKey(nc *model.NodeClass) string {
	return catalog.SizeKey(nc) + "|" + catalog.LabelKey(nc)
}

func kubeletKey(k *model.Kubelet) string {
	if k == nil {
		return ""
	}
	b, _ := json.Marshal(k)
	if k.EvaluateCEL && len(k.Expressions()) > 0 {
		return "cel|" + string(b) // sized per type: not as without the gate
	}
	return string(b)
}

// Prepared returns a catalog's instance types under the given kubelet
// settings (InstanceTypes), prepared for the simulator
// (scheduling.PrepareTypes). A function plans against one catalog many
// times (each provisioning attempt, each consolidation candidate) and
// preparing the catalog's thousand-odd types was most of a small solve, so
// the lists of the last few catalogs are kept: a catalog is immutable, and
// a changed one (the live catalog builds a new one) is a new key. Safe for
// concurrent use; the lists are shared and must not be changed.
func Prepared(cat *catalog.Catalog, k *model.Kubelet) *scheduling.PreparedTypes {
	return cache.get(cat, k, nil)
}

// PreparedFor is Prepared for nodes of a node class (InstanceTypesFor);
// node classes that size and label nodes alike share one list.
func PreparedFor(cat *catalog.Catalog, k *model.Kubelet, nc *model.NodeClass) *scheduling.PreparedTypes {
	return cache.get(cat, k, nc)
}

// maxPrepared bounds the cache: a few kubelet settings and node classes
// (each pair that sizes or labels nodes differently is a list) of the
// current catalog and of the one before it. A pass prepares a missing
// list again, so a cluster with more such pairs than this re-prepares
// every pass.
const maxPrepared = 16

var cache preparedCache

type preparedKey struct {
	cat     *catalog.Catalog
	kubelet string
	class   string
}

type preparedEntry struct {
	key  preparedKey
	once sync.Once
	pt   *scheduling.PreparedTypes
}

// preparedCache holds the newest maxPrepared entries, oldest first.
type preparedCache struct {
	mu      sync.Mutex
	entries []*preparedEntry
}

func (c *preparedCache) get(cat *catalog.Catalog, k *model.Kubelet, nc *model.NodeClass) *scheduling.PreparedTypes {
	key := preparedKey{cat, kubeletKey(k), classKey(nc)}
	c.mu.Lock()
	var e *preparedEntry
	for _, x := range c.entries {
		if x.key == key {
			e = x
			break
		}
	}
	if e == nil {
		e = &preparedEntry{key: key}
		c.entries = append(c.entries, e)
		if len(c.entries) > maxPrepared {
			c.entries = append(c.entries[:0:0], c.entries[1:]...)
		}
	}
	c.mu.Unlock()
	e.once.Do(func() { e.pt = scheduling.PrepareTypes(InstanceTypesFor(cat, k, nc)) })
	return e.pt
}

// Cluster is what the simulator reads of a cluster besides the pods it
// places and the nodes it may place them on: the pools, the DaemonSets
// every new node runs, the volumes that pin pods to zones and the
// namespaces whose labels a pod's affinity may select.
type Cluster struct {
	Pools []*model.Pool
	// NodeClasses are the pools' node classes by name: they size the
	// nodes (InstanceTypesFor).
	NodeClasses            map[string]*model.NodeClass
	DaemonSets             []*appsv1.DaemonSet
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	Namespaces             []*corev1.Namespace
	// Overlays are the NodeOverlays (model.Spec.Overlays, in its order):
	// the pools' lists carry their prices and capacity (overlay.go).
	Overlays []*model.Overlay
	// ZoneIDs are the zones' IDs (topology.k8s.aws/zone-id) by zone, as
	// the node classes' subnets or the nodes' labels give them: the
	// Input's ZoneIDs, and what overlays requiring a zone ID select
	// offerings by (nil: no zone has a known ID).
	ZoneIDs map[string]string
	// VolumeLimits are the registered nodes' volume attachment limits
	// per CSI driver, by node name, from their CSINodes (the caller sets
	// scheduling.Node.VolumeLimits from them).
	VolumeLimits map[string]map[string]int64
}

// Input is the simulator's input for a cluster planned against a catalog:
// the catalog's instance types (per pool kubelet settings, ForPools), its
// region and the cluster's objects. The provisioner, `joist plan`, the
// benchmarks and consolidation all build their input here, so a pod is
// planned alike wherever it is planned; the caller adds the pods, the
// nodes, the offerings out of capacity and the options.
func Input(cat *catalog.Catalog, c Cluster) scheduling.Input {
	l := forPools(cat, c.Pools, c.NodeClasses, c.Overlays, c.ZoneIDs)
	return scheduling.Input{
		Pools: c.Pools, DaemonSets: c.DaemonSets,
		InstanceTypes: l.shared, PoolInstanceTypes: l.per, Prepared: l.prepared, Region: cat.Region(),
		PersistentVolumeClaims: c.PersistentVolumeClaims, PersistentVolumes: c.PersistentVolumes,
		StorageClasses: c.StorageClasses, Namespaces: c.Namespaces, ZoneIDs: c.ZoneIDs,
	}
}

// OverlayConflicts are the errors of the cluster's overlays that apply
// nowhere because they conflict with another of the same weight (Input
// plans without them), for callers to report.
func OverlayConflicts(cat *catalog.Catalog, c Cluster) []error {
	if len(c.Overlays) == 0 {
		return nil
	}
	return forPools(cat, c.Pools, c.NodeClasses, c.Overlays, c.ZoneIDs).over.problems
}

// PoolPrices are the prices the overlays set on a pool's offerings
// (OfferingKey to $/h), as Input plans with them; nil when no overlay
// prices the pool's. The provisioner launches at these prices. Kept with
// the overlaid lists: the map is shared and must not be changed.
func PoolPrices(cat *catalog.Catalog, c Cluster, pool string) map[string]float64 {
	if len(c.Overlays) == 0 {
		return nil
	}
	return forPools(cat, c.Pools, c.NodeClasses, c.Overlays, c.ZoneIDs).over.prices[pool]
}

// OfferingPrice is an offering's $/h as its pool plans it: the price the
// pool's overlays set (overlaid, from PoolPrices), else the catalog's for
// the type, zone and capacity type; 0 when neither prices it, as a
// reserved offering (the catalog has none: a reservation is paid for
// either way). What the cost metrics report.
func OfferingPrice(cat *catalog.Catalog, overlaid map[string]float64, typ, zone, capacityType string) float64 {
	if p, ok := overlaid[OfferingKey(typ, zone, capacityType)]; ok {
		return p
	}
	p, _ := cat.OfferingPrice(typ, zone, capacityType)
	return p
}

// OfferingKey names an offering in PoolPrices.
func OfferingKey(typ, zone, capacityType string) string {
	return typ + "/" + zone + "/" + capacityType
}
