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

func TestRules_NoWildcardsAndNoDestructiveVerbs(t *testing.T) {
	for _, fn := range Functions {
		rules, _ := Rules(fn)
		for _, r := range append(rules, LeaseRules("c")...) {
			for _, v := range r.Verbs {
				if fn == "interruption" && v == "delete" && reflect.DeepEqual(r.Resources, []string{"nodes"}) {
					continue // a node whose instance is gone (its one destructive verb)
				}
				if v == "*" || v == "delete" || v == "deletecollection" || v == "escalate" || v == "bind" || v == "impersonate" {
					t.Errorf("%s: verb %q in %+v", fn, v, r)
				}
			}
			if slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
				t.Errorf("%s: wildcard in %+v", fn, r)
			}
		}
	}
}

func TestRules_OnlyTheInterruptionFunctionDeletesNodes(t *testing.T) {
	for _, fn := range Functions {
		rules, _ := Rules(fn)
		deletes := false
		for _, r := range rules {
			if slices.Contains(r.Verbs, "delete") {
				deletes = true
				if !reflect.DeepEqual(r.Resources, []string{"nodes"}) || len(r.APIGroups) != 1 || r.APIGroups[0] != "" {
					t.Errorf("%s deletes %v", fn, r.Resources)
				}
			}
		}
		if deletes != (fn == "interruption") {
			t.Errorf("%s deletes nodes: %v", fn, deletes)
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
