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
// the offerings whose zone and capacity type do. The highest-weight
// overlay that changes prices sets a selected offering's price; capacity
// is merged resource by resource, the highest weight first. An overlay
// that meets another of the same weight on an offering (both change
// prices) or on a resource of a type is in conflict and applies nowhere,
// as Karpenter marks it not Ready. The simulator then plans at the
// overlaid prices and sees the added resources; every planner builds its
// lists here (Input), so provisioning, consolidation and `joist plan`
// agree.

// offerKey names an offering of a type in a pool.
type offerKey struct {
	pool string
	typ  int
	off  int
}

// typeKey names a type in a pool.
type typeKey struct {
	pool string
	typ  int
}

// overlayState is what the overlays applied so far set, as Karpenter's
// instance type store keeps it.
type overlayState struct {
	// price is the overlay that set each offering's price; priceWeight
	// the weight of the last (lowest) overlay that selected it.
	price       map[offerKey]*model.Overlay
	priceWeight map[offerKey]int32
	// capacity is the resources added to each type; capLast the
	// resources and weight of the last overlay that added any.
	capacity     map[typeKey]corev1.ResourceList
	capLast      map[typeKey]corev1.ResourceList
	capLastWeigh map[typeKey]int32
}

// selection is one overlay's selected offerings of one type of a pool.
type selection struct {
	pool string
	typ  int
	offs []int
}

// applyOverlays returns the pools' lists with the overlays applied (only
// for the pools some overlay changes; the others keep listOf's) and an
// error for each overlay in conflict. overlays must be in
// model.SortOverlays order.
func applyOverlays(overlays []*model.Overlay, pools []*model.Pool, listOf func(*model.Pool) []*scheduling.InstanceType) (map[string][]*scheduling.InstanceType, []error) {
	st := overlayState{
		price: map[offerKey]*model.Overlay{}, priceWeight: map[offerKey]int32{},
		capacity: map[typeKey]corev1.ResourceList{}, capLast: map[typeKey]corev1.ResourceList{}, capLastWeigh: map[typeKey]int32{},
	}
	var problems []error
	for _, o := range overlays {
		if !o.ChangesPrice() && len(o.Capacity) == 0 {
			continue
		}
		var sel []selection
		for _, p := range pools {
			for i, t := range listOf(p) {
				if offs := selects(o, p, t); len(offs) > 0 {
					sel = append(sel, selection{p.Name, i, offs})
				}
			}
		}
		if why := st.conflict(o, sel); why != "" {
			problems = append(problems, fmt.Errorf("NodeOverlay %q: conflicts with another overlay of weight %d %s; it is not applied", o.Name, o.Weight, why))
			continue
		}
		st.apply(o, sel)
	}
	out := map[string][]*scheduling.InstanceType{}
	for _, p := range pools {
		base := listOf(p)
		var list []*scheduling.InstanceType
		for i, t := range base {
			tk := typeKey{p.Name, i}
			add := st.capacity[tk]
			var offs []scheduling.Offering
			for j, of := range t.Offerings {
				if ov := st.price[offerKey{p.Name, i, j}]; ov != nil {
					if offs == nil {
						offs = append([]scheduling.Offering(nil), t.Offerings...)
					}
					offs[j].Price = ov.Adjust(of.Price)
				}
			}
			if add == nil && offs == nil {
				continue
			}
			if list == nil {
				list = append([]*scheduling.InstanceType(nil), base...)
			}
			c := *t
			if offs != nil {
				c.Offerings = offs
			}
			if add != nil {
				c.Capacity, c.Allocatable = withResources(t.Capacity, add), withResources(t.Allocatable, add)
			}
			list[i] = &c
		}
		if list != nil {
			out[p.Name] = list
		}
	}
	return out, problems
}

// conflict says where the overlay meets an applied one of its weight
// ("" when nowhere).
func (st *overlayState) conflict(o *model.Overlay, sel []selection) string {
	for _, s := range sel {
		if o.ChangesPrice() {
			for _, j := range s.offs {
				k := offerKey{s.pool, s.typ, j}
				if w, ok := st.priceWeight[k]; ok && w == o.Weight {
					return fmt.Sprintf("on the price of an offering in pool %q", s.pool)
				}
			}
		}
		tk := typeKey{s.pool, s.typ}
		if len(o.Capacity) > 0 && st.capLast[tk] != nil && st.capLastWeigh[tk] == o.Weight {
			for name := range o.Capacity {
				if _, ok := st.capLast[tk][name]; ok {
					return fmt.Sprintf("on the capacity %s in pool %q", name, s.pool)
				}
			}
		}
	}
	return ""
}

// apply records the overlay's changes where no heavier one made them.
func (st *overlayState) apply(o *model.Overlay, sel []selection) {
	for _, s := range sel {
		if o.ChangesPrice() {
			for _, j := range s.offs {
				k := offerKey{s.pool, s.typ, j}
				if _, ok := st.price[k]; !ok {
					st.price[k] = o
				}
				st.priceWeight[k] = o.Weight
			}
		}
		if len(o.Capacity) == 0 {
			continue
		}
		tk := typeKey{s.pool, s.typ}
		cur := st.capacity[tk]
		if cur == nil {
			cur = corev1.ResourceList{}
			st.capacity[tk] = cur
		}
		for name, q := range o.Capacity {
			if _, ok := cur[name]; !ok {
				cur[name] = q.DeepCopy()
			}
		}
		st.capLast[tk], st.capLastWeigh[tk] = o.Capacity, o.Weight
	}
}

// selects returns the offerings of type t in pool p the overlay selects
// (their indexes), none when the type's labels, the pool's template
// labels and its name do not satisfy the overlay's requirements. Zone
// and capacity type are read from each offering; a requirement on a
// label nobody sets (a zone ID: offerings here carry none) is judged as
// on an absent label (In and Exists select nothing).
func selects(o *model.Overlay, p *model.Pool, t *scheduling.InstanceType) []int {
	var perOffer []model.Requirement
	for _, r := range o.Requirements {
		switch r.Key {
		case model.LabelZone, model.LabelCapacityType:
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
			v := of.Zone
			if r.Key == model.LabelCapacityType {
				v = of.CapacityType
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
	cat      *catalog.Catalog
	key      string
	once     sync.Once
	per      map[string]*scheduling.PreparedTypes
	problems []error
}

const maxOverlaid = 8

// overlaid is applyOverlays, prepared and cached by what decides it: the
// catalog, the overlays, and each pool's name, labels and list (listKey
// names the list listOf gives it).
func overlaid(cat *catalog.Catalog, overlays []*model.Overlay, pools []*model.Pool, listOf func(*model.Pool) []*scheduling.InstanceType, listKey func(*model.Pool) string) (map[string]*scheduling.PreparedTypes, []error) {
	type poolPart struct {
		Name   string            `json:"n"`
		Labels map[string]string `json:"l,omitempty"`
		List   string            `json:"k"`
	}
	parts := make([]poolPart, 0, len(pools))
	for _, p := range pools {
		parts = append(parts, poolPart{p.Name, p.Labels, listKey(p)})
	}
	b, _ := json.Marshal(struct {
		Overlays []*model.Overlay `json:"o"`
		Pools    []poolPart       `json:"p"`
	}{overlays, parts})
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
		lists, problems := applyOverlays(overlays, pools, listOf)
		e.per = map[string]*scheduling.PreparedTypes{}
		for name, l := range lists {
			e.per[name] = scheduling.PrepareTypes(l)
		}
		e.problems = problems
	})
	return e.per, e.problems
}
