package catalog

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/kubeletcel"
	"github.com/joist-dev/joist/pkg/model"
)

// KubeletFor is the kubelet settings k for a node of this type and node
// class (nil: AL2023 with defaults): with the NodeClassCEL gate on
// (model.Kubelet.EvaluateCEL), its CEL expressions evaluated for the type
// (pkg/kubeletcel), as Karpenter sizes the type and writes the node's
// kubelet configuration; else k itself. A maxPods expression that fails
// for the type (an error, or a result out of range) gives it no pods, so
// nothing is planned onto it; a reservation that fails is left out, as
// Karpenter leaves it out. The launch writes these settings into the
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
