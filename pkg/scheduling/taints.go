package scheduling

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// ephemeralTaints are put on nodes while they boot or register and go away
// on their own; an in-flight node is planned as if they were gone, as
// Karpenter does.
var ephemeralTaints = map[string]bool{
	corev1.TaintNodeNotReady:                         true,
	corev1.TaintNodeUnreachable:                      true,
	"node.cloudprovider.kubernetes.io/uninitialized": true,
	"karpenter.sh/unregistered":                      true,
	"joist.sh/unregistered":                          true,
}

// isStartupTaint says whether t is a startup taint of the named pool
// (matched by key and effect, as Karpenter does): the agent that owns it
// removes it once the node is ready, so an in-flight node of the pool is
// planned as if it were gone, like a new node.
func isStartupTaint(pools []*model.Pool, pool string, t corev1.Taint) bool {
	for _, p := range pools {
		if p.Name != pool {
			continue
		}
		for _, st := range p.StartupTaints {
			if st.MatchTaint(&t) {
				return true
			}
		}
	}
	return false
}

// daemonSetTolerations are the tolerations the DaemonSet controller adds to
// every DaemonSet pod, so overhead is computed for the pods that will
// really exist.
var daemonSetTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// tolerates reports whether one toleration matches a taint, with the
// Kubernetes rules (empty effect and key match all; Exists ignores the
// value; Gt and Lt compare integers).
func tolerates(t *corev1.Toleration, taint *corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", corev1.TolerationOpEqual:
		return t.Value == taint.Value
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpLt, corev1.TolerationOpGt:
		tv, err1 := strconv.ParseInt(t.Value, 10, 64)
		nv, err2 := strconv.ParseInt(taint.Value, 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if t.Operator == corev1.TolerationOpLt {
			return nv < tv
		}
		return nv > tv
	}
	return false
}

// firstUntolerated returns the first taint the tolerations do not cover.
// NoSchedule and NoExecute always count; PreferNoSchedule counts when
// strict, because Karpenter treats it as a requirement until it relaxes the
// pod (the last relaxation step).
func firstUntolerated(tols []corev1.Toleration, taints []corev1.Taint, strict bool) (corev1.Taint, bool) {
	for i := range taints {
		tn := &taints[i]
		if tn.Effect == corev1.TaintEffectPreferNoSchedule && !strict {
			continue
		}
		ok := false
		for j := range tols {
			if tolerates(&tols[j], tn) {
				ok = true
				break
			}
		}
		if !ok {
			return *tn, true
		}
	}
	return corev1.Taint{}, false
}

// taintString renders a taint as key=value:Effect.
func taintString(t corev1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}
