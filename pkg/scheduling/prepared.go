package scheduling

import (
	"math"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// PreparedTypes is an instance type list with what every solve would
// otherwise derive from it again: each type's resources as integers, its
// offerings by zone and capacity type index, the label keys and values of
// the list, the name order and, per set of zones and capacity types a pool
// allows, the price order. A catalog has over a thousand types and a small
// solve places a few dozen pods, so reading the catalog was most of a small
// solve; a caller that solves many times against one catalog (the
// provisioner, consolidation, `joist plan`, the benchmarks) prepares it
// once (fromcatalog does) and passes it in Input.Prepared.
//
// The list and its types must not change once prepared: a changed catalog
// is a new list, prepared anew. A PreparedTypes is safe for concurrent use
// by any number of solves; what it learns while solving (label columns,
// price orders) is kept under a lock and bounded by the list's label keys
// and the pools' zone and capacity type sets.
type PreparedTypes struct {
	list []*InstanceType
	// res are the resource names any type of the list advertises, and
	// alloc and capa each type's allocatable and capacity over them
	// (type k at [k*len(res):]); noCap marks types without a capacity.
	res   []corev1.ResourceName
	resAt map[corev1.ResourceName]int
	alloc []int64
	capa  []int64
	noCap []bool
	// zones and cts are the zones and capacity types of the offerings,
	// sorted; offers are each type's offerings by their indices.
	zones  []string
	cts    []string
	offers [][]offer
	// byName are the list's indices in name order (stable).
	byName []int
	// keys are every label key of any type.
	keys map[string]bool

	mu      sync.Mutex
	columns map[string]*labelColumn
	orders  map[[2]uint64]*priceOrder
	// poolTypes are pools' types and frontiers by what decides them
	// (poolTypesKey), poolOrder their keys oldest first.
	poolTypes map[string]*keptTypes
	poolOrder []string
}

// maxPriceOrders bounds the price orders a PreparedTypes keeps: pools
// allow few distinct sets of zones and capacity types.
const maxPriceOrders = 64

// maxPoolTypes bounds the pool types a PreparedTypes keeps (each is the
// types a pool accepts: a few hundred KB at most for a catalog).
const maxPoolTypes = 32

// labelColumn is one label key's value on every type of a list: the
// distinct values, and for each type the index of its value (-1: absent).
type labelColumn struct {
	values []string
	of     []int32
}

// priceOrder is the list's types (with an offering in the masks) sorted
// by their cheapest such offering, then name; minPrice is that offering's
// price per type, offers the offerings in the masks (in the list's zone
// and capacity type indices) and zoneMask and ctMask their zones and
// capacity types.
type priceOrder struct {
	order    []int
	minPrice []float64
	offers   [][]offer
	zoneMask []uint64
	ctMask   []uint64
}

// PrepareTypes prepares an instance type list for many solves (see
// PreparedTypes).
func PrepareTypes(list []*InstanceType) *PreparedTypes {
	p := &PreparedTypes{list: list, resAt: map[corev1.ResourceName]int{}, keys: map[string]bool{},
		columns: map[string]*labelColumn{}, orders: map[[2]uint64]*priceOrder{}, poolTypes: map[string]*keptTypes{}}
	zones, cts := map[string]bool{}, map[string]bool{}
	for _, it := range list {
		for n := range it.Allocatable {
			p.resAt[n] = -1
		}
		for n := range it.Capacity {
			p.resAt[n] = -1
		}
		for _, o := range it.Offerings {
			zones[o.Zone] = true
			cts[o.CapacityType] = true
		}
		for k := range it.Labels {
			p.keys[k] = true
		}
	}
	for n := range p.resAt {
		p.res = append(p.res, n)
	}
	sort.Slice(p.res, func(i, j int) bool { return p.res[i] < p.res[j] })
	for i, n := range p.res {
		p.resAt[n] = i
	}
	p.zones, p.cts = sortedKeys(zones), sortedKeys(cts)
	zoneAt, ctAt := indexOf(p.zones), indexOf(p.cts)
	nr := len(p.res)
	p.alloc = make([]int64, nr*len(list))
	p.capa = make([]int64, nr*len(list))
	p.noCap = make([]bool, len(list))
	p.offers = make([][]offer, len(list))
	nOffers := 0
	for _, it := range list {
		nOffers += len(it.Offerings)
	}
	offerArr := make([]offer, 0, nOffers)
	for k, it := range list {
		for n, q := range it.Allocatable {
			p.alloc[k*nr+p.resAt[n]] = quantityValue(n, q)
		}
		for n, q := range it.Capacity {
			p.capa[k*nr+p.resAt[n]] = quantityValue(n, q)
		}
		p.noCap[k] = len(it.Capacity) == 0
		start := len(offerArr)
		for _, o := range it.Offerings {
			offerArr = append(offerArr, offer{zone: zoneAt[o.Zone], ct: ctAt[o.CapacityType], price: o.Price})
		}
		p.offers[k] = offerArr[start:len(offerArr):len(offerArr)]
	}
	p.byName = make([]int, len(list))
	for k := range p.byName {
		p.byName[k] = k
	}
	sort.SliceStable(p.byName, func(i, j int) bool { return list[p.byName[i]].Name < list[p.byName[j]].Name })
	return p
}

// Types returns the prepared list.
func (p *PreparedTypes) Types() []*InstanceType { return p.list }

func indexOf(names []string) map[string]int {
	m := make(map[string]int, len(names))
	for i, n := range names {
		m[n] = i
	}
	return m
}

// sameList tells whether two lists are the same list (same elements in
// the same memory), which is what a prepared list is recognised by.
func sameList(a, b []*InstanceType) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// column returns the label key's column: the value a type's labels give
// the key, looked up as matchesLabels does (the key, then its aliases).
func (p *PreparedTypes) column(key string) *labelColumn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.columns[key]; ok {
		return c
	}
	c := &labelColumn{of: make([]int32, len(p.list))}
	at := map[string]int32{}
	for k, it := range p.list {
		v, present := it.Labels[key]
		if !present {
			for _, alias := range aliasesOf[key] {
				if v, present = it.Labels[alias]; present {
					break
				}
			}
		}
		if !present {
			c.of[k] = -1
			continue
		}
		i, ok := at[v]
		if !ok {
			i = int32(len(c.values))
			at[v] = i
			c.values = append(c.values, v)
		}
		c.of[k] = i
	}
	// Keys no type sets (a pool's requirement on a custom label) are
	// asked about once per pool; only the list's own keys and their
	// aliases are kept, which bounds the columns.
	if p.keys[key] || len(c.values) > 0 {
		p.columns[key] = c
	}
	return c
}

