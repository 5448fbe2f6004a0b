package forwarder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/events"
)

// t0 is where every test's clock starts.
var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// recorder is a fake EventBridge: it keeps every PutEvents call and answers
// with respond (nil: every entry accepted).
type recorder struct {
	mu      sync.Mutex
	calls   []*eventbridge.PutEventsInput
	respond func(call int, in *eventbridge.PutEventsInput) (*eventbridge.PutEventsOutput, error)
}

func (r *recorder) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cp := &eventbridge.PutEventsInput{Entries: append([]types.PutEventsRequestEntry(nil), in.Entries...)}
	r.calls = append(r.calls, cp)
	if r.respond != nil {
		return r.respond(len(r.calls)-1, cp)
	}
	return accepted(len(in.Entries)), nil
}

func accepted(n int) *eventbridge.PutEventsOutput {
	out := &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, n)}
	for i := range out.Entries {
		out.Entries[i].EventId = aws.String(fmt.Sprintf("id-%d", i))
	}
	return out
}

// taken returns the calls made since the last taken.
func (r *recorder) taken(from *int) []*eventbridge.PutEventsInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls[*from:]
	*from = len(r.calls)
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

type harness struct {
	t     *testing.T
	f     *Forwarder
	put   *recorder
	clock *testingclock.FakeClock
	seen  int // calls already checked
}

func newHarness(t *testing.T, mutate func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, put: &recorder{}, clock: testingclock.NewFakeClock(t0)}
	opts := Options{
		Client:  fake.NewClientset(),
		Cluster: "prod",
		Bus:     "joist-prod",
		Put:     h.put,
		Clock:   h.clock,
		Logger:  slog.New(slog.NewJSONHandler(io.Discard, nil)),
		// The timing tests are written in whole seconds.
		Debounce: time.Second,
	}
	if mutate != nil {
		mutate(&opts)
	}
	f, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.f = f
	return h
}

// at moves the clock to t0+d and does what is due.
func (h *harness) at(d time.Duration) time.Time {
	h.clock.SetTime(t0.Add(d))
	return h.f.step(context.Background(), false)
}

// calls returns the PutEvents calls made since the last check.
func (h *harness) calls() []*eventbridge.PutEventsInput { return h.put.taken(&h.seen) }

type sent struct {
	pods     []events.PodRef // in order
	nodes    []events.NodeReady
	deleting [][]string // the nodes of each Nodes Deleting event
}

// decode reads back what calls put on the bus, checking each entry's
// envelope fields on the way.
func decode(t *testing.T, calls []*eventbridge.PutEventsInput) sent {
	t.Helper()
	var s sent
	for _, c := range calls {
		for _, e := range c.Entries {
			if aws.ToString(e.Source) != events.Source || aws.ToString(e.EventBusName) != "joist-prod" || e.Time == nil {
				t.Errorf("entry envelope = source %q bus %q time %v", aws.ToString(e.Source), aws.ToString(e.EventBusName), e.Time)
			}
			switch aws.ToString(e.DetailType) {
			case events.DetailTypePendingPods:
				var d events.PendingPods
				if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil {
					t.Fatal(err)
				}
				if d.Cluster != "prod" || d.ObservedAt.IsZero() {
					t.Errorf("pending pods detail = %+v", d)
				}
				s.pods = append(s.pods, d.Pods...)
			case events.DetailTypeNodeReady:
				var d events.NodeReady
				if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil {
					t.Fatal(err)
				}
				s.nodes = append(s.nodes, d)
			case events.DetailTypeNodesDeleting:
				var d events.NodesDeleting
				if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil {
					t.Fatal(err)
				}
				if d.Cluster != "prod" || d.ObservedAt.IsZero() {
					t.Errorf("nodes deleting detail = %+v", d)
				}
				s.deleting = append(s.deleting, d.Nodes)
			default:
				t.Errorf("unexpected detail type %q", aws.ToString(e.DetailType))
			}
		}
	}
	return s
}

