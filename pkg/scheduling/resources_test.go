package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

func ctr(cpu, mem string) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
	}}}
}

// podRequests must agree with the kube-scheduler's own helper.
func TestPodRequestsMatchesKubernetes(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := func(c corev1.Container) corev1.Container { c.RestartPolicy = &always; return c }
	cases := map[string]corev1.PodSpec{
		"containers add":    {Containers: []corev1.Container{ctr("1", "1Gi"), ctr("500m", "2Gi")}},
		"init is a max":     {InitContainers: []corev1.Container{ctr("3", "100Mi")}, Containers: []corev1.Container{ctr("1", "1Gi")}},
		"sidecars add":      {InitContainers: []corev1.Container{sidecar(ctr("1", "1Gi")), ctr("2", "1Gi")}, Containers: []corev1.Container{ctr("1", "1Gi")}},
		"sidecar then init": {InitContainers: []corev1.Container{sidecar(ctr("500m", "64Mi")), ctr("4", "128Mi"), sidecar(ctr("250m", "32Mi"))}, Containers: []corev1.Container{ctr("100m", "1Gi")}},
		"overhead":          {Containers: []corev1.Container{ctr("1", "1Gi")}, Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
		"pod level":         {Containers: []corev1.Container{ctr("1", "1Gi")}, Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}},
	}
	for name, spec := range cases {
		pod := &corev1.Pod{Spec: spec}
		got := podRequests(pod)
		want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			g, w := got[r], want[r]
			if g.Cmp(w) != 0 {
				t.Errorf("%s: %s = %s, kubernetes says %s", name, r, g.String(), w.String())
			}
		}
		if p := got[corev1.ResourcePods]; p.Value() != 1 {
			t.Errorf("%s: pods = %d", name, p.Value())
		}
	}
}

func TestLimitsStandInForRequests(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}}}}}
	got := podRequests(pod)
	if c, m := got[corev1.ResourceCPU], got[corev1.ResourceMemory]; c.String() != "1" || m.String() != "1Gi" {
		t.Errorf("cpu %s memory %s", c.String(), m.String())
	}
}

func TestMaxCopies(t *testing.T) {
	if got := maxCopies(vec{1000, 0}, vec{300, 10}, vec{2000, 25}); got != 2 {
		t.Errorf("maxCopies = %d", got)
	}
	if got := maxCopies(vec{1000, 0}, vec{0, 0}, vec{2000, 25}); got < 1000 {
		t.Errorf("zero request copies = %d", got)
	}
	if got := maxCopies(vec{3000, 0}, vec{0, 1}, vec{2000, 25}); got != 0 {
		t.Errorf("over-full bin copies = %d", got)
	}
}
