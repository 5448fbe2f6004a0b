package verify

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// TestAttachmentLimits: the distinct claims of a node's pods per CSI
// driver against its limit, a claim shared by two pods counted once, a
// driver without a limit not limited, and a node already over its limit
// blamed on the plan only when a placed pod adds a claim.
func TestAttachmentLimits(t *testing.T) {
	class := "ebs"
	in := scheduling.Input{StorageClasses: []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "ebs"}, Provisioner: "ebs.csi.aws.com"},
		{ObjectMeta: metav1.ObjectMeta{Name: "efs"}, Provisioner: "efs.csi.aws.com"},
	}}
	efs := "efs"
	for _, c := range []string{"a", "b", "c"} {
		in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: "ns"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class}})
	}
	in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "shared-fs", Namespace: "ns"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &efs}})
	pod := func(name string, claims ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
		for _, c := range claims {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
		}
		return p
	}
	limit2 := map[string]int64{"ebs.csi.aws.com": 2}
	for _, tc := range []struct {
		name            string
		existing, place []*corev1.Pod
		want            string // "" when sound
	}{
		{"two claims, limit 2", nil, []*corev1.Pod{pod("p", "a"), pod("q", "b")}, ""},
		{"three claims, limit 2", nil, []*corev1.Pod{pod("p", "a", "b"), pod("q", "c")}, "attaches 3 ebs.csi.aws.com volumes, limit 2"},
		{"a claim shared by two pods counts once", nil, []*corev1.Pod{pod("p", "a", "b"), pod("q", "a")}, ""},
		{"a driver without a limit", nil, []*corev1.Pod{pod("p", "a", "b", "shared-fs")}, ""},
		{"over already, nothing added", []*corev1.Pod{pod("old", "a", "b", "c")}, []*corev1.Pod{pod("p")}, ""},
		{"over already, a claim added", []*corev1.Pod{pod("old", "a", "b")}, []*corev1.Pod{pod("p", "c")}, "attaches 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &verifier{in: in}
			vn := &vnode{name: "n", pods: append(append([]*corev1.Pod(nil), tc.existing...), tc.place...), placed: tc.place}
			v.checkAttachments(vn, limit2)
			var got string
			for _, e := range v.errs {
				got += e.Error()
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("errors %q, want %q", got, tc.want)
			}
		})
	}
}
