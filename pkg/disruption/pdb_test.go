package disruption

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// pdbOf is a budget in ns selecting app=<app>, allowing that many
// disruptions now.
func pdbOf(t *testing.T, name, ns, app string, allowed int32) PDB {
	t.Helper()
	p, err := NewPDB(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// labelledApp is app() labelled app=<label>, changed by mut.
func labelledApp(name, label string, mut func(*corev1.Pod)) *corev1.Pod {
	p := app(name, "1")
	p.Labels = map[string]string{"app": label}
	if mut != nil {
		mut(p)
	}
	return p
}

// TestConsolidation_PodDisruptionBudgets ports Karpenter v1.15's
// candidate cases on PodDisruptionBudgets (disruption/suite_test.go):
// graceful disruption leaves alone a node holding a pod whose eviction
// the API server would refuse now — a budget selecting it allows no
// disruption, or several budgets select it — and passes over the pods a
// drain does not evict.
func TestConsolidation_PodDisruptionBudgets(t *testing.T) {
	types := testTypes(t)
	cases := []struct {
		name    string
		pod     *corev1.Pod
		pdbs    func(t *testing.T) []PDB
		unread  bool
		want    []string
		blocked string // a part of a's reason, "" when a is not blocked
	}{
		{name: "no budget: the node is deleted", pod: labelledApp("p1", "web", nil), want: []string{"a:delete"}},
		{name: "a budget that allows a disruption", pod: labelledApp("p1", "web", nil),
			pdbs: func(t *testing.T) []PDB { return []PDB{pdbOf(t, "web", "ns", "web", 1)} }, want: []string{"a:delete"}},
		{name: "should not consider candidates that have fully blocking PDBs", pod: labelledApp("p1", "web", nil),
			pdbs:    func(t *testing.T) []PDB { return []PDB{pdbOf(t, "web", "ns", "web", 0)} },
			blocked: "pod ns/p1's PodDisruptionBudget ns/web allows no disruption now"},
		{name: "a blocking budget of another namespace", pod: labelledApp("p1", "web", nil),
			pdbs: func(t *testing.T) []PDB { return []PDB{pdbOf(t, "web", "other", "web", 0)} }, want: []string{"a:delete"}},
		{name: "should not consider candidates that have multiple PDBs on the same pod", pod: labelledApp("p1", "web", nil),
			pdbs: func(t *testing.T) []PDB {
				return []PDB{pdbOf(t, "web-b", "ns", "web", 1), pdbOf(t, "web-a", "ns", "web", 1)}
			},
			blocked: "pod ns/p1 is selected by 2 PodDisruptionBudgets (ns/web-a, ns/web-b)"},
		{name: "should consider candidates that have fully blocking PDBs on mirror pods",
			pod:  labelledApp("p1", "web", func(p *corev1.Pod) { p.Annotations[corev1.MirrorPodAnnotationKey] = "x" }),
			pdbs: func(t *testing.T) []PDB { return []PDB{pdbOf(t, "web", "ns", "web", 0)} }, want: []string{"a:delete"}},
		{name: "should consider candidates that have fully blocking PDBs on terminating pods",
			pod:  labelledApp("p1", "web", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} }),
			pdbs: func(t *testing.T) []PDB { return []PDB{pdbOf(t, "web", "ns", "web", 0)} }, want: []string{"a:delete"}},
		{name: "a pod tolerating the disrupted taint stays, so its budget does not matter",
			pod: labelledApp("p1", "web", func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: TaintDisrupted, Operator: corev1.TolerationOpExists}}
			}),
			pdbs: func(t *testing.T) []PDB { return []PDB{pdbOf(t, "web", "ns", "web", 0)} }, want: []string{"a:delete"}},
		{name: "budgets that could not be read leave the node alone", pod: labelledApp("p1", "web", nil), unread: true,
			blocked: "the PodDisruptionBudgets could not be read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []Node{typed(types, "a", "m5.xlarge", "on-demand", tc.pod),
				typed(types, "b", "m5.xlarge", "on-demand", app("p2", "1", AnnotationDoNotDisrupt))}
			s := Snapshot{Now: now, Pools: []*model.Pool{consolidating(model.CapacityTypeOnDemand)}, Nodes: nodes,
				Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}, PDBsUnread: tc.unread}
			if tc.pdbs != nil {
				s.PDBs = tc.pdbs(t)
			}
			first, second := twoPassesOf(s)
			if got := describe(second.Retire); !slices.Equal(got, tc.want) {
				t.Fatalf("retired %v, want %v (first pass stamped %v)", got, tc.want, first.StampConsolidation)
			}
			var why string
			for _, b := range append(first.Blocked, second.Blocked...) {
				if b.Node == "a" {
					why = b.Why
				}
			}
			if (tc.blocked == "") != (why == "") || !strings.Contains(why, tc.blocked) {
				t.Errorf("node a blocked for %q, want %q", why, tc.blocked)
			}
		})
	}
}