func podNames(refs []events.PodRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	return out
}

func nodeNames(ns []events.NodeReady) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Node)
	}
	return out
}

// unschedulablePod is a pod the scheduler gave up on.
func unschedulablePod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: k8stypes.UID("uid-" + name)},
		Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/3 nodes are available",
			}},
		},
	}
}

func node(name string, ready corev1.ConditionStatus, since time.Time) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-" + name)},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(since),
		}}},
	}
}

func equal(a, b []string) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func TestOnlyUnschedulableUnboundPodsAreSent(t *testing.T) {
	now := metav1.NewTime(t0)
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   bool
	}{
		{name: "unschedulable", mutate: func(*corev1.Pod) {}, want: true},
		{name: "bound to a node", mutate: func(p *corev1.Pod) { p.Spec.NodeName = "n1" }},
		{name: "held by a scheduling gate", mutate: func(p *corev1.Pod) { p.Status.Conditions[0].Reason = corev1.PodReasonSchedulingGated }},
		{name: "scheduled", mutate: func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionTrue }},
		{name: "not yet looked at by the scheduler", mutate: func(p *corev1.Pod) { p.Status.Conditions = nil }},
		{name: "being deleted", mutate: func(p *corev1.Pod) { p.DeletionTimestamp = &now }},
		{name: "finished", mutate: func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }},
		{name: "failed", mutate: func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			pod := unschedulablePod("web")
			tt.mutate(pod)
			h.f.onPod(pod)
			h.at(DefaultMaxWait)
			got := decode(t, h.calls())
			if (len(got.pods) == 1) != tt.want || len(got.pods) > 1 {
				t.Errorf("sent %v, want sent = %v", podNames(got.pods), tt.want)
			}
		})
	}
}

func TestDebounceSendsOneEventAfterTheLastChange(t *testing.T) {
	h := newHarness(t, nil) // debounce 1s, max wait 5s
	h.clock.SetTime(t0)
	h.f.onPod(unschedulablePod("a"))
	h.clock.SetTime(t0.Add(500 * time.Millisecond))
	h.f.onPod(unschedulablePod("b"))

	if next := h.at(1200 * time.Millisecond); !next.Equal(t0.Add(1500 * time.Millisecond)) {
		t.Errorf("next wake-up = %v, want a debounce after the last change", next.Sub(t0))
	}
	if c := h.calls(); len(c) != 0 {
		t.Fatalf("sent %d calls before the debounce ran out", len(c))
	}
	h.at(1500 * time.Millisecond)
	c := h.calls()
	if len(c) != 1 || len(c[0].Entries) != 1 {
		t.Fatalf("want one call with one entry, got %d calls", len(c))
	}
	if got := podNames(decode(t, c).pods); !equal(got, []string{"default/a", "default/b"}) {
		t.Errorf("pods = %v", got)
	}
	if c := (h.at(3 * time.Second)); len(h.calls()) != 0 {
		t.Errorf("sent again without a change (next %v)", c)
	}
}

func TestMaxWaitBoundsTheDebounceUnderConstantChurn(t *testing.T) {
	h := newHarness(t, nil) // debounce 1s, max wait 5s
	var want []string
	for i := 0; i < 10; i++ { // a new pod every 0.5s: never a quiet second
		h.at(time.Duration(i) * 500 * time.Millisecond)
		name := fmt.Sprintf("p%02d", i)
		h.f.onPod(unschedulablePod(name))
		want = append(want, "default/"+name)
	}
	h.at(4900 * time.Millisecond)
	if len(h.calls()) != 0 {
		t.Fatal("sent before the maximum wait")
	}
	h.at(5 * time.Second)
	if got := podNames(decode(t, h.calls()).pods); !equal(got, want) {
		t.Errorf("after the maximum wait sent %v, want %v", got, want)
	}
}

