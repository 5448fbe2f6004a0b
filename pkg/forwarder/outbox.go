package forwarder

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	corev1 "k8s.io/api/core/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/events"
)

// outbox is the forwarder's memory: which pods are unschedulable now, which
// nodes are Ready, and what is waiting to be put on the bus. It knows no
// clock and no client; every method is told the time, so its debounce and
// retry rules are tested by stating times rather than by waiting.
//
// It is not safe for concurrent use; the Forwarder guards it.
type outbox struct {
	cluster, bus string
	debounce     time.Duration // quiet time after the last change before a flush
	maxWait      time.Duration // longest a change waits under constant churn
	lookback     time.Duration // see Options.StartupLookback
	backoff      time.Duration // first retry delay, doubled per attempt
	maxAttempts  int

	pending    map[k8stypes.UID]events.PodRef // unschedulable now, for resync
	dirtyPods  map[k8stypes.UID]events.PodRef // to send in the next flush
	ready      map[string]bool                // last readiness seen per node
	dirtyNodes map[string]events.NodeReady    // to send in the next flush
	deleting   map[string]bool                // Joist nodes seen deleting
	dirtyDel   map[string]bool                // deleting nodes to send in the next flush
	joist      map[string]bool                // nodes held by the termination finalizer
	podsOn     map[string]map[k8stypes.UID]bool
	podNode    map[k8stypes.UID]string // the node of each pod in podsOn
	dirtyEmpty map[string]bool         // emptied nodes to send in the next flush
	first      time.Time               // first change of this window; zero when clean
	last       time.Time               // latest change of this window
	flushNow   bool                    // a resync asked to skip the debounce
	retries    []queued
}

// queued is one EventBridge entry and how often it has been tried.
type queued struct {
	entry     types.PutEventsRequestEntry
	attempts  int
	notBefore time.Time
	pods      int // pods named in the entry; 0 for a node event
}

func newOutbox(o Options) *outbox {
	return &outbox{
		cluster:     o.Cluster,
		bus:         o.Bus,
		debounce:    o.Debounce,
		maxWait:     o.MaxWait,
		lookback:    o.StartupLookback,
		backoff:     o.RetryBackoff,
		maxAttempts: o.MaxAttempts,
		pending:     map[k8stypes.UID]events.PodRef{},
		dirtyPods:   map[k8stypes.UID]events.PodRef{},
		ready:       map[string]bool{},
		dirtyNodes:  map[string]events.NodeReady{},
		deleting:    map[string]bool{},
		dirtyDel:    map[string]bool{},
		joist:       map[string]bool{},
		podsOn:      map[string]map[k8stypes.UID]bool{},
		podNode:     map[k8stypes.UID]string{},
		dirtyEmpty:  map[string]bool{},
	}
}

// touch records a change at now, opening a window if none is open.
func (o *outbox) touch(now time.Time) {
	if o.first.IsZero() {
		o.first = now
	}
	o.last = now
}

// podChanged takes the pod's latest state. A pod is queued when it becomes
// unschedulable, not on every update while it stays so (the scheduler
// rewrites its condition on each retry); the resync repeats it later. A pod
// that stops being unschedulable before the flush is taken out again: by
// then there is nothing to report.
func (o *outbox) podChanged(pod *corev1.Pod, now time.Time) {
	if !unschedulable(pod) {
		o.podGone(pod.UID)
		return
	}
	if _, known := o.pending[pod.UID]; known {
		return
	}
	ref := podRef(pod)
	o.pending[pod.UID] = ref
	o.dirtyPods[pod.UID] = ref
	o.touch(now)
}

// podGone forgets a pod that was deleted or bound.
func (o *outbox) podGone(uid k8stypes.UID) {
	delete(o.pending, uid)
	delete(o.dirtyPods, uid)
	o.closeIfEmpty()
}

// closeIfEmpty closes a window whose every change was withdrawn, so the
// next change opens a fresh one instead of inheriting an old start (and
// being flushed early for having waited maxWait already).
func (o *outbox) closeIfEmpty() {
	if o.dirty() == 0 {
		o.first, o.last, o.flushNow = time.Time{}, time.Time{}, false
	}
}

// nodeChanged takes the node's latest state. A node is reported when it
// turns Ready: from not Ready, or when first seen Ready. initial marks the
// nodes of the informer's first list, which existed before this forwarder
// started: those are reported only if their Ready condition changed within
// the lookback, so a restart reports the nodes that turned Ready while the
// forwarder was away without replaying every node of the cluster.
func (o *outbox) nodeChanged(node *corev1.Node, initial bool, now time.Time) {
	o.joist[node.Name] = slices.Contains(node.Finalizers, TerminationFinalizer)
	o.nodeDeleting(node, now)
	ready := nodeReady(node)
	wasReady, seen := o.ready[node.Name]
	o.ready[node.Name] = ready
	if !ready {
		delete(o.dirtyNodes, node.Name)
		o.closeIfEmpty()
		return
	}
	if seen && wasReady {
		return
	}
	if !seen && initial {
		if c, _ := readyCondition(node); !c.LastTransitionTime.IsZero() && now.Sub(c.LastTransitionTime.Time) > o.lookback {
			return
		}
	}
	o.dirtyNodes[node.Name] = events.NodeReady{
		Cluster:    o.cluster,
		Node:       node.Name,
		ProviderID: node.Spec.ProviderID,
		ObservedAt: now.UTC(),
	}
	o.touch(now)
}

