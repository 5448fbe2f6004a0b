package kube_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/test/testenv"
)

// podLists records the pod lists a client asks for: those over all
// namespaces, and those of each namespace.
type podLists struct {
	mu         sync.Mutex
	all        int
	namespaced map[string]int
	inFlight   int // namespaces' lists being answered now
	mostAtOnce int
}

// splitClient is a client of the API server whose pod lists are
// recorded; refuse, when it returns true for a request, makes it fail;
// hold, when set, holds each namespace's pod list until it returns true.
func splitClient(t *testing.T, refuse func(r *http.Request) bool, hold func(*podLists) bool) (*kube.Client, *podLists) {
	t.Helper()
	cfg := rest.CopyConfig(testenv.Kube(t).Config)
	rec := &podLists{namespaced: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return testenv.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
			if refuse != nil && refuse(r) {
				return nil, fmt.Errorf("%s refused by the test", r.URL.Path)
			}
			path := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/"), "/")
			switch {
			case r.Method != http.MethodGet:
			case len(path) == 1 && path[0] == "pods":
				rec.mu.Lock()
				rec.all++
				rec.mu.Unlock()
			case len(path) == 3 && path[0] == "namespaces" && path[2] == "pods":
				rec.mu.Lock()
				rec.namespaced[path[1]]++
				rec.inFlight++
				rec.mostAtOnce = max(rec.mostAtOnce, rec.inFlight)
				rec.mu.Unlock()
				defer func() {
					rec.mu.Lock()
					rec.inFlight--
					rec.mu.Unlock()
				}()
				if hold != nil {
					_ = wait.PollUntilContextTimeout(r.Context(), time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
						rec.mu.Lock()
						defer rec.mu.Unlock()
						return hold(rec), nil
					})
				}
			}
			return rt.RoundTrip(r)
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube.New(cs), rec
}

// typedAll is every pod of the cluster as the typed read gives it,
// reduced, by namespace/name.
func typedAll(t *testing.T, c kubernetes.Interface) map[string]*corev1.Pod {
	t.Helper()
	list, err := c.CoreV1().Pods(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := kube.NewInterner()
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		kube.ReducePod(p, in)
		out[p.Namespace+"/"+p.Name] = p
	}
	return out
}

// TestEachPod_SplitsALargeReadByNamespace checks that a read larger than
// its first page goes on with one list per namespace (from the first
// page's last pod's namespace on), or, with more namespaces than the
// split allows or none listable, as one list; that each way hands over
// every pod of the cluster exactly once, as the typed read gives it; and
// that a namespace's list that fails ends the read with its error.
func TestEachPod_SplitsALargeReadByNamespace(t *testing.T) {
	env := testenv.Kube(t)
	var created []string
	for range 3 {
		ns, _ := createShapes(t, env.Client)
		created = append(created, ns)
	}
	want := typedAll(t, env.Client)
	t.Cleanup(kube.SetPodPageSize(2))
	for _, tc := range []struct {
		name           string
		lists, streams int
		refuse         func(*http.Request) bool
		wantSplit      bool
		wantErr        string
	}{
		{name: "split, two namespaces at once", lists: 64, streams: 2, wantSplit: true},
		{name: "split, one at a time", lists: 64, streams: 1, wantSplit: true},
		{name: "more namespaces than the split allows: one list", lists: 1, streams: 2},
		{name: "namespaces not listable: one list", lists: 64, streams: 2,
			refuse: func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/api/v1/namespaces") }},
		{name: "never split: one list", lists: 0, streams: 2},
		{name: "a namespace's list fails: the read fails", lists: 64, streams: 2,
			refuse: func(r *http.Request) bool {
				return r.URL.Path == "/api/v1/namespaces/"+created[2]+"/pods"
			}, wantErr: "refused by the test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer kube.SplitByNamespace(tc.lists, tc.streams)()
			c, rec := splitClient(t, tc.refuse, nil)
			got := map[string]*corev1.Pod{}
			err := c.EachPod(context.Background(), "", kube.NewInterner(), func(p *corev1.Pod) {
				k := p.Namespace + "/" + p.Name
				if _, ok := got[k]; ok {
					t.Errorf("pod %s handed over twice", k)
				}
				got[k] = p
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("EachPod: %v; want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("%d pods, want %d", len(got), len(want))
			}
			for k, w := range want {
				if g := got[k]; !reflect.DeepEqual(g, w) {
					t.Errorf("pod %s differs from the typed read's (- typed, + this read):\n%s", k, diff.Diff(w, g))
				}
			}
			if split := len(rec.namespaced) > 0; split != tc.wantSplit {
				t.Errorf("split by namespace: %v (lists over all: %d, by namespace: %v), want %v", split, rec.all, rec.namespaced, tc.wantSplit)
			}
			if tc.wantSplit {
				if rec.all != 1 {
					t.Errorf("%d lists over all namespaces, want the first page's alone", rec.all)
				}
				for _, ns := range created {
					if rec.namespaced[ns] == 0 {
						t.Errorf("namespace %s not read on its own (the shapes' namespaces come after the first page's)", ns)
					}
				}
			}
		})
	}
}

// TestEachPod_ReadsNamespacesAtOnce checks that the namespaces' lists are
// read as many at once as the split allows, and no more.
func TestEachPod_ReadsNamespacesAtOnce(t *testing.T) {
	env := testenv.Kube(t)
	for range 3 {
		createShapes(t, env.Client)
	}
	t.Cleanup(kube.SetPodPageSize(2))
	t.Cleanup(kube.SplitByNamespace(64, 2))
	// Each namespace's list waits until another is asked for too (for 10 s
	// in all at most: a read of one list at a time is then measured, not
	// held for every list).
	deadline := time.Now().Add(10 * time.Second)
	c, rec := splitClient(t, nil, func(l *podLists) bool { return l.mostAtOnce >= 2 || time.Now().After(deadline) })
	n := 0
	if err := c.EachPod(context.Background(), "", kube.NewInterner(), func(*corev1.Pod) { n++ }); err != nil {
		t.Fatal(err)
	}
	if rec.mostAtOnce != 2 {
		t.Errorf("%d namespaces' lists answered at once at most, want 2 (lists by namespace: %v)", rec.mostAtOnce, rec.namespaced)
	}
}
