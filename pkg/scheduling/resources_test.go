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

// TestContainerOnlyIsPodRequestsLessThePodSlot: where containerOnly
// reads a pod's requests in place, they are podRequests' less the pod's
// slot; every pod whose requests are made of more (a second container,
// init containers, overhead, pod-level resources, a limit standing in
// for a request, a request for pods) is left to podRequests.
func TestContainerOnlyIsPodRequestsLessThePodSlot(t *testing.T) {
	withLimits := func(c corev1.Container, l corev1.ResourceList) corev1.Container {
		c.Resources.Limits = l
		return c
	}
	withRequest := func(c corev1.Container, n corev1.ResourceName, q string) corev1.Container {
		c.Resources.Requests = c.Resources.Requests.DeepCopy()
		c.Resources.Requests[n] = resource.MustParse(q)
		return c
	}
	cases := []struct {
		name string
		spec corev1.PodSpec
		read bool
	}{
		{"one container", corev1.PodSpec{Containers: []corev1.Container{ctr("1", "1Gi")}}, true},
		{"no requests", corev1.PodSpec{Containers: []corev1.Container{{}}}, true},
		{"limits of requested resources", corev1.PodSpec{Containers: []corev1.Container{withLimits(ctr("1", "1Gi"), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")})}}, true},
		{"an extended resource", corev1.PodSpec{Containers: []corev1.Container{withRequest(ctr("1", "1Gi"), "nvidia.com/gpu", "1")}}, true},
		{"a limit standing in", corev1.PodSpec{Containers: []corev1.Container{withLimits(ctr("1", "1Gi"), corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")})}}, false},
		{"two containers", corev1.PodSpec{Containers: []corev1.Container{ctr("1", "1Gi"), ctr("1", "1Gi")}}, false},
		{"init container", corev1.PodSpec{InitContainers: []corev1.Container{ctr("3", "1Gi")}, Containers: []corev1.Container{ctr("1", "1Gi")}}, false},
		{"overhead", corev1.PodSpec{Containers: []corev1.Container{ctr("1", "1Gi")}, Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}, false},
		{"pod level", corev1.PodSpec{Containers: []corev1.Container{ctr("1", "1Gi")}, Resources: &corev1.ResourceRequirements{}}, false},
		{"a request for pods", corev1.PodSpec{Containers: []corev1.Container{withRequest(ctr("1", "1Gi"), corev1.ResourcePods, "2")}}, false},
	}
	for _, c := range cases {
		pod := &corev1.Pod{Spec: c.spec}
		got, ok := containerOnly(pod)
		if ok != c.read {
			t.Errorf("%s: read in place %v, want %v", c.name, ok, c.read)
			continue
		}
		if !ok {
			continue
		}
		want := podRequests(pod)
		if p := want[corev1.ResourcePods]; p.Value() != 1 {
			t.Fatalf("%s: podRequests counts %d pods", c.name, p.Value())
		}
		delete(want, corev1.ResourcePods)
		if len(got) != len(want) {
			t.Errorf("%s: %v, podRequests less the pod %v", c.name, got, want)
		}
		for n, q := range want {
			if g, found := got[n]; !found || g.Cmp(q) != 0 {
				t.Errorf("%s: %s = %v, podRequests %v", c.name, n, got[n], q)
			}
		}
	}
}
