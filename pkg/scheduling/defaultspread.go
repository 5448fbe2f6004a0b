package scheduling

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// SchedulerConfig is Karpenter's --scheduler-config (SCHEDULER_CONFIG,
// v1.15): the part of the cluster's kube-scheduler configuration the
// simulation must mirror. Today that is only the PodTopologySpread
// plugin's defaultConstraints, under the same field names as
// kube-scheduler's, so a value can be copied from one to the other.
type SchedulerConfig struct {
	PodTopologySpread *PodTopologySpreadConfig `json:"podTopologySpread,omitempty"`
}

// PodTopologySpreadConfig mirrors kube-scheduler's PodTopologySpread args.
type PodTopologySpreadConfig struct {
	// DefaultConstraints are given, at scheduling time, to every pod that
	// declares no topologySpreadConstraints of its own, each with the
	// label selector kube-scheduler deduces for the pod (WithDefaultSpread).
	// They carry no labelSelector themselves.
	DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
}

// ParseSchedulerConfig reads a YAML or JSON scheduler config and validates
// it. "" is no config (nil). Unknown fields are errors, and so is any
// default constraint kube-scheduler would refuse; each error names the
// field (podTopologySpread.defaultConstraints[i].maxSkew, ...).
func ParseSchedulerConfig(raw string) (*SchedulerConfig, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	c := &SchedulerConfig{}
	if err := yaml.UnmarshalStrict([]byte(raw), c); err != nil {
		return nil, fmt.Errorf("scheduler config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate checks the default constraints as kube-scheduler's
// ValidatePodTopologySpreadArgs does (and Karpenter after it): maxSkew
// above 0, a topologyKey that is a label name, whenUnsatisfiable
// DoNotSchedule or ScheduleAnyway, no labelSelector (it is deduced per
// pod), no matchLabelKeys (it has no effect on defaults), and no two
// constraints with the same key and action.
func (c *SchedulerConfig) Validate() error {
	if c == nil || c.PodTopologySpread == nil {
		return nil
	}
	cs := c.PodTopologySpread.DefaultConstraints
	for i, t := range cs {
		field := fmt.Sprintf("scheduler config: podTopologySpread.defaultConstraints[%d]", i)
		switch {
		case t.MaxSkew <= 0:
			return fmt.Errorf("%s.maxSkew: %d, must be greater than 0", field, t.MaxSkew)
		case t.TopologyKey == "":
			return fmt.Errorf("%s.topologyKey: must be set", field)
		case len(validation.IsQualifiedName(t.TopologyKey)) > 0:
			return fmt.Errorf("%s.topologyKey: %q is not a label name: %s", field, t.TopologyKey, strings.Join(validation.IsQualifiedName(t.TopologyKey), "; "))
		case t.WhenUnsatisfiable != corev1.DoNotSchedule && t.WhenUnsatisfiable != corev1.ScheduleAnyway:
			return fmt.Errorf("%s.whenUnsatisfiable: %q, want %s or %s", field, t.WhenUnsatisfiable, corev1.DoNotSchedule, corev1.ScheduleAnyway)
		case t.LabelSelector != nil:
			return fmt.Errorf("%s.labelSelector: must not be set (the selector is deduced for each pod)", field)
		case len(t.MatchLabelKeys) > 0:
			return fmt.Errorf("%s.matchLabelKeys: must not be set (kube-scheduler ignores it on default constraints)", field)
		}
		for j := range cs[:i] {
			if cs[j].TopologyKey == t.TopologyKey && cs[j].WhenUnsatisfiable == t.WhenUnsatisfiable {
				return fmt.Errorf("%s: repeats defaultConstraints[%d] (%s, %s)", field, j, t.TopologyKey, t.WhenUnsatisfiable)
			}
		}
	}
	return nil
}

// Defaults are the default constraints (none for a nil config).
func (c *SchedulerConfig) Defaults() []corev1.TopologySpreadConstraint {
	if c == nil || c.PodTopologySpread == nil {
		return nil
	}
	return c.PodTopologySpread.DefaultConstraints
}

// SpreadSources are the objects a default spread's selector is deduced
// from, as kube-scheduler's helper.DefaultSelector reads them: the
// Services of the pods' namespaces, and the pods' controllers when they
// are ReplicationControllers, ReplicaSets or StatefulSets.
type SpreadSources struct {
	Services               []*corev1.Service
	ReplicationControllers []*corev1.ReplicationController
	ReplicaSets            []*appsv1.ReplicaSet
	StatefulSets           []*appsv1.StatefulSet
}

// SpreadOwner names a controller the deduction reads: Kind is
// ReplicationController, ReplicaSet or StatefulSet.
type SpreadOwner struct {
	Namespace, Kind, Name string
}

// The controllers kube-scheduler deduces a selector from (group/version
// and kind exactly, as it compares them).
var (
	kindReplicationController = corev1.SchemeGroupVersion.WithKind("ReplicationController")
	kindReplicaSet            = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	kindStatefulSet           = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// defaultSpreadTarget says whether a pod gets the defaults (when it
// deduces a selector): it declares no spread of its own, and it is one
// Solve places (not bound, not a DaemonSet's: those it skips, so reading
// their Services would be for nothing).
func defaultSpreadTarget(p *corev1.Pod) bool {
	if len(p.Spec.TopologySpreadConstraints) != 0 || p.Spec.NodeName != "" {
		return false
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.Kind == "DaemonSet" {
		return false
	}
	return true
}

// spreadOwner is the pod's controller when it is one the deduction reads.
func spreadOwner(p *corev1.Pod) (SpreadOwner, *metav1.OwnerReference, bool) {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil {
		return SpreadOwner{}, nil, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return SpreadOwner{}, ref, false
	}
	switch gvk := gv.WithKind(ref.Kind); gvk {
	case kindReplicationController, kindReplicaSet, kindStatefulSet:
		return SpreadOwner{Namespace: p.Namespace, Kind: gvk.Kind, Name: ref.Name}, ref, true
	}
	return SpreadOwner{}, ref, false
}

// DefaultSpreadReads are what WithDefaultSpread reads for these pods: the
// namespaces whose Services it matches, and the controllers it looks up,
// each once, sorted. Nothing without defaults, and nothing for pods that
// declare spreads of their own: a caller reads only these.
func DefaultSpreadReads(defaults []corev1.TopologySpreadConstraint, pods []*corev1.Pod) (namespaces []string, owners []SpreadOwner) {
	if len(defaults) == 0 {
		return nil, nil
	}
	seenNS, seenOwner := map[string]bool{}, map[SpreadOwner]bool{}
	for _, p := range pods {
		if !defaultSpreadTarget(p) {
			continue
		}
		if !seenNS[p.Namespace] {
			seenNS[p.Namespace] = true
			namespaces = append(namespaces, p.Namespace)
		}
		if o, _, ok := spreadOwner(p); ok && !seenOwner[o] {
			seenOwner[o] = true
			owners = append(owners, o)
		}
	}
	sort.Strings(namespaces)
	sort.Slice(owners, func(i, j int) bool {
		a, b := owners[i], owners[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	return namespaces, owners
}

// WithDefaultSpread gives the default constraints to the pods that declare
// no topologySpreadConstraints, as kube-scheduler's PodTopologySpread
// plugin does at scheduling time: each constraint gets the selector
// deduced for the pod (defaultSelector); a pod for which none can be
// deduced (no Service selects it and no supported controller) gets none.
// It returns the pods in order, a defaulted pod as a shallow copy with
// the constraints (the input pods are not changed, and the copies share
// everything else with them, so the result is as read-only as the
// input). The pods of one workload share one constraint list: Solve
// never changes a pod. Without defaults it returns pods itself.
func WithDefaultSpread(defaults []corev1.TopologySpreadConstraint, pods []*corev1.Pod, src SpreadSources) []*corev1.Pod {
	if len(defaults) == 0 {
		return pods
	}
	d := newSpreadDeducer(src)
	out := make([]*corev1.Pod, len(pods))
	shared := map[spreadShape][]corev1.TopologySpreadConstraint{}
	for i, p := range pods {
		out[i] = p
		if !defaultSpreadTarget(p) {
			continue
		}
		key := spreadShapeOf(p)
		tsc, ok := shared[key]
		if !ok {
			if sel := d.selector(p); sel != nil {
				tsc = make([]corev1.TopologySpreadConstraint, len(defaults))
				for j := range defaults {
					defaults[j].DeepCopyInto(&tsc[j])
					tsc[j].LabelSelector = sel.DeepCopy()
				}
			}
			shared[key] = tsc
		}
		if tsc == nil {
			continue
		}
		cp := *p
		cp.Spec.TopologySpreadConstraints = tsc
		out[i] = &cp
	}
	return out
}

// spreadShape is what a pod's deduced selector depends on: its namespace,
// its controller and its labels.
type spreadShape struct {
	namespace  string
	owner      types.UID
	ownerKind  string
	ownerName  string
	labelsText string
}

func spreadShapeOf(p *corev1.Pod) spreadShape {
	k := spreadShape{namespace: p.Namespace, labelsText: labels.Set(p.Labels).String()}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		k.owner, k.ownerKind, k.ownerName = ref.UID, ref.APIVersion+"/"+ref.Kind, ref.Name
	}
	return k
}

// spreadDeducer indexes the sources by namespace and name.
type spreadDeducer struct {
	services map[string][]*corev1.Service
	rcs      map[SpreadOwner]*corev1.ReplicationController
	rss      map[SpreadOwner]*appsv1.ReplicaSet
	sss      map[SpreadOwner]*appsv1.StatefulSet
}

func newSpreadDeducer(src SpreadSources) *spreadDeducer {
	d := &spreadDeducer{services: map[string][]*corev1.Service{},
		rcs: map[SpreadOwner]*corev1.ReplicationController{}, rss: map[SpreadOwner]*appsv1.ReplicaSet{}, sss: map[SpreadOwner]*appsv1.StatefulSet{}}
	for _, s := range src.Services {
		d.services[s.Namespace] = append(d.services[s.Namespace], s)
	}
	for _, o := range src.ReplicationControllers {
		d.rcs[SpreadOwner{o.Namespace, kindReplicationController.Kind, o.Name}] = o
	}
	for _, o := range src.ReplicaSets {
		d.rss[SpreadOwner{o.Namespace, kindReplicaSet.Kind, o.Name}] = o
	}
	for _, o := range src.StatefulSets {
		d.sss[SpreadOwner{o.Namespace, kindStatefulSet.Kind, o.Name}] = o
	}
	return d
}

// selector is kube-scheduler's helper.DefaultSelector for the pod: the
// selectors of the Services of its namespace that select it, merged as
// equalities (a key two Services set takes the later one's value), then
// its controller's: a ReplicationController's selector merged the same
// way (overwriting), a ReplicaSet's or StatefulSet's added as
// requirements (ANDed, so a contradiction selects nothing, as upstream).
// A Service with no selector selects nothing; a controller that is not
// among the sources (deleted) adds nothing. nil when nothing was deduced:
// an empty selector would count every pod of the namespace.
func (d *spreadDeducer) selector(p *corev1.Pod) *metav1.LabelSelector {
	match := map[string]string{}
	for _, s := range d.services[p.Namespace] {
		if s.Spec.Selector != nil && selects(s.Spec.Selector, p.Labels) {
			for k, v := range s.Spec.Selector {
				match[k] = v
			}
		}
	}
	var exprs []metav1.LabelSelectorRequirement
	if o, _, ok := spreadOwner(p); ok {
		switch o.Kind {
		case kindReplicationController.Kind:
			if rc := d.rcs[o]; rc != nil {
				for k, v := range rc.Spec.Selector {
					match[k] = v
				}
			}
		case kindReplicaSet.Kind:
			if rs := d.rss[o]; rs != nil {
				exprs = requirementsOf(rs.Spec.Selector)
			}
		case kindStatefulSet.Kind:
			if ss := d.sss[o]; ss != nil {
				exprs = requirementsOf(ss.Spec.Selector)
			}
		}
	}
	if len(match) == 0 && len(exprs) == 0 {
		return nil
	}
	if len(match) == 0 {
		match = nil
	}
	return &metav1.LabelSelector{MatchLabels: match, MatchExpressions: exprs}
}

// selects says whether an equality selector (a Service's) selects these
// labels: every key has its value (an empty selector selects all).
func selects(sel, l map[string]string) bool {
	for k, v := range sel {
		if lv, ok := l[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

// requirementsOf is a selector as requirements: each matchLabels entry
// an In of its one value (sorted by key), then the expressions, copied.
func requirementsOf(s *metav1.LabelSelector) []metav1.LabelSelectorRequirement {
	if s == nil {
		return nil
	}
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]metav1.LabelSelectorRequirement, 0, len(keys)+len(s.MatchExpressions))
	for _, k := range keys {
		out = append(out, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{s.MatchLabels[k]}})
	}
	for i := range s.MatchExpressions {
		out = append(out, *s.MatchExpressions[i].DeepCopy())
	}
	return out
}
