package kube_test

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/test/testenv"
)

// wireNodes are nodes as a kubelet and the node controller write them
// (prefix names them): one with every field Joist reads or drops (labels,
// kubectl's last-applied copy, a taint, a finalizer, capacity and
// allocatable, conditions with their times, addresses, system info,
// images, volumes in use), one cordoned without images, one not Ready.
func wireNodes(prefix string) []*corev1.Node {
	var out []*corev1.Node
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "ap-northeast-2a",
				"node.kubernetes.io/instance-type": "t3.xlarge", "karpenter.sh/nodepool": "default"},
				Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"kind":"Node"}`, "node.alpha.kubernetes.io/ttl": "0"},
				Finalizers:  []string{"joist.sh/test"}},
			Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///ap-northeast-2a/i-%017d", i),
				Taints: []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}},
		}
		status := corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("16Gi"), corev1.ResourcePods: q("58")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("3920m"), corev1.ResourceMemory: q("15Gi"), corev1.ResourcePods: q("58")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available",
					LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
					LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()},
			},
			Addresses:    []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.1.0.%d", i+1)}, {Type: corev1.NodeHostName, Address: name}},
			NodeInfo:     corev1.NodeSystemInfo{MachineID: "ec2a", SystemUUID: "ec2a", BootID: "b", KernelVersion: "6.1", OSImage: "AL2023", ContainerRuntimeVersion: "containerd://1.7", KubeletVersion: "v1.31.2", OperatingSystem: "linux", Architecture: "amd64"},
			VolumesInUse: []corev1.UniqueVolumeName{"kubernetes.io/csi/ebs.csi.aws.com^vol-0123"},
		}
		for k := 0; k < 10; k++ {
			status.Images = append(status.Images, corev1.ContainerImage{Names: []string{fmt.Sprintf("registry.example/team/service-%d@sha256:%064x", k, k), fmt.Sprintf("registry.example/team/service-%d:v%d", k, k)},
				SizeBytes: int64(50_000_000 + k)})
		}
		switch i {
		case 1:
			n.Spec.Unschedulable, status.Images = true, nil
		case 2:
			status.Conditions[1].Status, status.Conditions[1].Reason = corev1.ConditionFalse, "KubeletNotReady"
		}
		n.Status = status
		out = append(out, n)
	}
	return out
}

// createNodes creates the nodes through the API server (created, then the
// status written, as a kubelet does) and returns their names. They are
// deleted when the test ends (a test run again, -count=N, makes them anew).
func createNodes(tb testing.TB, c kubernetes.Interface, prefix string) map[string]bool {
	tb.Helper()
	ctx := context.Background()
	names := map[string]bool{}
	tb.Cleanup(func() {
		for name := range names {
			if err := testenv.RemoveNode(context.Background(), c, name); err != nil {
				tb.Error(err)
			}
		}
	})
	for _, n := range wireNodes(prefix) {
		status := n.Status
		got, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			tb.Fatalf("create node %s: %v", n.Name, err)
		}
		got.Status = status
		if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			tb.Fatalf("write the status of %s: %v", n.Name, err)
		}
		names[n.Name] = true
	}
	return names
}

// typedNodes is the read Nodes replaced: the typed clientset's list (one
// request), each node reduced; only the nodes named.
func typedNodes(tb testing.TB, c kubernetes.Interface, names map[string]bool) map[string]*corev1.Node {
	tb.Helper()
	list, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	in := kube.NewInterner()
	out := map[string]*corev1.Node{}
	for i := range list.Items {
		n := &list.Items[i]
		kube.ReduceNode(n, in)
		if names[n.Name] {
			out[n.Name] = n
		}
	}
	return out
}

func sameNodes(t *testing.T, what string, want, got map[string]*corev1.Node) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d nodes, want %d", what, len(got), len(want))
	}
	for name, w := range want {
		if g := got[name]; !reflect.DeepEqual(g, w) {
			t.Errorf("%s: node %s differs from the typed read's (- typed, + this read):\n%s", what, name, diff.Diff(w, g))
		}
	}
}

// TestNodes_SameAsTypedRead checks on the API server that Nodes, which
// reads pages in protobuf and drops fields before decoding them, gives
// exactly the nodes the typed read and ReduceNode give, two nodes a page
// (several pages, read one ahead), and that the server answers the node
// list in protobuf (so the filtering read is the one compared).
func TestNodes_SameAsTypedRead(t *testing.T) {
	env := testenv.Kube(t)
	names := createNodes(t, env.Client, "nodewire-same")
	want := typedNodes(t, env.Client, names)
	if len(want) != len(names) {
		t.Fatalf("the typed read has %d of the %d nodes", len(want), len(names))
	}
	for _, w := range want {
		if w.ManagedFields != nil || w.Status.Images != nil {
			t.Fatalf("ReduceNode kept the managed fields or images of %s", w.Name)
		}
	}
	defer kube.SetNodePageSize(2)()
	all, err := kube.New(env.Client).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*corev1.Node{}
	for _, n := range all {
		if names[n.Name] {
			got[n.Name] = n
		}
	}
	sameNodes(t, "Nodes", want, got)

	var ct string
	if _, err := env.Client.CoreV1().RESTClient().Get().Resource("nodes").
		SetHeader("Accept", protobufType+", application/json").Do(context.Background()).ContentType(&ct).Raw(); err != nil {
		t.Fatal(err)
	}
	if ct != protobufType {
		t.Fatalf("the API server answered a node list in %q, want protobuf", ct)
	}
}

// TestNodePage_ContinuesAndFallsBackToJSON reads the nodes two to a page,
// in protobuf and in JSON (decoded whole, for a server that answers
// JSON): the same nodes as the typed read, the same continue tokens as
// the typed list's.
func TestNodePage_ContinuesAndFallsBackToJSON(t *testing.T) {
	env := testenv.Kube(t)
	names := createNodes(t, env.Client, "nodewire-pages")
	want := typedNodes(t, env.Client, names)
	ctx := context.Background()
	for _, accept := range []string{protobufType, "application/json"} {
		got := map[string]*corev1.Node{}
		in := kube.NewInterner()
		opts := metav1.ListOptions{Limit: 2}
		for pages := 1; ; pages++ {
			typed, err := env.Client.CoreV1().Nodes().List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			var ct string
			body, err := env.Client.CoreV1().RESTClient().Get().Resource("nodes").VersionedParams(&opts, scheme.ParameterCodec).
				SetHeader("Accept", accept).Do(ctx).ContentType(&ct).Raw()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(ct, accept) {
				t.Fatalf("asked for %s, got %s", accept, ct)
			}
			n := 0
			cont, err := kube.NodePage(body, in, func(nd *corev1.Node) {
				n++
				if names[nd.Name] {
					got[nd.Name] = nd
				}
			})
			if err != nil {
				t.Fatalf("%s page %d: %v", accept, pages, err)
			}
			if cont != typed.Continue || n != len(typed.Items) {
				t.Fatalf("%s page %d: %d nodes, continue %q; the typed list's: %d, %q", accept, pages, n, cont, len(typed.Items), typed.Continue)
			}
			if cont == "" {
				if pages < 2 {
					t.Fatalf("%s: %d pages of 2, want several", accept, pages)
				}
				break
			}
			opts.Continue = cont
		}
		sameNodes(t, accept, want, got)
	}
}

// TestFilterNode_DropsOnlyWhatReduceNodeDrops checks the filter alone on
// the nodes, with managed fields as the API server stamps them: what it
// leaves, decoded and reduced, is what the whole node reduced is, and it
// did drop the managed fields and images (a filter that kept everything
// would pass the comparison).
func TestFilterNode_DropsOnlyWhatReduceNodeDrops(t *testing.T) {
	for _, n := range wireNodes("filter") {
		n.UID, n.ResourceVersion, n.CreationTimestamp = types.UID("uid-"+n.Name), "42", metav1.Now()
		n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:images":{}}}`), Subresource: "status"}}
		whole, err := n.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		filtered, err := kube.FilterNode(nil, whole)
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		var got corev1.Node
		if err := got.Unmarshal(filtered); err != nil {
			t.Fatalf("%s: the filtered node does not decode: %v", n.Name, err)
		}
		if got.ManagedFields != nil || got.Status.Images != nil {
			t.Errorf("%s: the filter kept the managed fields (%d) or the images (%d)", n.Name, len(got.ManagedFields), len(got.Status.Images))
		}
		if len(filtered) >= len(whole) {
			t.Errorf("%s: filtered %d bytes of %d", n.Name, len(filtered), len(whole))
		}
		want := &corev1.Node{}
		if err := want.Unmarshal(whole); err != nil {
			t.Fatal(err)
		}
		kube.ReduceNode(want, kube.NewInterner())
		kube.ReduceNode(&got, kube.NewInterner())
		if !reflect.DeepEqual(&got, want) {
			t.Errorf("%s: filtered and reduced differs from reduced (- reduced, + filtered):\n%s", n.Name, diff.Diff(want, &got))
		}
	}
}

