package scheduling_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// Cluster-level default topology spread constraints (Karpenter v1.15's
// --scheduler-config): the selector deduction of Karpenter's
// defaultconstraints_test.go and the scheduling cases of its
// topology_test.go "DefaultConstraints" context, with our objects and
// catalog. WithDefaultSpread gives the pods ordinary constraints before
// Solve; the case names are Karpenter's.

var zoneDefault = corev1.TopologySpreadConstraint{TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, MaxSkew: 1}

func controller(apiVersion, kind, name string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(kind + "-" + name), Controller: &yes}
}

func rsOwned(name string) metav1.OwnerReference { return controller("apps/v1", "ReplicaSet", name) }

func replicaSet(name string, selector map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}}}
}

func service(name, ns string, selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{Selector: selector}}
}

func replicationController(name string, selector map[string]string) *corev1.ReplicationController {
	return &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ReplicationControllerSpec{Selector: selector}}
}

// owned makes a pod with these labels (replacing app=<name>) and owners.
func owned(l map[string]string, owners ...metav1.OwnerReference) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Labels = l
		p.OwnerReferences = owners
	}
}

func in(key string, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}
}

// TestDefaultSpreadSelector: the selector each pod's default constraint
// gets, as kube-scheduler's helper.DefaultSelector deduces it (nil: the
// pod is not defaulted).
func TestDefaultSpreadSelector(t *testing.T) {
	web := map[string]string{"app": "web"}
	for _, c := range []struct {
		name     string
		defaults []corev1.TopologySpreadConstraint
		src      scheduling.SpreadSources
		pods     []*corev1.Pod
		// want are the selectors of the pods' one constraint, in order;
		// nil for a pod left without.
		want []*metav1.LabelSelector
		// check looks further (pods are the input, out the result).
		check func(t *testing.T, pods, out []*corev1.Pod)
	}{
		{name: "should deduce a ReplicaSet's selector, not the pod's labels",
			src:  scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("rs", map[string]string{"app": "web", "pod-template-hash": "abc123"})}},
			pods: pods("p", 1, "1", "1Gi", owned(map[string]string{"app": "web", "pod-template-hash": "abc123", "extra": "ignored"}, rsOwned("rs"))),
			want: []*metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web"), in("pod-template-hash", "abc123")}}}},
		{name: "should deduce a StatefulSet's selector and ignore the pod's volatile labels",
			src: scheduling.SpreadSources{StatefulSets: []*appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
				Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}},
			pods: pods("p", 1, "1", "1Gi", owned(map[string]string{"app": "db", "controller-revision-hash": "db-6f8c",
				"statefulset.kubernetes.io/pod-name": "db-0", "apps.kubernetes.io/pod-index": "0"}, controller("apps/v1", "StatefulSet", "db"))),
			want: []*metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "db")}}}},
		{name: "should carry a ReplicaSet's matchExpressions through verbatim",
			src: scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "default"},
				Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"other"}}}}}}}},
			pods: pods("p", 1, "1", "1Gi", owned(web, rsOwned("rs"))),
			want: []*metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"other"}}}}}},
		{name: "should deduce a ReplicationController's selector",
			src:  scheduling.SpreadSources{ReplicationControllers: []*corev1.ReplicationController{replicationController("rc", map[string]string{"app": "legacy"})}},
			pods: pods("p", 1, "1", "1Gi", owned(map[string]string{"app": "legacy"}, controller("v1", "ReplicationController", "rc"))),
			want: []*metav1.LabelSelector{{MatchLabels: map[string]string{"app": "legacy"}}}},
		{name: "should not deduce a selector from an unsupported owner kind",
			pods: pods("p", 1, "1", "1Gi", owned(map[string]string{"app": "batch"}, controller("batch/v1", "Job", "test-job"))),
			want: []*metav1.LabelSelector{nil}},
		{name: "should ignore a non-controller owner reference",
			src: scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("rs", web)}},
			pods: pods("p", 1, "1", "1Gi", owned(web, func() metav1.OwnerReference {
				o, no := rsOwned("rs"), false
				o.Controller = &no
				return o
			}())),
			want: []*metav1.LabelSelector{nil}},
		{name: "should tolerate an owner that no longer exists",
			pods: pods("p", 1, "1", "1Gi", owned(web, rsOwned("does-not-exist"))),
			want: []*metav1.LabelSelector{nil}},
		{name: "should deduce a selector from a matching service",
			src:  scheduling.SpreadSources{Services: []*corev1.Service{service("s", "default", web)}},
			pods: pods("p", 1, "1", "1Gi", owned(map[string]string{"app": "web", "extra": "ignored"})),
			want: []*metav1.LabelSelector{{MatchLabels: web}}},
		{name: "should merge the selectors of every matching service",
			src:  scheduling.SpreadSources{Services: []*corev1.Service{service("s1", "default", web), service("s2", "default", map[string]string{"tier": "frontend"})}},
			pods: pods("p", 1, "1", "1Gi", owned(map[string]string{"app": "web", "tier": "frontend"})),
			want: []*metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web", "tier": "frontend"}}}},
		{name: "should not deduce a selector from a non-matching service",
			src:  scheduling.SpreadSources{Services: []*corev1.Service{service("s", "default", map[string]string{"app": "other"})}},
			pods: pods("p", 1, "1", "1Gi", owned(web)),
			want: []*metav1.LabelSelector{nil}},
		{name: "should skip a service with a nil selector",
			src:  scheduling.SpreadSources{Services: []*corev1.Service{service("s", "default", nil)}},
			pods: pods("p", 1, "1", "1Gi", owned(web)),
			want: []*metav1.LabelSelector{nil}},
		{name: "should contribute nothing for a service with an empty selector",
			src:  scheduling.SpreadSources{Services: []*corev1.Service{service("s", "default", map[string]string{})}},
			pods: pods("p", 1, "1", "1Gi", owned(web)),
			want: []*metav1.LabelSelector{nil}},
		{name: "should ignore a matching service in another namespace",
			src:  scheduling.SpreadSources{Services: []*corev1.Service{service("s", "elsewhere", web)}},
			pods: pods("p", 1, "1", "1Gi", owned(web)),
			want: []*metav1.LabelSelector{nil}},
		{name: "should combine a service selector with the owner's",
			src: scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("rs", map[string]string{"app": "web", "pod-template-hash": "abc123"})},
				Services: []*corev1.Service{service("s", "default", map[string]string{"tier": "frontend"})}},
			pods: pods("p", 1, "1", "1Gi", owned(map[string]string{"app": "web", "pod-template-hash": "abc123", "tier": "frontend"}, rsOwned("rs"))),
			want: []*metav1.LabelSelector{{MatchLabels: map[string]string{"tier": "frontend"},
				MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web"), in("pod-template-hash", "abc123")}}}},
		{name: "should let a ReplicationController's selector overwrite a conflicting service label",
			src: scheduling.SpreadSources{ReplicationControllers: []*corev1.ReplicationController{replicationController("rc", map[string]string{"app": "legacy"})},
				Services: []*corev1.Service{service("s", "default", web)}},
			pods: pods("p", 1, "1", "1Gi", owned(web, controller("v1", "ReplicationController", "rc"))),
			want: []*metav1.LabelSelector{{MatchLabels: map[string]string{"app": "legacy"}}}},
		{name: "should AND a ReplicaSet's conflicting selector, selecting nothing",
			src: scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("rs", map[string]string{"app": "other"})},
				Services: []*corev1.Service{service("s", "default", web)}},
			pods: pods("p", 1, "1", "1Gi", owned(web, rsOwned("rs"))),
			want: []*metav1.LabelSelector{{MatchLabels: web, MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "other")}}},
			check: func(t *testing.T, _, out []*corev1.Pod) {
				sel, err := metav1.LabelSelectorAsSelector(out[0].Spec.TopologySpreadConstraints[0].LabelSelector)
				if err != nil {
					t.Fatal(err)
				}
				if sel.Matches(labels.Set{"app": "web"}) || sel.Matches(labels.Set{"app": "other"}) {
					t.Errorf("selector %s matches a pod; want it to select nothing", sel)
				}
			}},
		{name: "should not share a selector between pods of the same owner with different labels",
			src: scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("rs", web)},
				Services: []*corev1.Service{service("s", "default", map[string]string{"tier": "frontend"})}},
			pods: concat(pods("frontend", 1, "1", "1Gi", owned(map[string]string{"app": "web", "tier": "frontend"}, rsOwned("rs"))),
				pods("plain", 1, "1", "1Gi", owned(web, rsOwned("rs")))),
			want: []*metav1.LabelSelector{
				{MatchLabels: map[string]string{"tier": "frontend"}, MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web")}},
				{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web")}}}},
		{name: "should not share a selector between identically-labeled pods in different namespaces",
			src:  scheduling.SpreadSources{Services: []*corev1.Service{service("s", "default", web)}},
			pods: concat(pods("selected", 1, "1", "1Gi", owned(web)), pods("other", 1, "1", "1Gi", owned(web), inNamespace("elsewhere"))),
			want: []*metav1.LabelSelector{{MatchLabels: web}, nil}},
		{name: "should leave a pod that declares its own constraints untouched",
			src:  scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("rs", web)}},
			pods: pods("p", 1, "1", "1Gi", owned(web, rsOwned("rs")), spread(corev1.LabelHostname, 5, corev1.ScheduleAnyway, "web")),
			check: func(t *testing.T, pods, out []*corev1.Pod) {
				if out[0] != pods[0] {
					t.Errorf("the pod was replaced: %v", out[0].Spec.TopologySpreadConstraints)
				}
			}},
		{name: "should be a no-op when no defaults are configured",
			defaults: []corev1.TopologySpreadConstraint{},
			src:      scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("rs", web)}},
			pods:     pods("p", 1, "1", "1Gi", owned(web, rsOwned("rs"))),
			want:     []*metav1.LabelSelector{nil}},
		// Karpenter relaxes a pod's preferences by editing its copy, so
		// each pod gets its own list. Solve never changes a pod (Input is
		// read-only), so here the pods of one workload share one list;
		// what must hold is that neither the input pods nor the
		// configured defaults are changed or aliased.
		{name: "should give each pod its own constraint slice so relaxation can't leak across pods",
			src:  scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("rs", web)}},
			pods: pods("p", 2, "1", "1Gi", owned(web, rsOwned("rs"))),
			want: []*metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web")}}, {MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web")}}},
			check: func(t *testing.T, pods, out []*corev1.Pod) {
				for i := range pods {
					if len(pods[i].Spec.TopologySpreadConstraints) != 0 || out[i] == pods[i] {
						t.Errorf("input pod %d was changed or returned itself", i)
					}
				}
				if out[0].Spec.TopologySpreadConstraints[0].LabelSelector == zoneDefault.LabelSelector || zoneDefault.LabelSelector != nil {
					t.Error("the configured default got a selector")
				}
			}},
		{name: "should preserve the configured constraint fields on the injected copy",
			defaults: func() []corev1.TopologySpreadConstraint {
				three, honor := int32(3), corev1.NodeInclusionPolicyHonor
				return []corev1.TopologySpreadConstraint{{TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, MaxSkew: 4, MinDomains: &three, NodeTaintsPolicy: &honor}}
			}(),
			src:  scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("rs", web)}},
			pods: pods("p", 1, "1", "1Gi", owned(web, rsOwned("rs"))),
			want: []*metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web")}}},
			check: func(t *testing.T, _, out []*corev1.Pod) {
				c := out[0].Spec.TopologySpreadConstraints[0]
				if c.MaxSkew != 4 || c.WhenUnsatisfiable != corev1.ScheduleAnyway || c.MinDomains == nil || *c.MinDomains != 3 ||
					c.NodeTaintsPolicy == nil || *c.NodeTaintsPolicy != corev1.NodeInclusionPolicyHonor {
					t.Errorf("constraint %+v lost a configured field", c)
				}
			}},
		{name: "should deduce independent selectors for pods of different workloads in one pass",
			src: scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("web", web), replicaSet("api", map[string]string{"app": "api"})}},
			pods: concat(pods("web", 1, "1", "1Gi", owned(web, rsOwned("web"))), pods("api", 1, "1", "1Gi", owned(map[string]string{"app": "api"}, rsOwned("api"))),
				pods("orphan", 1, "1", "1Gi")),
			want: []*metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web")}}, {MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "api")}}, nil}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defaults := c.defaults
			if defaults == nil {
				defaults = []corev1.TopologySpreadConstraint{zoneDefault}
			}
			out := scheduling.WithDefaultSpread(defaults, c.pods, c.src)
			if len(out) != len(c.pods) {
				t.Fatalf("%d pods out of %d", len(out), len(c.pods))
			}
			for i, want := range c.want {
				tsc := out[i].Spec.TopologySpreadConstraints
				switch {
				case want == nil && len(tsc) != 0:
					t.Errorf("pod %s got %v, want no constraint", out[i].Name, tsc)
				case want == nil:
				case len(tsc) != 1:
					t.Errorf("pod %s got %d constraints, want 1", out[i].Name, len(tsc))
				case tsc[0].TopologyKey != defaults[0].TopologyKey:
					t.Errorf("pod %s constraint on %s, want %s", out[i].Name, tsc[0].TopologyKey, defaults[0].TopologyKey)
				case !reflect.DeepEqual(tsc[0].LabelSelector, want):
					t.Errorf("pod %s selector %v, want %v", out[i].Name, tsc[0].LabelSelector, want)
				}
			}
			if c.check != nil {
				c.check(t, c.pods, out)
			}
		})
	}
}

