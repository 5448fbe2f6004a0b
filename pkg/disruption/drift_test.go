package disruption

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
)

func TestDriftOf(t *testing.T) {
	p := &model.Pool{Name: "default", NodeClass: "nc", Requirements: []model.Requirement{
		{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"spot", "on-demand"}},
		{Key: "karpenter.k8s.aws/instance-cpu", Operator: "Gt", Values: []string{"2"}},
	}}
	class := ClassFacts{ImageIDs: map[string]bool{"ami-new": true}, SubnetIDs: map[string]bool{"subnet-a": true, "subnet-b": true}, SecurityGroups: []string{"sg-1", "sg-2"}}
	inst := InstanceFacts{ImageID: "ami-new", SubnetID: "subnet-a", SecurityGroups: []string{"sg-2", "sg-1"}}
	labelled := func(kv ...string) nodeOpt {
		return func(n *corev1.Node) {
			for i := 0; i < len(kv); i += 2 {
				n.Labels[kv[i]] = kv[i+1]
			}
		}
	}
	cases := []struct {
		name    string
		node    *corev1.Node
		inst    *InstanceFacts
		class   *ClassFacts
		drifted bool
	}{
		{"everything as the class resolves: not drifted", node("a", "default", labelled("karpenter.sh/capacity-type", "spot")), &inst, &class, false},
		{"a new AMI: drifted", node("a", "default"), &InstanceFacts{ImageID: "ami-old", SubnetID: "subnet-a", SecurityGroups: inst.SecurityGroups}, &class, true},
		{"a subnet no longer selected: drifted", node("a", "default"), &InstanceFacts{ImageID: "ami-new", SubnetID: "subnet-z", SecurityGroups: inst.SecurityGroups}, &class, true},
		{"security groups changed: drifted", node("a", "default"), &InstanceFacts{ImageID: "ami-new", SubnetID: "subnet-a", SecurityGroups: []string{"sg-1"}}, &class, true},
		{"capacity type no longer allowed: drifted", node("a", "default", labelled("karpenter.sh/capacity-type", "reserved")), &inst, &class, true},
		{"a requirement on a label the node lacks is not drift", node("a", "default"), &inst, &class, false},
		{"a numeric requirement the node's label fails: drifted", node("a", "default", labelled("karpenter.k8s.aws/instance-cpu", "2")), &inst, &class, true},
		{"a numeric requirement the node's label meets: not drifted", node("a", "default", labelled("karpenter.k8s.aws/instance-cpu", "4")), &inst, &class, false},
		{"no instance facts: labels only", node("a", "default"), nil, &class, false},
		{"a class that could not be resolved: labels only", node("a", "default"), &InstanceFacts{ImageID: "ami-old"}, nil, false},
		{"launched under another spec: drifted", node("a", "default"), &InstanceFacts{SpecHash: "old", ImageID: "ami-new"}, &class, true},
		{"launched under this spec: not drifted", node("a", "default"), &InstanceFacts{SpecHash: "now", ImageID: "ami-new"}, &class, false},
		{"launched before spec hashes: not drifted", node("a", "default"), &InstanceFacts{ImageID: "ami-new"}, &class, false},
		{"an instance type no longer offered: drifted", node("a", "default", labelled(corev1.LabelInstanceTypeStable, "m1.small")), &inst, &class, true},
		{"an instance type still offered: not drifted", node("a", "default", labelled(corev1.LabelInstanceTypeStable, "m5.large")), &inst, &class, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Snapshot{Instances: map[string]InstanceFacts{}, Classes: map[string]ClassFacts{}, SpecHashes: map[string]string{"default": "now"}, OfferedTypes: map[string]bool{"m5.large": true}}
			if tc.inst != nil {
				s.Instances["i-a"] = *tc.inst
			}
			if tc.class != nil {
				s.Classes["nc"] = *tc.class
			}
			why := DriftOf(Node{Node: tc.node}, p, s)
			if (why != "") != tc.drifted {
				t.Errorf("DriftOf = %q, want drifted %v", why, tc.drifted)
			}
		})
	}
}