// nodeDeleting reports, once, a node that started deleting while the
// termination finalizer holds it (kubectl delete node on a Joist node), so
// the reaper is woken to drain it now. A node that starts deleting
// without the finalizer is no news: nothing will drain it. Nodes of the
// informer's first list are reported too: their drain may have started
// while no forwarder ran, and a wake-up costs one reaper run.
func (o *outbox) nodeDeleting(node *corev1.Node, now time.Time) {
	if node.DeletionTimestamp == nil || !slices.Contains(node.Finalizers, TerminationFinalizer) || o.deleting[node.Name] {
		return
	}
	o.deleting[node.Name] = true
	o.dirtyDel[node.Name] = true
	delete(o.dirtyEmpty, node.Name) // its drain empties it: no news
	o.touch(now)
}

// boundPodChanged takes a bound pod's latest state: a pod that needs its
// node (pods.Reschedulable) is counted on it; one that no longer
// does (finished, terminating) leaves it, as a deleted one does.
func (o *outbox) boundPodChanged(pod *boundPod, now time.Time) {
	if pod.Node == "" || !pod.Needs {
		o.boundPodGone(pod.UID, now)
		return
	}
	if prev, ok := o.podNode[pod.UID]; ok && prev == pod.Node {
		return
	}
	o.boundPodGone(pod.UID, now)
	node := pod.Node
	if o.podsOn[node] == nil {
		o.podsOn[node] = map[k8stypes.UID]bool{}
	}
	o.podsOn[node][pod.UID] = true
	o.podNode[pod.UID] = node
	if o.dirtyEmpty[node] {
		delete(o.dirtyEmpty, node) // filled again before the flush
		o.closeIfEmpty()
	}
}

// boundPodGone takes a pod off its node. When it was the node's last pod
// that needed it, and the node is Joist's (held by the termination
// finalizer) and not being deleted, the node is reported emptied: the
// reaper's emptiness clock (ttlSecondsAfterEmpty, consolidateAfter) then
// starts within seconds instead of at its next scheduled run.
func (o *outbox) boundPodGone(uid k8stypes.UID, now time.Time) {
	node, ok := o.podNode[uid]
	if !ok {
		return
	}
	delete(o.podNode, uid)
	delete(o.podsOn[node], uid)
	if len(o.podsOn[node]) > 0 {
		return
	}
	delete(o.podsOn, node)
	if o.joist[node] && !o.deleting[node] {
		o.dirtyEmpty[node] = true
		o.touch(now)
	}
}

// nodeGone forgets a deleted node, so a node of the same name that comes
// back Ready (or deleting) is reported again.
func (o *outbox) nodeGone(name string) {
	delete(o.ready, name)
	delete(o.dirtyNodes, name)
	delete(o.deleting, name)
	delete(o.dirtyDel, name)
	delete(o.joist, name)
	delete(o.dirtyEmpty, name)
	o.closeIfEmpty()
}

// dirty is how many changes wait for the next flush.
func (o *outbox) dirty() int {
	return len(o.dirtyPods) + len(o.dirtyNodes) + len(o.dirtyDel) + len(o.dirtyEmpty)
}

// resync queues every pod that is unschedulable now, to be sent at once:
// if an earlier event was lost, this one costs only latency. It returns how
// many pods were queued.
func (o *outbox) resync(now time.Time) int {
	if len(o.pending) == 0 {
		return 0
	}
	for uid, ref := range o.pending {
		o.dirtyPods[uid] = ref
	}
	o.touch(now)
	o.flushNow = true
	return len(o.pending)
}

// next returns when take will next have something to hand out, or the zero
// time if nothing is waiting.
func (o *outbox) next() time.Time {
	at := o.windowDue()
	for _, q := range o.retries {
		if at.IsZero() || q.notBefore.Before(at) {
			at = q.notBefore
		}
	}
	return at
}

// windowDue returns when the open window of changes is to be flushed: a
// debounce after its last change, but no later than maxWait after its first
// (or at once after a resync). Zero when no window is open.
func (o *outbox) windowDue() time.Time {
	if o.dirty() == 0 {
		return time.Time{}
	}
	if o.flushNow {
		return o.first
	}
	due := o.last.Add(o.debounce)
	if limit := o.first.Add(o.maxWait); limit.Before(due) {
		due = limit
	}
	return due
}