// TestDefaultSpreadReads: only the namespaces and controllers of the pods
// that would be defaulted are read, each once: not those of pods with
// spreads of their own, nor of pods Solve skips (bound, a DaemonSet's).
func TestDefaultSpreadReads(t *testing.T) {
	ps := concat(
		pods("web", 2, "1", "1Gi", owned(map[string]string{"app": "web"}, rsOwned("web"))),
		pods("db", 1, "1", "1Gi", owned(map[string]string{"app": "db"}, controller("apps/v1", "StatefulSet", "db")), inNamespace("data")),
		pods("own", 1, "1", "1Gi", inNamespace("spread"), spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, "own")),
		pods("job", 1, "1", "1Gi", owned(map[string]string{"app": "job"}, controller("batch/v1", "Job", "j")), inNamespace("batch")),
		// Solve skips these: nothing is read for them.
		pods("agent", 1, "1", "1Gi", owned(map[string]string{"app": "agent"}, controller("apps/v1", "DaemonSet", "agent")), inNamespace("kube-system")),
		pods("bound", 1, "1", "1Gi", owned(map[string]string{"app": "bound"}, controller("apps/v1", "ReplicaSet", "bound")), inNamespace("running"),
			func(p *corev1.Pod) { p.Spec.NodeName = "n1" }),
	)
	ns, owners := scheduling.DefaultSpreadReads([]corev1.TopologySpreadConstraint{zoneDefault}, ps)
	if want := []string{"batch", "data", "default"}; !reflect.DeepEqual(ns, want) {
		t.Errorf("namespaces %v, want %v", ns, want)
	}
	want := []scheduling.SpreadOwner{{Namespace: "data", Kind: "StatefulSet", Name: "db"}, {Namespace: "default", Kind: "ReplicaSet", Name: "web"}}
	if !reflect.DeepEqual(owners, want) {
		t.Errorf("owners %v, want %v", owners, want)
	}
	if ns, owners := scheduling.DefaultSpreadReads(nil, ps); ns != nil || owners != nil {
		t.Errorf("without defaults: %v, %v; want nothing read", ns, owners)
	}
}

