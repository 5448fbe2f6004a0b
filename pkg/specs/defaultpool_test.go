package specs

import (
	"reflect"
	"testing"
)

func TestDefaultPool_HasKarpentersV1alpha5Defaults(t *testing.T) {
	p := DefaultPool()
	got := map[string][]string{}
	for _, r := range p.Requirements {
		got[r.Key+" "+r.Operator] = r.Values
	}
	want := map[string][]string{
		"kubernetes.io/os In":                      {"linux"},
		"kubernetes.io/arch In":                    {"amd64"},
		"karpenter.sh/capacity-type In":            {"on-demand"},
		"karpenter.k8s.aws/instance-category In":   {"c", "m", "r"},
		"karpenter.k8s.aws/instance-generation Gt": {"2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("default pool requirements %v, want %v", got, want)
	}
}
