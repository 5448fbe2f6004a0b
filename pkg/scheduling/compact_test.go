package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCompact_KeepsWhatTheSimulatorReadsOfABoundPod(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	q := resource.MustParse
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: q(cpu), corev1.ResourceMemory: q(mem)}
	}
	cases := []struct {
		name string
		pod  corev1.Pod
	}{
		{"app and sidecar", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Resources: corev1.ResourceRequirements{Requests: rl("100m", "128Mi"), Limits: rl("1", "1Gi")}, Env: []corev1.EnvVar{{Name: "A", Value: "b"}}},
			{Name: "envoy", Resources: corev1.ResourceRequirements{Requests: rl("50m", "64Mi")}},
		}}}},
		{"limits only", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Limits: rl("2", "2Gi")}}}}}},
		{"init peak, native sidecar and overhead", corev1.Pod{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "migrate", Resources: corev1.ResourceRequirements{Requests: rl("3", "1Gi")}},
				{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("200m", "256Mi")}},
			},
			Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: rl("500m", "512Mi")}}},
			Overhead:   rl("10m", "16Mi"),
		}}},
		{"host ports", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent",
			Resources: corev1.ResourceRequirements{Requests: rl("50m", "64Mi")},
			Ports:     []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 9100, HostPort: 9100}, {ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP, HostIP: "10.0.0.1"}}}}}}},
		{"pod-level resources", corev1.Pod{Spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: rl("4", "8Gi")},
			Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("1", "1Gi")}}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod.DeepCopy()
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
			want, wantPorts := podRequests(p), podHostPorts(p)
			Compact(p, nil)
			got := podRequests(p)
			if len(got) != len(want) {
				t.Fatalf("requests %v, want %v", got, want)
			}
			for n, w := range want {
				if g := got[n]; g.Cmp(w) != 0 {
					t.Errorf("%s: %s, want %s", n, g.String(), w.String())
				}
			}
			gotPorts := podHostPorts(p)
			if len(gotPorts) != len(wantPorts) {
				t.Fatalf("host ports %v, want %v", gotPorts, wantPorts)
			}
			for i := range wantPorts {
				if gotPorts[i] != wantPorts[i] {
					t.Errorf("host port %d: %v, want %v", i, gotPorts[i], wantPorts[i])
				}
			}
			if p.Status.Phase != corev1.PodRunning || p.Status.PodIP != "" || len(p.Status.Conditions) != 0 {
				t.Errorf("status %+v: want the phase only", p.Status)
			}
			if len(p.Spec.InitContainers) != 0 || len(p.Spec.Containers) > 1 {
				t.Errorf("containers %d, init containers %d: want at most one (host ports)", len(p.Spec.Containers), len(p.Spec.InitContainers))
			}
		})
	}
}
