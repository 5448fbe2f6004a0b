package disruption

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) // a Tuesday

func dur(d time.Duration) *time.Duration { return &d }

func TestAllowed(t *testing.T) {
	cases := []struct {
		name    string
		budgets []model.Budget
		reason  string
		total   int
		want    int
	}{
		{"no budgets: unlimited", nil, ReasonEmpty, 10, Unlimited},
		{"a count", []model.Budget{{Nodes: "2"}}, ReasonEmpty, 10, 2},
		{"a percentage rounds up", []model.Budget{{Nodes: "10%"}}, ReasonEmpty, 11, 2},
		{"10% of 1 node is 1", []model.Budget{{Nodes: "10%"}}, ReasonEmpty, 1, 1},
		{"0% allows none", []model.Budget{{Nodes: "0%"}}, ReasonEmpty, 5, 0},
		{"the most restrictive wins", []model.Budget{{Nodes: "50%"}, {Nodes: "1"}}, ReasonEmpty, 10, 1},
		{"a budget for other reasons does not apply", []model.Budget{{Nodes: "0", Reasons: []string{ReasonDrifted}}, {Nodes: "3"}}, ReasonEmpty, 10, 3},
		{"a budget naming the reason applies", []model.Budget{{Nodes: "0", Reasons: []string{ReasonEmpty}}}, ReasonEmpty, 10, 0},
		{"a schedule inside its window applies", []model.Budget{{Nodes: "0", Schedule: "0 9 * * *", Duration: dur(8 * time.Hour)}}, ReasonEmpty, 10, 0},
		{"a schedule outside its window does not", []model.Budget{{Nodes: "0", Schedule: "0 9 * * *", Duration: dur(2 * time.Hour)}}, ReasonEmpty, 10, Unlimited},
		{"the window opens at the hit", []model.Budget{{Nodes: "0", Schedule: "0 12 * * *", Duration: dur(time.Minute)}}, ReasonEmpty, 10, 0},
		{"a descriptor schedule", []model.Budget{{Nodes: "0", Schedule: "@daily", Duration: dur(13 * time.Hour)}}, ReasonEmpty, 10, 0},
		{"weekends only, on a Tuesday", []model.Budget{{Nodes: "0", Schedule: "0 0 * * sat", Duration: dur(48 * time.Hour)}}, ReasonEmpty, 10, Unlimited},
		{"a bad cron fails closed", []model.Budget{{Nodes: "5", Schedule: "not a cron", Duration: dur(time.Hour)}}, ReasonEmpty, 10, 0},
		{"a schedule without duration fails closed", []model.Budget{{Nodes: "5", Schedule: "@daily"}}, ReasonEmpty, 10, 0},
		{"a bad count fails closed", []model.Budget{{Nodes: "lots"}}, ReasonEmpty, 10, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Allowed(tc.budgets, tc.reason, tc.total, now); got != tc.want {
				t.Errorf("Allowed = %d, want %d", got, tc.want)
			}
		})
	}
}

func pool(name string, ttlEmpty, expire *time.Duration, budgets ...model.Budget) *model.Pool {
	return &model.Pool{Name: name, API: model.APIV1Alpha5, Disruption: model.Disruption{
		ConsolidationPolicy: "WhenEmpty", ConsolidateAfter: ttlEmpty, ExpireAfter: expire, Budgets: budgets,
	}}
}

type nodeOpt func(*corev1.Node)

func node(name, pool string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{model.LabelProvisionerName: pool},
			Annotations: map[string]string{}, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:   corev1.NodeSpec{ProviderID: "aws:///z/i-" + name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func emptySince(t time.Time) nodeOpt {
	return func(n *corev1.Node) { n.Annotations[AnnotationEmptinessTimestamp] = t.Format(time.RFC3339) }
}
func annotated(k string) nodeOpt { return func(n *corev1.Node) { n.Annotations[k] = "true" } }
func createdAgo(d time.Duration) nodeOpt {
	return func(n *corev1.Node) { n.CreationTimestamp = metav1.NewTime(now.Add(-d)) }
}
func retiring() nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: TaintDisrupted, Effect: corev1.TaintEffectNoSchedule}}
	}
}