func TestPodsAreDedupedAndWithdrawnWithinAWindow(t *testing.T) {
	h := newHarness(t, nil)
	h.clock.SetTime(t0)

	again := unschedulablePod("retried")
	h.f.onPod(again)
	again = again.DeepCopy()
	again.Status.Conditions[0].Message = "0/4 nodes are available" // scheduler retry
	h.f.onPod(again)
	h.f.onPod(again)

	bound := unschedulablePod("bound")
	h.f.onPod(bound)
	bound = bound.DeepCopy()
	bound.Spec.NodeName = "n1"
	h.f.onPod(bound)

	deleted := unschedulablePod("deleted")
	h.f.onPod(deleted)
	h.f.onPodDelete(cache.DeletedFinalStateUnknown{Key: "default/deleted", Obj: deleted})

	h.at(DefaultMaxWait)
	if got := podNames(decode(t, h.calls()).pods); !equal(got, []string{"default/retried"}) {
		t.Errorf("sent %v, want only the pod still unschedulable, once", got)
	}

	// Still unschedulable on the next scheduler retry: not news until the resync.
	h.f.onPod(again)
	h.at(2 * DefaultMaxWait)
	if c := h.calls(); len(c) != 0 {
		t.Errorf("an unchanged pending pod was sent again before the resync: %v", podNames(decode(t, c).pods))
	}
}

func TestRecreatedPodWithTheSameNameIsSentAgain(t *testing.T) {
	h := newHarness(t, nil)
	h.f.onPod(unschedulablePod("web"))
	h.at(DefaultMaxWait)
	h.calls()

	h.f.onPodDelete(unschedulablePod("web"))
	again := unschedulablePod("web")
	again.UID = "uid-web-2"
	h.f.onPod(again)
	h.at(2 * DefaultMaxWait)
	got := decode(t, h.calls()).pods
	if len(got) != 1 || got[0].UID != "uid-web-2" {
		t.Errorf("sent %+v, want the new pod", got)
	}
}

func TestAWithdrawnWindowDoesNotShortenTheNextDebounce(t *testing.T) {
	h := newHarness(t, nil) // debounce 1s, max wait 5s
	h.at(0)
	p := unschedulablePod("gone")
	h.f.onPod(p)
	h.f.onPodDelete(p)
	h.at(4500 * time.Millisecond)
	h.f.onPod(unschedulablePod("late"))
	h.at(5 * time.Second) // 5s after the withdrawn change, 0.5s after this one
	if len(h.calls()) != 0 {
		t.Fatal("the new change inherited the withdrawn window's start")
	}
	h.at(5500 * time.Millisecond)
	if got := podNames(decode(t, h.calls()).pods); !equal(got, []string{"default/late"}) {
		t.Errorf("sent %v", got)
	}
}

func TestManyPendingPodsAreSplitIntoEventsAndCallsWithinLimits(t *testing.T) {
	h := newHarness(t, nil)
	const n = 12*events.MaxPodsPerEvent + 7
	var want []string
	for i := 0; i < n; i++ {
		p := unschedulablePod(fmt.Sprintf("pod-%05d", i))
		p.Namespace = "team-with-a-long-namespace-name"
		h.f.onPod(p)
		want = append(want, p.Namespace+"/"+p.Name)
	}
	h.at(DefaultMaxWait)
	c := h.calls()
	entries := 0
	for i, call := range c {
		size := 0
		for _, e := range call.Entries {
			size += entrySize(e)
			var d events.PendingPods
			if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil {
				t.Fatal(err)
			}
			if len(d.Pods) > events.MaxPodsPerEvent {
				t.Errorf("an event names %d pods, more than %d", len(d.Pods), events.MaxPodsPerEvent)
			}
		}
		if len(call.Entries) > events.MaxEntriesPerPut || size > maxPutBytes {
			t.Errorf("call %d has %d entries of %d bytes, over the PutEvents limits", i, len(call.Entries), size)
		}
		entries += len(call.Entries)
	}
	if entries != 13 {
		t.Errorf("%d entries, want 13 (12 full and one of 7)", entries)
	}
	if len(c) < 2 {
		t.Errorf("%d calls: 13 entries cannot fit one call", len(c))
	}
	got := podNames(decode(t, c).pods)
	if !sort.StringsAreSorted(got) || !equal(got, want) {
		t.Errorf("pods were lost, duplicated or reordered: %d sent, %d pending", len(got), len(want))
	}
}