// TestParseSchedulerConfig: Karpenter's SCHEDULER_CONFIG document, and
// each refusal naming its field.
func TestParseSchedulerConfig(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want int // default constraints
		err  string
	}{
		{raw: "", want: 0},
		{raw: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]}", want: 1},
		{raw: `{"podTopologySpread":{"defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"},{"maxSkew":2,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway","minDomains":2}]}}`, want: 2},
		{raw: "podTopologySpread: {}", want: 0},
		{raw: "podTopologySpreads: {}", err: "unknown field"},
		{raw: "podTopologySpread: {defaultConstraints: [{maxSkew: 0, topologyKey: a, whenUnsatisfiable: DoNotSchedule}]}", err: "defaultConstraints[0].maxSkew"},
		{raw: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, whenUnsatisfiable: DoNotSchedule}]}", err: "defaultConstraints[0].topologyKey"},
		{raw: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: 'a b', whenUnsatisfiable: DoNotSchedule}]}", err: "defaultConstraints[0].topologyKey"},
		{raw: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: a, whenUnsatisfiable: Maybe}]}", err: "defaultConstraints[0].whenUnsatisfiable"},
		{raw: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: a, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}]}", err: "defaultConstraints[0].labelSelector"},
		{raw: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: a, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [x]}]}", err: "defaultConstraints[0].matchLabelKeys"},
		{raw: "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: a, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: a, whenUnsatisfiable: DoNotSchedule}]}", err: "defaultConstraints[1]: repeats defaultConstraints[0]"},
		{raw: "podTopologySpread: [", err: "scheduler config"},
	} {
		got, err := scheduling.ParseSchedulerConfig(c.raw)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error naming %q", c.raw, err, c.err)
			}
			continue
		}
		if err != nil || len(got.Defaults()) != c.want {
			t.Errorf("%s: %d defaults, %v; want %d", c.raw, len(got.Defaults()), err, c.want)
		}
	}
}