func web(annotations ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: map[string]string{}}}
	for _, a := range annotations {
		p.Annotations[a] = "true"
	}
	return p
}

func daemon() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet"}}}}
}

func TestDecide(t *testing.T) {
	ttl := dur(30 * time.Second)
	cases := []struct {
		name        string
		pools       []*model.Pool
		nodes       []Node
		planned     map[string]int
		wantStamp   []string
		wantUnstamp []string
		wantRetire  []string // node:reason
		wantBlocked []string // node
	}{
		{name: "a newly empty node is stamped, not retired",
			pools: []*model.Pool{pool("service", ttl, nil)}, nodes: []Node{{Node: node("a", "service")}},
			wantStamp: []string{"a"}},
		{name: "DaemonSet pods do not make a node busy",
			pools: []*model.Pool{pool("service", ttl, nil)}, nodes: []Node{{Node: node("a", "service"), Pods: []*corev1.Pod{daemon()}}},
			wantStamp: []string{"a"}},
		{name: "an empty node past its TTL is retired",
			pools: []*model.Pool{pool("service", ttl, nil)}, nodes: []Node{{Node: node("a", "service", emptySince(now.Add(-31*time.Second)))}},
			wantRetire: []string{"a:Empty"}},
		{name: "an empty node within its TTL waits",
			pools: []*model.Pool{pool("service", ttl, nil)}, nodes: []Node{{Node: node("a", "service", emptySince(now.Add(-29*time.Second)))}}},
		{name: "a pod arriving removes the stamp",
			pools: []*model.Pool{pool("service", ttl, nil)}, nodes: []Node{{Node: node("a", "service", emptySince(now.Add(-time.Hour))), Pods: []*corev1.Pod{web()}}},
			wantUnstamp: []string{"a"}},
		{name: "pods planned onto the node keep it",
			pools: []*model.Pool{pool("service", ttl, nil)}, nodes: []Node{{Node: node("a", "service", emptySince(now.Add(-time.Hour)))}},
			planned: map[string]int{"i-a": 1}, wantUnstamp: []string{"a"}},
		{name: "no TTL: never retired for emptiness",
			pools: []*model.Pool{pool("service", nil, nil)}, nodes: []Node{{Node: node("a", "service")}}},
		{name: "v1 consolidateAfter 0s retires at once",
			pools: []*model.Pool{pool("default", dur(0), nil)}, nodes: []Node{{Node: node("a", "default")}},
			wantStamp: []string{"a"}, wantRetire: []string{"a:Empty"}},
		{name: "v0.20 do-not-consolidate blocks emptiness",
			pools: []*model.Pool{pool("service", ttl, nil)}, nodes: []Node{{Node: node("a", "service", emptySince(now.Add(-time.Hour)), annotated(AnnotationDoNotConsolidate))}},
			wantBlocked: []string{"a"}},
		{name: "v1 node do-not-disrupt blocks emptiness",
			pools: []*model.Pool{pool("service", ttl, nil)}, nodes: []Node{{Node: node("a", "service", emptySince(now.Add(-time.Hour)), annotated(AnnotationDoNotDisrupt))}},
			wantBlocked: []string{"a"}},
		{name: "expiry retires whatever the node annotation and budget say",
			pools:      []*model.Pool{pool("service", nil, dur(time.Hour), model.Budget{Nodes: "0"})},
			nodes:      []Node{{Node: node("a", "service", createdAgo(2*time.Hour), annotated(AnnotationDoNotDisrupt)), Pods: []*corev1.Pod{web(AnnotationDoNotDisrupt)}}},
			wantRetire: []string{"a:Expired"}},
		{name: "a young node is not expired",
			pools: []*model.Pool{pool("service", nil, dur(time.Hour))}, nodes: []Node{{Node: node("a", "service", createdAgo(59*time.Minute))}}},
		{name: "a budget of one retires one empty node at a time",
			pools:      []*model.Pool{pool("service", ttl, nil, model.Budget{Nodes: "1"})},
			nodes:      []Node{{Node: node("a", "service", emptySince(now.Add(-time.Hour)))}, {Node: node("b", "service", emptySince(now.Add(-time.Hour)))}},
			wantRetire: []string{"a:Empty"}, wantBlocked: []string{"b"}},
		{name: "a node already retiring uses the budget",
			pools:       []*model.Pool{pool("service", ttl, nil, model.Budget{Nodes: "1"})},
			nodes:       []Node{{Node: node("a", "service", retiring())}, {Node: node("b", "service", emptySince(now.Add(-time.Hour)))}},
			wantBlocked: []string{"b"}},
		{name: "nodes of unknown pools are not Joist's",
			pools: []*model.Pool{pool("service", ttl, nil)}, nodes: []Node{{Node: node("a", "other", emptySince(now.Add(-time.Hour)))}}},

		// Static pools (replicas): kept at their count, never consolidated.
		{name: "a static pool's empty node is not retired for emptiness",
			pools: []*model.Pool{static(pool("warm", dur(0), nil), 1)}, nodes: []Node{{Node: node("a", "warm", emptySince(now.Add(-time.Hour)))}}},
		{name: "a static pool past its replicas loses the empty node first, then the one holding least",
			pools: []*model.Pool{static(pool("warm", nil, nil, model.Budget{Nodes: "0"}), 1)},
			nodes: []Node{
				{Node: node("a", "warm"), Pods: []*corev1.Pod{web(), web()}},
				{Node: node("b", "warm"), Pods: []*corev1.Pod{web(AnnotationDoNotDisrupt)}},
				{Node: node("c", "warm")},
				{Node: node("d", "warm"), Pods: []*corev1.Pod{web(), web(), web()}},
			},
			wantRetire: []string{"c:StaticScaleDown", "a:StaticScaleDown", "d:StaticScaleDown"}},
		{name: "a node retiring does not count toward a static pool",
			pools: []*model.Pool{static(pool("warm", nil, nil), 1)},
			nodes: []Node{{Node: node("a", "warm", retiring())}, {Node: node("b", "warm")}}},
		{name: "limits.nodes caps a static pool's count",
			pools:      []*model.Pool{withNodeLimit(static(pool("warm", nil, nil), 3), "1")},
			nodes:      []Node{{Node: node("a", "warm"), Pods: []*corev1.Pod{web()}}, {Node: node("b", "warm")}},
			wantRetire: []string{"b:StaticScaleDown"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := Decide(Snapshot{Now: now, Pools: tc.pools, Nodes: tc.nodes, Planned: tc.planned})
			var retire, blocked []string
			for _, d := range plan.Retire {
				retire = append(retire, d.Node+":"+d.Reason)
			}
			for _, b := range plan.Blocked {
				blocked = append(blocked, b.Node)
			}
			if !slices.Equal(plan.Stamp, tc.wantStamp) || !slices.Equal(plan.Unstamp, tc.wantUnstamp) ||
				!slices.Equal(retire, tc.wantRetire) || !slices.Equal(blocked, tc.wantBlocked) {
				t.Errorf("plan: stamp %v unstamp %v retire %v blocked %v (%+v); want stamp %v unstamp %v retire %v blocked %v",
					plan.Stamp, plan.Unstamp, retire, blocked, plan.Blocked, tc.wantStamp, tc.wantUnstamp, tc.wantRetire, tc.wantBlocked)
			}
		})
	}
}

