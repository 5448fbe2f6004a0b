package scheduling

import (
	"strings"
	"testing"
)

func TestPolicyOptions_KarpenterValues(t *testing.T) {
	for _, c := range []struct {
		preference, minValues string
		want                  Options
		err                   string
	}{
		{"", "", Options{}, ""},
		{"Respect", "Strict", Options{}, ""},
		{"Ignore", "", Options{IgnorePreferences: true}, ""},
		{"", "BestEffort", Options{MinValuesBestEffort: true}, ""},
		{"Ignore", "BestEffort", Options{IgnorePreferences: true, MinValuesBestEffort: true}, ""},
		{"ignore", "", Options{}, `preference policy "ignore"`},
		{"", "Lenient", Options{}, `minValues policy "Lenient"`},
	} {
		got, err := PolicyOptions(c.preference, c.minValues)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("PolicyOptions(%q, %q) = %v, %v; want an error naming %s", c.preference, c.minValues, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("PolicyOptions(%q, %q) = %+v, %v; want %+v", c.preference, c.minValues, got, err, c.want)
		}
	}
}