func TestCallsHoldAtMostTenEntriesAndStayUnderTheSizeLimit(t *testing.T) {
	entry := func(detailBytes int) queued {
		return queued{entry: types.PutEventsRequestEntry{
			Source: aws.String(events.Source), DetailType: aws.String(events.DetailTypeNodeReady),
			Detail: aws.String(string(make([]byte, detailBytes))), Time: aws.Time(t0),
		}}
	}
	many := func(n, size int) []queued {
		var out []queued
		for i := 0; i < n; i++ {
			out = append(out, entry(size))
		}
		return out
	}
	tests := []struct {
		name    string
		entries []queued
		want    []int // entries per call
	}{
		{name: "none", entries: nil, want: nil},
		{name: "one", entries: many(1, 100), want: []int{1}},
		{name: "exactly ten", entries: many(10, 100), want: []int{10}},
		{name: "twenty-five small", entries: many(25, 100), want: []int{10, 10, 5}},
		{name: "large entries cut by size", entries: many(7, 100_000), want: []int{2, 2, 2, 1}},
		{name: "one oversized entry goes alone", entries: append(many(1, 300_000), many(2, 10)...), want: []int{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for _, c := range calls(tt.entries) {
				got = append(got, len(c))
			}
			if !equal(fmtInts(got), fmtInts(tt.want)) {
				t.Errorf("calls = %v, want %v", got, tt.want)
			}
		})
	}
}