// TestKarpenterDefaultConstraints: Karpenter's topology_test.go
// "DefaultConstraints" cases, planned: the default constraints given by
// WithDefaultSpread before Solve spread the pods as their own would.
func TestKarpenterDefaultConstraints(t *testing.T) {
	zone, host := corev1.LabelTopologyZone, corev1.LabelHostname
	a := map[string]string{"app": "a"}
	rs := scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("a", a)}}
	hostDefault := corev1.TopologySpreadConstraint{TopologyKey: host, WhenUnsatisfiable: corev1.DoNotSchedule, MaxSkew: 1}
	minDomains := func(when corev1.UnsatisfiableConstraintAction) corev1.TopologySpreadConstraint {
		three := int32(3)
		return corev1.TopologySpreadConstraint{TopologyKey: zone, WhenUnsatisfiable: when, MaxSkew: 1, MinDomains: &three}
	}
	ownedA := owned(a, rsOwned("a"))
	// defaulted gives the input's pods the defaults, as the provisioner does.
	defaulted := func(in scheduling.Input, src scheduling.SpreadSources, defaults ...corev1.TopologySpreadConstraint) scheduling.Input {
		in.Pods = scheduling.WithDefaultSpread(defaults, in.Pods, src)
		return in
	}
	// perLabel counts the plan's new pods with label k=v per zone.
	perZone := func(k, v string, want ...int) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
		return func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
			t.Helper()
			by := map[string]int{}
			for _, n := range plan.NewNodes {
				for _, p := range n.Pods {
					if p.Labels[k] == v {
						by[n.Cheapest.Zone]++
					}
				}
			}
			var got []int
			for _, c := range by {
				got = append(got, c)
			}
			if len(got) != len(want) {
				t.Errorf("pods %s=%s per zone %v, want %v", k, v, by, want)
			}
			for _, c := range got {
				if c != want[0] {
					t.Errorf("pods %s=%s per zone %v, want %v", k, v, by, want)
					break
				}
			}
		}
	}
	runK(t, []kcase{
		{name: "should apply default zonal spread to a pod that declares no constraints of its own", in: func() scheduling.Input {
			return defaulted(input(pods("a", 4, "100m", "100Mi", ownedA)), rs, zoneDefault)
		}, check: wantSkew(zone, "a", 2, 1, 1)},
		{name: "should apply default hostname spread to a pod that declares no constraints of its own", in: func() scheduling.Input {
			return defaulted(input(pods("a", 3, "100m", "100Mi", ownedA)), rs, hostDefault)
		}, check: wantSkew(host, "a", 1, 1, 1)},
		// The default would put each pod on a node of its own; the pod's
		// own spread (maxSkew 3) lets the three share one.
		{name: "should NOT apply the default to a pod that declares its own constraints", in: func() scheduling.Input {
			return defaulted(input(pods("a", 3, "100m", "100Mi", ownedA, spread(host, 3, corev1.DoNotSchedule, "a"))), rs, hostDefault)
		}, check: newNodes(1)},
		{name: "should carry minDomains through a synthesized default", in: func() scheduling.Input {
			return defaulted(input(pods("a", 3, "100m", "100Mi", ownedA), pool("p", withReq(zone, "In", "test-1a", "test-1b"))), rs, minDomains(corev1.DoNotSchedule))
		}, unschedulable: 1, reason: "topology spread", check: wantSkew(zone, "a", 1, 1)},
		{name: "should NOT schedule past a synthesized DoNotSchedule default that can't be satisfied", in: func() scheduling.Input {
			return defaulted(input(pods("a", 3, "100m", "100Mi", ownedA), pool("p", withReq(zone, "In", "test-1a"))), rs, minDomains(corev1.DoNotSchedule))
		}, unschedulable: 2, reason: "topology spread", check: wantSkew(zone, "a", 1)},
		{name: "should relax a synthesized ScheduleAnyway default when it can't be satisfied", in: func() scheduling.Input {
			return defaulted(input(pods("a", 3, "100m", "100Mi", ownedA), pool("p", withReq(zone, "In", "test-1a"))), rs, minDomains(corev1.ScheduleAnyway))
		}, check: wantSkew(zone, "a", 3)},
		{name: "should not apply the default to a pod with no owner and no matching service", in: func() scheduling.Input {
			return defaulted(input(pods("a", 3, "100m", "100Mi")), rs, hostDefault)
		}, check: newNodes(1)},
		// Two of the ReplicaSet's pods already run in test-1a (a node that
		// takes no more): counted through the deduced selector, both new
		// pods go to test-1b.
		{name: "should count pre-existing cluster pods through the deduced selector", in: func() scheduling.Input {
			return defaulted(withNodes(input(pods("a", 2, "100m", "100Mi", ownedA), pool("p", withReq(zone, "In", "test-1a", "test-1b"))),
				cordoned("old", "test-1a", pods("a-old", 2, "100m", "100Mi", ownedA)...)), rs, zoneDefault)
		}, check: wantSkew(zone, "a", 2, 2)},
		{name: "should spread each workload independently", in: func() scheduling.Input {
			src := scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("a", a), replicaSet("b", map[string]string{"app": "b"})}}
			return defaulted(input(concat(pods("a", 3, "100m", "100Mi", ownedA), pods("b", 3, "100m", "100Mi", owned(map[string]string{"app": "b"}, rsOwned("b"))))), src, zoneDefault)
		}, check: all(wantSkew(zone, "a", 1, 1, 1), wantSkew(zone, "b", 1, 1, 1))},
		// Each revision's ReplicaSet selects its pod-template-hash, so the
		// revisions spread on their own though all six pods are app=a.
		{name: "should spread each Deployment revision independently", in: func() scheduling.Input {
			old, cur := map[string]string{"app": "a", "pod-template-hash": "old"}, map[string]string{"app": "a", "pod-template-hash": "new"}
			src := scheduling.SpreadSources{ReplicaSets: []*appsv1.ReplicaSet{replicaSet("a-old", old), replicaSet("a-new", cur)}}
			return defaulted(input(concat(pods("old", 3, "100m", "100Mi", owned(old, rsOwned("a-old"))), pods("new", 3, "100m", "100Mi", owned(cur, rsOwned("a-new"))))), src, zoneDefault)
		}, check: all(perZone("pod-template-hash", "old", 1, 1, 1), perZone("pod-template-hash", "new", 1, 1, 1))},
		{name: "should deduce a selector from a matching service for a pod with no supported owner", in: func() scheduling.Input {
			src := scheduling.SpreadSources{Services: []*corev1.Service{service("a", "default", a)}}
			return defaulted(input(pods("a", 4, "100m", "100Mi", owned(a, controller("batch/v1", "Job", "test-job")))), src, zoneDefault)
		}, check: wantSkew(zone, "a", 2, 1, 1)},
	})
}