func sized(cpu string) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
		n.Status.Capacity = n.Status.Allocatable
	}
}

func consolidatableSince(t time.Time) nodeOpt {
	return func(n *corev1.Node) {
		n.Annotations[AnnotationConsolidatableAt] = t.Format(time.RFC3339)
		n.Annotations[AnnotationConsolidationCommand] = groupID([]string{n.Name})
	}
}

func cpuPod(name, cpu string, annotations ...string) *corev1.Pod {
	p := web(annotations...)
	p.Name = name
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	return p
}

// v1Pool is a v1 pool that consolidates underused nodes after
// consolidateAfter, within budgets.
func v1Pool(name string, consolidateAfter *time.Duration, budgets ...model.Budget) *model.Pool {
	p := pool(name, consolidateAfter, nil, budgets...)
	p.API = model.APIV1
	p.Disruption.ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	return p
}

// v1Node is node with the v1 pool label.
func v1Node(pool, name string, opts ...nodeOpt) *corev1.Node {
	n := node(name, "", opts...)
	delete(n.Labels, model.LabelProvisionerName)
	n.Labels[model.LabelNodePool] = pool
	return n
}

func TestConsolidationDeletesANodeWhosePodsFitElsewhere(t *testing.T) {
	v1 := func() *model.Pool { return v1Pool("default", dur(0)) }
	onV1 := func(name string, opts ...nodeOpt) *corev1.Node { return v1Node("default", name, opts...) }
	cases := []struct {
		name        string
		pool        *model.Pool
		nodes       []Node
		wantStamp   []string
		wantRetire  []string
		wantUnstamp []string
		wantBlocked []string
	}{
		{name: "a node whose pod fits on another is stamped first",
			pool: v1(),
			nodes: []Node{{Node: onV1("a", sized("2")), Pods: []*corev1.Pod{cpuPod("p1", "500m")}},
				{Node: onV1("b", sized("2")), Pods: []*corev1.Pod{cpuPod("p2", "500m"), cpuPod("p3", "500m")}}},
			wantStamp: []string{"a"}},
		{name: "and retired once the decision held for 15 s",
			pool: v1(),
			nodes: []Node{{Node: onV1("a", sized("2"), consolidatableSince(now.Add(-16*time.Second))), Pods: []*corev1.Pod{cpuPod("p1", "500m")}},
				{Node: onV1("b", sized("2")), Pods: []*corev1.Pod{cpuPod("p2", "500m"), cpuPod("p3", "500m")}}},
			wantRetire: []string{"a:Underutilized"}},
		{name: "not before",
			pool: v1(),
			nodes: []Node{{Node: onV1("a", sized("2"), consolidatableSince(now.Add(-10*time.Second))), Pods: []*corev1.Pod{cpuPod("p1", "500m")}},
				{Node: onV1("b", sized("2")), Pods: []*corev1.Pod{cpuPod("p2", "500m"), cpuPod("p3", "500m")}}}},
		{name: "pods that fit nowhere else keep the node, and its stamp goes",
			pool: v1(),
			nodes: []Node{{Node: onV1("a", sized("2"), consolidatableSince(now.Add(-time.Hour))), Pods: []*corev1.Pod{cpuPod("p1", "1500m")}},
				{Node: onV1("b", sized("2")), Pods: []*corev1.Pod{cpuPod("p2", "1500m")}}},
			wantUnstamp: []string{"a"}},
		{name: "WhenEmpty pools are not consolidated (and a stale stamp goes)",
			pool: func() *model.Pool { p := v1(); p.Disruption.ConsolidationPolicy = "WhenEmpty"; return p }(),
			nodes: []Node{{Node: onV1("a", sized("2"), consolidatableSince(now.Add(-time.Hour))), Pods: []*corev1.Pod{cpuPod("p1", "500m")}},
				{Node: onV1("b", sized("2")), Pods: []*corev1.Pod{cpuPod("p2", "500m")}}},
			wantUnstamp: []string{"a"}},
		{name: "a static pool's nodes are not consolidated (and a stale stamp goes)",
			pool: static(v1(), 2),
			nodes: []Node{{Node: onV1("a", sized("2"), consolidatableSince(now.Add(-time.Hour))), Pods: []*corev1.Pod{cpuPod("p1", "500m")}},
				{Node: onV1("b", sized("2")), Pods: []*corev1.Pod{cpuPod("p2", "500m")}}},
			wantUnstamp: []string{"a"}},
		{name: "a do-not-disrupt pod blocks consolidation",
			pool: v1(),
			nodes: []Node{{Node: onV1("a", sized("2"), consolidatableSince(now.Add(-time.Hour))), Pods: []*corev1.Pod{cpuPod("p1", "500m", AnnotationDoNotDisrupt)}},
				{Node: onV1("b", sized("4")), Pods: []*corev1.Pod{cpuPod("p2", "1600m")}}},
			wantUnstamp: []string{"a"}, wantBlocked: []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := Decide(Snapshot{Now: now, Pools: []*model.Pool{tc.pool}, Nodes: tc.nodes})
			var retire []string
			for _, d := range plan.Retire {
				retire = append(retire, d.Node+":"+d.Reason)
			}
			var blocked []string
			for _, b := range plan.Blocked {
				blocked = append(blocked, b.Node)
			}
			if !slices.Equal(plan.StampConsolidation, tc.wantStamp) || !slices.Equal(retire, tc.wantRetire) || !slices.Equal(plan.Unstamp, tc.wantUnstamp) || !slices.Equal(blocked, tc.wantBlocked) {
				t.Errorf("plan: stamp %v retire %v unstamp %v blocked %v; want stamp %v retire %v unstamp %v blocked %v",
					plan.StampConsolidation, retire, plan.Unstamp, blocked, tc.wantStamp, tc.wantRetire, tc.wantUnstamp, tc.wantBlocked)
			}
		})
	}
}

