package model

import (
	"slices"
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
