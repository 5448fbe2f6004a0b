package model

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestSpecHash_ChangesWithWhatANodeIsLaunchedWithOnly(t *testing.T) {
	base := func() (*Pool, *NodeClass) {
		ud := "echo hi"
		return &Pool{Name: "default", NodeClass: "nc", Labels: map[string]string{"team": "a"}},
			&NodeClass{Name: "nc", AMIFamily: "AL2023", UserData: &ud, SubnetSelector: []SelectorTerm{{Tags: map[string]string{"a": "b"}}}}
	}
	p0, c0 := base()
	h0 := SpecHash(p0, c0)
	d := time.Hour
	cases := []struct {
		name    string
		change  func(*Pool, *NodeClass)
		changes bool
	}{
		{"a label", func(p *Pool, _ *NodeClass) { p.Labels["team"] = "b" }, true},
		{"a taint", func(p *Pool, _ *NodeClass) {
			p.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"the user data", func(_ *Pool, c *NodeClass) { u := "echo bye"; c.UserData = &u }, true},
		{"the class's tags", func(_ *Pool, c *NodeClass) { c.Tags = map[string]string{"x": "y"} }, true},
		{"requirements (drift judges them on the node's labels)", func(p *Pool, _ *NodeClass) {
			p.Requirements = []Requirement{{Key: "k", Operator: "In", Values: []string{"v"}}}
		}, false},
		{"the subnet selector (judged on the instance's subnet)", func(_ *Pool, c *NodeClass) { c.SubnetSelector = nil }, false},
		{"the AMI selector (judged on the instance's image)", func(_ *Pool, c *NodeClass) { c.AMISelector = []SelectorTerm{{Alias: "al2023@latest"}} }, false},
		{"limits, weight, disruption", func(p *Pool, _ *NodeClass) { p.Weight = 9; p.Disruption.ExpireAfter = &d }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, c := base()
			tc.change(p, c)
			if got := SpecHash(p, c) != h0; got != tc.changes {
				t.Errorf("hash changed = %v, want %v", got, tc.changes)
			}
		})
	}
	if SpecHash(p0, c0) != h0 {
		t.Error("the hash is not stable")
	}
}
