package featuregates

import (
	"strings"
	"testing"
)

// TestParse: Karpenter's FEATURE_GATES as its Helm chart renders them;
// NodeRepair and SpotToSpotConsolidation are read, Karpenter's other
// gates accepted, an unknown gate
// or a value that is not a boolean is an error naming it.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want Gates
		err  string
	}{
		{"", Gates{}, ""},
		{"NodeRepair=true", Gates{NodeRepair: true}, ""},
		{"ReservedCapacity=true,NodeRepair=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false", Gates{NodeRepair: true, NoSpotToSpot: true}, ""},
		{"SpotToSpotConsolidation=true", Gates{}, ""},
		{"SpotToSpotConsolidation=false", Gates{NoSpotToSpot: true}, ""},
		{"NodeClassCEL=true", Gates{NodeClassCEL: true}, ""},
		{"NodeClassCEL=false,NodeRepair=true", Gates{NodeRepair: true}, ""},
		{" NodeRepair = false , ", Gates{}, ""},
		{"NodeRepair=True", Gates{NodeRepair: true}, ""},
		{"NodeRepare=true", Gates{}, `unknown feature gate "NodeRepare"`},
		{"NodeRepair=yes", Gates{}, `gate "NodeRepair=yes"`},
		{"NodeRepair", Gates{}, `gate "NodeRepair"`},
	} {
		got, err := Parse(c.raw)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: got %+v, %v; want an error saying %s", c.raw, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %+v, %v; want %+v", c.raw, got, err, c.want)
		}
	}
}
