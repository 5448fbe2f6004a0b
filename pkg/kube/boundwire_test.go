package kube_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/test/testenv"
)

// watched is the annotation the tests ask EachBoundPod to read pods whole
// for.
const watched = "joist.sh/replacement-instance-id"

// boundExpected says whether EachBoundPod should build the pod's BoundPod
// from the wire (the rule boundwire.go states): bound to a node, not
// finished, not being deleted, no Node owner, no pod affinity or
// anti-affinity, no volume claim, not carrying the watched annotation.
func boundExpected(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
		return false
	}
	if _, ok := p.Annotations[watched]; ok {
		return false
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "Node" || o.Kind == "DaemonSet" && o.Name == "" {
			return false
		}
	}
	if a := p.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return false
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return false
		}
	}
	return true
}

// read is what EachBoundPod gave for one pod: a BoundPod and its node, or
// the pod whole.
type boundOrWhole struct {
	node  string
	bound *scheduling.BoundPod
	whole *corev1.Pod
}

func boundReader(out *[]boundOrWhole) (kube.BoundRead, func(*corev1.Pod)) {
	return kube.BoundRead{Annotations: []string{watched}, Bound: func(node string, b scheduling.BoundPod) {
			*out = append(*out, boundOrWhole{node: node, bound: &b})
		}}, func(p *corev1.Pod) {
			cp := *p
			*out = append(*out, boundOrWhole{whole: &cp})
		}
}

// sameAsNewBoundPod checks each read against the typed pod at its index:
// a BoundPod where boundExpected says, equal to NewBoundPod of the pod
// reduced (and its node the pod's), the pod reduced otherwise.
func sameAsNewBoundPod(t *testing.T, typed []corev1.Pod, got []boundOrWhole) {
	t.Helper()
	if len(got) != len(typed) {
		t.Fatalf("%d pods read, want %d", len(got), len(typed))
	}
	in := kube.NewInterner()
	bound := 0
	for i := range typed {
		p := typed[i].DeepCopy()
		kube.ReducePod(p, in)
		g := got[i]
		if want := boundExpected(&typed[i]); want != (g.bound != nil) {
			t.Errorf("pod %s: read as a BoundPod %v, want %v", p.Name, g.bound != nil, want)
			continue
		}
		if g.bound == nil {
			if !reflect.DeepEqual(g.whole, p) {
				t.Errorf("pod %s, read whole, differs from the pod reduced (- reduced, + read):\n%s", p.Name, diff.Diff(p, g.whole))
			}
			continue
		}
		bound++
		want, ok := scheduling.NewBoundPod(p, in.ResourceList)
		if !ok {
			t.Errorf("pod %s: read as a BoundPod, which NewBoundPod refuses", p.Name)
			continue
		}
		if !reflect.DeepEqual(*g.bound, want) || g.node != p.Spec.NodeName {
			t.Errorf("pod %s: the BoundPod read on %s differs from NewBoundPod's on %s (- NewBoundPod, + read):\n%s",
				p.Name, g.node, p.Spec.NodeName, diff.Diff(want, *g.bound))
		}
	}
	if bound == 0 || bound == len(typed) {
		t.Errorf("%d pods of %d read as a BoundPod: want some read each way", bound, len(typed))
	}
	t.Logf("%d pods of %d read as a BoundPod", bound, len(typed))
}

func encodePods(tb testing.TB, items []corev1.Pod) []byte {
	tb.Helper()
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: items}
	var body bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(list, &body); err != nil {
		tb.Fatal(err)
	}
	return body.Bytes()
}

