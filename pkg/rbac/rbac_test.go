package rbac

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite infra/k8s/rbac.yaml from pkg/rbac")

func TestRenderedFile(t *testing.T) {
	got, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "infra", "k8s", "rbac.yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go test ./pkg/rbac -run TestRenderedFile -update", path)
	}
}

// The forwarder's manifest carries its RBAC by hand (with its Deployment);
// it must say what ForwarderRules says.
func TestForwarderManifestMatchesRules(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "infra", "k8s", "forwarder.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range bytes.Split(b, []byte("\n---")) {
		var cr rbacv1.ClusterRole
		if err := yaml.Unmarshal(doc, &cr); err != nil || cr.Kind != "ClusterRole" {
			continue
		}
		found = true
		if !reflect.DeepEqual(cr.Rules, ForwarderRules()) {
			t.Errorf("forwarder.yaml ClusterRole rules %+v, want %+v", cr.Rules, ForwarderRules())
		}
	}
	if !found {
		t.Fatal("forwarder.yaml has no ClusterRole")
	}
}

func TestRules_BinderNeitherPlansNorDecides(t *testing.T) {
	rules, err := Rules("binder")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if slices.Contains(r.Resources, "daemonsets") || slices.Contains(r.APIGroups, "coordination.k8s.io") {
			t.Errorf("binder rule %+v: the binder plans nothing and takes no Lease", r)
		}
	}
	if Decides("binder") {
		t.Error("binder must not decide")
	}
}

func TestRules_NoWildcards(t *testing.T) {
	for _, fn := range Functions {
		rules, _ := Rules(fn)
		for _, r := range append(rules, LeaseRules("c")...) {
			for _, v := range r.Verbs {
				if v == "*" || v == "deletecollection" || v == "escalate" || v == "bind" || v == "impersonate" {
					t.Errorf("%s: verb %q in %+v", fn, v, r)
				}
			}
			if slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
				t.Errorf("%s: wildcard in %+v", fn, r)
			}
		}
	}
}

// Only the functions that retire nodes delete, and only what they retire:
// the reaper nodes and (at the grace deadline) pods, the interruption
// function nodes.
func TestRules_OnlyRetiringFunctionsDelete(t *testing.T) {
	want := map[string][]string{"reaper": {"nodes", "pods"}, "interruption": {"nodes"}}
	for _, fn := range Functions {
		rules, _ := Rules(fn)
		var deletes []string
		for _, r := range rules {
			if slices.Contains(r.Verbs, "delete") {
				if len(r.APIGroups) != 1 || r.APIGroups[0] != "" {
					t.Errorf("%s deletes in groups %v", fn, r.APIGroups)
				}
				deletes = append(deletes, r.Resources...)
			}
		}
		slices.Sort(deletes)
		if !slices.Equal(deletes, want[fn]) {
			t.Errorf("%s deletes %v, want %v", fn, deletes, want[fn])
		}
	}
}

func TestLeaseRules_UpdateOnlyTheClustersLease(t *testing.T) {
	for _, r := range LeaseRules("prod") {
		if slices.Contains(r.Verbs, "update") && !reflect.DeepEqual(r.ResourceNames, []string{"joist-prod"}) {
			t.Errorf("lease update rule %+v not limited to joist-prod", r)
		}
	}
}

func TestRules_UnknownFunction(t *testing.T) {
	if _, err := Rules("scheduler"); err == nil {
		t.Error("want an error for an unknown function")
	}
}

// TestRulesWith_DefaultSpreadOnlyWhenOn: the reads of default spread
// constraints (Services, the pods' controllers) are granted to the
// planning functions only when the feature is on, and never to the binder.
func TestRulesWith_DefaultSpreadOnlyWhenOn(t *testing.T) {
	has := func(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	reads := [][3]string{{"", "services", "list"}, {"", "replicationcontrollers", "get"}, {"apps", "replicasets", "get"}, {"apps", "statefulsets", "get"}}
	for _, fn := range Functions {
		off, err := Rules(fn)
		if err != nil {
			t.Fatal(err)
		}
		on, err := RulesWith(fn, Features{DefaultSpread: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reads {
			if has(off, r[0], r[1], r[2]) {
				t.Errorf("%s may %s %s/%s without default spread constraints", fn, r[2], r[0], r[1])
			}
			if want := fn != "binder"; has(on, r[0], r[1], r[2]) != want {
				t.Errorf("%s with default spread: may %s %s/%s = %v, want %v", fn, r[2], r[0], r[1], !want, want)
			}
		}
	}
	objs, err := ObjectsWith("c", "", Features{DefaultSpread: true})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range objs {
		if cr, ok := o.(*rbacv1.ClusterRole); ok && cr.Name == "joist-provisioner" {
			found = has(cr.Rules, "apps", "replicasets", "get")
		}
	}
	if !found {
		t.Error("ObjectsWith(DefaultSpread) does not grant the provisioner's ClusterRole the reads")
	}
}
