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

// TestKubeletNotReady_FieldsTheFamilyDrops: as Karpenter v1.15, an
// EC2NodeClass whose kubelet settings its AMI family would drop launches
// nothing: fields Karpenter does not map outside AL2023 (and Custom), a
// second clusterDNS address outside AL2023, podsPerCore on Bottlerocket.
// An AWSNodeTemplate (v0.20 checked none of this) is left as it was.
func TestKubeletNotReady_FieldsTheFamilyDrops(t *testing.T) {
	n := int32(10)
	extra := &Kubelet{Extra: map[string]any{"shutdownGracePeriod": "30s", "containerLogMaxSize": "50Mi"}}
	dns := &Kubelet{ClusterDNS: []string{"10.100.0.10", "169.254.20.10"}}
	for _, tc := range []struct {
		name, family, api string
		k                 *Kubelet
		want              string
	}{
		{"AL2023 takes any field", "AL2023", APIV1, extra, ""},
		{"Custom is the user's", "Custom", APIV1, extra, ""},
		{"AL2 drops unmapped fields", "AL2", APIV1, extra,
			`node class "a": spec.kubelet has fields not applied by the AL2 AMI family that would be silently dropped: containerLogMaxSize, shutdownGracePeriod`},
		{"Bottlerocket has no podsPerCore", "Bottlerocket", APIV1, &Kubelet{PodsPerCore: &n},
			`node class "a": spec.kubelet has fields not applied by the Bottlerocket AMI family that would be silently dropped: podsPerCore`},
		{"Windows takes one clusterDNS", "Windows2022", APIV1, dns,
			`node class "a": spec.kubelet.clusterDNS: the Windows2022 AMI family doesn't accept multiple entries, only one, but 2 were set`},
		{"AL2023 takes two", "AL2023", APIV1, dns, ""},
		{"AL2 podsPerCore", "AL2", APIV1, &Kubelet{PodsPerCore: &n}, ""},
		{"an AWSNodeTemplate", "AL2", APIV1Alpha5, dns, ""},
	} {
		if got := KubeletNotReady(&NodeClass{Name: "a", API: tc.api, AMIFamily: tc.family}, tc.k); got != tc.want {
			t.Errorf("%s: %q\n  want %q", tc.name, got, tc.want)
		}
	}
}
