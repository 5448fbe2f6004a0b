package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/test/testenv"
)

// TestE2E_PendingPodBoundOntoReadyNodeWithRoom: a pod that arrives when a
// Ready node of Joist's has room for it is planned onto that node and
// bound in the same pass (no node-ready event will come for it), and no
// instance is launched.
func TestE2E_PendingPodBoundOntoReadyNodeWithRoom(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "room", Namespace: "room", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
	})
	first := createPending(t, g, smallPods(t, "first", 1))
	nodes := waitBound(t, g, first, 90*time.Second)
	if len(launched(g)) != 1 {
		t.Fatalf("launched %v, want one instance", launched(g))
	}
	later := createPending(t, g, smallPods(t, "later", 1))
	got := waitBound(t, g, later, 60*time.Second)
	if got[later[0].Name] != nodes[first[0].Name] {
		t.Errorf("later pod on %q, want the Ready node %q", got[later[0].Name], nodes[first[0].Name])
	}
	if ids := launched(g); len(ids) != 1 {
		t.Errorf("launched %v, want the Ready node reused", ids)
	}
}

// TestE2E_ZonalVolumePodLaunchedInItsZone: a pod whose claim is bound to a
// volume in one zone gets a node in that zone (the provisioner reads the
// claims, volumes and storage classes for it).
func TestE2E_ZonalVolumePodLaunchedInItsZone(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "zonal", Namespace: "zonal", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
	})
	ctx := context.Background()
	zone := testenv.Region + "c"
	c := g.Kube.Client
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	if _, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "zonal-gp3"}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &mode,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	size := resource.MustParse("10Gi")
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "zonal-pv"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: corev1.ResourceList{corev1.ResourceStorage: size}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:       "zonal-gp3",
			ClaimRef:               &corev1.ObjectReference{Namespace: "zonal", Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-0123456789abcdef0"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
			}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sc := "zonal-gp3"
	if _, err := c.CoreV1().PersistentVolumeClaims("zonal").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "zonal"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &sc, VolumeName: "zonal-pv",
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := smallPods(t, "zonal", 1)[0]
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
	}})
	ps := createPending(t, g, []*corev1.Pod{p})
	nodes := waitBound(t, g, ps, 90*time.Second)
	node, err := c.CoreV1().Nodes().Get(ctx, nodes[p.Name], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Labels[corev1.LabelTopologyZone]; got != zone {
		t.Errorf("node in %q, want the volume's zone %q", got, zone)
	}
}

// TestE2E_NamespaceSelectorAffinityPlanned: a pod whose required affinity
// finds its peer through a namespaceSelector (namespaces labelled
// team=data) is planned next to it: the provisioner reads the namespaces'
// labels for the simulator, as `joist plan` does from files. Without them
// the selector matches no namespace and the pod would have no place.
func TestE2E_NamespaceSelectorAffinityPlanned(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "ns-affinity", Namespace: "ns-affinity", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
	})
	ctx := context.Background()
	label := []byte(`{"metadata":{"labels":{"team":"data"}}}`)
	if _, err := g.Kube.Client.CoreV1().Namespaces().Patch(ctx, "ns-affinity", types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	db := smallPods(t, "db", 1)
	db[0].Labels = map[string]string{"app": "db"}
	dbNode := waitBound(t, g, createPending(t, g, db), 90*time.Second)["db-0"]

	api := smallPods(t, "api", 1)
	api[0].Labels = map[string]string{"app": "api"}
	api[0].Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey:       corev1.LabelHostname,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}},
	}}}}
	got := waitBound(t, g, createPending(t, g, api), 60*time.Second)
	if got["api-0"] != dbNode {
		t.Errorf("api pod on %q, want next to its peer on %q", got["api-0"], dbNode)
	}
}