// TestGracefulBlock_PodDisruptionBudgetsOfCompactPods: a pod kept compact
// (Node.Add: namespace and labels) is asked about as a whole one is, but
// for a DaemonSet's, which the drain leaves; drift and emptiness see the
// same block as consolidation.
func TestGracefulBlock_PodDisruptionBudgetsOfCompactPods(t *testing.T) {
	ix := indexPDBs([]PDB{pdbOf(t, "web", "ns", "web", 0)}, false)
	n := Node{Node: node("a", "default")}
	n.Add(labelledApp("p1", "web", nil), nil)
	if len(n.Pods) != 0 || len(n.Bound) != 1 {
		t.Fatalf("Add kept %d whole and %d compact pods, want one compact", len(n.Pods), len(n.Bound))
	}
	if got := gracefulBlock(n, now, ix); !strings.Contains(got, "PodDisruptionBudget ns/web allows no disruption") {
		t.Errorf("compact pod under a blocking budget: %q", got)
	}
	ds := Node{Node: node("b", "default")}
	ds.Add(labelledApp("agent", "web", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent"}}
	}), nil)
	if got := gracefulBlock(ds, now, ix); got != "" {
		t.Errorf("a DaemonSet's compact pod under a blocking budget: %q, want no block", got)
	}
	// Drift asks the same.
	p := pool("default", nil, nil)
	p.NodeClass = "nc"
	drifted := Node{Node: node("c", "default"), Pods: []*corev1.Pod{labelledApp("p3", "web", nil)}}
	plan := Decide(Snapshot{Now: now, Pools: []*model.Pool{p}, Nodes: []Node{drifted}, PDBs: []PDB{pdbOf(t, "web", "ns", "web", 0)},
		Instances: map[string]InstanceFacts{"i-c": {ImageID: "ami-old"}}, Classes: map[string]ClassFacts{"nc": {ImageIDs: map[string]bool{"ami-new": true}}}})
	if len(plan.Retire) != 0 || len(plan.Blocked) != 1 || !strings.Contains(plan.Blocked[0].Why, "allows no disruption") {
		t.Errorf("drift under a blocking budget: retired %+v, blocked %+v", plan.Retire, plan.Blocked)
	}
}

// TestGracefulBlock_TerminatingPodIsPassedOverWhateverItsForm: a pod
// being deleted is not asked about, read whole or through Node.Add (which
// keeps it whole so that the rules see it is terminating).
func TestGracefulBlock_TerminatingPodIsPassedOverWhateverItsForm(t *testing.T) {
	ix := indexPDBs([]PDB{pdbOf(t, "web", "ns", "web", 0)}, false)
	terminating := labelledApp("p1", "web", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} })
	n := Node{Node: node("a", "default")}
	n.Add(terminating, nil)
	if len(n.Bound) != 0 || len(n.Pods) != 1 {
		t.Fatalf("Add kept %d compact and %d whole pods, want it whole", len(n.Bound), len(n.Pods))
	}
	if got := gracefulBlock(n, now, ix); got != "" {
		t.Errorf("a terminating pod under a blocking budget: %q, want no block", got)
	}
}