func fmtInts(xs []int) []string {
	var out []string
	for _, x := range xs {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func TestNodeReadyEvents(t *testing.T) {
	recently := t0.Add(-time.Minute)
	longAgo := t0.Add(-24 * time.Hour)
	type change struct {
		node    *corev1.Node
		initial bool // part of the informer's first list
		deleted bool
		flush   bool // let the window go out after this change
	}
	tests := []struct {
		name    string
		changes []change
		want    []string
	}{
		{
			name:    "turning ready is reported",
			changes: []change{{node: node("a", corev1.ConditionFalse, longAgo), flush: true}, {node: node("a", corev1.ConditionTrue, t0)}},
			want:    []string{"a"},
		},
		{
			name:    "staying ready is reported once",
			changes: []change{{node: node("a", corev1.ConditionTrue, t0), flush: true}, {node: node("a", corev1.ConditionTrue, t0)}},
			want:    []string{"a"},
		},
		{
			name: "ready, not ready, ready again is reported twice",
			changes: []change{
				{node: node("a", corev1.ConditionTrue, t0), flush: true},
				{node: node("a", corev1.ConditionUnknown, t0), flush: true},
				{node: node("a", corev1.ConditionTrue, t0)},
			},
			want: []string{"a", "a"},
		},
		{
			name:    "not ready is never reported",
			changes: []change{{node: node("a", corev1.ConditionFalse, t0), initial: true}, {node: node("b", corev1.ConditionUnknown, t0)}},
		},
		{
			name:    "at startup a node that turned ready recently is reported",
			changes: []change{{node: node("a", corev1.ConditionTrue, recently), initial: true}},
			want:    []string{"a"},
		},
		{
			name:    "at startup a node ready for long is not news",
			changes: []change{{node: node("a", corev1.ConditionTrue, longAgo), initial: true}},
		},
		{
			name:    "at startup a ready node without a transition time is reported",
			changes: []change{{node: node("a", corev1.ConditionTrue, time.Time{}), initial: true}},
			want:    []string{"a"},
		},
		{
			name:    "a node created ready after startup is reported however old its condition",
			changes: []change{{node: node("a", corev1.ConditionTrue, longAgo)}},
			want:    []string{"a"},
		},
		{
			name:    "a node deleted before the flush is not reported",
			changes: []change{{node: node("a", corev1.ConditionTrue, t0)}, {node: node("a", corev1.ConditionTrue, t0), deleted: true}},
		},
		{
			name:    "a node going not ready before the flush is not reported",
			changes: []change{{node: node("a", corev1.ConditionTrue, t0)}, {node: node("a", corev1.ConditionFalse, t0)}},
		},
		{
			name: "a node deleted and created again is reported again",
			changes: []change{
				{node: node("a", corev1.ConditionTrue, t0), flush: true},
				{node: node("a", corev1.ConditionTrue, t0), deleted: true},
				{node: node("a", corev1.ConditionTrue, t0)},
			},
			want: []string{"a", "a"},
		},
		{
			name:    "nodes turning ready together go in one window",
			changes: []change{{node: node("b", corev1.ConditionTrue, t0)}, {node: node("a", corev1.ConditionTrue, t0)}},
			want:    []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			var got []events.NodeReady
			elapsed := time.Duration(0)
			for _, c := range tt.changes {
				h.at(elapsed)
				if c.deleted {
					h.f.onNodeDelete(c.node)
				} else {
					h.f.onNode(c.node, c.initial)
				}
				if c.flush {
					elapsed += DefaultMaxWait
					h.at(elapsed)
				}
			}
			h.at(elapsed + DefaultMaxWait)
			got = decode(t, h.calls()).nodes
			if !equal(nodeNames(got), tt.want) {
				t.Errorf("node-ready events for %v, want %v", nodeNames(got), tt.want)
			}
			for _, n := range got {
				if n.Cluster != "prod" || n.ProviderID != "aws:///us-east-1a/i-"+n.Node || n.ObservedAt.IsZero() {
					t.Errorf("event = %+v", n)
				}
			}
		})
	}
}

func TestResyncResendsEveryPendingPod(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Resync = time.Minute })
	h.at(0)
	h.f.onPod(unschedulablePod("a"))
	h.f.onPod(unschedulablePod("b"))
	h.at(DefaultMaxWait)
	if got := podNames(decode(t, h.calls()).pods); len(got) != 2 {
		t.Fatalf("first send = %v", got)
	}
	bound := unschedulablePod("b")
	bound.Spec.NodeName = "n1"
	h.f.onPod(bound)

	h.at(59 * time.Second)
	if len(h.calls()) != 0 {
		t.Fatal("resent before the resync")
	}
	next := h.at(time.Minute)
	if got := podNames(decode(t, h.calls()).pods); !equal(got, []string{"default/a"}) {
		t.Errorf("resync sent %v, want the pod still pending", got)
	}
	if !next.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("next wake-up %v, want the next resync", next.Sub(t0))
	}

	h.f.onPodDelete(unschedulablePod("a"))
	h.at(2 * time.Minute)
	if c := h.calls(); len(c) != 0 {
		t.Errorf("resync with nothing pending made %d calls", len(c))
	}
}

func refuse(code string, failing ...int) func(int, *eventbridge.PutEventsInput) (*eventbridge.PutEventsOutput, error) {
	return func(_ int, in *eventbridge.PutEventsInput) (*eventbridge.PutEventsOutput, error) {
		out := accepted(len(in.Entries))
		for _, i := range failing {
			out.Entries[i] = types.PutEventsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String("try later")}
			out.FailedEntryCount++
		}
		return out, nil
	}
}

