package disruption

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// condition sets (or adds) a node condition that turned status ago.
func condition(t corev1.NodeConditionType, status corev1.ConditionStatus, reason string, ago time.Duration) nodeOpt {
	return func(n *corev1.Node) {
		c := corev1.NodeCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == t {
				n.Status.Conditions[i] = c
				return
			}
		}
		n.Status.Conditions = append(n.Status.Conditions, c)
	}
}

func notReady(ago time.Duration) nodeOpt {
	return condition(corev1.NodeReady, corev1.ConditionFalse, "KubeletNotReady", ago)
}

// TestRepairOf: the AWS provider's repair policies (Karpenter v1.15's
// repair_test.go and the provider's RepairPolicies): which conditions,
// after how long, and the drain's bound.
func TestRepairOf(t *testing.T) {
	cases := []struct {
		name   string
		opts   []nodeOpt
		repair bool
		cond   corev1.NodeConditionType
		grace  time.Duration
	}{
		{name: "a Ready node is healthy", opts: nil},
		{name: "Ready False for 31 minutes: replace, drain within 10 minutes",
			opts: []nodeOpt{notReady(31 * time.Minute)}, repair: true, cond: corev1.NodeReady, grace: 10 * time.Minute},
		{name: "Ready False for 29 minutes is still tolerated",
			opts: []nodeOpt{notReady(29 * time.Minute)}},
		{name: "Ready Unknown (the kubelet stopped reporting) for 30 minutes",
			opts:   []nodeOpt{condition(corev1.NodeReady, corev1.ConditionUnknown, "NodeStatusUnknown", 30*time.Minute)},
			repair: true, cond: corev1.NodeReady, grace: 10 * time.Minute},
		{name: "a transition before the node's creation counts from the creation",
			opts: []nodeOpt{createdAgo(20 * time.Minute), notReady(40 * time.Minute)}},
		{name: "a fatal GPU fault (XID 79) after 10 minutes, drained within 5",
			opts:   []nodeOpt{condition("AcceleratedHardwareReady", corev1.ConditionFalse, "NvidiaXID79Error", 11*time.Minute)},
			repair: true, cond: "AcceleratedHardwareReady", grace: 5 * time.Minute},
		{name: "a reboot-clearable GPU fault (XID 48) is replaced as well",
			opts:   []nodeOpt{condition("AcceleratedHardwareReady", corev1.ConditionFalse, "NvidiaXID48Error", 10*time.Minute)},
			repair: true, cond: "AcceleratedHardwareReady", grace: 5 * time.Minute},
		{name: "an unknown GPU fault falls back to 30 minutes",
			opts: []nodeOpt{condition("AcceleratedHardwareReady", corev1.ConditionFalse, "NvidiaXID13Error", 20*time.Minute)}},
		{name: "and is repaired after them",
			opts:   []nodeOpt{condition("AcceleratedHardwareReady", corev1.ConditionFalse, "NvidiaXID13Error", 30*time.Minute)},
			repair: true, cond: "AcceleratedHardwareReady", grace: 10 * time.Minute},
		{name: "the node monitoring agent's KernelReady False",
			opts:   []nodeOpt{condition("KernelReady", corev1.ConditionFalse, "ForkFailedOutOfPIDs", 45*time.Minute)},
			repair: true, cond: "KernelReady", grace: 10 * time.Minute},
		{name: "StorageReady True is healthy",
			opts: []nodeOpt{condition("StorageReady", corev1.ConditionTrue, "", 45*time.Minute)}},
		{name: "a condition no policy names (MemoryPressure) is not repaired",
			opts: []nodeOpt{condition(corev1.NodeMemoryPressure, corev1.ConditionTrue, "", 2*time.Hour)}},
		{name: "of two eligible conditions the one unhealthy longest decides, the shortest grace bounds",
			opts:   []nodeOpt{notReady(50 * time.Minute), condition("AcceleratedHardwareReady", corev1.ConditionFalse, "XID74", 15*time.Minute)},
			repair: true, cond: corev1.NodeReady, grace: 5 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := node("n", "p", tc.opts...)
			r, ok := RepairOf(n, now)
			if ok != tc.repair || ok && (r.Condition != tc.cond || r.GracePeriod != tc.grace) {
				t.Errorf("repair %v %+v, want %v %s grace %s", ok, r, tc.repair, tc.cond, tc.grace)
			}
		})
	}
}