func TestDecide_Drift(t *testing.T) {
	driftPool := func(budgets ...model.Budget) *model.Pool {
		p := pool("default", nil, nil, budgets...)
		p.NodeClass = "nc"
		return p
	}
	snap := func(p *model.Pool, nodes ...Node) Snapshot {
		s := Snapshot{Now: now, Pools: []*model.Pool{p}, Nodes: nodes,
			Instances: map[string]InstanceFacts{}, Classes: map[string]ClassFacts{"nc": {ImageIDs: map[string]bool{"ami-new": true}}}}
		for _, n := range nodes {
			s.Instances["i-"+n.Node.Name] = InstanceFacts{ImageID: "ami-old"}
		}
		return s
	}
	withGrace := func(p *model.Pool) *model.Pool { p.Disruption.TerminationGracePeriod = dur(time.Hour); return p }
	// withPDB adds a budget allowing no disruption of the busy pods (web).
	withPDB := func(s Snapshot) Snapshot {
		p, err := NewPDB(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{}}})
		if err != nil {
			t.Fatal(err)
		}
		s.PDBs = []PDB{p}
		return s
	}
	busy := func(name string, opts ...nodeOpt) Node {
		return Node{Node: node(name, "default", opts...), Pods: []*corev1.Pod{web()}}
	}
	cases := []struct {
		name        string
		snap        Snapshot
		wantRetire  []string // node:reason:replace
		wantBlocked []string
	}{
		{"a busy drifted node is replaced first", snap(driftPool(), busy("a")), []string{"a:Drifted:true"}, nil},
		{"busy drifted nodes go one at a time", snap(driftPool(), busy("a"), busy("b")), []string{"a:Drifted:true"}, nil},
		{"empty drifted nodes all go, without replacement", snap(driftPool(), Node{Node: node("a", "default")}, Node{Node: node("b", "default")}), []string{"a:Drifted:false", "b:Drifted:false"}, nil},
		{"the Drifted budget holds", snap(driftPool(model.Budget{Nodes: "0", Reasons: []string{ReasonDrifted}}), busy("a")), nil, []string{"a"}},
		{"a do-not-disrupt pod blocks drift", snap(driftPool(), Node{Node: node("a", "default"), Pods: []*corev1.Pod{web(AnnotationDoNotDisrupt)}}), nil, []string{"a"}},
		// Karpenter v1.15's drift is eventual disruption
		// (disruption/suite_test.go): bounded by a
		// terminationGracePeriod, it passes pod blockers by.
		{"should consider candidates that have do-not-disrupt pods scheduled with a terminationGracePeriod set for eventual disruption",
			snap(withGrace(driftPool()), Node{Node: node("a", "default"), Pods: []*corev1.Pod{web(AnnotationDoNotDisrupt)}}), []string{"a:Drifted:true"}, nil},
		{"should consider candidates that have PDB-blocked pods scheduled with a terminationGracePeriod set for eventual disruption",
			withPDB(snap(withGrace(driftPool()), busy("a"))), []string{"a:Drifted:true"}, nil},
		{"should not consider candidates that have PDB-blocked pods scheduled without a terminationGracePeriod set for eventual disruption",
			withPDB(snap(driftPool(), busy("a"))), nil, []string{"a"}},
		{"a node's do-not-disrupt blocks drift even with a terminationGracePeriod",
			snap(withGrace(driftPool()), Node{Node: node("a", "default", annotated(AnnotationDoNotDisrupt)), Pods: []*corev1.Pod{web()}}), nil, []string{"a"}},
		{"an expired node is not also drifted", snap(func() *model.Pool { p := driftPool(); p.Disruption.ExpireAfter = dur(time.Minute); return p }(), busy("a")), []string{"a:Expired:true"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := Decide(tc.snap)
			var retire, blocked []string
			for _, d := range plan.Retire {
				r := "false"
				if d.Replace {
					r = "true"
				}
				retire = append(retire, d.Node+":"+d.Reason+":"+r)
			}
			for _, b := range plan.Blocked {
				blocked = append(blocked, b.Node)
			}
			if !slices.Equal(retire, tc.wantRetire) || !slices.Equal(blocked, tc.wantBlocked) {
				t.Errorf("retire %v blocked %v (%+v), want retire %v blocked %v", retire, blocked, plan.Blocked, tc.wantRetire, tc.wantBlocked)
			}
		})
	}
}