// TestDecide_RetiresNodesOfDeletedPools: a Joist node whose pool the
// source no longer declares goes, busy or not, past budgets and
// do-not-disrupt (its pool is what was removed, as with Karpenter's
// NodePool deletion); an invalid pool's nodes, a partial read, an unknown
// source, a node already retiring, and a node whose instance Joist did not
// launch (or when the instances are unknown) are left alone.
func TestDecide_RetiresNodesOfDeletedPools(t *testing.T) {
	kept := pool("kept", nil, nil, model.Budget{Nodes: "0"})
	v1Node := node("v1-gone", "")
	delete(v1Node.Labels, model.LabelProvisionerName)
	v1Node.Labels["karpenter.sh/nodepool"] = "gone-v1"
	nodes := []Node{
		{Node: node("gone-busy", "gone"), Pods: []*corev1.Pod{web(AnnotationDoNotDisrupt)}},
		{Node: node("gone-empty", "gone")},
		{Node: v1Node},
		{Node: node("invalid", "broken")},
		{Node: node("gone-retiring", "gone", retiring())},
		{Node: node("kept", "kept")},
		// Same labels, launched by Karpenter (its instance is not tagged
		// for this cluster): not Joist's to retire.
		{Node: node("karpenters", "gone")},
	}
	joists := map[string]InstanceFacts{}
	for _, n := range []string{"gone-busy", "gone-empty", "v1-gone", "invalid", "gone-retiring", "kept"} {
		joists["i-"+n] = InstanceFacts{}
	}
	cases := []struct {
		name      string
		declared  map[string]bool
		partial   bool
		instances map[string]InstanceFacts
		want      []string
	}{
		{"deleted pools' nodes go", map[string]bool{"kept": true, "broken": true}, false, joists, []string{"gone-busy", "gone-empty", "v1-gone"}},
		{"a partial read retires nothing", map[string]bool{"kept": true, "broken": true}, true, joists, nil},
		{"an unknown source retires nothing", nil, false, joists, nil},
		{"unread instances retire nothing", map[string]bool{"kept": true, "broken": true}, false, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := Decide(Snapshot{Now: now, Pools: []*model.Pool{kept}, Nodes: nodes, Declared: tc.declared, SpecPartial: tc.partial, Instances: tc.instances})
			var got []string
			for _, d := range plan.Retire {
				if d.Reason != ReasonPoolDeleted || d.Replace {
					t.Errorf("%s: reason %s replace %v, want %s without replacement", d.Node, d.Reason, d.Replace, ReasonPoolDeleted)
				}
				got = append(got, d.Node)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("retired %v, want %v", got, tc.want)
			}
		})
	}
}

// static makes p a static pool of n replicas.
func static(p *model.Pool, n int64) *model.Pool {
	p.Replicas = &n
	return p
}

// withNodeLimit sets p's limits.nodes.
func withNodeLimit(p *model.Pool, n string) *model.Pool {
	p.Limits = corev1.ResourceList{"nodes": resource.MustParse(n)}
	return p
}
