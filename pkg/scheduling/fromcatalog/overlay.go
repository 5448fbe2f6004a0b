package fromcatalog

import (
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// NodeOverlays (karpenter.sh/v1alpha1, sigs.k8s.io/karpenter v1.15
// pkg/controllers/nodeoverlay). For each pool, an overlay selects the
// instance types whose labels, with the pool's template labels and its
// name as karpenter.sh/nodepool, satisfy its requirements, and of those
// the offerings whose zone, zone ID and capacity type do (the AWS
// provider puts all three on every offering). The highest-weight
// overlay that changes prices sets a selected offering's price; capacity
// is merged resource by resource, the highest weight first. An overlay
// that meets another of the same weight on an offering (both change
// prices) or on a resource of a type is in conflict and applies nowhere,
// as Karpenter marks it not Ready. The simulator then plans at the
// overlaid prices and sees the added resources; every planner builds its
// lists here (Input), so provisioning, consolidation and `joist plan`
// agree.

// typeState is what the overlays applied so far set on one type of one
// pool, as Karpenter's instance type store keeps it: by offering, the
// overlay that set its price and the weight of the last (lowest) one
// that selected it; the resources added, and the resources and weight
// of the last overlay that added any.
type typeState struct {
	price       []*model.Overlay
	priceWeight []int32
	priced      []bool
	capacity    corev1.ResourceList
	capLast     corev1.ResourceList
	capWeight   int32
}

// selection is one overlay's selected offerings of one type of a pool
// (indexes in the pools and the pool's list).
type selection struct {
	pool, typ int
	offs      []int
}

// overlaidLists are what applyOverlays makes, by pool name: the lists of
// the pools some overlay changes (the others keep listOf's), and the
// prices the overlays set (OfferingKey to $/h); and an error for each
// overlay in conflict.
type overlaidLists struct {
	lists    map[string][]*scheduling.InstanceType
	prices   map[string]map[string]float64
	problems []error
}

// applyOverlays applies the overlays, which must be in model.SortOverlays
// order, to the pools' lists.
// zoneIDs are the zones' IDs by zone (Cluster.ZoneIDs).
func applyOverlays(overlays []*model.Overlay, pools []*model.Pool, listOf func(*model.Pool) []*scheduling.InstanceType, zoneIDs map[string]string) overlaidLists {
	lists := make([][]*scheduling.InstanceType, len(pools))
	st := make([][]*typeState, len(pools)) // by pool, then type; nil until an overlay selects it
	for i, p := range pools {
		lists[i] = listOf(p)
		st[i] = make([]*typeState, len(lists[i]))
	}
	out := overlaidLists{lists: map[string][]*scheduling.InstanceType{}, prices: map[string]map[string]float64{}}
	for _, o := range overlays {
		if !o.ChangesPrice() && len(o.Capacity) == 0 {
			continue
		}
		var sel []selection
		for pi, p := range pools {
			for ti, t := range lists[pi] {
				if offs := selects(o, p, t, zoneIDs); len(offs) > 0 {
					sel = append(sel, selection{pi, ti, offs})
				}
			}
		}
		if why, pi := conflict(st, o, sel); why != "" {
			out.problems = append(out.problems, fmt.Errorf("NodeOverlay %q: conflicts with another overlay of weight %d %s %q; it is not applied", o.Name, o.Weight, why, pools[pi].Name))
			continue
		}
		for _, sl := range sel {
			ts := st[sl.pool][sl.typ]
			if ts == nil {
				n := len(lists[sl.pool][sl.typ].Offerings)
				ts = &typeState{price: make([]*model.Overlay, n), priceWeight: make([]int32, n), priced: make([]bool, n)}
				st[sl.pool][sl.typ] = ts
			}
			ts.apply(o, sl.offs)
		}
	}
	for pi, p := range pools {
		base := lists[pi]
		var list []*scheduling.InstanceType
		for ti, t := range base {
			ts := st[pi][ti]
			if ts == nil {
				continue
			}
			var offs []scheduling.Offering
			for j, of := range t.Offerings {
				if ov := ts.price[j]; ov != nil {
					if offs == nil {
						offs = append([]scheduling.Offering(nil), t.Offerings...)
					}
					offs[j].Price = ov.Adjust(of.Price)
					if out.prices[p.Name] == nil {
						out.prices[p.Name] = map[string]float64{}
					}
					out.prices[p.Name][OfferingKey(t.Name, of.Zone, of.CapacityType)] = offs[j].Price
				}
			}
			if ts.capacity == nil && offs == nil {
				continue
			}
			if list == nil {
				list = append([]*scheduling.InstanceType(nil), base...)
			}
			c := *t
			if offs != nil {
				c.Offerings = offs
			}
			if ts.capacity != nil {
				c.Capacity, c.Allocatable = withResources(t.Capacity, ts.capacity), withResources(t.Allocatable, ts.capacity)
			}
			list[ti] = &c
		}
		if list != nil {
			out.lists[p.Name] = list
		}
	}
	return out
}

// conflict says where the overlay meets an applied one of its weight
// ("" when nowhere): on the price of an offering, or a resource of a
// type; and the pool (an index of the pools).
func conflict(st [][]*typeState, o *model.Overlay, sel []selection) (string, int) {
	for _, sl := range sel {
		if why := st[sl.pool][sl.typ].conflict(o, sl.offs); why != "" {
			return why, sl.pool
		}
	}
	return "", 0
}

func (ts *typeState) conflict(o *model.Overlay, offs []int) string {
	if ts == nil {
		return ""
	}
	if o.ChangesPrice() {
		for _, j := range offs {
			if ts.priced[j] && ts.priceWeight[j] == o.Weight {
				return "on the price of an offering in pool"
			}
		}
	}
	if len(o.Capacity) > 0 && ts.capLast != nil && ts.capWeight == o.Weight {
		for name := range o.Capacity {
			if _, ok := ts.capLast[name]; ok {
				return "on the capacity " + string(name) + " in pool"
			}
		}
	}
	return ""
}

// apply records the overlay's changes where no heavier one made them.
func (ts *typeState) apply(o *model.Overlay, offs []int) {
	if o.ChangesPrice() {
		for _, j := range offs {
			if !ts.priced[j] {
				ts.price[j], ts.priced[j] = o, true
			}
			ts.priceWeight[j] = o.Weight
		}
	}
	if len(o.Capacity) == 0 {
		return
	}
	if ts.capacity == nil {
		ts.capacity = corev1.ResourceList{}
	}
	for name, q := range o.Capacity {
		if _, ok := ts.capacity[name]; !ok {
			ts.capacity[name] = q.DeepCopy()
		}
	}
	ts.capLast, ts.capWeight = o.Capacity, o.Weight
}

// selects returns the offerings of type t in pool p the overlay selects
// (their indexes), none when the type's labels, the pool's template
// labels and its name do not satisfy the overlay's requirements. Zone,
// zone ID (from zoneIDs) and capacity type are read from each offering;
// an offering in a zone of no known ID is judged as without the label
// (In and Exists on the zone ID do not select it), and a requirement on
// a label nobody sets likewise.
func selects(o *model.Overlay, p *model.Pool, t *scheduling.InstanceType, zoneIDs map[string]string) []int {
	var perOffer []model.Requirement
	for _, r := range o.Requirements {
		switch r.Key {
		case model.LabelZone, model.LabelCapacityType, scheduling.LabelZoneID:
			perOffer = append(perOffer, r)
			continue
		}
		v, ok := t.Labels[r.Key]
		if !ok {
			v, ok = p.Labels[r.Key]
		}
		if !ok && (r.Key == model.LabelNodePool || r.Key == p.Label()) {
			v, ok = p.Name, true
		}
		if !scheduling.RequirementAllows(r, v, ok) {
			return nil
		}
	}
	var offs []int
	for j, of := range t.Offerings {
		ok := true
		for _, r := range perOffer {
			var v string
			switch r.Key {
			case model.LabelCapacityType:
				v = of.CapacityType
			case scheduling.LabelZoneID:
				v = zoneIDs[of.Zone]
			default:
				v = of.Zone
			}
			if !scheduling.RequirementAllows(r, v, v != "") {
				ok = false
				break
			}
		}
		if ok {
			offs = append(offs, j)
		}
	}
	return offs
}

// withResources is l with the added resources (a copy).
func withResources(l, add corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(l)+len(add))
	for k, v := range l {
		out[k] = v
	}
	for k, v := range add {
		out[k] = v
	}
	return out
}

