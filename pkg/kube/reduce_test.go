package kube_test

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/kube"
)

func fullPod(name string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: "u-" + "name", ResourceVersion: "7",
			Labels:          map[string]string{"app": "web", "pod-template-hash": "abc"},
			Annotations:     map[string]string{"karpenter.sh/do-not-disrupt": "true", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-abc", APIVersion: "apps/v1"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{
			NodeName:     "n1",
			NodeSelector: map[string]string{"workload": "web"},
			InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: &always, Image: "envoy",
				Resources: corev1.ResourceRequirements{Requests: req}, Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}},
			Containers: []corev1.Container{{Name: "app", Image: "web", Command: []string{"/web"},
				Resources:      corev1.ResourceRequirements{Requests: req},
				Ports:          []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 9100, HostPort: 9100}},
				Env:            []corev1.EnvVar{{Name: "B", Value: "2"}},
				LivenessProbe:  &corev1.Probe{PeriodSeconds: 10},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 5}}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			},
			Tolerations:               []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}},
			Affinity:                  &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", StartTime: &metav1.Time{Time: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)},
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, Reason: "Scheduled", Message: "bound", ObservedGeneration: 1,
					LastProbeTime: metav1.Now(), LastTransitionTime: metav1.Now()},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}}},
	}
}

func TestReducePod_KeepsWhatDecisionsReadAndDropsTheRest(t *testing.T) {
	p := fullPod("web-1")
	orig := p.DeepCopy()
	kube.ReducePod(p, kube.NewInterner())

	keep := []struct {
		what      string
		got, want any
	}{
		{"identity", []any{p.Name, p.Namespace, p.UID, p.ResourceVersion}, []any{orig.Name, orig.Namespace, orig.UID, orig.ResourceVersion}},
		{"labels", p.Labels, orig.Labels},
		{"owners", p.OwnerReferences, orig.OwnerReferences},
		{"node", p.Spec.NodeName, orig.Spec.NodeName},
		{"node selector", p.Spec.NodeSelector, orig.Spec.NodeSelector},
		{"tolerations", p.Spec.Tolerations, orig.Spec.Tolerations},
		{"affinity", p.Spec.Affinity, orig.Spec.Affinity},
		{"spreads", p.Spec.TopologySpreadConstraints, orig.Spec.TopologySpreadConstraints},
		{"requests", p.Spec.Containers[0].Resources, orig.Spec.Containers[0].Resources},
		{"sidecar rule", p.Spec.InitContainers[0].RestartPolicy, orig.Spec.InitContainers[0].RestartPolicy},
		{"host ports only", p.Spec.Containers[0].Ports, orig.Spec.Containers[0].Ports[1:]},
		{"claims only", p.Spec.Volumes, orig.Spec.Volumes[:1]},
		{"phase", p.Status.Phase, orig.Status.Phase},
		{"start time (do-not-disrupt durations run from it)", p.Status.StartTime, orig.Status.StartTime},
		{"PodScheduled's status and reason alone", p.Status.Conditions, []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, Reason: "Scheduled"}}},
		{"annotations but kubectl's copy", p.Annotations, map[string]string{"karpenter.sh/do-not-disrupt": "true"}},
	}
	for _, k := range keep {
		if !reflect.DeepEqual(k.got, k.want) {
			t.Errorf("%s: %v, want %v", k.what, k.got, k.want)
		}
	}
	c := p.Spec.Containers[0]
	if c.Env != nil || c.Command != nil || c.LivenessProbe != nil || c.ReadinessProbe != nil || c.VolumeMounts != nil || c.Image != "" || p.Spec.InitContainers[0].Env != nil {
		t.Errorf("container keeps what nothing reads: %+v", c)
	}
	if p.ManagedFields != nil || p.Status.PodIP != "" || p.Status.ContainerStatuses != nil {
		t.Errorf("managed fields %v, pod IP %q, container statuses %v: want none", p.ManagedFields, p.Status.PodIP, p.Status.ContainerStatuses)
	}
}

func TestReducePod_ReplicasShareTheirMaps(t *testing.T) {
	in := kube.NewInterner()
	a, b := fullPod("web-1"), fullPod("web-2")
	kube.ReducePod(a, in)
	kube.ReducePod(b, in)
	same := func(what string, x, y any) {
		if reflect.ValueOf(x).Pointer() != reflect.ValueOf(y).Pointer() {
			t.Errorf("%s not shared between replicas", what)
		}
	}
	same("labels", a.Labels, b.Labels)
	same("annotations", a.Annotations, b.Annotations)
	same("node selector", a.Spec.NodeSelector, b.Spec.NodeSelector)
	same("tolerations", a.Spec.Tolerations, b.Spec.Tolerations)
	same("affinity", a.Spec.Affinity, b.Spec.Affinity)
	same("spreads", a.Spec.TopologySpreadConstraints, b.Spec.TopologySpreadConstraints)
	if in.ResourceList(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}) == nil {
		t.Fatal("nil list")
	}
	x := in.ResourceList(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	y := in.ResourceList(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")})
	same("equal request lists", x, y)
	c := fullPod("other")
	c.Labels["app"] = "api"
	kube.ReducePod(c, in)
	if reflect.ValueOf(c.Labels).Pointer() == reflect.ValueOf(a.Labels).Pointer() || c.Labels["app"] != "api" {
		t.Errorf("different labels shared: %v", c.Labels)
	}
}