// TestBoundPage_SameAsNewBoundPod checks, on the shapes and on generated
// pods of every combination of what a BoundPod is built from (containers'
// requests and limits, init containers and native sidecars, pod-level
// resources, overhead, host ports, owners, labels) and of what makes a pod
// be read whole (pod affinity and anti-affinity, claims, deletion, a Node
// owner, the watched annotation, finished and pending phases), that each
// pod EachBoundPod builds a BoundPod for gives the BoundPod
// NewBoundPod(ReducePod(pod)) gives, and that it does so for exactly the
// pods it should.
func TestBoundPage_SameAsNewBoundPod(t *testing.T) {
	var typed []corev1.Pod
	for _, s := range shapes("shop") {
		p := s.pod.DeepCopy()
		if s.status != nil {
			p.Status = *s.status
		}
		typed = append(typed, *p)
	}
	rnd := rand.New(rand.NewSource(16))
	for i := range 400 {
		typed = append(typed, *generatedPod(rnd, i))
	}
	page := encodePods(t, typed)
	var decoded corev1.PodList // as the typed read decodes them
	if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(page, nil, &decoded); err != nil {
		t.Fatal(err)
	}
	var got []boundOrWhole
	read, whole := boundReader(&got)
	if _, err := kube.BoundPage(page, kube.NewInterner(), read, whole); err != nil {
		t.Fatal(err)
	}
	sameAsNewBoundPod(t, decoded.Items, got)
}

// TestEachBoundPod_SameAsNewBoundPod checks the read on the API server:
// the shapes as it stores and lists them (defaults, managed fields), read
// by EachBoundPod with the provisioner's selector, are the typed read's.
func TestEachBoundPod_SameAsNewBoundPod(t *testing.T) {
	env := testenv.Kube(t)
	ns, _ := createShapes(t, env.Client)
	ctx := context.Background()
	const sel = "spec.nodeName!="
	list, err := env.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	var typed []corev1.Pod
	at := map[int]bool{} // the indexes of the namespace's pods in the list
	for i, p := range list.Items {
		if p.Namespace == ns {
			typed = append(typed, p)
			at[i] = true
		}
	}
	var all []boundOrWhole
	read, whole := boundReader(&all)
	if err := kube.New(env.Client).EachBoundPod(ctx, sel, kube.NewInterner(), read, whole); err != nil {
		t.Fatal(err)
	}
	if len(all) != len(list.Items) {
		t.Fatalf("EachBoundPod read %d pods, the typed read %d", len(all), len(list.Items))
	}
	var got []boundOrWhole
	for i := range all {
		if at[i] {
			got = append(got, all[i])
		}
	}
	sameAsNewBoundPod(t, typed, got)
}

