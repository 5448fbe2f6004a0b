package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestClassKeyReusesOnlyTheSameContainers: classKey reuses the previous
// pod's requests hash when a pod's containers, init containers and
// pod-level resources are the previous pod's very arrays (pods expanded
// from one template), and each key is the one hashing the pod afresh
// gives: a pod with its own containers, another overhead, other init
// containers or other pod-level resources is hashed in full.
func TestClassKeyReusesOnlyTheSameContainers(t *testing.T) {
	cpu := func(m int64) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(m, resource.DecimalSI)}
	}
	base := &corev1.Pod{}
	base.Name, base.Namespace = "a", "default"
	base.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(500)}}}
	base.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: cpu(100)}}}
	twin := func(edit func(p *corev1.Pod)) *corev1.Pod {
		p := *base // shares the spec's arrays, as template expansion does
		p.Name = "b"
		edit(&p)
		return &p
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		reuse   bool
		sameRes bool
	}{
		{"same arrays", twin(func(*corev1.Pod) {}), true, true},
		{"own containers, other request", twin(func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(700)}}}
		}), false, false},
		{"own containers, same request", twin(func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(500)}}}
		}), false, true},
		{"an overhead", twin(func(p *corev1.Pod) { p.Spec.Overhead = cpu(50) }), false, false},
		{"other init containers", twin(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: cpu(900)}}}
		}), false, false},
		{"pod-level resources", twin(func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: cpu(2000)}
		}), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fresh := func(p *corev1.Pod) (uint64, uint64) {
				s := newSolver(&Input{})
				return s.classKey(p)
			}
			s := newSolver(&Input{})
			k0, r0 := s.classKey(base)
			if got := s.resOf(tc.pod) != nil; got != tc.reuse {
				t.Errorf("reused the previous pod's requests hash: %v, want %v", got, tc.reuse)
			}
			k, r := s.classKey(tc.pod)
			wk, wr := fresh(tc.pod)
			if k != wk || r != wr {
				t.Errorf("key %x res %x after the base pod, %x %x hashed afresh", k, r, wk, wr)
			}
			if b0k, b0r := fresh(base); k0 != b0k || r0 != b0r {
				t.Errorf("base pod's key changed")
			}
			if (r == r0) != tc.sameRes {
				t.Errorf("same res as the base pod: %v, want %v", r == r0, tc.sameRes)
			}
		})
	}
}
