package catalog

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/joist-dev/joist/pkg/model"
)

// Offering is one place and way an instance type can be launched: a zone
// and a capacity type (model.CapacityTypeOnDemand or model.CapacityTypeSpot)
// at an hourly price in USD.
type Offering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
}

// Offerings lists the type's offerings in the given zones of a region from
// its regional prices: on-demand where it has an on-demand price in the
// region, spot where it has a spot price. Every zone gets the regional
// figure (the data has no per-zone prices). Order: zones as given, and in
// each zone on-demand before spot.
func (t *InstanceType) Offerings(region string, zones []string) []Offering {
	od, hasOD := t.OnDemandPrice[region]
	spot, hasSpot := t.SpotPrice[region]
	if !hasOD && !hasSpot {
		return nil
	}
	out := make([]Offering, 0, 2*len(zones))
	for _, z := range zones {
		if hasOD {
			out = append(out, Offering{Zone: z, CapacityType: model.CapacityTypeOnDemand, Price: od})
		}
		if hasSpot {
			out = append(out, Offering{Zone: z, CapacityType: model.CapacityTypeSpot, Price: spot})
		}
	}
	return out
}

// DefaultZones is the zones assumed when none are given: the region's a, b
// and c zones, which every commercial region has.
func DefaultZones(region string) []string {
	return []string{region + "a", region + "b", region + "c"}
}

// NormalizeZones turns a zone list into full zone names of the region:
// a bare letter suffix such as "a" becomes "<region>a"; a full name must
// belong to the region. No zones gives DefaultZones. Duplicates go.
func NormalizeZones(region string, zones []string) ([]string, error) {
	if region == "" {
		return nil, fmt.Errorf("no region")
	}
	if len(zones) == 0 {
		return DefaultZones(region), nil
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(zones))
	for _, z := range zones {
		z = strings.TrimSpace(z)
		switch {
		case z == "":
			continue
		case isLetters(z):
			z = region + z
		case !strings.HasPrefix(z, region) || !isZoneSuffix(z[len(region):]):
			return nil, fmt.Errorf("zone %q is not in region %s", z, region)
		}
		if !seen[z] {
			seen[z] = true
			out = append(out, z)
		}
	}
	if len(out) == 0 {
		return DefaultZones(region), nil
	}
	return out, nil
}

func isLetters(s string) bool {
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return s != ""
}

// isZoneSuffix accepts "a" and Local Zone suffixes such as "-bos-1a".
func isZoneSuffix(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z') && !(r >= '0' && r <= '9') && r != '-' {
			return false
		}
	}
	return s[len(s)-1] >= 'a' && s[len(s)-1] <= 'z'
}

// Catalog is the set of instance types Joist may launch in one region,
// with each type's offerings. Offline builds it from the embedded data;
// the live adapter builds it with New from AWS answers. It is read-only
// once built and safe for concurrent use.
type Catalog struct {
	region    string
	zones     []string
	types     []*InstanceType
	byName    map[string]*InstanceType
	offerings map[string][]Offering
}

// New builds a catalog from types and their offerings. Types without any
// offering are left out; types are sorted by name.
func New(region string, zones []string, types []*InstanceType, offerings map[string][]Offering) *Catalog {
	c := &Catalog{
		region:    region,
		zones:     append([]string(nil), zones...),
		byName:    map[string]*InstanceType{},
		offerings: map[string][]Offering{},
	}
	for _, t := range types {
		offs := offerings[t.Name]
		if len(offs) == 0 {
			continue
		}
		if _, dup := c.byName[t.Name]; dup {
			continue
		}
		c.types = append(c.types, t)
		c.byName[t.Name] = t
		c.offerings[t.Name] = append([]Offering(nil), offs...)
	}
	sort.Slice(c.types, func(i, j int) bool { return c.types[i].Name < c.types[j].Name })
	return c
}

// Offline is the catalog of the embedded data for a region: every type
// with an on-demand or spot price there, offered in each zone. No zones
// means DefaultZones. A region with no priced type is an error, as it is
// most likely a typo.
func Offline(region string, zones []string) (*Catalog, error) {
	zones, err := NormalizeZones(region, zones)
	if err != nil {
		return nil, err
	}
	all := All()
	offerings := make(map[string][]Offering, len(all))
	for _, t := range all {
		if offs := t.Offerings(region, zones); len(offs) > 0 {
			offerings[t.Name] = offs
		}
	}
	if len(offerings) == 0 {
		return nil, fmt.Errorf("no instance type has a price in region %q", region)
	}
	return New(region, zones, all, offerings), nil
}

// Region is the catalog's region.
func (c *Catalog) Region() string { return c.region }

// Zones is the zones the catalog was built for.
func (c *Catalog) Zones() []string { return append([]string(nil), c.zones...) }

// Types returns the catalog's types sorted by name. Do not change them.
func (c *Catalog) Types() []*InstanceType { return c.types }

// Lookup finds a type of the catalog by name.
func (c *Catalog) Lookup(name string) (*InstanceType, bool) {
	t, ok := c.byName[name]
	return t, ok
}

// Offerings returns a type's offerings (nil for a type not in the catalog).
func (c *Catalog) Offerings(name string) []Offering {
	return append([]Offering(nil), c.offerings[name]...)
}

// Available returns a type's offerings that are not marked unavailable at
// now. A nil Unavailable marks nothing.
func (c *Catalog) Available(name string, u *Unavailable, now time.Time) []Offering {
	var out []Offering
	for _, o := range c.offerings[name] {
		if u.IsUnavailable(now, name, o.Zone, o.CapacityType) {
			continue
		}
		out = append(out, o)
	}
	return out
}

// OfferingPrice is the price of a type's offering in a zone and capacity
// type, else its lowest of that capacity type (a zone the catalog was not
// built for), and false when it has none of that capacity type.
func (c *Catalog) OfferingPrice(name, zone, capacityType string) (float64, bool) {
	for _, o := range c.offerings[name] {
		if o.Zone == zone && o.CapacityType == capacityType {
			return o.Price, true
		}
	}
	return c.Price(name, capacityType)
}

// Price returns the lowest price of a type's offerings of a capacity type,
// and false when it has none.
func (c *Catalog) Price(name, capacityType string) (float64, bool) {
	best, found := 0.0, false
	for _, o := range c.offerings[name] {
		if o.CapacityType != capacityType {
			continue
		}
		if !found || o.Price < best {
			best, found = o.Price, true
		}
	}
	return best, found
}
