package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func mustSet(t *testing.T, op string, values ...string) valueSet {
	t.Helper()
	s, ok := newValueSet(op, values)
	if !ok {
		t.Fatalf("bad requirement %s %v", op, values)
	}
	return s
}

func TestValueSetMatches(t *testing.T) {
	cases := []struct {
		op      string
		values  []string
		value   string
		present bool
		want    bool
	}{
		{"In", []string{"a", "b"}, "a", true, true},
		{"In", []string{"a", "b"}, "c", true, false},
		{"In", []string{"a"}, "", false, false},
		{"NotIn", []string{"a"}, "a", true, false},
		{"NotIn", []string{"a"}, "b", true, true},
		{"NotIn", []string{"a"}, "", false, true},
		{"Exists", nil, "x", true, true},
		{"Exists", nil, "", false, false},
		{"DoesNotExist", nil, "x", true, false},
		{"DoesNotExist", nil, "", false, true},
		{"Gt", []string{"4"}, "5", true, true},
		{"Gt", []string{"4"}, "4", true, false},
		{"Gt", []string{"4"}, "x", true, false},
		{"Lt", []string{"4"}, "3", true, true},
		{"Lt", []string{"4"}, "4", true, false},
		{"Gte", []string{"4"}, "4", true, true},
		{"Lte", []string{"4"}, "4", true, true},
		{"Lte", []string{"4"}, "5", true, false},
	}
	for _, c := range cases {
		s := mustSet(t, c.op, c.values...)
		if got := s.matches(c.value, c.present); got != c.want {
			t.Errorf("%s %v matches(%q, %v) = %v", c.op, c.values, c.value, c.present, got)
		}
	}
	if _, ok := newValueSet("Gt", []string{"x"}); ok {
		t.Error("Gt x accepted")
	}
	if _, ok := newValueSet("Near", nil); ok {
		t.Error("unknown operator accepted")
	}
}

func TestValueSetIntersect(t *testing.T) {
	in := mustSet(t, "In", "1", "2", "3", "9")
	x := in.intersect(mustSet(t, "NotIn", "2"))
	if x.has("2") || !x.has("1") || x.allowAbsent {
		t.Errorf("In ∩ NotIn = %v", x)
	}
	x = in.intersect(mustSet(t, "Gt", "2"))
	if got := x.String(); got != "In [3 9]" {
		t.Errorf("In ∩ Gt = %s", got)
	}
	x = mustSet(t, "Gt", "2").intersect(mustSet(t, "Lt", "4"))
	if !x.has("3") || x.has("4") || x.has("2") || x.empty() {
		t.Errorf("Gt ∩ Lt = %v", x)
	}
	if x = mustSet(t, "Gt", "3").intersect(mustSet(t, "Lt", "4")); !x.empty() {
		t.Errorf("Gt 3 ∩ Lt 4 should be empty: %v", x)
	}
	if x = mustSet(t, "Exists").intersect(mustSet(t, "DoesNotExist")); !x.empty() {
		t.Errorf("Exists ∩ DoesNotExist should be empty: %v", x)
	}
	if x = mustSet(t, "NotIn", "a").intersect(mustSet(t, "DoesNotExist")); x.empty() || !x.allowAbsent {
		t.Errorf("NotIn ∩ DoesNotExist should allow absence: %v", x)
	}
	notIn := mustSet(t, "NotIn", "0", "1")
	if v, ok := notIn.pick(); !ok || v != "2" {
		t.Errorf("pick = %q", v)
	}
}

func TestReqsNormalizeAndMatchLabels(t *testing.T) {
	r := newReqs()
	r.addNodeSelectorRequirements([]corev1.NodeSelectorRequirement{
		{Key: "failure-domain.beta.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}},
	})
	if _, ok := r.get(corev1.LabelTopologyZone); !ok {
		t.Fatal("zone alias not normalized")
	}
	if !r.matchesLabels(map[string]string{corev1.LabelTopologyZone: "z1"}) {
		t.Error("stable label not matched")
	}
	if !r.matchesLabels(map[string]string{"failure-domain.beta.kubernetes.io/zone": "z1"}) {
		t.Error("beta label not matched")
	}
	if r.matchesLabels(map[string]string{corev1.LabelTopologyZone: "z2"}) {
		t.Error("wrong zone matched")
	}
	m := r.toModel(nil)
	if len(m) != 1 || m[0].Operator != "In" || m[0].Key != corev1.LabelTopologyZone {
		t.Errorf("toModel %+v", m)
	}
}

// TestToModelSharesOnlyTheSharedList checks that toModel hands out the
// shared list itself only for the set holding that very list, and copies
// any other (equal or not), so no requirement aliases a set's values.
func TestToModelSharesOnlyTheSharedList(t *testing.T) {
	names := []string{"a.large", "b.large"}
	r := newReqs()
	r.add(corev1.LabelInstanceTypeStable, valueSet{values: names})
	equal := []string{"a.large", "b.large"}
	r.add("example.com/other", valueSet{values: equal})
	m := r.toModel(names)
	if len(m) != 2 {
		t.Fatalf("toModel %+v", m)
	}
	for _, q := range m {
		shared := &q.Values[0] == &names[0]
		if want := q.Key == corev1.LabelInstanceTypeStable; shared != want {
			t.Errorf("%s: values shared %t, want %t", q.Key, shared, want)
		}
		if &q.Values[0] == &equal[0] {
			t.Errorf("%s: a set's own values handed out", q.Key)
		}
	}
}
