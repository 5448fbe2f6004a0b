package scheduling_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// A generic ephemeral volume's claim <pod>-<volume> is the pod's only when
// the pod controls it (the ephemeral volume controller makes it so); the
// kube-scheduler refuses a pod whose claim of that name belongs to
// something else (component-helpers' ephemeral.VolumeIsForPod), so a node
// launched for it would stay empty.
func TestEphemeralClaimOwner(t *testing.T) {
	yes := true
	owned := func(kind, name, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes}}
	}
	in := func(owners []metav1.OwnerReference, podUID string) scheduling.Input {
		ps := pods("a", 1, "1", "1Gi", func(p *corev1.Pod) {
			p.UID = types.UID(podUID)
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}})
		})
		x := input(ps)
		mode := storagev1.VolumeBindingWaitForFirstConsumer
		x.StorageClasses = []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "gp3", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &mode}}
		x.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "a-0-tmp", Namespace: "default", OwnerReferences: owners}}}
		return x
	}
	cases := []struct {
		name   string
		in     scheduling.Input
		reason string // "" when placed
	}{
		{"claim controlled by the pod", in(owned("Pod", "a-0", "p1"), "p1"), ""},
		{"claim controlled by the pod (input without UIDs)", in(owned("Pod", "a-0", ""), ""), ""},
		{"claim controlled by an earlier pod of the same name", in(owned("Pod", "a-0", "p0"), "p1"), "was not created for pod default/a-0"},
		{"claim controlled by something else", in(owned("StatefulSet", "db", "s1"), "p1"), "was not created for pod default/a-0"},
		{"claim without an owner", in(nil, "p1"), "was not created for pod default/a-0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := solve(t, tc.in)
			switch {
			case tc.reason == "" && len(plan.Unschedulable) > 0:
				t.Errorf("unschedulable: %s", reasons(plan))
			case tc.reason != "" && (len(plan.Unschedulable) != 1 || !strings.Contains(plan.Unschedulable[0].Reason, tc.reason)):
				t.Errorf("got %q, want a reason with %q", reasons(plan), tc.reason)
			}
		})
	}
}