func TestRefusedEntriesAreRetriedWithBackoff(t *testing.T) {
	h := newHarness(t, nil) // backoff 1s doubling
	fails := 2
	h.put.respond = func(call int, in *eventbridge.PutEventsInput) (*eventbridge.PutEventsOutput, error) {
		if call < fails {
			return refuse("ThrottlingException", 0)(call, in)
		}
		return accepted(len(in.Entries)), nil
	}
	h.at(0)
	h.f.onPod(unschedulablePod("a"))

	steps := []struct {
		at        time.Duration
		wantCalls int
	}{
		{at: 1 * time.Second, wantCalls: 1},  // debounce out: refused
		{at: 1500 * time.Millisecond},        // backoff 1s not over
		{at: 2 * time.Second, wantCalls: 1},  // retry 1: refused
		{at: 3500 * time.Millisecond},        // backoff 2s not over
		{at: 4 * time.Second, wantCalls: 1},  // retry 2: accepted
		{at: 30 * time.Second, wantCalls: 0}, // nothing left to retry
	}
	for _, s := range steps {
		h.at(s.at)
		c := h.calls()
		if len(c) != s.wantCalls {
			t.Fatalf("at %v: %d calls, want %d", s.at, len(c), s.wantCalls)
		}
		for _, call := range c {
			if got := podNames(decode(t, []*eventbridge.PutEventsInput{call}).pods); !equal(got, []string{"default/a"}) {
				t.Errorf("at %v sent %v", s.at, got)
			}
		}
	}
}

func TestOnlyTheRefusedEntriesOfACallAreRetried(t *testing.T) {
	h := newHarness(t, nil)
	h.put.respond = func(call int, in *eventbridge.PutEventsInput) (*eventbridge.PutEventsOutput, error) {
		if call == 0 {
			return refuse("InternalFailure", 1)(call, in)
		}
		return accepted(len(in.Entries)), nil
	}
	h.at(0)
	h.f.onPod(unschedulablePod("a"))
	h.f.onNode(node("n1", corev1.ConditionTrue, t0), false)
	h.at(time.Second)
	first := decode(t, h.calls())
	if len(first.pods) != 1 || len(first.nodes) != 1 {
		t.Fatalf("first call = %+v", first)
	}
	h.at(2 * time.Second)
	retry := decode(t, h.calls())
	if len(retry.pods) != 0 || !equal(nodeNames(retry.nodes), []string{"n1"}) {
		t.Errorf("retried pods %v nodes %v, want only the refused node event", podNames(retry.pods), nodeNames(retry.nodes))
	}
}

func TestPutEventsErrorsAreRetriedThenDroppedAndTheForwarderGoesOn(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxAttempts = 3 })
	down := true
	h.put.respond = func(_ int, in *eventbridge.PutEventsInput) (*eventbridge.PutEventsOutput, error) {
		if down {
			return nil, errors.New("connection refused")
		}
		return accepted(len(in.Entries)), nil
	}
	h.at(0)
	h.f.onPod(unschedulablePod("a"))
	for _, at := range []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 30 * time.Second} {
		h.at(at)
	}
	if got := h.put.count(); got != 3 {
		t.Errorf("%d attempts, want MaxAttempts = 3, then dropped", got)
	}
	h.calls()

	down = false
	h.f.onPod(unschedulablePod("b"))
	h.at(62 * time.Second) // the resync at 60s queued a as well
	if got := podNames(decode(t, h.calls()).pods); !equal(got, []string{"default/a", "default/b"}) {
		t.Errorf("after EventBridge came back sent %v", got)
	}
}

func TestNewRequiresClientClusterBusAndPut(t *testing.T) {
	full := Options{Client: fake.NewClientset(), Cluster: "c", Bus: "b", Put: &recorder{}}
	tests := []struct {
		name   string
		mutate func(*Options)
	}{
		{name: "client", mutate: func(o *Options) { o.Client = nil }},
		{name: "cluster", mutate: func(o *Options) { o.Cluster = "" }},
		{name: "bus", mutate: func(o *Options) { o.Bus = "" }},
		{name: "put", mutate: func(o *Options) { o.Put = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := full
			tt.mutate(&o)
			if _, err := New(o); err == nil {
				t.Errorf("New without %s succeeded", tt.name)
			}
		})
	}
	if _, err := New(full); err != nil {
		t.Errorf("New with everything: %v", err)
	}
}

