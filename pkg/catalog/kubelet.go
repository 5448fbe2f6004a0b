package catalog

import (
	"encoding/json"
	"fmt"
	"sort"
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
	out := *k
	out.EvaluateCEL = false
	enis := t.MaxENIsDefaultCard
	if enis <= 0 {
		enis = t.MaxENIs
	}
	vars := kubeletcel.Vars{VCPUs: t.VCPU, MemoryMiB: t.MemoryMiB, DefaultENIs: enis, IPsPerENI: t.IPv4PerENI, InstanceType: t.Name}
	if k.MaxPodsExpression != "" {
		// max_pods is the family's default here: the expression cannot
		// read its own result.
		def := out
		def.MaxPodsExpression, def.MaxPods = "", nil
		vars.MaxPods = t.maxPods(&def, s)
		n, err := kubeletcel.MaxPods(k.MaxPodsExpression, vars)
		if err != nil {
			n = 0
		}
		out.MaxPods, out.MaxPodsExpression = &n, ""
	}
	vars.MaxPods = t.maxPods(&out, s)
	out.KubeReserved = resolveReserved(k.KubeReserved, vars)
	out.SystemReserved = resolveReserved(k.SystemReserved, vars)
	return &out
}

// resolveReserved is a kubeReserved or systemReserved map with its
// expressions evaluated, those that fail left out.
func resolveReserved(m map[string]string, vars kubeletcel.Vars) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for name, v := range m {
		if _, err := resource.ParseQuantity(v); err == nil {
			out[name] = v
			continue
		}
		if q, err := kubeletcel.Reserved(name, v, vars); err == nil {
			out[name] = q
		}
	}
	return out
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
		enis := t.MaxENIsDefaultCard
		if enis <= 0 {
			enis = t.MaxENIs
		}
		vars := kubeletcel.Vars{VCPUs: t.VCPU, MemoryMiB: t.MemoryMiB, DefaultENIs: enis, IPsPerENI: t.IPv4PerENI, InstanceType: t.Name}
		def := *k
		def.EvaluateCEL, def.MaxPodsExpression, def.MaxPods = false, "", nil
		vars.MaxPods = t.maxPods(&def, s)
		if k.MaxPodsExpression != "" {
			n, err := kubeletcel.MaxPods(k.MaxPodsExpression, vars)
			if err != nil {
				return fmt.Sprintf("node class %q: spec.kubelet.maxPods: %v", nc.Name, err)
			}
			vars.MaxPods = int64(n)
		}
		for _, f := range []struct {
			name string
			m    map[string]string
		}{{"kubeReserved", k.KubeReserved}, {"systemReserved", k.SystemReserved}} {
			names := make([]string, 0, len(f.m))
			for name := range f.m {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				if _, err := resource.ParseQuantity(f.m[name]); err == nil {
					continue
				}
				if _, err := kubeletcel.Reserved(name, f.m[name], vars); err != nil {
					return fmt.Sprintf("node class %q: spec.kubelet.%s.%s: %v", nc.Name, f.name, name, err)
				}
			}
		}
	}
	return ""
}
