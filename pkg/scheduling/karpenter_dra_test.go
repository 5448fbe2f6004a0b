package scheduling_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestKarpenterSuiteDRA ports Karpenter v1.15's "Dynamic Resource
// Allocation (DRA)" cases (scheduling/suite_test.go) under its default
// IGNORE_DRA_REQUESTS: a pod with dynamic resource claims — its own, a
// container's or an init container's — gets no node and an error that
// says why; a pod without any plans as usual.
func TestKarpenterSuiteDRA(t *testing.T) {
	containerClaim := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu-claim"}}
	}
	initClaim := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			Claims:   []corev1.ResourceClaim{{Name: "gpu-init-claim"}}}}}
	}
	podClaim := func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu-claim"}}
	}
	for _, tc := range []struct {
		name    string
		mods    []func(*corev1.Pod)
		planned bool
	}{
		{"should handle DRA pods correctly: container with resource claims", []func(*corev1.Pod){containerClaim}, false},
		{"should handle DRA pods correctly: init container with resource claims", []func(*corev1.Pod){initClaim}, false},
		{"should handle DRA pods correctly: pod with both container and init container resource claims", []func(*corev1.Pod){containerClaim, initClaim}, false},
		{"should handle DRA pods correctly: non-DRA pod without resource claims", nil, true},
		{"a pod with resource claims of its own", []func(*corev1.Pod){podClaim}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A pod like it without claims in the same input: one class
			// each, the claim-less one planned.
			plain := pods("plain", 1, "1", "1Gi")
			plan := solve(t, input(append(pods("dra", 1, "1", "1Gi", tc.mods...), plain...)))
			placed := placedOn(plan)
			if _, ok := placed["plain-0"]; !ok {
				t.Fatalf("the pod without claims was not planned: %s", reasons(plan))
			}
			if _, ok := placed["dra-0"]; ok != tc.planned {
				t.Fatalf("planned %v, want %v (%s)", ok, tc.planned, reasons(plan))
			}
			if !tc.planned && !strings.Contains(reasons(plan), "dynamic resource claims") {
				t.Fatalf("reasons %q, want the dynamic resource claims named", reasons(plan))
			}
		})
	}
}

// TestKarpenterSuiteDRADaemonSets ports "should handle DaemonSet pods
// with DRA requirements based on IgnoreDRARequests flag value" at its
// default: a DaemonSet whose pods claim devices reserves nothing on a new
// node, so a 1-CPU pod gets the node it would get without it; the same
// DaemonSet without the claim makes it a bigger one.
func TestKarpenterSuiteDRADaemonSets(t *testing.T) {
	app := pods("app", 1, "1", "1Gi")
	cheapest := func(dss ...*appsv1.DaemonSet) float64 {
		in := input(app)
		in.DaemonSets = dss
		plan := solve(t, in)
		if len(plan.NewNodes) != 1 {
			t.Fatalf("plan %+v, want one new node", plan.NewNodes)
		}
		return plan.TotalPricePerHour
	}
	alone := cheapest()
	withDRA := cheapest(daemonSet("dra-daemon", "3", "1Gi", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu-claim"}}
	}))
	withPlain := cheapest(daemonSet("plain-daemon", "3", "1Gi"))
	if withDRA != alone || withPlain <= alone {
		t.Fatalf("$/h alone %.2f, with the claiming DaemonSet %.2f (want the same), with a plain 3-CPU DaemonSet %.2f (want more)", alone, withDRA, withPlain)
	}
}
