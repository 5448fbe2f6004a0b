package specstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func unstructuredOf(t *testing.T, raw []byte, uid string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetUID(typesUID(uid))
	return u
}

// fakeDynamic is client-go's fake dynamic client. The fake stays for what
// one shared API server with every CRD installed cannot show: a kind whose
// CRD is missing (NotFound) and a refused list. Listing the four kinds
// through a real kube-apiserver, its schema checks, and the Warning Event
// on a bad object are TestCRDStoreOnAPIServer's (pkg/specstore/integration).
func fakeDynamic(t *testing.T, objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	t.Helper()
	lists := map[schema.GroupVersionResource]string{}
	for _, r := range Resources {
		lists[r.GVR] = r.Kind + "List"
		if !r.Older.Empty() {
			lists[r.Older] = r.Kind + "List"
		}
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...)
}

func TestCRDStoreListsTheFourKinds(t *testing.T) {
	var objs []runtime.Object
	for i, o := range seedObjects(t) {
		if !o.Ignored {
			objs = append(objs, unstructuredOf(t, o.Raw, "uid-"+string(rune('a'+i))))
		}
	}
	dyn := fakeDynamic(t, objs...)
	// The v1 CRDs are not installed in this cluster.
	dyn.PrependReactor("list", "nodepools", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "karpenter.sh", Resource: "nodepools"}, "")
	})
	store := &CRDStore{Client: dyn}
	spec, err := Read(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Pools) != 2 || len(spec.NodeClasses) != 2 {
		t.Errorf("spec = %d pools, %d classes", len(spec.Pools), len(spec.NodeClasses))
	}
}

// TestCRDStoreReadsV1Beta1WhereV1IsNotServed: a cluster that still has
// Karpenter v0.3x's CRDs serves NodePools and EC2NodeClasses as v1beta1
// only; they are read there (and as v1 wherever v1 is served).
func TestCRDStoreReadsV1Beta1WhereV1IsNotServed(t *testing.T) {
	np := unstructuredOf(t, []byte(`{"apiVersion":"karpenter.sh/v1beta1","kind":"NodePool","metadata":{"name":"old"},
		"spec":{"template":{"spec":{"requirements":[],"kubelet":{"maxPods":30},"nodeClassRef":{"name":"nc"}}}}}`), "uid-np")
	nc := unstructuredOf(t, []byte(`{"apiVersion":"karpenter.k8s.aws/v1beta1","kind":"EC2NodeClass","metadata":{"name":"nc"},
		"spec":{"amiFamily":"AL2023","role":"r","subnetSelectorTerms":[{"id":"subnet-1"}],"securityGroupSelectorTerms":[{"id":"sg-1"}]}}`), "uid-nc")
	dyn := fakeDynamic(t, np, nc)
	var listed []string
	dyn.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gvr := a.GetResource()
		listed = append(listed, gvr.Resource+"."+gvr.Version)
		if gvr.Version == "v1" {
			return true, nil, apierrors.NewNotFound(gvr.GroupResource(), "")
		}
		return false, nil, nil
	})
	spec, err := Read(context.Background(), &CRDStore{Client: dyn})
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Pools) != 1 || spec.Pools[0].Name != "old" || spec.Pools[0].Kubelet == nil || *spec.Pools[0].Kubelet.MaxPods != 30 {
		t.Fatalf("pools = %+v", spec.Pools)
	}
	if c := spec.NodeClasses["nc"]; c == nil || c.AMIFamily != "AL2023" {
		t.Errorf("node class = %+v", spec.NodeClasses["nc"])
	}
	want := "provisioners.v1alpha5 awsnodetemplates.v1alpha1 nodepools.v1 nodepools.v1beta1 ec2nodeclasses.v1 ec2nodeclasses.v1beta1 nodeoverlays.v1alpha1"
	if got := strings.Join(listed, " "); got != want {
		t.Errorf("listed %s, want %s", got, want)
	}
}

func TestCRDStoreFailsWhenTheAPIFails(t *testing.T) {
	dyn := fakeDynamic(t)
	dyn.PrependReactor("list", "provisioners", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "karpenter.sh", Resource: "provisioners"}, "", nil)
	})
	_, err := Read(context.Background(), &CRDStore{Client: dyn})
	if err == nil || !strings.HasPrefix(err.Error(), "list provisioners.karpenter.sh: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestCRDStoreRecordsAnEventOnEachBadObjectOnce(t *testing.T) {
	bad := unstructuredOf(t, []byte(`{"apiVersion":"karpenter.sh/v1alpha5","kind":"Provisioner","metadata":{"name":"broken"},"spec":{"providerRef":{"name":"missing"}}}`), "uid-broken")
	dyn := fakeDynamic(t, bad)
	kube := kubefake.NewSimpleClientset()
	store := &CRDStore{Client: dyn, Events: kube.CoreV1()}
	for i := 0; i < 2; i++ {
		spec, err := Read(context.Background(), store)
		if err != nil || len(spec.Pools) != 0 {
			t.Fatalf("read %d: %v %+v", i, err, spec)
		}
	}
	events, err := kube.CoreV1().Events(EventNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 {
		t.Fatalf("events = %d, want 1 counted twice", len(events.Items))
	}
	ev := events.Items[0]
	want := corev1.ObjectReference{APIVersion: "karpenter.sh/v1alpha5", Kind: "Provisioner", Name: "broken", UID: "uid-broken"}
	if ev.InvolvedObject != want || ev.Type != corev1.EventTypeWarning || ev.Reason != "InvalidSpec" || ev.Count != 2 ||
		ev.Message != `Provisioner "broken": spec.providerRef.name: AWSNodeTemplate "missing" not found` {
		t.Errorf("event = %+v", ev)
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
