package model

import "testing"

func TestNodeClassWindows(t *testing.T) {
	for _, c := range []struct {
		name string
		nc   *NodeClass
		want string // build, "" for not Windows
	}{
		{"nil", nil, ""},
		{"AL2023", &NodeClass{AMIFamily: "AL2023"}, ""},
		{"unset", &NodeClass{}, ""},
		{"Windows2019", &NodeClass{AMIFamily: "Windows2019"}, "10.0.17763"},
		{"Windows2022", &NodeClass{AMIFamily: "Windows2022"}, "10.0.20348"},
		{"Windows2025", &NodeClass{AMIFamily: "Windows2025"}, "10.0.26100"},
		{"alias only", &NodeClass{AMISelector: []SelectorTerm{{Alias: "windows2022@latest"}}}, "10.0.20348"},
		{"Linux alias", &NodeClass{AMISelector: []SelectorTerm{{Alias: "al2023@latest"}}}, ""},
		{"amiFamily wins over the alias", &NodeClass{AMIFamily: "Custom", AMISelector: []SelectorTerm{{Alias: "windows2019@latest"}}}, ""},
		{"an unknown Windows", &NodeClass{AMIFamily: "Windows2030"}, ""},
	} {
		w, ok := c.nc.Windows()
		if ok != (c.want != "") || w.Build != c.want {
			t.Errorf("%s: Windows() = %+v, %t; want build %q", c.name, w, ok, c.want)
		}
	}
}
