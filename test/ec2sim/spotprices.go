package ec2sim

import (
	"fmt"
	"sort"
	"strconv"
	"time"
)

// poolKey is a spot capacity pool: an instance type in a zone.
type poolKey struct{ instanceType, zone string }

type pricePoint struct {
	at    time.Time
	price float64
}

// SetSpotPrice records a new spot price for a type, from now on, in one
// zone or (zone "") every zone it is offered in. DescribeSpotPriceHistory
// returns the history; CreateFleet uses the latest price.
func (s *Sim) SetSpotPrice(instanceType, zone string, price float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.types[instanceType]
	if !ok {
		return fmt.Errorf("ec2sim: SetSpotPrice: unknown instance type %s", instanceType)
	}
	if !it.SpotSupported {
		return fmt.Errorf("ec2sim: SetSpotPrice: %s does not support spot", instanceType)
	}
	zones := s.offeredZones(it)
	if zone != "" {
		if !s.offeredIn(it, zone) {
			return fmt.Errorf("ec2sim: SetSpotPrice: %s is not offered in %s", instanceType, zone)
		}
		zones = []string{zone}
	}
	now := s.now()
	for _, z := range zones {
		k := poolKey{instanceType, z}
		s.spotPrices[k] = append(s.spotPrices[k], pricePoint{at: now, price: price})
	}
	return nil
}

// spotPrice is the current spot price of a pool, 0 if unknown.
func (s *Sim) spotPrice(instanceType, zone string) float64 {
	h := s.spotPrices[poolKey{instanceType, zone}]
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].price
}

// ---- DescribeSpotPriceHistory ----

// The simulator prices Linux only; these are the product descriptions that
// name it.
var linuxProducts = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

type describeSpotPriceHistoryRequest struct {
	types, products []string
	zone            string
	start, end      time.Time
	filters         []filter
	page            pageRequest
}

func parseDescribeSpotPriceHistory(p *params) (describeSpotPriceHistoryRequest, error) {
	var r describeSpotPriceHistoryRequest
	var err error
	r.types = p.strList("InstanceType")
	r.products = p.strList("ProductDescription")
	r.zone = p.str("AvailabilityZone")
	for _, k := range []struct {
		key string
		dst *time.Time
	}{{"StartTime", &r.start}, {"EndTime", &r.end}} {
		if v, ok := p.get(k.key); ok {
			t, perr := time.Parse(time.RFC3339Nano, v)
			if perr != nil {
				return r, invalidParam("Value (%s) for parameter %s is invalid: %v", v, k.key, perr)
			}
			*k.dst = t
		}
	}
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	r.page, err = readPage(p, "DescribeSpotPriceHistory", pageLimits{min: 5, max: 1000, def: 1000})
	return r, err
}

type spotPriceXML struct {
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
	AvailabilityZone   string `xml:"availabilityZone"`
	AvailabilityZoneID string `xml:"availabilityZoneId"`
	at                 time.Time
}

type describeSpotPriceHistoryResponse struct {
	responseMeta
	History   itemList[spotPriceXML] `xml:"spotPriceHistorySet"`
	NextToken string                 `xml:"nextToken,omitempty"`
}

// describeSpotPriceHistory returns, per pool and product, the price points
// inside [StartTime, EndTime] plus the one in effect at StartTime, newest
// first, as EC2 does.
func (s *Sim) describeSpotPriceHistory(r describeSpotPriceHistoryRequest) (response, error) {
	spec := filterSpec[spotPriceXML]{fields: map[string]func(spotPriceXML) []string{
		"availability-zone":   func(x spotPriceXML) []string { return one(x.AvailabilityZone) },
		"instance-type":       func(x spotPriceXML) []string { return one(x.InstanceType) },
		"product-description": func(x spotPriceXML) []string { return one(x.ProductDescription) },
		"spot-price":          func(x spotPriceXML) []string { return one(x.SpotPrice) },
	}}
	match, err := spec.compile(r.filters)
	if err != nil {
		return nil, err
	}
	products := []string{linuxProducts[0]}
	if len(r.products) > 0 {
		products = nil
		for _, p := range r.products {
			for _, l := range linuxProducts {
				if p == l {
					products = append(products, p)
				}
			}
		}
	}
	typeNames := r.types
	if len(typeNames) == 0 {
		typeNames = s.typeOrder
	}
	var out []spotPriceXML
	for _, name := range typeNames {
		it, ok := s.types[name]
		if !ok || !it.SpotSupported {
			continue
		}
		for _, z := range s.offeredZones(it) {
			if r.zone != "" && r.zone != z {
				continue
			}
			zz, _ := s.zoneByName(z)
			for _, pt := range pointsInWindow(s.spotPrices[poolKey{name, z}], r.start, r.end) {
				for _, prod := range products {
					x := spotPriceXML{InstanceType: name, ProductDescription: prod, SpotPrice: strconv.FormatFloat(pt.price, 'f', 6, 64),
						Timestamp: ec2Time(pt.at), AvailabilityZone: z, AvailabilityZoneID: zz.id, at: pt.at}
					if match(x) {
						out = append(out, x)
					}
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.After(out[j].at) })
	page, next := paginate(out, r.page)
	return &describeSpotPriceHistoryResponse{History: items(page), NextToken: next}, nil
}

// pointsInWindow keeps the points in [start, end] and the latest one before
// start (the price in effect when the window opens). Zero bounds are open.
func pointsInWindow(h []pricePoint, start, end time.Time) []pricePoint {
	var out []pricePoint
	var before *pricePoint
	for i := range h {
		pt := h[i]
		if !end.IsZero() && pt.at.After(end) {
			continue
		}
		if !start.IsZero() && pt.at.Before(start) {
			before = &h[i]
			continue
		}
		out = append(out, pt)
	}
	if before != nil {
		out = append(out, *before)
	}
	return out
}
