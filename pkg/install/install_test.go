package install_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/joist-dev/joist/pkg/install"
	"github.com/joist-dev/joist/pkg/rbac"
	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type cluster struct {
	env    *testenv.KubeEnv
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newCluster(t *testing.T) cluster {
	env := testenv.Kube(t)
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cluster{env: env, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

func (c cluster) exists(t *testing.T, objs []runtime.Object) (present, missing []string) {
	t.Helper()
	for _, o := range objs {
		k, err := install.KeyOf(o)
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.mapper.RESTMapping(k.GroupKind, o.GetObjectKind().GroupVersionKind().Version)
		if err != nil {
			t.Fatal(err)
		}
		ri := c.dyn.Resource(m.Resource)
		var getErr error
		if k.Namespace != "" {
			_, getErr = ri.Namespace(k.Namespace).Get(context.Background(), k.Name, metav1.GetOptions{})
		} else {
			_, getErr = ri.Get(context.Background(), k.Name, metav1.GetOptions{})
		}
		switch {
		case getErr == nil:
			present = append(present, k.String())
		case apierrors.IsNotFound(getErr):
			missing = append(missing, k.String())
		default:
			t.Fatal(getErr)
		}
	}
	return present, missing
}

func forwarder(t *testing.T, c cluster) *appsv1.Deployment {
	t.Helper()
	d, err := c.env.Client.AppsV1().Deployments(rbac.ForwarderNamespace).Get(context.Background(), "joist-forwarder", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestInstall_CreateUpdateDelete: the stack's lifecycle on a real API
// server. Create installs every object; a retry (as after a crash) changes
// nothing; an update with a new forwarder image rolls the Deployment; an
// update without a forwarder removes its Deployment only; delete removes
// everything it created and leaves kube-system alone.
func TestInstall_CreateUpdateDelete(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	// The lifecycle ends with the namespace deleted and emptied; it goes
	// as the namespace controller would make it go, so that a run again
	// (go test -count=N) can install into it anew.
	t.Cleanup(func() {
		if err := testenv.RemoveNamespace(context.Background(), c.env.Client, rbac.ForwarderNamespace); err != nil {
			t.Error(err)
		}
	})
	p := install.Params{Cluster: "install", Region: "ap-northeast-2", ForwarderImage: "registry/joist-forwarder:v1"}
	objs, err := install.Objects(p)
	if err != nil {
		t.Fatal(err)
	}

	if err := install.Apply(ctx, c.dyn, c.mapper, objs); err != nil {
		t.Fatal(err)
	}
	if _, missing := c.exists(t, objs); len(missing) > 0 {
		t.Fatalf("after create, missing %v", missing)
	}
	first := forwarder(t, c)
	if img := first.Spec.Template.Spec.Containers[0].Image; img != p.ForwarderImage {
		t.Fatalf("forwarder image %s, want %s", img, p.ForwarderImage)
	}

	// A retry of the same request: nothing changes.
	if err := install.Apply(ctx, c.dyn, c.mapper, objs); err != nil {
		t.Fatal(err)
	}
	if again := forwarder(t, c); again.Generation != first.Generation {
		t.Errorf("a repeated install changed the Deployment: generation %d → %d", first.Generation, again.Generation)
	}

	// An update: a new image.
	p2 := p
	p2.ForwarderImage = "registry/joist-forwarder:v2"
	objs2, err := install.Objects(p2)
	if err != nil {
		t.Fatal(err)
	}
	if err := install.Apply(ctx, c.dyn, c.mapper, objs2); err != nil {
		t.Fatal(err)
	}
	if err := install.Prune(ctx, c.dyn, c.mapper, objs, objs2); err != nil {
		t.Fatal(err)
	}
	if d := forwarder(t, c); d.Spec.Template.Spec.Containers[0].Image != p2.ForwarderImage || d.Generation == first.Generation {
		t.Errorf("after the update the Deployment runs %s (generation %d), want %s rolled", d.Spec.Template.Spec.Containers[0].Image, d.Generation, p2.ForwarderImage)
	}

	// An update that drops the forwarder: its Deployment goes, the rest stays.
	p3 := p2
	p3.ForwarderImage = ""
	objs3, err := install.Objects(p3)
	if err != nil {
		t.Fatal(err)
	}
	if err := install.Apply(ctx, c.dyn, c.mapper, objs3); err != nil {
		t.Fatal(err)
	}
	if err := install.Prune(ctx, c.dyn, c.mapper, objs2, objs3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.env.Client.AppsV1().Deployments(rbac.ForwarderNamespace).Get(ctx, "joist-forwarder", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the forwarder Deployment survived an update without it: %v", err)
	}
	if _, missing := c.exists(t, objs3); len(missing) > 0 {
		t.Errorf("after pruning, missing %v", missing)
	}

	// The same cluster goes on through the custom resource (envtest runs
	// no namespace controller: a deleted namespace stays terminating, so
	// the lifecycle is one sequence on one cluster).
	resourceLifecycle(t, c)
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestObjects_BadParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    install.Params
	}{
		{"no cluster", install.Params{}},
		{"a forwarder without a region", install.Params{Cluster: "c", ForwarderImage: "img"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := install.Objects(tc.p); err == nil {
				t.Error("no error")
			}
		})
	}
}

// resourceLifecycle: the custom resource's requests as CloudFormation sends
// them: create, an update that changes the image, a delete (twice: a
// retried delete is fine), which leaves nothing behind but kube-system; a
// delete after a create that failed on its properties succeeds. In CRD
// mode the create puts in the CRD the cluster lacks, leaves the ones it
// has as they are, and the delete keeps them all (they hold the specs).
func resourceLifecycle(t *testing.T, c cluster) {
	ctx := context.Background()
	crdRes := c.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	const missing, kept = "nodepools.karpenter.sh", "provisioners.karpenter.sh"
	if err := crdRes.Delete(ctx, missing, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "CRD "+missing+" deleted", func() bool {
		_, err := crdRes.Get(ctx, missing, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	mark := []byte(`{"metadata":{"annotations":{"example.com/owner":"karpenter"},"labels":{"example.com/owner":"karpenter"}}}`)
	if _, err := crdRes.Patch(ctx, kept, types.MergePatchType, mark, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := crdRes.Get(ctx, kept, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	r := &install.Resource{Dynamic: c.dyn, Mapper: c.mapper, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	props := map[string]any{"ServiceToken": "arn:aws:lambda:x", "Cluster": "install", "Region": "us-west-2", "ForwarderImage": "img:v1", "CRDs": "true"}
	id, _, err := r.Handle(ctx, cfn.Event{RequestType: cfn.RequestCreate, ResourceProperties: props})
	if err != nil || id != "joist-install-install" {
		t.Fatalf("create: id %q, %v", id, err)
	}
	if _, err := crdRes.Get(ctx, missing, metav1.GetOptions{}); err != nil {
		t.Errorf("create in CRD mode did not put in the missing CRD %s: %v", missing, err)
	}
	after, err := crdRes.Get(ctx, kept, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("create in CRD mode changed the existing CRD %s (resourceVersion %s → %s)", kept, before.GetResourceVersion(), after.GetResourceVersion())
	}
	next := map[string]any{"Cluster": "install", "Region": "us-west-2", "ForwarderImage": "img:v2", "CRDs": "true"}
	if _, _, err := r.Handle(ctx, cfn.Event{RequestType: cfn.RequestUpdate, PhysicalResourceID: id, ResourceProperties: next, OldResourceProperties: props}); err != nil {
		t.Fatal(err)
	}
	if img := forwarder(t, c).Spec.Template.Spec.Containers[0].Image; img != "img:v2" {
		t.Errorf("after the update the forwarder runs %s, want img:v2", img)
	}
	for range 2 {
		if _, _, err := r.Handle(ctx, cfn.Event{RequestType: cfn.RequestDelete, PhysicalResourceID: id, ResourceProperties: next}); err != nil {
			t.Fatal(err)
		}
	}
	objs, _ := install.Objects(install.Params{Cluster: "install", Region: "us-west-2", ForwarderImage: "img:v2"})
	present, _ := c.exists(t, objs)
	for _, k := range present {
		// The namespace stays terminating on envtest (no namespace
		// controller); anything else is a leak.
		if k != "Namespace "+rbac.ForwarderNamespace {
			t.Errorf("after delete, still present: %s", k)
		}
	}
	if _, err := c.env.Client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Errorf("kube-system: %v", err)
	}
	for _, name := range []string{missing, kept} {
		if _, err := crdRes.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("after delete, CRD %s: %v (the specs live in it; it must stay)", name, err)
		}
	}
	if _, _, err := r.Handle(ctx, cfn.Event{RequestType: cfn.RequestCreate, ResourceProperties: map[string]any{"Cluster": "install", "CRDs": "yes"}}); err == nil {
		t.Error("create with CRDs=yes: no error")
	}
	if _, _, err := r.Handle(ctx, cfn.Event{RequestType: cfn.RequestCreate, ResourceProperties: map[string]any{"Cluster": 7}}); err == nil {
		t.Error("create with a bad property: no error")
	}
	if _, _, err := r.Handle(ctx, cfn.Event{RequestType: cfn.RequestDelete, ResourceProperties: map[string]any{"Cluster": 7}}); err != nil {
		t.Errorf("delete after a failed create: %v", err)
	}
}