// deletingNode is a Ready node that started deleting, held (or not) by
// the termination finalizer.
func deletingNode(name string, finalizer bool) *corev1.Node {
	n := node(name, corev1.ConditionTrue, t0.Add(-time.Hour))
	now := metav1.NewTime(t0)
	n.DeletionTimestamp = &now
	if finalizer {
		n.Finalizers = []string{"example.com/other", TerminationFinalizer}
	}
	return n
}

// TestNodesDeletingEvents: a node held by the termination finalizer that
// starts deleting is reported once (the reaper's wake-up), nodes deleting
// together in one event; a node without the finalizer is not news.
func TestNodesDeletingEvents(t *testing.T) {
	type change struct {
		node    *corev1.Node
		initial bool
		deleted bool
		flush   bool
	}
	tests := []struct {
		name    string
		changes []change
		want    [][]string
	}{
		{name: "a Joist node starting to delete is reported",
			changes: []change{{node: node("a", corev1.ConditionTrue, t0), initial: true, flush: true}, {node: deletingNode("a", true)}},
			want:    [][]string{{"a"}}},
		{name: "updates while it drains are reported once",
			changes: []change{{node: deletingNode("a", true), flush: true}, {node: deletingNode("a", true), flush: true}, {node: deletingNode("a", true)}},
			want:    [][]string{{"a"}}},
		{name: "nodes deleting together go in one event",
			changes: []change{{node: deletingNode("b", true)}, {node: deletingNode("a", true)}},
			want:    [][]string{{"a", "b"}}},
		{name: "a node without the finalizer is not reported",
			changes: []change{{node: deletingNode("a", false)}}},
		{name: "a node already deleting at startup is reported",
			changes: []change{{node: deletingNode("a", true), initial: true}},
			want:    [][]string{{"a"}}},
		{name: "a node gone before the flush is not reported",
			changes: []change{{node: deletingNode("a", true)}, {node: deletingNode("a", true), deleted: true}}},
		{name: "a node of the same name deleting again is reported again",
			changes: []change{{node: deletingNode("a", true), flush: true}, {node: deletingNode("a", true), deleted: true}, {node: deletingNode("a", true)}},
			want:    [][]string{{"a"}, {"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			elapsed := time.Duration(0)
			var got [][]string
			for _, c := range tt.changes {
				h.at(elapsed)
				if c.deleted {
					h.f.onNodeDelete(c.node)
				} else {
					slim, _ := slimNode(c.node)
					h.f.onNode(slim, c.initial)
				}
				if c.flush {
					elapsed += DefaultMaxWait
					h.at(elapsed)
				}
			}
			h.at(elapsed + DefaultMaxWait)
			got = decode(t, h.calls()).deleting
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("nodes deleting events %v, want %v", got, tt.want)
			}
		})
	}
}

// boundPodOn is a pod bound to node; ds makes it a DaemonSet's.
func boundPodOn(name, node string, ds bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: k8stypes.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if ds {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", APIVersion: "apps/v1"}}
	}
	return p
}

// joistNode is a Ready node held by the termination finalizer.
func joistNode(name string) *corev1.Node {
	n := node(name, corev1.ConditionTrue, t0.Add(-time.Hour))
	n.Finalizers = []string{TerminationFinalizer}
	return n
}

