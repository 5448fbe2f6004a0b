package provisioning

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
)

// newNode is a node the plan launches.
type newNode struct {
	pool    *model.Pool
	options []option // cheapest first
	pods    []*corev1.Pod
	labels  map[string]string
}

type option struct {
	typ      *catalog.InstanceType
	offering catalog.Offering
}

// naivePlan is the walking skeleton's packer: per pool (highest weight
// first), the pods the pool can take all go on one new node of the
// cheapest type and offering that holds them.
func naivePlan(pending []*corev1.Pod, spec *model.Spec, cat *catalog.Catalog, available func(t string) []catalog.Offering) ([]newNode, map[*corev1.Pod]string) {
	pools := append([]*model.Pool(nil), spec.Pools...)
	sort.SliceStable(pools, func(i, j int) bool {
		if pools[i].Weight != pools[j].Weight {
			return pools[i].Weight > pools[j].Weight
		}
		return pools[i].Name < pools[j].Name
	})
	left := append([]*corev1.Pod(nil), pending...)
	var nodes []newNode
	for _, pool := range pools {
		labels := poolLabels(pool)
		probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
		var mine, rest []*corev1.Pod
		for _, p := range left {
			if tolerates(p, pool.Taints) && matches(p, probe) {
				mine = append(mine, p)
			} else {
				rest = append(rest, p)
			}
		}
		if len(mine) == 0 {
			continue
		}
		total := corev1.ResourceList{}
		for _, p := range mine {
			for k, v := range pods.Requests(p) {
				q := total[k]
				q.Add(v)
				total[k] = q
			}
		}
		var opts []option
		for _, t := range cat.Types() {
			if !fits(total, t.Allocatable(pool.Kubelet)) {
				continue
			}
			for _, o := range available(t.Name) {
				l := t.Labels()
				for k, v := range labels {
					l[k] = v
				}
				l[model.LabelZone] = o.Zone
				l[model.LabelCapacityType] = o.CapacityType
				if requirementsMatch(pool.Requirements, l) {
					opts = append(opts, option{typ: t, offering: o})
				}
			}
		}
		if len(opts) == 0 {
			continue
		}
		sort.SliceStable(opts, func(i, j int) bool {
			if opts[i].offering.Price != opts[j].offering.Price {
				return opts[i].offering.Price < opts[j].offering.Price
			}
			return opts[i].typ.Name < opts[j].typ.Name
		})
		nodes = append(nodes, newNode{pool: pool, options: opts, pods: mine, labels: labels})
		left = rest
	}
	why := map[*corev1.Pod]string{}
	for _, p := range left {
		why[p] = "no pool can take the pod"
	}
	return nodes, why
}

// poolLabels are the labels every node of the pool carries: its labels,
// the values its requirements fix, and the pool name label.
func poolLabels(p *model.Pool) map[string]string {
	l := map[string]string{}
	for _, r := range p.Requirements {
		if r.Operator == string(corev1.NodeSelectorOpIn) && len(r.Values) == 1 {
			l[r.Key] = r.Values[0]
		}
	}
	for k, v := range p.Labels {
		l[k] = v
	}
	l[p.Label()] = p.Name
	return l
}

func tolerates(p *corev1.Pod, taints []corev1.Taint) bool {
	_, bad := schedcorev1.FindMatchingUntoleratedTaint(klog.Background(), taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return !bad
}

func matches(p *corev1.Pod, n *corev1.Node) bool {
	ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n)
	return err == nil && ok
}

func requirementsMatch(reqs []model.Requirement, labels map[string]string) bool {
	var exprs []corev1.NodeSelectorRequirement
	for _, r := range reqs {
		switch r.Operator {
		case "Gte", "Lte":
			continue // not in the core API; the simulator handles them
		}
		exprs = append(exprs, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOperator(r.Operator), Values: r.Values})
	}
	ns := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: exprs}}}
	sel, err := nodeaffinity.NewNodeSelector(ns)
	if err != nil {
		return false
	}
	return sel.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}})
}

func fits(want, have corev1.ResourceList) bool {
	for k, v := range want {
		h, ok := have[k]
		if !ok {
			if v.IsZero() {
				continue
			}
			return false
		}
		if v.Cmp(h) > 0 {
			return false
		}
	}
	return true
}
