package pods

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The pod annotations that ask Joist, as they ask Karpenter, not to
// disrupt a pod: v1's karpenter.sh/do-not-disrupt and v0.20's
// karpenter.sh/do-not-evict.
const (
	AnnotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	AnnotationDoNotEvict   = "karpenter.sh/do-not-evict"
)

// DoNotDisruptUntil reads a pod's do-not-disrupt protection. Karpenter
// v1.15 (pkg/utils/pod IsDoNotDisruptActive) takes two forms of
// karpenter.sh/do-not-disrupt: "true", for good, and a positive Go
// duration ("30m", "2h"), for that long after the pod started
// (status.startTime); a pod not started yet is protected (its clock has
// not begun). v0.20's do-not-evict knows "true" alone. Any other value
// protects nothing, as in Karpenter, and err says why, naming the pod
// and the annotation, for the caller to report.
//
// protected says whether the pod asks at all; until is when the
// protection ends, zero when it does not end.
func DoNotDisruptUntil(p *corev1.Pod) (until time.Time, protected bool, err error) {
	if p.Annotations[AnnotationDoNotEvict] == "true" {
		return time.Time{}, true, nil
	}
	v, ok := p.Annotations[AnnotationDoNotDisrupt]
	if !ok {
		return time.Time{}, false, nil
	}
	if v == "true" {
		return time.Time{}, true, nil
	}
	d, perr := time.ParseDuration(v)
	switch {
	case perr != nil:
		return time.Time{}, false, fmt.Errorf("pod %s: annotation %s=%q is neither \"true\" nor a duration; it protects nothing", Key(p), AnnotationDoNotDisrupt, v)
	case d <= 0:
		return time.Time{}, false, fmt.Errorf("pod %s: annotation %s=%q is not a positive duration; it protects nothing", Key(p), AnnotationDoNotDisrupt, v)
	}
	if p.Status.StartTime == nil {
		return time.Time{}, true, nil
	}
	return p.Status.StartTime.Add(d), true, nil
}

// DoNotDisrupt reports whether the pod's do-not-disrupt protection
// (DoNotDisruptUntil) is in force at now; an unreadable value is not.
func DoNotDisrupt(p *corev1.Pod, now time.Time) bool {
	until, protected, _ := DoNotDisruptUntil(p)
	return protected && (until.IsZero() || now.Before(until))
}
