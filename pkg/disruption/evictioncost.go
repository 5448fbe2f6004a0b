package disruption

import (
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// AnnotationDisruptionCost is Karpenter v1's pod annotation weighing its
// eviction in the order consolidation tries candidates in.
const AnnotationDisruptionCost = "karpenter.sh/disruption-cost"

// EvictionCost weighs a pod's eviction as Karpenter v1.15 does
// (utils/disruption.EvictionCost, with its PodDeletionCostManagement gate
// off, the default): 1, plus karpenter.sh/disruption-cost or else the
// ReplicaSet controller's controller.kubernetes.io/pod-deletion-cost,
// over 2^27 (an int32: from about -15 to +17 pods). A value that is not
// an int32 is passed over. Consolidation orders its candidates by price
// over 1 + the sum of their evicted pods' costs (each at least 0).
func EvictionCost(p *corev1.Pod) float64 {
	cost := 1.0
	v, ok := p.Annotations[AnnotationDisruptionCost]
	if !ok {
		v, ok = p.Annotations[corev1.PodDeletionCost]
	}
	if ok {
		if c, err := strconv.ParseInt(v, 10, 32); err == nil {
			cost += float64(c) / math.Pow(2, 27)
		}
	}
	return cost
}
