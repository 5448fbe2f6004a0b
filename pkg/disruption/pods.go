package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// movingFacts sum up a node's compact pods (Node.Bound) that would need a
// new home if the node went (Reschedulable): all the rules read of them
// beyond what consolidation's simulation reads of Bound.
type movingFacts struct {
	// pods counts them; cpu (milli) and memory (bytes) are their
	// effective requests (scheduling.Requests).
	pods     int
	cpu, mem int64
	// cost sums their eviction costs (EvictionCost, each at least 0).
	cost float64
	// block is the least key (namespace/name) of the node's compact pods
	// whose do-not-disrupt or do-not-evict protects them for good (any
	// running pod's: blocks), "" when none does; timed are those protected
	// for a while (a duration: pods.DoNotDisruptUntil), which the rules
	// judge at the snapshot's Now.
	block string
	timed []timedBlock
}

// timedBlock is a pod protected from disruption until a time.
type timedBlock struct {
	key   string
	until time.Time
}

// blocks says whether the pod's do-not-disrupt counts: any pod still
// running, those that follow their node (DaemonSet and mirror pods)
// included, as in Karpenter (state.StateNode.ValidatePodsDisruptable
// asks pod.IsDisruptable of every pod on the node); a pod terminating or
// finished does not.
func blocks(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && !pods.Finished(p)
}

// noteBlock records p's do-not-disrupt protection, if any, in f.
func (f *movingFacts) noteBlock(p *corev1.Pod) {
	until, protected, _ := pods.DoNotDisruptUntil(p)
	switch k := pods.Key(p); {
	case !protected:
	case until.IsZero():
		if f.block == "" || k < f.block {
			f.block = k
		}
	default:
		f.timed = append(f.timed, timedBlock{k, until})
	}
}

// blockAt is the least key of the pods protected at now, "" when none is,
// and when that protection ends (zero: it does not).
func (f *movingFacts) blockAt(now time.Time) (key string, until time.Time) {
	key = f.block
	for _, t := range f.timed {
		if now.Before(t.until) && (key == "" || t.key < key) {
			key, until = t.key, t.until
		}
	}
	return key, until
}

// Add keeps a pod bound to the node in the least the rules read of it, for
// a reader that holds every pod of a large cluster (pkg/reaping): most
// pods go to Bound as a scheduling.BoundPod (~100 bytes: namespace,
// shared labels, shared requests, host ports, DaemonSet owner — what the
// simulator reads of a pod on a node it does not empty), and what the
// rules read of them (Reschedulable, do-not-disrupt, their requests) is
// summed up on the node. Kept whole instead, compacted
// (scheduling.Compact) and copied out of the caller's page: the pods
// whose terms a pass reads wherever they are — pod affinity or
// anti-affinity (the simulator's groups, ReadsNamespaces) and volume
// claims (which volumes a simulation reads) — and terminating pods, which
// the rules pass over. Finished pods are dropped:
// no rule and no simulation counts them. A node holding compact pods that
// consolidation would move needs Snapshot.PodsOn to read them again.
// shared, when not nil, returns one list for equal request lists.
func (n *Node) Add(p *corev1.Pod, shared func(corev1.ResourceList) corev1.ResourceList) {
	if pods.Finished(p) {
		return
	}
	// A terminating pod is kept whole (there are few): the rules that
	// pass it over (PodDisruptionBudgets, do-not-disrupt) see that it is.
	if !readsTerms(p) && p.DeletionTimestamp == nil {
		if b, ok := scheduling.NewBoundPod(p, shared); ok {
			n.Bound = append(n.Bound, b)
			if pods.Reschedulable(p) {
				cpu, mem := cpuMem(b.Requests)
				n.moving.pods++
				n.moving.cpu += cpu
				n.moving.mem += mem
				n.moving.cost += max(0, EvictionCost(p))
			}
			if blocks(p) {
				n.moving.noteBlock(p)
			}
			return
		}
	}
	n.AddWhole(p, shared)
}

// WholeAnnotations are the annotations whose pods AddBound cannot be
// given: what Reschedulable, the do-not-disrupt rule and the eviction
// cost read of a pod beyond a BoundPod, and the replacement a pod waits
// for (its reader counts it onto that instance).
var WholeAnnotations = []string{corev1.MirrorPodAnnotationKey, AnnotationDoNotDisrupt, AnnotationDoNotEvict, pods.AnnotationReplacement,
	AnnotationDisruptionCost, corev1.PodDeletionCost}

// AddBound is Add for a pod a reader built as a BoundPod without the pod
// (kube.EachBoundPod): one not finished, not being deleted, without a
// Node owner, pod (anti-)affinity terms, volume claims or any of
// WholeAnnotations, and with a DaemonSet owner only if named. Of such a
// pod Add keeps b, and it needs a new home (Reschedulable) unless a
// DaemonSet owns it.
func (n *Node) AddBound(b scheduling.BoundPod) {
	n.Bound = append(n.Bound, b)
	if b.DaemonSet == "" {
		cpu, mem := cpuMem(b.Requests)
		n.moving.pods++
		n.moving.cpu += cpu
		n.moving.mem += mem
		n.moving.cost++ // no cost annotation: WholeAnnotations
	}
}

// AddWhole keeps a pod bound to the node whole, compacted
// (scheduling.Compact) and copied out of the caller's page: for the nodes
// whose every pod a pass reads (a node waiting for its replacements:
// termination.ReplacementsOf). Finished pods are dropped.
func (n *Node) AddWhole(p *corev1.Pod, shared func(corev1.ResourceList) corev1.ResourceList) {
	if pods.Finished(p) {
		return
	}
	whole := *p
	scheduling.Compact(&whole, shared)
	n.Pods = append(n.Pods, &whole)
}

// AddIncoming keeps a pod on its way to the node (Node.Incoming),
// compacted (scheduling.Compact) and copied out of the caller's page, and
// not bound anywhere in the copy: a pending pod planned onto the node's
// instance, or a running pod waiting for the node as its replacement.
// Finished pods are dropped.
func (n *Node) AddIncoming(p *corev1.Pod, shared func(corev1.ResourceList) corev1.ResourceList) {
	if pods.Finished(p) {
		return
	}
	whole := *p
	scheduling.Compact(&whole, shared)
	whole.Spec.NodeName = ""
	n.Incoming = append(n.Incoming, &whole)
}

// readsTerms says whether a pass reads more of the pod than a BoundPod
// holds even where it stays: its pod (anti-)affinity terms or its volume
// claims.
func readsTerms(p *corev1.Pod) bool {
	if a := p.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return true
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

// cpuMem is a request list's cpu (milli) and memory (bytes).
func cpuMem(l corev1.ResourceList) (cpu, mem int64) {
	return l.Cpu().MilliValue(), l.Memory().Value()
}

// podCPUMem is a pod's effective cpu and memory requests, as the
// simulator sizes it.
func podCPUMem(p *corev1.Pod) (cpu, mem int64) {
	return cpuMem(scheduling.Requests(p))
}
