package catalog

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/joist-dev/joist/pkg/model"
)

func TestOfferingsUseRegionalPricesInEveryZone(t *testing.T) {
	zones := []string{"us-east-1a", "us-east-1b"}
	tests := []struct {
		name   string
		typ    string
		region string
		want   []Offering
	}{
		{"on-demand and spot", "m5.large", "us-east-1", []Offering{
			{"us-east-1a", model.CapacityTypeOnDemand, 0.096},
			{"us-east-1a", model.CapacityTypeSpot, 0.0315},
			{"us-east-1b", model.CapacityTypeOnDemand, 0.096},
			{"us-east-1b", model.CapacityTypeSpot, 0.0315},
		}},
		{"on-demand only when there is no spot price", "c8a.large", "us-east-1", []Offering{
			{"us-east-1a", model.CapacityTypeOnDemand, 0.10777},
			{"us-east-1b", model.CapacityTypeOnDemand, 0.10777},
		}},
		{"nothing in a region without a price", "c8a.large", "eu-west-1", nil},
		{"nothing for a type never priced", "mac1.metal", "us-east-1", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustLookup(t, tc.typ).Offerings(tc.region, zones)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestNormalizeZones(t *testing.T) {
	tests := []struct {
		name    string
		region  string
		zones   []string
		want    []string
		wantErr string
	}{
		{"none gives a, b and c", "eu-west-1", nil, []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}, ""},
		{"letters are expanded", "us-west-2", []string{"a", "d"}, []string{"us-west-2a", "us-west-2d"}, ""},
		{"full names are kept", "us-west-2", []string{"us-west-2b", "c"}, []string{"us-west-2b", "us-west-2c"}, ""},
		{"local zones are accepted", "us-east-1", []string{"us-east-1-bos-1a"}, []string{"us-east-1-bos-1a"}, ""},
		{"duplicates and blanks go", "us-west-2", []string{"a", " us-west-2a", ""}, []string{"us-west-2a"}, ""},
		{"another region's zone is an error", "us-west-2", []string{"us-east-1a"}, nil, "not in region"},
		{"the region itself is not a zone", "us-west-2", []string{"us-west-2"}, nil, "not in region"},
		{"no region is an error", "", []string{"a"}, nil, "no region"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeZones(tc.region, tc.zones)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOfflineHoldsTheTypesPricedInTheRegion(t *testing.T) {
	tests := []struct {
		region string
		want   int // types with any price there, from the data README
	}{
		{"us-east-1", 1367},
		{"ap-northeast-2", 521},
	}
	for _, tc := range tests {
		t.Run(tc.region, func(t *testing.T) {
			c, err := Offline(tc.region, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(c.Types()); got != tc.want {
				t.Errorf("%d types, want %d", got, tc.want)
			}
			if got := c.Zones(); !reflect.DeepEqual(got, DefaultZones(tc.region)) {
				t.Errorf("zones %v, want the defaults", got)
			}
			for i := 1; i < len(c.Types()); i++ {
				if c.Types()[i-1].Name >= c.Types()[i].Name {
					t.Fatalf("types not sorted at %s", c.Types()[i].Name)
				}
			}
		})
	}
}

func TestOfflineRejectsUnknownRegionsAndForeignZones(t *testing.T) {
	if _, err := Offline("mars-north-1", nil); err == nil {
		t.Error("unknown region: no error")
	}
	if _, err := Offline("us-east-1", []string{"eu-west-1a"}); err == nil {
		t.Error("foreign zone: no error")
	}
}

func TestCatalogAnswersLookupsOfferingsAndPrices(t *testing.T) {
	c, err := Offline("us-east-1", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Region() != "us-east-1" {
		t.Errorf("region %s", c.Region())
	}
	if _, ok := c.Lookup("mac1.metal"); ok {
		t.Error("a type without a price is in the catalog")
	}
	if _, ok := c.Lookup("m5.large"); !ok {
		t.Error("m5.large is not in the catalog")
	}
	if got := len(c.Offerings("m5.large")); got != 4 {
		t.Errorf("m5.large has %d offerings, want 4", got)
	}
	if p, ok := c.Price("m5.large", model.CapacityTypeSpot); !ok || p != 0.0315 {
		t.Errorf("spot price %v %v", p, ok)
	}
	if _, ok := c.Price("c8a.large", model.CapacityTypeSpot); ok {
		t.Error("c8a.large has a spot price")
	}
	// Offerings returns a copy.
	c.Offerings("m5.large")[0].Price = 99
	if p, _ := c.Price("m5.large", model.CapacityTypeOnDemand); p != 0.096 {
		t.Errorf("changing a returned offering changed the catalog: %v", p)
	}
}

func TestCatalogAvailableSkipsMarkedOfferingsUntilTheyExpire(t *testing.T) {
	c, err := Offline("us-east-1", []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	u := NewUnavailable(0)
	u.Mark(now, "m5.large", "us-east-1a", model.CapacityTypeSpot)

	if got := len(c.Available("m5.large", nil, now)); got != 4 {
		t.Errorf("nil set: %d offerings, want 4", got)
	}
	got := c.Available("m5.large", u, now.Add(time.Minute))
	want := []Offering{
		{"us-east-1a", model.CapacityTypeOnDemand, 0.096},
		{"us-east-1b", model.CapacityTypeOnDemand, 0.096},
		{"us-east-1b", model.CapacityTypeSpot, 0.0315},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := len(c.Available("m5.large", u, now.Add(DefaultUnavailableTTL))); got != 4 {
		t.Errorf("after the TTL: %d offerings, want 4", got)
	}
}

func TestNewLeavesOutTypesWithoutOfferings(t *testing.T) {
	m5 := mustLookup(t, "m5.large")
	c5 := mustLookup(t, "c5.large")
	c := New("us-east-1", []string{"us-east-1a"}, []*InstanceType{m5, c5, m5}, map[string][]Offering{
		"m5.large": {{"us-east-1a", model.CapacityTypeOnDemand, 0.1}},
	})
	if got := len(c.Types()); got != 1 || c.Types()[0].Name != "m5.large" {
		t.Errorf("types %v, want only m5.large once", c.Types())
	}
}

// TestOfferingPrice: a zone's own price where the catalog has one (spot
// prices differ by zone in a live catalog), else the type's lowest of the
// capacity type, and false for a capacity type it does not offer.
func TestOfferingPrice(t *testing.T) {
	off, err := Offline("us-east-1", []string{"us-east-1a"})
	if err != nil {
		t.Fatal(err)
	}
	m5, _ := off.Lookup("m5.large")
	c := New("us-east-1", []string{"us-east-1a", "us-east-1b"}, []*InstanceType{m5}, map[string][]Offering{"m5.large": {
		{Zone: "us-east-1a", CapacityType: model.CapacityTypeSpot, Price: 0.04},
		{Zone: "us-east-1b", CapacityType: model.CapacityTypeSpot, Price: 0.03},
		{Zone: "us-east-1a", CapacityType: model.CapacityTypeOnDemand, Price: 0.096},
	}})
	for _, tc := range []struct {
		zone, ct string
		want     float64
		ok       bool
	}{
		{"us-east-1a", model.CapacityTypeSpot, 0.04, true},
		{"us-east-1b", model.CapacityTypeSpot, 0.03, true},
		{"us-east-1c", model.CapacityTypeSpot, 0.03, true},
		{"us-east-1b", model.CapacityTypeOnDemand, 0.096, true},
		{"us-east-1a", model.CapacityTypeReserved, 0, false},
	} {
		if p, ok := c.OfferingPrice("m5.large", tc.zone, tc.ct); p != tc.want || ok != tc.ok {
			t.Errorf("%s %s: %v %v, want %v %v", tc.zone, tc.ct, p, ok, tc.want, tc.ok)
		}
	}
}
