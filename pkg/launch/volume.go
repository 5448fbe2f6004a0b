package launch

import "k8s.io/apimachinery/pkg/api/resource"

// volumeGiB converts a Kubernetes quantity ("20Gi", "100G") to whole GiB
// for EBS, rounding up.
func volumeGiB(s string) (int32, bool) {
	if s == "" {
		return 0, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, false
	}
	const gib = 1 << 30
	v := (q.Value() + gib - 1) / gib
	return int32(v), v > 0
}