// take returns the entries due at now: the pending-pods and node-ready
// events of a window whose debounce (or maximum wait) has run out, and the
// retries whose backoff has passed. With force, the window is closed
// whatever its age (shutdown).
func (o *outbox) take(now time.Time, force bool) ([]queued, error) {
	var out []queued
	keep := o.retries[:0]
	for _, q := range o.retries {
		if force || !now.Before(q.notBefore) {
			out = append(out, q)
		} else {
			keep = append(keep, q)
		}
	}
	o.retries = keep

	due := o.windowDue()
	if due.IsZero() || (!force && now.Before(due)) {
		return out, nil
	}
	fresh, err := o.entries(now)
	if err != nil {
		return out, err
	}
	o.dirtyPods = map[k8stypes.UID]events.PodRef{}
	o.dirtyNodes = map[string]events.NodeReady{}
	o.dirtyDel = map[string]bool{}
	o.dirtyEmpty = map[string]bool{}
	o.closeIfEmpty()
	return append(out, fresh...), nil
}

// entries turns the window's changes into EventBridge entries: pods sorted
// by namespace and name in events of at most events.MaxPodsPerEvent, then
// one event per node turned Ready, then one event naming every node that
// started deleting and one naming every node that emptied (one reaper
// wake-up for a burst).
func (o *outbox) entries(now time.Time) ([]queued, error) {
	pods := make([]events.PodRef, 0, len(o.dirtyPods))
	for _, ref := range o.dirtyPods {
		pods = append(pods, ref)
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		if pods[i].Name != pods[j].Name {
			return pods[i].Name < pods[j].Name
		}
		return pods[i].UID < pods[j].UID
	})
	var out []queued
	for start := 0; start < len(pods); start += events.MaxPodsPerEvent {
		chunk := pods[start:min(start+events.MaxPodsPerEvent, len(pods))]
		e, err := o.entry(events.DetailTypePendingPods, events.PendingPods{Cluster: o.cluster, Pods: chunk, ObservedAt: now.UTC()}, now)
		if err != nil {
			return nil, err
		}
		out = append(out, queued{entry: e, pods: len(chunk)})
	}

	names := make([]string, 0, len(o.dirtyNodes))
	for name := range o.dirtyNodes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		e, err := o.entry(events.DetailTypeNodeReady, o.dirtyNodes[name], now)
		if err != nil {
			return nil, err
		}
		out = append(out, queued{entry: e})
	}
	// A node name is at most 253 bytes: even a thousand of them stay far
	// under EventBridge's 256 KiB entry limit.
	if names := sortedNames(o.dirtyDel); len(names) > 0 {
		e, err := o.entry(events.DetailTypeNodesDeleting, events.NodesDeleting{Cluster: o.cluster, Nodes: names, ObservedAt: now.UTC()}, now)
		if err != nil {
			return nil, err
		}
		out = append(out, queued{entry: e})
	}
	if names := sortedNames(o.dirtyEmpty); len(names) > 0 {
		e, err := o.entry(events.DetailTypeNodesEmptied, events.NodesEmptied{Cluster: o.cluster, Nodes: names, ObservedAt: now.UTC()}, now)
		if err != nil {
			return nil, err
		}
		out = append(out, queued{entry: e})
	}
	return out, nil
}

func sortedNames(set map[string]bool) []string {
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func (o *outbox) entry(detailType string, detail any, now time.Time) (types.PutEventsRequestEntry, error) {
	b, err := json.Marshal(detail)
	if err != nil {
		return types.PutEventsRequestEntry{}, fmt.Errorf("encode %s detail: %w", detailType, err)
	}
	return types.PutEventsRequestEntry{
		EventBusName: aws.String(o.bus),
		Source:       aws.String(events.Source),
		DetailType:   aws.String(detailType),
		Detail:       aws.String(string(b)),
		Time:         aws.Time(now.UTC()),
	}, nil
}

// failed puts entries that EventBridge did not accept back in the queue,
// each to be tried again after a doubling backoff. It returns the entries
// it gave up on after maxAttempts; their pods come back with the next
// resync anyway.
func (o *outbox) failed(qs []queued, now time.Time) (dropped []queued) {
	for _, q := range qs {
		q.attempts++
		if q.attempts >= o.maxAttempts {
			dropped = append(dropped, q)
			continue
		}
		delay := o.backoff << (q.attempts - 1)
		if delay > maxBackoff || delay <= 0 {
			delay = maxBackoff
		}
		q.notBefore = now.Add(delay)
		o.retries = append(o.retries, q)
	}
	return dropped
}

// maxBackoff caps the retry delay: past a minute the resync resends the
// pods anyway.
const maxBackoff = time.Minute
