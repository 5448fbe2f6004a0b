package disruption

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// inZone moves a node of typed to another zone.
func inZone(n Node, zone string) Node {
	n.Node.Labels[model.LabelZone] = zone
	n.Node.Spec.ProviderID = "aws:///" + zone + "/i-" + n.Node.Name
	return n
}

// TestConsolidationKeepsAZonalVolumeInItsZone: a pod whose claim is bound
// to a volume in us-east-1a is not moved onto a node with room in
// us-east-1b when its node is consolidated: the simulation reads the
// snapshot's volumes, as the provisioner's does. Without them, the node
// is deleted; with them, it is replaced by a cheaper one (in its zone).
func TestConsolidationKeepsAZonalVolumeInItsZone(t *testing.T) {
	types := testTypes(t)
	pool := consolidating("on-demand")
	stateful := app("stateful", "1")
	stateful.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	nodes := func() []Node {
		return []Node{
			typed(types, "in-a", "m5.2xlarge", "on-demand", stateful.DeepCopy()),
			inZone(typed(types, "in-b", "m5.2xlarge", "on-demand", app("kept", "1", AnnotationDoNotDisrupt)), "us-east-1b"),
		}
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-a"}, Spec: corev1.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: model.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}}}}}}}}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: stateful.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv.Name, Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}

	for _, tc := range []struct {
		name    string
		volumes bool
		want    []string
	}{
		{"without the volumes the pod moves to us-east-1b", false, []string{"in-a:delete"}},
		{"with them it stays in us-east-1a", true, []string{"in-a:replace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := scheduling.Input{InstanceTypes: types, Region: "us-east-1"}
			if tc.volumes {
				in.PersistentVolumes = []*corev1.PersistentVolume{pv}
				in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{pvc}
			}
			_, second := twoPassesWith(in, []*model.Pool{pool}, nodes())
			if got := describe(second.Retire); !slices.Equal(got, tc.want) {
				t.Fatalf("retired %v, want %v", got, tc.want)
			}
		})
	}
}

// TestConsolidationKeepsAVolumeOffANodeAtItsLimit: a pod with a claim is
// not moved onto a node whose CSINode allows no more attachments (the
// kube-scheduler would refuse it there): without the limits its node is
// deleted, with them it is replaced by a cheaper one.
func TestConsolidationKeepsAVolumeOffANodeAtItsLimit(t *testing.T) {
	types := testTypes(t)
	pool := consolidating("on-demand")
	stateful := app("stateful", "1")
	stateful.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	class := "ebs"
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: stateful.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class}}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "ebs.csi.aws.com"}
	for _, tc := range []struct {
		name   string
		limits map[string]map[string]int64
		want   []string
	}{
		{"without the limits the pod moves to the other node", nil, []string{"full:delete"}},
		{"with them it stays off it", map[string]map[string]int64{"other": {"ebs.csi.aws.com": 0}}, []string{"full:replace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []Node{
				typed(types, "full", "m5.2xlarge", "on-demand", stateful.DeepCopy()),
				typed(types, "other", "m5.2xlarge", "on-demand", app("kept", "1", AnnotationDoNotDisrupt)),
			}
			in := scheduling.Input{InstanceTypes: types, Region: "us-east-1",
				PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{pvc}, StorageClasses: []*storagev1.StorageClass{sc}}
			_, second := twoPassesOf(Snapshot{Now: now, Pools: []*model.Pool{pool}, Nodes: nodes, Simulation: in, VolumeLimits: tc.limits})
			if got := describe(second.Retire); !slices.Equal(got, tc.want) {
				t.Fatalf("retired %v, want %v", got, tc.want)
			}
		})
	}
}