// BenchmarkWithDefaultSpread: 10,000 pending pods of 200 ReplicaSets in 20
// namespaces, each namespace with 50 Services (one selecting each
// workload): the cost a provisioner pass adds before Solve.
func BenchmarkWithDefaultSpread(b *testing.B) {
	var src scheduling.SpreadSources
	var ps []*corev1.Pod
	for w := range 200 {
		ns, app := fmt.Sprintf("ns-%d", w%20), fmt.Sprintf("app-%d", w)
		l := map[string]string{"app": app, "pod-template-hash": "h"}
		rs := replicaSet(app, l)
		rs.Namespace = ns
		src.ReplicaSets = append(src.ReplicaSets, rs)
		ps = append(ps, pods(app, 50, "100m", "100Mi", owned(l, rsOwned(app)), inNamespace(ns))...)
	}
	for n := range 20 {
		for s := range 50 {
			src.Services = append(src.Services, service(fmt.Sprintf("svc-%d", s), fmt.Sprintf("ns-%d", n), map[string]string{"app": fmt.Sprintf("app-%d", s*4)}))
		}
	}
	defaults := []corev1.TopologySpreadConstraint{zoneDefault}
	b.ResetTimer()
	for range b.N {
		out := scheduling.WithDefaultSpread(defaults, ps, src)
		if len(out[0].Spec.TopologySpreadConstraints) != 1 {
			b.Fatal("not defaulted")
		}
	}
}
