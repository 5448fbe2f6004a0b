package kube_test

import (
	"context"
	"fmt"
	"github.com/joist-dev/joist/pkg/iampolicy"
	"github.com/joist-dev/joist/pkg/rbac"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/test/testenv"
)

// eventsGround is a namespace of its own on the package's API server.
type eventsGround struct {
	admin kubernetes.Interface
	ns    string
}

var nsSeq struct {
	sync.Mutex
	n int
}

func newGround(t *testing.T) (*eventsGround, context.Context) {
	t.Helper()
	env := testenv.Kube(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	nsSeq.Lock()
	nsSeq.n++
	ns := fmt.Sprintf("events-%d", nsSeq.n)
	nsSeq.Unlock()
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return &eventsGround{admin: env.Client, ns: ns}, ctx
}

func (g *eventsGround) pod(ctx context.Context, t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g.ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	p, err := g.admin.CoreV1().Pods(g.ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	return p
}

// describePodEvents lists a pod's events the way kubectl describe pod
// finds them: by the involved object's kind, name, namespace and UID.
func describePodEvents(ctx context.Context, t *testing.T, c kubernetes.Interface, p *corev1.Pod) []corev1.Event {
	t.Helper()
	sel := fields.Set{
		"involvedObject.kind":      "Pod",
		"involvedObject.name":      p.Name,
		"involvedObject.namespace": p.Namespace,
		"involvedObject.uid":       string(p.UID),
	}.AsSelector().String()
	list, err := c.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatalf("list events (%s): %v", sel, err)
	}
	return list.Items
}

func TestEvent_IdenticalEventsBecomeOneObjectWithCountTwo(t *testing.T) {
	g, ctx := newGround(t)
	c := kube.New(g.admin)
	p := g.pod(ctx, t, "web-0")
	msg := kube.NominatedMessage("i-0123456789abcdef0", "t3.large", "ap-northeast-2a", "on-demand")

	for range 2 {
		if err := c.Event(ctx, kube.PodTarget(p), corev1.EventTypeNormal, kube.ReasonNominated, msg); err != nil {
			t.Fatalf("Event: %v", err)
		}
	}
	evs := describePodEvents(ctx, t, g.admin, p)
	if len(evs) != 1 {
		t.Fatalf("%d events, want one object for two identical events", len(evs))
	}
	ev := evs[0]
	for _, c := range []struct{ field, got, want string }{
		{"count", fmt.Sprint(ev.Count), "2"},
		{"reason", ev.Reason, kube.ReasonNominated},
		{"message", ev.Message, "Pod should schedule on instance i-0123456789abcdef0 (t3.large, ap-northeast-2a, on-demand)"},
		{"type", ev.Type, corev1.EventTypeNormal},
		{"source.component", ev.Source.Component, "joist"},
		{"involvedObject.uid", string(ev.InvolvedObject.UID), string(p.UID)},
		{"name prefix", strings.SplitN(ev.Name, ".", 2)[0], p.Name},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
		}
	}
	if ev.FirstTimestamp.IsZero() || ev.LastTimestamp.Before(&ev.FirstTimestamp) {
		t.Errorf("firstTimestamp %v, lastTimestamp %v", ev.FirstTimestamp, ev.LastTimestamp)
	}
}

func TestEvent_DistinctEventsAreDistinctObjects(t *testing.T) {
	g, ctx := newGround(t)
	c := kube.New(g.admin)
	p := g.pod(ctx, t, "batch-0")
	for _, e := range []struct{ typ, reason, message string }{
		{corev1.EventTypeWarning, kube.ReasonFailedProvisioning, "no instance type fits 64 cpu"},
		{corev1.EventTypeWarning, kube.ReasonFailedProvisioning, "pool gpu is at its cpu limit"},
		{corev1.EventTypeNormal, kube.ReasonNominated, "no instance type fits 64 cpu"},
		{corev1.EventTypeNormal, kube.ReasonBound, "Bound to node ip-10-0-1-7.ap-northeast-2.compute.internal"},
	} {
		if err := c.Event(ctx, kube.PodTarget(p), e.typ, e.reason, e.message); err != nil {
			t.Fatalf("Event %s: %v", e.reason, err)
		}
	}
	if evs := describePodEvents(ctx, t, g.admin, p); len(evs) != 4 {
		t.Errorf("%d events, want 4: a different reason or message is a different event", len(evs))
	}
}

func TestEvent_ListsByInvolvedObjectName(t *testing.T) {
	g, ctx := newGround(t)
	c := kube.New(g.admin)
	a, b := g.pod(ctx, t, "a"), g.pod(ctx, t, "b")
	for _, p := range []*corev1.Pod{a, b} {
		if err := c.Event(ctx, kube.PodTarget(p), corev1.EventTypeWarning, kube.ReasonFailedProvisioning, "no fit"); err != nil {
			t.Fatal(err)
		}
	}
	list, err := g.admin.CoreV1().Events(g.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].InvolvedObject.Name != "a" {
		t.Errorf("field selector involvedObject.name=a found %d events: %+v", len(list.Items), list.Items)
	}
}