// TestRepairGracePeriod: the drain of a repaired node is bounded by its
// policy, or by its pool's terminationGracePeriod when that is shorter;
// a healthy node's by its pool's alone.
func TestRepairGracePeriod(t *testing.T) {
	sick := node("n", "p", notReady(time.Hour))
	cases := []struct {
		name string
		n    *corev1.Node
		pool *time.Duration
		want *time.Duration
	}{
		{"the policy's", sick, nil, dur(10 * time.Minute)},
		{"the pool's when shorter", sick, dur(2 * time.Minute), dur(2 * time.Minute)},
		{"the policy's when shorter", sick, dur(time.Hour), dur(10 * time.Minute)},
		{"a healthy node's is the pool's", node("h", "p"), dur(time.Hour), dur(time.Hour)},
		{"a healthy node of a pool without one has none", node("h", "p"), nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RepairGracePeriod(tc.n, tc.pool, now)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("grace %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDecide_Repair: with the NodeRepair gate on, an unhealthy node past
// its toleration is replaced, its pods first (one per pass, the longest
// unhealthy first), whatever node or pod do-not-disrupt say, but not when
// the node has do-not-repair, its pool's Unhealthy budget is spent or more
// than 20% of its pool is unhealthy (Karpenter's repair_test.go); with the
// gate off nothing is repaired. An expired node is retired whether Ready
// or not, gate or no gate.
func TestDecide_Repair(t *testing.T) {
	v1 := func(budgets ...model.Budget) *model.Pool { return v1Pool("p", nil, budgets...) }
	onV1 := func(name string, opts ...nodeOpt) *corev1.Node { return v1Node("p", name, opts...) }
	healthy := func(k int) []Node {
		var out []Node
		for i := range k {
			out = append(out, Node{Node: onV1(fmt.Sprintf("ok-%d", i)), Pods: []*corev1.Pod{cpuPod(fmt.Sprintf("ok-%d", i), "100m")}})
		}
		return out
	}
	cases := []struct {
		name        string
		gateOff     bool
		pool        *model.Pool
		nodes       []Node
		wantRetire  []string
		wantBlocked []string
	}{
		{name: "a node NotReady for 31 minutes is replaced, its pods first",
			pool:       v1(),
			nodes:      append(healthy(4), Node{Node: onV1("sick", notReady(31*time.Minute)), Pods: []*corev1.Pod{cpuPod("a", "1")}}),
			wantRetire: []string{"sick:Unhealthy:replace"}},
		{name: "an empty one is just retired",
			pool:       v1(),
			nodes:      append(healthy(4), Node{Node: onV1("sick", notReady(31*time.Minute))}),
			wantRetire: []string{"sick:Unhealthy"}},
		{name: "not before its toleration",
			pool:  v1(),
			nodes: append(healthy(4), Node{Node: onV1("sick", notReady(29*time.Minute)), Pods: []*corev1.Pod{cpuPod("a", "1")}})},
		{name: "not with the gate off",
			gateOff: true, pool: v1(),
			nodes: append(healthy(4), Node{Node: onV1("sick", notReady(31*time.Minute)), Pods: []*corev1.Pod{cpuPod("a", "1")}})},
		{name: "one per pass: the one unhealthy longest",
			pool: v1(),
			nodes: append(healthy(8), Node{Node: onV1("sick-1", notReady(40*time.Minute))},
				Node{Node: onV1("sick-2", notReady(50*time.Minute))}),
			wantRetire: []string{"sick-2:Unhealthy"}},
		{name: "node and pod do-not-disrupt do not stop it",
			pool: v1(),
			nodes: append(healthy(4), Node{Node: onV1("sick", notReady(time.Hour), annotated(AnnotationDoNotDisrupt)),
				Pods: []*corev1.Pod{cpuPod("a", "1", AnnotationDoNotDisrupt)}}),
			wantRetire: []string{"sick:Unhealthy:replace"}},
		{name: "do-not-repair does",
			pool:        v1(),
			nodes:       append(healthy(4), Node{Node: onV1("sick", notReady(time.Hour), annotated(AnnotationDoNotRepair))}),
			wantBlocked: []string{"sick:Unhealthy"}},
		{name: "an Unhealthy budget of 0 does",
			pool:        v1(model.Budget{Nodes: "0", Reasons: []string{ReasonUnhealthy}}),
			nodes:       append(healthy(4), Node{Node: onV1("sick", notReady(time.Hour))}),
			wantBlocked: []string{"sick:Unhealthy"}},
		{name: "a budget of other reasons does not",
			pool:       v1(model.Budget{Nodes: "0", Reasons: []string{ReasonUnderutilized, ReasonDrifted}}),
			nodes:      append(healthy(4), Node{Node: onV1("sick", notReady(time.Hour))}),
			wantRetire: []string{"sick:Unhealthy"}},
		{name: "nodes not Ready do not use the Unhealthy budget",
			pool:       v1(model.Budget{Nodes: "1"}),
			nodes:      append(healthy(8), Node{Node: onV1("sick-1", notReady(time.Hour))}, Node{Node: onV1("sick-2", notReady(40*time.Minute))}),
			wantRetire: []string{"sick-1:Unhealthy"}},
		{name: "retiring ones do",
			pool: v1(model.Budget{Nodes: "1"}),
			nodes: append(healthy(8), Node{Node: onV1("sick-1", notReady(time.Hour))}, Node{Node: onV1("sick-2", notReady(40*time.Minute))},
				Node{Node: onV1("going", retiring())}),
			wantBlocked: []string{"sick-1:Unhealthy", "sick-2:Unhealthy"}},
		{name: "1 unhealthy of 4 stays under the 20% breaker (rounded up)",
			pool:       v1(),
			nodes:      append(healthy(3), Node{Node: onV1("sick", notReady(time.Hour))}),
			wantRetire: []string{"sick:Unhealthy"}},
		{name: "3 of 10 trip it, tolerated or not",
			pool: v1(),
			nodes: append(healthy(7), Node{Node: onV1("sick-1", notReady(time.Hour))}, Node{Node: onV1("sick-2", notReady(time.Hour))},
				Node{Node: onV1("sick-3", notReady(time.Minute))}),
			wantBlocked: []string{"sick-1:Unhealthy", "sick-2:Unhealthy"}},
		{name: "an expired node not Ready is retired, gate off",
			gateOff: true,
			pool:    func() *model.Pool { p := v1(); p.Disruption.ExpireAfter = dur(30 * time.Minute); return p }(),
			nodes: []Node{{Node: onV1("old", notReady(5*time.Minute)), Pods: []*corev1.Pod{cpuPod("a", "1")}},
				{Node: onV1("young", createdAgo(10*time.Minute))}},
			wantRetire: []string{"old:Expired:replace"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := Decide(Snapshot{Now: now, Pools: []*model.Pool{tc.pool}, Nodes: tc.nodes, NodeRepair: !tc.gateOff})
			var retire, blocked []string
			for _, d := range plan.Retire {
				s := d.Node + ":" + d.Reason
				if d.Replace {
					s += ":replace"
				}
				retire = append(retire, s)
			}
			for _, b := range plan.Blocked {
				blocked = append(blocked, b.Node+":"+b.Reason)
			}
			if !slices.Equal(retire, tc.wantRetire) || !slices.Equal(blocked, tc.wantBlocked) {
				t.Errorf("retire %v blocked %v (%+v); want retire %v blocked %v", retire, blocked, plan.Blocked, tc.wantRetire, tc.wantBlocked)
			}
		})
	}
}