// generatedPod is a pod of random shape: of the fields a BoundPod is
// built from and of those that make a pod be read whole.
func generatedPod(rnd *rand.Rand, i int) *corev1.Pod {
	pick := func(n int) bool { return rnd.Intn(n) == 0 }
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "nvidia.com/gpu", "hugepages-2Mi"}
	amounts := map[corev1.ResourceName][]string{
		corev1.ResourceCPU: {"100m", "250m", "1", "1500m"}, corev1.ResourceMemory: {"64Mi", "128Mi", "1Gi", "1.5Gi"},
		corev1.ResourceEphemeralStorage: {"1Gi", "10Gi"}, "nvidia.com/gpu": {"1", "2"}, "hugepages-2Mi": {"2Mi", "4Mi"},
	}
	list := func() corev1.ResourceList {
		if pick(4) {
			return nil
		}
		l := corev1.ResourceList{}
		for _, n := range names {
			if rnd.Intn(3) > 0 && (n == corev1.ResourceCPU || n == corev1.ResourceMemory || pick(3)) {
				l[n] = q(amounts[n][rnd.Intn(len(amounts[n]))])
			}
		}
		return l
	}
	container := func(name string) corev1.Container {
		c := corev1.Container{Name: name, Image: "app:v1", Env: []corev1.EnvVar{{Name: "N", Value: fmt.Sprint(i)}},
			Resources: corev1.ResourceRequirements{Requests: list(), Limits: list()}}
		if pick(4) {
			c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 8080})
		}
		if pick(5) {
			p := corev1.ContainerPort{ContainerPort: int32(9000 + rnd.Intn(3)), HostPort: int32(9000 + rnd.Intn(3))}
			if pick(2) {
				p.Protocol = corev1.ProtocolUDP
			}
			if pick(3) {
				p.HostIP = "10.0.0.1"
			}
			c.Ports = append(c.Ports, p)
		}
		return c
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gen-%03d", i), Namespace: []string{"shop", "web", "kube-system"}[rnd.Intn(3)],
		UID: "uid", ResourceVersion: "7"}}
	if !pick(10) {
		p.Labels = map[string]string{"app": fmt.Sprint("app-", rnd.Intn(5))}
		if pick(2) {
			p.Labels["tier"] = "web"
		}
	}
	if pick(3) {
		p.Annotations = map[string]string{"example.com/note": "x"}
	}
	if pick(12) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[watched] = "i-0123"
	}
	switch rnd.Intn(6) {
	case 0:
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: []string{"ds-0", "ds-1", ""}[rnd.Intn(3)], UID: "ds"}}
	case 1:
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "node"}}
	case 2, 3:
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: ptr(true)}}
	}
	if !pick(12) {
		p.Spec.NodeName = fmt.Sprint("node-", rnd.Intn(4))
	}
	for j := range 1 + rnd.Intn(3) {
		p.Spec.Containers = append(p.Spec.Containers, container(fmt.Sprint("c", j)))
	}
	for j := range rnd.Intn(3) {
		c := container(fmt.Sprint("init", j))
		if pick(2) {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	if pick(4) {
		p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: q("250m"), corev1.ResourceMemory: q("120Mi")}
	}
	if pick(4) {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: list(), Limits: list()}
	}
	switch rnd.Intn(8) {
	case 0:
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
	case 1:
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}}
	case 2:
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}}}}}
	}
	p.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}
	switch rnd.Intn(10) {
	case 0:
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}})
	case 1:
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
	}
	if pick(15) {
		p.DeletionTimestamp = &metav1.Time{}
	}
	p.Status.Phase = []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed, ""}[rnd.Intn(7)]
	if p.Status.Phase == corev1.PodRunning {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		p.Status.PodIP = "10.1.2.3"
	}
	return p
}

// BenchmarkBoundPage reads a page of BenchmarkPodPage's pods as the
// provisioner reads its bound pods: decoded into the borrowed struct and
// kept as a scheduling.BoundPod by NewBoundPod ("decoded", the read
// before EachBoundPod), or built from the wire (EachBoundPod).
func BenchmarkBoundPage(b *testing.B) {
	list := benchPodList(b)
	list.SetContinue("next-page")
	var body bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(list, &body); err != nil {
		b.Fatal(err)
	}
	page := body.Bytes()
	kept := make([]scheduling.BoundPod, 0, kube.PageSize)
	for _, read := range []struct {
		name string
		read func(in *kube.Interner) error
	}{
		{"decoded", func(in *kube.Interner) error {
			_, err := kube.PodPageBorrowed(page, in, func(p *corev1.Pod) {
				if bp, ok := scheduling.NewBoundPod(p, in.ResourceList); ok {
					kept = append(kept, bp)
				}
			})
			return err
		}},
		{"wire", func(in *kube.Interner) error {
			_, err := kube.BoundPage(page, in, kube.BoundRead{Bound: func(_ string, bp scheduling.BoundPod) { kept = append(kept, bp) }},
				func(p *corev1.Pod) {
					if bp, ok := scheduling.NewBoundPod(p, in.ResourceList); ok {
						kept = append(kept, bp)
					}
				})
			return err
		}},
	} {
		b.Run(read.name, func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				kept = kept[:0]
				if err := read.read(kube.NewInterner()); err != nil {
					b.Fatal(err)
				}
				if len(kept) != kube.PageSize {
					b.Fatalf("%d bound pods, want %d", len(kept), kube.PageSize)
				}
			}
		})
	}
}
