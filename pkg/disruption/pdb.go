package disruption

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/joist-dev/joist/pkg/pods"
)

// PDB is what the rules read of a PodDisruptionBudget (Snapshot.PDBs).
// Graceful disruption leaves alone a node holding a pod whose eviction
// the API server would refuse now, as Karpenter v1.15 does (its
// pdb.Limits.CanEvictPods): a drain begun there would only wait, the node
// tainted and counted against its pool's budget, with a replacement
// possibly paid for beside it.
type PDB struct {
	// Key is namespace/name.
	Key       string
	Namespace string
	Selector  labels.Selector
	// DisruptionsAllowed is the budget's status as the disruption
	// controller last wrote it: 0 refuses every eviction it governs.
	// (Karpenter lets a budget whose unhealthyPodEvictionPolicy is
	// AlwaysAllow pass a pod that is not Ready; the reaper's pods keep no
	// Ready condition, so such a pod's node waits until the budget
	// allows.)
	DisruptionsAllowed int32
}

// NewPDB reads a PodDisruptionBudget; an unreadable selector is an error
// naming it.
func NewPDB(p *policyv1.PodDisruptionBudget) (PDB, error) {
	key := p.Namespace + "/" + p.Name
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil {
		return PDB{}, fmt.Errorf("PodDisruptionBudget %s: spec.selector: %w", key, err)
	}
	return PDB{Key: key, Namespace: p.Namespace, Selector: sel, DisruptionsAllowed: p.Status.DisruptionsAllowed}, nil
}

// pdbIndex is the snapshot's budgets by namespace; unread says they could
// not be read, so no eviction is known to be allowed.
type pdbIndex struct {
	byNS   map[string][]PDB
	unread bool
}

func indexPDBs(all []PDB, unread bool) pdbIndex {
	ix := pdbIndex{unread: unread}
	for _, p := range all {
		if ix.byNS == nil {
			ix.byNS = map[string][]PDB{}
		}
		ix.byNS[p.Namespace] = append(ix.byNS[p.Namespace], p)
	}
	return ix
}

// refuses says why the API server would refuse to evict a pod of the
// namespace with these labels now ("" when it would not): a budget
// selecting it allows no disruption, or more than one budget selects it
// (the eviction API refuses a pod that several govern).
func (ix pdbIndex) refuses(key, namespace string, podLabels map[string]string) string {
	cands := ix.byNS[namespace]
	if len(cands) == 0 {
		return ""
	}
	set := labels.Set(podLabels)
	var match []string
	var zero string
	for _, p := range cands {
		// An empty selector selects every pod of the namespace, as in
		// the eviction API (Karpenter's and the disruption
		// controller's reading of policy/v1).
		if !p.Selector.Matches(set) {
			continue
		}
		match = append(match, p.Key)
		if p.DisruptionsAllowed <= 0 && zero == "" {
			zero = p.Key
		}
	}
	switch {
	case len(match) > 1:
		sort.Strings(match)
		return fmt.Sprintf("pod %s is selected by %d PodDisruptionBudgets (%s), whose eviction the API server refuses", key, len(match), strings.Join(match, ", "))
	case zero != "":
		return fmt.Sprintf("pod %s's PodDisruptionBudget %s allows no disruption now", key, zero)
	}
	return ""
}

// evictionRefused says why a drain of the node could not evict some pod
// now ("" when it could): the least key of such pods (a list's order),
// among the pods the drain would evict. Pods it would not evict are
// passed over: finished, terminating or mirror pods, pods tolerating the
// disrupted taint, and DaemonSet pods (a compact pod keeps no
// tolerations, and a DaemonSet's pods nearly always tolerate every taint,
// which leaves them on the node; Karpenter counts a DaemonSet pod that
// does not).
func (ix pdbIndex) evictionRefused(n Node) string {
	if ix.unread {
		return ix.unreadRefusal(n)
	}
	if len(ix.byNS) == 0 {
		return ""
	}
	why, least := "", ""
	note := func(key, reason string) {
		if reason != "" && (least == "" || key < least) {
			why, least = reason, key
		}
	}
	for _, p := range n.Pods {
		if !evictable(p) {
			continue
		}
		k := pods.Key(p)
		note(k, ix.refuses(k, p.Namespace, p.Labels))
	}
	for i := range n.Bound {
		b := &n.Bound[i]
		if b.DaemonSet != "" || len(ix.byNS[b.Namespace]) == 0 {
			continue
		}
		// A compact pod has no name; its namespace and labels stand
		// for it.
		k := b.Namespace + "/(" + labels.Set(b.Labels).String() + ")"
		note(k, ix.refuses(k, b.Namespace, b.Labels))
	}
	return why
}

// unreadRefusal is evictionRefused when the budgets could not be read:
// a node with a pod to evict waits for a pass that reads them.
func (ix pdbIndex) unreadRefusal(n Node) string {
	for _, p := range n.Pods {
		if evictable(p) {
			return "the PodDisruptionBudgets could not be read, so pod " + pods.Key(p) + " may not be evictable"
		}
	}
	for i := range n.Bound {
		if n.Bound[i].DaemonSet == "" {
			return "the PodDisruptionBudgets could not be read, so its pods may not be evictable"
		}
	}
	return ""
}

// evictable says whether the PodDisruptionBudgets are asked about the pod
// (evictionRefused): a pod that would need a new home (Reschedulable) and
// does not tolerate the disrupted taint (the drain leaves such a pod).
func evictable(p *corev1.Pod) bool {
	return pods.Reschedulable(p) && !pods.ToleratesDisrupted(p)
}