// TestDriftOf_CapacityReservation: a reserved node has drifted once its
// reservation is not among those its class selects now (expired,
// cancelled, deselected), as Karpenter's CapacityReservationDrift; a
// class that could not be resolved says nothing.
func TestDriftOf_CapacityReservation(t *testing.T) {
	p := &model.Pool{Name: "default", NodeClass: "nc"}
	reserved := func(id string) *corev1.Node {
		n := node("a", "default")
		n.Labels[model.LabelCapacityType] = model.CapacityTypeReserved
		n.Labels[model.LabelReservationID] = id
		return n
	}
	selects := func(ids ...string) *ClassFacts {
		c := &ClassFacts{ReservationIDs: map[string]bool{}}
		for _, id := range ids {
			c.ReservationIDs[id] = true
		}
		return c
	}
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		class   *ClassFacts
		drifted bool
	}{
		{"its reservation is still selected: not drifted", reserved("cr-1"), selects("cr-1", "cr-2"), false},
		{"its reservation is no longer selected: drifted", reserved("cr-1"), selects("cr-2"), true},
		{"the class selects no reservation any more: drifted", reserved("cr-1"), &ClassFacts{}, true},
		{"the class could not be resolved: not drifted", reserved("cr-1"), nil, false},
		{"an on-demand node is not judged on reservations", node("a", "default"), selects("cr-2"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Snapshot{Instances: map[string]InstanceFacts{"i-a": {}}, Classes: map[string]ClassFacts{}}
			if tc.class != nil {
				s.Classes["nc"] = *tc.class
			}
			why := DriftOf(Node{Node: tc.node}, p, s)
			if (why != "") != tc.drifted {
				t.Errorf("DriftOf = %q, want drifted %v", why, tc.drifted)
			}
		})
	}
}

// TestDriftOf_PlacementGroup: a node is drifted when it is not in the
// placement group its class resolves to now (Karpenter's
// PlacementGroupDrift, on the placement-group-id label): the selector
// added, removed or changed, or the group recreated under its name. A
// class that could not be resolved judges nothing.
func TestDriftOf_PlacementGroup(t *testing.T) {
	p := &model.Pool{Name: "default", NodeClass: "nc"}
	in := func(id string) *corev1.Node {
		n := node("a", "default")
		if id != "" {
			n.Labels[model.LabelPlacementGroupID] = id
		}
		return n
	}
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		class   *ClassFacts
		drifted bool
	}{
		{"in the class's group: not drifted", in("pg-1"), &ClassFacts{PlacementGroupID: "pg-1"}, false},
		{"neither names a group: not drifted", in(""), &ClassFacts{}, false},
		{"the group was recreated (another id): drifted", in("pg-1"), &ClassFacts{PlacementGroupID: "pg-2"}, true},
		{"the class's selector was added: drifted", in(""), &ClassFacts{PlacementGroupID: "pg-1"}, true},
		{"the class's selector was removed: drifted", in("pg-1"), &ClassFacts{}, true},
		{"the class could not be resolved: not drifted", in("pg-1"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Snapshot{Instances: map[string]InstanceFacts{"i-a": {}}, Classes: map[string]ClassFacts{}}
			if tc.class != nil {
				s.Classes["nc"] = *tc.class
			}
			why := DriftOf(Node{Node: tc.node}, p, s)
			if (why != "") != tc.drifted {
				t.Errorf("DriftOf = %q, want drifted %v", why, tc.drifted)
			}
		})
	}
}