// overlaidCache keeps the last few overlay results: a pass plans many
// times against the same catalog, pools and overlays (each consolidation
// candidate), and the lists must be prepared again once changed.
var overlaidCache struct {
	mu      sync.Mutex
	entries []*overlaidEntry
}

type overlaidEntry struct {
	cat  *catalog.Catalog
	key  string
	once sync.Once
	// per are the overlaid lists, prepared; prices and problems are
	// applyOverlays'.
	per      map[string]*scheduling.PreparedTypes
	prices   map[string]map[string]float64
	problems []error
}

const maxOverlaid = 8

// readsZoneIDs tells whether some overlay has a requirement on the zone
// ID: only then do the zones' IDs change the overlays' result (and its
// cache key).
func readsZoneIDs(overlays []*model.Overlay) bool {
	for _, o := range overlays {
		for _, r := range o.Requirements {
			if r.Key == scheduling.LabelZoneID {
				return true
			}
		}
	}
	return false
}

// overlaid is applyOverlays, prepared and cached by what decides it: the
// catalog, the overlays, each pool's name, labels and list (listKey
// names the list listOf gives it), and the zone IDs when an overlay
// reads them.
func overlaid(cat *catalog.Catalog, overlays []*model.Overlay, pools []*model.Pool, listOf func(*model.Pool) []*scheduling.InstanceType, listKey func(*model.Pool) string, zoneIDs map[string]string) *overlaidEntry {
	type poolPart struct {
		Name   string            `json:"n"`
		Labels map[string]string `json:"l,omitempty"`
		List   string            `json:"k"`
	}
	parts := make([]poolPart, 0, len(pools))
	for _, p := range pools {
		parts = append(parts, poolPart{p.Name, p.Labels, listKey(p)})
	}
	if !readsZoneIDs(overlays) {
		zoneIDs = nil
	}
	b, _ := json.Marshal(struct {
		Overlays []*model.Overlay  `json:"o"`
		Pools    []poolPart        `json:"p"`
		ZoneIDs  map[string]string `json:"z,omitempty"`
	}{overlays, parts, zoneIDs})
	key := string(b)
	c := &overlaidCache
	c.mu.Lock()
	var e *overlaidEntry
	for _, x := range c.entries {
		if x.cat == cat && x.key == key {
			e = x
			break
		}
	}
	if e == nil {
		e = &overlaidEntry{cat: cat, key: key}
		c.entries = append(c.entries, e)
		if len(c.entries) > maxOverlaid {
			c.entries = append(c.entries[:0:0], c.entries[1:]...)
		}
	}
	c.mu.Unlock()
	e.once.Do(func() {
		o := applyOverlays(overlays, pools, listOf, zoneIDs)
		e.per = map[string]*scheduling.PreparedTypes{}
		for name, l := range o.lists {
			e.per[name] = scheduling.PrepareTypes(l)
		}
		e.prices, e.problems = o.prices, o.problems
	})
	return e
}