// TestNodesEmptiedEvents: a Joist node whose last pod that needs it
// (not a DaemonSet's, not finished) leaves is reported emptied, once per
// emptying, nodes emptying together in one event; nodes that are not
// Joist's or are being deleted are not, and a node filled again before
// the flush is withdrawn.
func TestNodesEmptiedEvents(t *testing.T) {
	type change struct {
		node    *corev1.Node // a node change, or else:
		pod     *corev1.Pod  // a bound pod change
		deleted bool         // the pod was deleted
		flush   bool
	}
	finished := boundPodOn("p1", "a", false)
	finished.Status.Phase = corev1.PodSucceeded
	terminating := boundPodOn("p2", "b", false)
	terminating.DeletionTimestamp = &metav1.Time{Time: t0}
	tests := []struct {
		name    string
		changes []change
		want    [][]string
	}{
		{name: "the last pod leaving empties the node",
			changes: []change{{node: joistNode("a")}, {pod: boundPodOn("p1", "a", false)}, {pod: boundPodOn("p2", "a", false), flush: true},
				{pod: boundPodOn("p1", "a", false), deleted: true, flush: true}, {pod: boundPodOn("p2", "a", false), deleted: true}},
			want: [][]string{{"a"}}},
		{name: "DaemonSet pods do not hold a node",
			changes: []change{{node: joistNode("a")}, {pod: boundPodOn("ds", "a", true)}, {pod: boundPodOn("p1", "a", false), flush: true}, {pod: boundPodOn("p1", "a", false), deleted: true}},
			want:    [][]string{{"a"}}},
		{name: "a pod finishing or terminating leaves the node",
			changes: []change{{node: joistNode("a")}, {node: joistNode("b")}, {pod: boundPodOn("p1", "a", false)}, {pod: boundPodOn("p2", "b", false), flush: true},
				{pod: finished}, {pod: terminating}},
			want: [][]string{{"a", "b"}}},
		{name: "a node that is not Joist's is not reported",
			changes: []change{{node: node("a", corev1.ConditionTrue, t0)}, {pod: boundPodOn("p1", "a", false), flush: true}, {pod: boundPodOn("p1", "a", false), deleted: true}}},
		{name: "a node being deleted is reported deleting, not emptied",
			changes: []change{{node: joistNode("a")}, {pod: boundPodOn("p1", "a", false), flush: true}, {node: deletingNode("a", true)}, {pod: boundPodOn("p1", "a", false), deleted: true}}},
		{name: "a node filled again before the flush is not reported",
			changes: []change{{node: joistNode("a")}, {pod: boundPodOn("p1", "a", false), flush: true}, {pod: boundPodOn("p1", "a", false), deleted: true}, {pod: boundPodOn("p2", "a", false)}}},
		{name: "emptied, filled and emptied again is reported twice",
			changes: []change{{node: joistNode("a")}, {pod: boundPodOn("p1", "a", false), flush: true}, {pod: boundPodOn("p1", "a", false), deleted: true, flush: true},
				{pod: boundPodOn("p2", "a", false), flush: true}, {pod: boundPodOn("p2", "a", false), deleted: true}},
			want: [][]string{{"a"}, {"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			elapsed := time.Duration(0)
			for _, c := range tt.changes {
				h.at(elapsed)
				switch {
				case c.node != nil:
					slim, _ := slimNode(c.node)
					h.f.onNode(slim, false)
				case c.deleted:
					slim, _ := slimBoundPod(c.pod)
					h.f.onBoundPodDelete(slim)
				default:
					slim, _ := slimBoundPod(c.pod)
					h.f.onBoundPod(slim)
				}
				if c.flush {
					elapsed += DefaultMaxWait
					h.at(elapsed)
				}
			}
			h.at(elapsed + DefaultMaxWait)
			var got [][]string
			for _, c := range h.put.calls {
				for _, e := range c.Entries {
					if aws.ToString(e.DetailType) == events.DetailTypeNodesEmptied {
						var d events.NodesEmptied
						if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil {
							t.Fatal(err)
						}
						got = append(got, d.Nodes)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("nodes emptied events %v, want %v", got, tt.want)
			}
		})
	}
}
