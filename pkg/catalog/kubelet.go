package catalog

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/kubeletcel"
	"github.com/joist-dev/joist/pkg/model"
)

// KubeletFor is the kubelet settings k for a node of this type and node
// class (nil: AL2023 with defaults): with the NodeClassCEL gate on
// (model.Kubelet.EvaluateCEL), its CEL expressions evaluated for the type
// (pkg/kubeletcel), as Karpenter sizes the type and writes the node's
// kubelet configuration; else k itself. A class whose expressions fail
// for a type launches nothing (KubeletNotReady); for a type only a live
// catalog knows, a maxPods expression that fails gives it no pods, so
// nothing is planned onto it, and a reservation that fails is left out,
// as Karpenter leaves it out. The launch writes these settings into the
// node's user data, so the node is what the plan sized.
func (t *InstanceType) KubeletFor(k *model.Kubelet, nc *model.NodeClass) *model.Kubelet {
	return t.kubeletFor(k, shapeOf(nc))
}

func (t *InstanceType) kubeletFor(k *model.Kubelet, s shape) *model.Kubelet {
	if k == nil || !k.EvaluateCEL || len(k.Expressions()) == 0 {
		return k
	}
	out, _ := t.evaluate(k, s)
	return out
}

// evaluate is k with its CEL expressions evaluated for the type, and the
// first that failed (maxPods, then the reservations by name), naming its
// path: a failed maxPods gives the type no pods, a failed reservation is
// left out.
func (t *InstanceType) evaluate(k *model.Kubelet, s shape) (*model.Kubelet, error) {
	out := *k
	out.EvaluateCEL = false
	vars := kubeletcel.Vars{VCPUs: t.VCPU, MemoryMiB: t.MemoryMiB, DefaultENIs: t.defaultCardENIs(), IPsPerENI: t.IPv4PerENI, InstanceType: t.Name}
	var first error
	if k.MaxPodsExpression != "" {
		// max_pods is the family's default here: the expression cannot
		// read its own result.
		def := out
		def.MaxPodsExpression, def.MaxPods = "", nil
		vars.MaxPods = t.maxPods(&def, s)
		n, err := kubeletcel.MaxPods(k.MaxPodsExpression, vars)
		if err != nil {
			first = fmt.Errorf("spec.kubelet.maxPods: %w", err)
		}
		out.MaxPods, out.MaxPodsExpression = &n, ""
	}
	vars.MaxPods = t.maxPods(&out, s)
	resolve := func(field string, m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		r := make(map[string]string, len(m))
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if _, err := resource.ParseQuantity(m[name]); err == nil {
				r[name] = m[name]
			} else if q, err := kubeletcel.Reserved(name, m[name], vars); err == nil {
				r[name] = q
			} else if first == nil {
				first = fmt.Errorf("spec.kubelet.%s.%s: %w", field, name, err)
			}
		}
		return r
	}
	out.KubeReserved = resolve("kubeReserved", k.KubeReserved)
	out.SystemReserved = resolve("systemReserved", k.SystemReserved)
	return &out, first
}

// KubeletNotReady is model.KubeletNotReady, and with the NodeClassCEL
// gate on also the first instance type (of those the class runs, by
// name) for which one of the expressions fails: an error, or a result
// out of range. Karpenter v1.15 evaluates them against every instance
// type it knows and marks the class not ready when one fails, rather than
// launch nodes configured from a wrong value. The answer is kept by
// settings and class (the passes of a warm function ask again).
func KubeletNotReady(nc *model.NodeClass, k *model.Kubelet) string {
	if why := model.KubeletNotReady(nc, k); why != "" || k == nil || !k.EvaluateCEL || len(k.Expressions()) == 0 {
		return why
	}
	kb, _ := json.Marshal(k)
	key := string(kb) + "|" + SizeKey(nc) + "|" + LabelKey(nc)
	if why, ok := evalAnswers.Load(key); ok {
		return why.(string)
	}
	why := evalFailure(nc, k)
	evalAnswers.Store(key, why)
	return why
}

// evalAnswers are KubeletNotReady's evaluations over the catalog.
var evalAnswers sync.Map // string -> string

func evalFailure(nc *model.NodeClass, k *model.Kubelet) string {
	s := shapeOf(nc)
	for _, t := range All() {
		if !t.Runs(nc) {
			continue
		}
		if _, err := t.evaluate(k, s); err != nil {
			return fmt.Sprintf("node class %q: %v", nc.Name, err)
		}
	}
	return ""
}
