package install

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestParams_DefaultSpreadGrantsTheReads: the custom resource's
// DefaultSpread property ("true" when the stack has a scheduler config
// with default constraints) gives the planning roles the reads of
// Services and the pods' controllers; without it they get none; another
// value is refused.
func TestParams_DefaultSpreadGrantsTheReads(t *testing.T) {
	grants := func(props map[string]any) bool {
		t.Helper()
		objs, err := objectsOf(props)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if cr, ok := o.(*rbacv1.ClusterRole); ok && cr.Name == "joist-reaper" {
				return slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool {
					return slices.Contains(r.Resources, "services") && slices.Contains(r.Verbs, "list")
				})
			}
		}
		t.Fatal("no joist-reaper ClusterRole")
		return false
	}
	if grants(map[string]any{"Cluster": "c"}) || grants(map[string]any{"Cluster": "c", "DefaultSpread": "false"}) {
		t.Error("services are readable without default spread constraints")
	}
	if !grants(map[string]any{"Cluster": "c", "DefaultSpread": "true"}) {
		t.Error("DefaultSpread=true does not grant listing services")
	}
	if _, err := paramsOf(map[string]any{"Cluster": "c", "DefaultSpread": "yes"}); err == nil {
		t.Error("DefaultSpread=yes: no error")
	}
}