// matching marks, in keep, the types whose labels satisfy r (as
// r.matchesLabels would say), deciding each key once per distinct value.
func (p *PreparedTypes) matching(r *reqs, keep []bool) {
	for k := range keep {
		keep[k] = true
	}
	for _, key := range r.keys {
		set := r.sets[key]
		col := p.column(key)
		ok := make([]bool, len(col.values))
		for i, v := range col.values {
			ok[i] = set.matches(v, true)
		}
		absentOK := set.matches("", false)
		for k, i := range col.of {
			if i < 0 {
				keep[k] = keep[k] && absentOK
			} else {
				keep[k] = keep[k] && ok[i]
			}
		}
	}
}

// priceOrder returns the types with an offering in the zone and capacity
// type masks (over p.zones and p.cts) by cheapest such offering, then
// name; types of equal price and name keep their list order.
func (p *PreparedTypes) priceOrder(zones, cts uint64) *priceOrder {
	key := [2]uint64{zones, cts}
	p.mu.Lock()
	po, ok := p.orders[key]
	p.mu.Unlock()
	if ok {
		return po
	}
	n := len(p.list)
	po = &priceOrder{minPrice: make([]float64, n), offers: make([][]offer, n), zoneMask: make([]uint64, n), ctMask: make([]uint64, n)}
	total := 0
	for _, offs := range p.offers {
		total += len(offs)
	}
	all := make([]offer, 0, total)
	for k, offs := range p.offers {
		start := len(all)
		for _, o := range offs {
			if !maskHas(zones, o.zone) || !maskHas(cts, o.ct) {
				continue
			}
			if len(all) == start || o.price < po.minPrice[k] {
				po.minPrice[k] = o.price
			}
			all = append(all, o)
			po.zoneMask[k] |= maskOf(o.zone)
			po.ctMask[k] |= maskOf(o.ct)
		}
		if len(all) > start {
			po.offers[k] = all[start:len(all):len(all)]
			po.order = append(po.order, k)
		}
	}
	sort.SliceStable(po.order, func(i, j int) bool {
		a, b := po.order[i], po.order[j]
		if po.minPrice[a] != po.minPrice[b] {
			return po.minPrice[a] < po.minPrice[b]
		}
		return p.list[a].Name < p.list[b].Name
	})
	p.mu.Lock()
	if len(p.orders) < maxPriceOrders {
		p.orders[key] = po
	}
	p.mu.Unlock()
	return po
}

// listOrder is the list in its own order with no price known (so the
// caller sorts), for lists with more zones or capacity types than masks
// hold.
func (p *PreparedTypes) listOrder() *priceOrder {
	po := &priceOrder{order: make([]int, len(p.list)), minPrice: make([]float64, len(p.list)), offers: p.offers}
	for k := range po.order {
		po.order[k] = k
		po.minPrice[k] = math.NaN()
	}
	return po
}

// poolTypesOf returns the pool types kept under key ("": none).
func (p *PreparedTypes) poolTypesOf(key string) (*keptTypes, bool) {
	if key == "" {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k, ok := p.poolTypes[key]
	return k, ok
}

// keepPoolTypes keeps a pool's types, up to maxPoolTypes of them: the
// oldest go first, so the pools solved now stay kept however many shapes
// came before.
func (p *PreparedTypes) keepPoolTypes(key string, k *keptTypes) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.poolTypes[key]; ok {
		return
	}
	if len(p.poolOrder) >= maxPoolTypes {
		delete(p.poolTypes, p.poolOrder[0])
		p.poolOrder = p.poolOrder[1:]
	}
	p.poolTypes[key] = k
	p.poolOrder = append(p.poolOrder, key)
}
