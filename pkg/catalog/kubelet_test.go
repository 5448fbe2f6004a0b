package catalog

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// TestKubeletFor_EvaluatesCELPerType: with the NodeClassCEL gate on, a
// node class's kubelet expressions are evaluated per instance type and
// size it (pods, reserved cpu and memory); with it off they are not
// (such a class launches nothing: model.KubeletNotReady). A maxPods
// expression that fails for a type leaves it no pods; a reservation that
// fails is left out.
func TestKubeletFor_EvaluatesCELPerType(t *testing.T) {
	m5, c5 := mustLookup(t, "m5.xlarge"), mustLookup(t, "c5.4xlarge")
	plain := mustLookup(t, "m5.xlarge").AllocatableFor(nil, nil)
	cel := func(on bool, maxPods string, kube map[string]string) *model.Kubelet {
		return &model.Kubelet{EvaluateCEL: on, MaxPodsExpression: maxPods, KubeReserved: kube}
	}
	for _, tc := range []struct {
		name         string
		it           *InstanceType
		k            *model.Kubelet
		pods         int64
		cpu, memory  string // allocatable; "" is plain's
		wantMaxPods  int32
		wantReserved map[string]string
	}{
		{"maxPods per vCPU", m5, cel(true, "vcpus * 8", nil), 32, "", "", 32, nil},
		{"maxPods per vCPU, a bigger type", c5, cel(true, "vcpus * 8", nil), 128, "", "", 128, nil},
		{"maxPods capped at the ENI default", m5, cel(true, "min(max_pods, 20)", nil), 20, "", "", 20, nil},
		{"reservations", m5, cel(true, "", map[string]string{"cpu": "vcpus * 100", "memory": "11 * max_pods + 255"}), 58, "3600m", "", 0,
			map[string]string{"cpu": "400m", "memory": "896Mi"}},
		{"a quantity beside an expression", m5, cel(true, "", map[string]string{"cpu": "200m", "memory": "max(1024, memory_mib / 16)"}), 58, "3800m", "", 0,
			map[string]string{"cpu": "200m", "memory": "1024Mi"}},
		{"a failing maxPods gives no pods", m5, cel(true, "vcpus - 10", nil), 0, "", "", 0, nil},
		{"a failing reservation is left out", m5, cel(true, "", map[string]string{"cpu": "vcpus - 10"}), 58, "", "", 0, map[string]string{}},
		{"the gate off: nothing evaluated", m5, cel(false, "vcpus * 8", nil), 58, "", "", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alloc := tc.it.AllocatableFor(tc.k, nil)
			if got := alloc.Pods().Value(); got != tc.pods {
				t.Errorf("pods %d, want %d", got, tc.pods)
			}
			if tc.cpu != "" {
				if got := alloc.Cpu().String(); got != tc.cpu {
					t.Errorf("cpu %s, want %s", got, tc.cpu)
				}
			} else if tc.it == m5 && tc.pods == 58 {
				if !alloc.Cpu().Equal(*plain.Cpu()) {
					t.Errorf("cpu %s, want the plain %s", alloc.Cpu(), plain.Cpu())
				}
			}
			k := tc.it.KubeletFor(tc.k, nil)
			if tc.wantMaxPods > 0 && (k.MaxPods == nil || *k.MaxPods != tc.wantMaxPods || k.MaxPodsExpression != "") {
				t.Errorf("kubelet maxPods %v %q, want %d and no expression", k.MaxPods, k.MaxPodsExpression, tc.wantMaxPods)
			}
			if tc.wantReserved != nil {
				if len(k.KubeReserved) != len(tc.wantReserved) {
					t.Errorf("kubeReserved %v, want %v", k.KubeReserved, tc.wantReserved)
				}
				for name, v := range tc.wantReserved {
					if k.KubeReserved[name] != v {
						t.Errorf("kubeReserved %v, want %v", k.KubeReserved, tc.wantReserved)
					}
				}
			}
		})
	}
	// The memory reservation follows the resolved maxPods.
	k := m5.KubeletFor(cel(true, "vcpus * 8", map[string]string{"memory": "11 * max_pods + 255"}), nil)
	if k.KubeReserved[string(corev1.ResourceMemory)] != "608Mi" { // 11*32+255 = 607, rounded up to 16Mi
		t.Errorf("kubeReserved %v, want memory from 32 pods: 608Mi", k.KubeReserved)
	}
}

// TestKubeletNotReady_EvaluatesEveryType: with the gate on, a class whose
// expression fails for any instance type it runs launches nothing, naming
// the setting, the expression and the type (the first by name); one that
// holds for every type is ready; the gate off is model.KubeletNotReady's
// answer.
func TestKubeletNotReady_EvaluatesEveryType(t *testing.T) {
	nc := &model.NodeClass{Name: "a", API: model.APIV1, AMIFamily: "AL2023"}
	for _, tc := range []struct {
		name string
		k    *model.Kubelet
		want string
	}{
		{"holds everywhere", &model.Kubelet{EvaluateCEL: true, MaxPodsExpression: "min(vcpus * 8, 110)", KubeReserved: map[string]string{"cpu": "vcpus * 10"}}, ""},
		{"maxPods too big for the biggest", &model.Kubelet{EvaluateCEL: true, MaxPodsExpression: "vcpus * 10000000"},
			`node class "a": spec.kubelet.maxPods: expression "vcpus * 10000000" for `},
		{"a reservation negative for the small", &model.Kubelet{EvaluateCEL: true, SystemReserved: map[string]string{"memory": "memory_mib - 4096"}},
			`node class "a": spec.kubelet.systemReserved.memory: expression "memory_mib - 4096" for `},
		{"the gate off", &model.Kubelet{MaxPodsExpression: "vcpus * 8"}, `node class "a": spec.kubelet.maxPods: CEL expressions need`},
	} {
		got := KubeletNotReady(nc, tc.k)
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q...", tc.name, got, tc.want)
		}
	}
}