// BenchmarkNodePage decodes a page of 500 nodes of the scale benchmark's
// shape (30 images, managed fields as the API server stamps them),
// reduced: the typed decoding against the filtering one.
func BenchmarkNodePage(b *testing.B) {
	env := testenv.Kube(b)
	names := createNodes(b, env.Client, "nodewire-bench")
	ctx := context.Background()
	tmpl, err := env.Client.CoreV1().Nodes().Get(ctx, wireNodes("nodewire-bench")[0].Name, metav1.GetOptions{})
	if err != nil || !names[tmpl.Name] {
		b.Fatal(err)
	}
	for k := len(tmpl.Status.Images); k < 30; k++ {
		tmpl.Status.Images = append(tmpl.Status.Images, corev1.ContainerImage{Names: []string{fmt.Sprintf("registry.example/team/service-%d@sha256:%064x", k, k)}, SizeBytes: 1})
	}
	list := &corev1.NodeList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NodeList"}}
	for i := 0; i < kube.PageSize; i++ {
		n := tmpl.DeepCopy()
		n.Name = fmt.Sprintf("ip-10-1-%d-%d.ap-northeast-2.compute.internal", i/256, i%256)
		n.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0002-%012d", i))
		list.Items = append(list.Items, *n)
	}
	benchPage(b, list, func(page []byte, f func(*corev1.Node)) (string, error) {
		var l corev1.NodeList
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(page, nil, &l); err != nil {
			return "", err
		}
		in := kube.NewInterner()
		for i := range l.Items {
			kube.ReduceNode(&l.Items[i], in)
			f(&l.Items[i])
		}
		return l.Continue, nil
	}, func(page []byte, f func(*corev1.Node)) (string, error) {
		return kube.NodePage(page, kube.NewInterner(), f)
	})
}

// benchPage encodes list (one full page, continued) in protobuf as the
// API server sends it, and benchmarks reading it with the typed decoder
// and reducer (typed) beside the wire reader (wire) and, for pods, the
// wire reader decoding every pod into one struct (borrowed:
// EachPodBorrowed).
func benchPage[T any](b *testing.B, list interface {
	runtime.Object
	SetContinue(string)
}, typed, wire func(page []byte, f func(*T)) (string, error), borrowed ...func(page []byte, f func(*T)) (string, error)) {
	list.SetContinue("next-page")
	var body bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(list, &body); err != nil {
		b.Fatal(err)
	}
	page := body.Bytes()
	for _, read := range []struct {
		name string
		read func(page []byte, f func(*T)) (string, error)
	}{{"typed", typed}, {"wire", wire}, {"wire-borrowed", nil}} {
		if read.name == "wire-borrowed" {
			if len(borrowed) == 0 {
				continue
			}
			read.read = borrowed[0]
		}
		b.Run(read.name, func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				cont, err := read.read(page, func(*T) { n++ })
				if err != nil || n != kube.PageSize || cont != "next-page" {
					b.Fatalf("%d items, continue %q, %v", n, cont, err)
				}
			}
		})
	}
}
