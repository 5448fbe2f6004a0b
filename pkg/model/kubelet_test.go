package model

import (
	"slices"
	"strings"
	"testing"
)

// TestKubeletExpressions: maxPods given as a string expression, and
// kubeReserved or systemReserved values that are not quantities, are CEL
// expressions; numbers and quantities are not.
func TestKubeletExpressions(t *testing.T) {
	n := int32(20)
	for _, tc := range []struct {
		name string
		k    *Kubelet
		want []string
	}{
		{"none", nil, nil},
		{"numbers and quantities", &Kubelet{MaxPods: &n, KubeReserved: map[string]string{"cpu": "100m", "memory": "1Gi"}, SystemReserved: map[string]string{"ephemeral-storage": "2Gi"}}, nil},
		{"maxPods", &Kubelet{MaxPodsExpression: "vcpus * 8"}, []string{"maxPods"}},
		{"reservations", &Kubelet{KubeReserved: map[string]string{"cpu": "vcpus * 10", "memory": "1Gi"}, SystemReserved: map[string]string{"memory": "max(100, memory_mib / 50)"}},
			[]string{"kubeReserved.cpu", "systemReserved.memory"}},
	} {
		if got := tc.k.Expressions(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if why := KubeletNotReady(&NodeClass{Name: "a"}, &Kubelet{MaxPodsExpression: "vcpus"}); why == "" {
		t.Error("a maxPods expression: ready, want not")
	}
	if why := KubeletNotReady(&NodeClass{Name: "a"}, &Kubelet{MaxPods: &n}); why != "" {
		t.Errorf("a maxPods number: %q, want ready", why)
	}
}

// TestKubeletNotReady_NodeClassCEL: with the gate on, expressions that
// compile are ready; one that does not is not, naming its path and the
// CEL error. WithNodeClassCEL sets the gate on copies, leaving the spec
// it was given as it was, and is no part of the spec hash.
func TestKubeletNotReady_NodeClassCEL(t *testing.T) {
	nc := &NodeClass{Name: "a"}
	for _, tc := range []struct {
		name string
		k    *Kubelet
		want string
	}{
		{"compiles", &Kubelet{EvaluateCEL: true, MaxPodsExpression: "vcpus * 8", KubeReserved: map[string]string{"cpu": "max(60, vcpus * 30)"}}, ""},
		{"maxPods does not compile", &Kubelet{EvaluateCEL: true, MaxPodsExpression: "cores * 8"},
			`node class "a": spec.kubelet.maxPods: expression "cores * 8": at 1:1: undeclared reference to 'cores'`},
		{"a reservation gives a string", &Kubelet{EvaluateCEL: true, SystemReserved: map[string]string{"memory": "instance_type"}},
			`node class "a": spec.kubelet.systemReserved.memory: expression "instance_type" gives string, want an int or a double`},
		{"the gate off", &Kubelet{MaxPodsExpression: "vcpus * 8"}, `node class "a": spec.kubelet.maxPods: CEL expressions need Karpenter's NodeClassCEL feature gate`},
	} {
		if got := KubeletNotReady(nc, tc.k); (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}

	k := &Kubelet{MaxPodsExpression: "vcpus * 8"}
	spec := &Spec{Pools: []*Pool{{Name: "p", NodeClass: "a", Kubelet: k}}, NodeClasses: map[string]*NodeClass{"a": {Name: "a", Kubelet: k}}}
	on := spec.WithNodeClassCEL(true)
	if !on.Pools[0].Kubelet.EvaluateCEL || !on.NodeClasses["a"].Kubelet.EvaluateCEL || k.EvaluateCEL {
		t.Errorf("WithNodeClassCEL: pool %v, class %v, given %v; want the copies on, the given off",
			on.Pools[0].Kubelet.EvaluateCEL, on.NodeClasses["a"].Kubelet.EvaluateCEL, k.EvaluateCEL)
	}
	if spec.WithNodeClassCEL(false) != spec {
		t.Error("WithNodeClassCEL(false) is not the spec itself")
	}
	if SpecHash(on.Pools[0], on.NodeClasses["a"]) != SpecHash(spec.Pools[0], spec.NodeClasses["a"]) {
		t.Error("the gate changes the spec hash: every node would drift when it is turned on")
	}
}