func TestEvent_NodeThatDoesNotExistYetIsAccepted(t *testing.T) {
	g, ctx := newGround(t)
	c := kube.New(g.admin)
	node := "ip-10-0-1-" + strings.TrimPrefix(g.ns, "events-") + ".ap-northeast-2.compute.internal"
	if _, err := g.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node %s must not exist: %v", node, err)
	}
	for range 2 {
		if err := c.Event(ctx, kube.NodeTarget(node), corev1.EventTypeNormal, kube.ReasonLaunched, "Launched instance i-0abc (t3.large, ap-northeast-2a, on-demand)"); err != nil {
			t.Fatalf("Event: %v", err)
		}
	}
	// kubectl describe node searches every namespace for the node's kind
	// and name, an empty involved namespace, and the node's name as UID
	// (the kubelet's convention) or its real UID.
	sel := fields.Set{
		"involvedObject.kind":      "Node",
		"involvedObject.name":      node,
		"involvedObject.namespace": "",
		"involvedObject.uid":       node,
	}.AsSelector().String()
	list, err := g.admin.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Count != 2 || list.Items[0].Namespace != metav1.NamespaceDefault {
		t.Errorf("want one event with count 2 in namespace default, got %+v", list.Items)
	}
}

func TestEvent_ConcurrentRepeatsAreAllCounted(t *testing.T) {
	g, ctx := newGround(t)
	c := kube.New(g.admin)
	p := g.pod(ctx, t, "racer")
	const n = 4
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			errs <- c.Event(ctx, kube.PodTarget(p), corev1.EventTypeWarning, kube.ReasonFailedProvisioning, "no fit")
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Event: %v (AlreadyExists and Conflict must be absorbed)", err)
		}
	}
	evs := describePodEvents(ctx, t, g.admin, p)
	if len(evs) != 1 || evs[0].Count != n {
		t.Errorf("want one event with count %d, got %d events %+v", n, len(evs), evs)
	}
}

func TestEvent_RejectsOrAdaptsWhatTheAPIWouldRefuse(t *testing.T) {
	g, ctx := newGround(t)
	c := kube.New(g.admin)
	long := g.pod(ctx, t, strings.Repeat("a", 200)+"."+strings.Repeat("b", 52)) // 253 characters, the most a pod name has
	short := g.pod(ctx, t, "short")
	for _, tc := range []struct {
		name    string
		obj     kube.EventTarget
		typ     string
		message string
		wantErr bool
	}{
		{"an unknown event type is refused", kube.PodTarget(short), "Error", "x", true},
		{"a target without a name is refused", kube.EventTarget{Kind: "Pod", Namespace: g.ns}, corev1.EventTypeNormal, "x", true},
		{"a 253-character pod name still makes a valid event name", kube.PodTarget(long), corev1.EventTypeNormal, "x", false},
		{"a long message is cut to 1024 bytes", kube.PodTarget(short), corev1.EventTypeWarning, strings.Repeat("é", 2000), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Event(ctx, tc.obj, tc.typ, kube.ReasonFailedProvisioning, tc.message)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Event error %v, want error: %v", err, tc.wantErr)
			}
		})
	}
	evs := describePodEvents(ctx, t, g.admin, short)
	if len(evs) != 1 {
		t.Fatalf("%d events on the short pod, want the long message's only", len(evs))
	}
	if m := evs[0].Message; len(m) > 1024 || !strings.HasSuffix(m, "...") {
		t.Errorf("message of %d bytes ending %q", len(m), m[len(m)-5:])
	}
	if evs := describePodEvents(ctx, t, g.admin, long); len(evs) != 1 || len(evs[0].Name) > 253 {
		t.Errorf("long pod: %+v", evs)
	}
}

// TestEvent_WorksWithJoistsClusterRole records events as the provisioner's
// identity with pkg/rbac's objects installed, which may only create and
// patch events: the repeat path must not need get or update.
func TestEvent_WorksWithJoistsClusterRole(t *testing.T) {
	g, ctx := newGround(t)
	env := testenv.Kube(t)
	objs, err := rbac.Objects("events-test", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Apply(ctx, objs...); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: rbac.User(iampolicy.Provisioner), Groups: []string{rbac.Group(iampolicy.Provisioner)}}
	c := kube.New(kubernetes.NewForConfigOrDie(cfg))
	p := g.pod(ctx, t, "rbac")
	waitAllowed(ctx, t, g.admin, cfg.Impersonate, "patch", g.ns)

	if _, err := c.CoreV1().Events(g.ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the impersonated user can list events (%v): the test would prove nothing", err)
	}
	for range 3 {
		if err := c.Event(ctx, kube.PodTarget(p), corev1.EventTypeWarning, kube.ReasonFailedProvisioning, "no fit"); err != nil {
			t.Fatalf("Event with Joist's ClusterRole: %v", err)
		}
	}
	if err := c.Event(ctx, kube.NodeTarget("ip-10-9-9-9.ec2.internal"), corev1.EventTypeNormal, kube.ReasonLaunched, "x"); err != nil {
		t.Fatalf("node Event with Joist's ClusterRole: %v", err)
	}
	if evs := describePodEvents(ctx, t, g.admin, p); len(evs) != 1 || evs[0].Count != 3 {
		t.Errorf("want one event with count 3, got %+v", evs)
	}
}

// waitAllowed waits for the authorizer's cache to see the new binding.
func waitAllowed(ctx context.Context, t *testing.T, c kubernetes.Interface, who rest.ImpersonationConfig, verb, ns string) {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: who.UserName, Groups: who.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "events"},
	}}
	for {
		res, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("subject access review: %v", err)
		}
		if res.Status.Allowed {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s may still not %s events: %s", who.UserName, verb, res.Status.Reason)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
