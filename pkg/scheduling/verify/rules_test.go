package verify

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

func TestLabelValueReadsAliases(t *testing.T) {
	l := map[string]string{"failure-domain.beta.kubernetes.io/zone": "us-east-1a", "kubernetes.io/arch": "arm64"}
	for key, want := range map[string]string{
		"topology.kubernetes.io/zone":   "us-east-1a",
		"topology.ebs.csi.aws.com/zone": "us-east-1a",
		"beta.kubernetes.io/arch":       "arm64",
	} {
		if got, ok := labelValue(l, key); !ok || got != want {
			t.Errorf("labelValue(%s) = %q, %v; want %q", key, got, ok, want)
		}
	}
	if _, ok := labelValue(l, "topology.kubernetes.io/region"); ok {
		t.Error("a region was found on a node without one")
	}
}

func TestDaemonSetTolerations(t *testing.T) {
	unavailable := corev1.Taint{Key: "node.kubernetes.io/network-unavailable", Effect: corev1.TaintEffectNoSchedule}
	tolerates := func(p *corev1.Pod) bool {
		for _, tol := range daemonSetTolerations(p) {
			if tol.ToleratesTaint(klog.Background(), &unavailable, true) {
				return true
			}
		}
		return false
	}
	if tolerates(&corev1.Pod{}) {
		t.Error("a pod network DaemonSet pod tolerates network-unavailable")
	}
	if !tolerates(&corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true}}) {
		t.Error("a host-network DaemonSet pod does not tolerate network-unavailable")
	}
}

func TestMatchNodeReadsDeprecatedLabels(t *testing.T) {
	node := map[string]string{corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "us-east-1a", corev1.LabelArchStable: "amd64"}
	for _, c := range []struct {
		key, value string
		want       bool
	}{
		{corev1.LabelInstanceType, "m5.large", true},
		{corev1.LabelInstanceType, "m5.xlarge", false},
		{corev1.LabelFailureDomainBetaZone, "us-east-1a", true},
		{"topology.ebs.csi.aws.com/zone", "us-east-1a", true},
		{"beta.kubernetes.io/arch", "amd64", true},
		{corev1.LabelFailureDomainBetaRegion, "us-east-1", false}, // the node has no region
	} {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{c.key: c.value}}}
		if got := matchNode(p, node); got != c.want {
			t.Errorf("%s=%s: match = %v, want %v", c.key, c.value, got, c.want)
		}
	}
	if len(node) != 3 {
		t.Errorf("matchNode changed the node's labels: %v", node)
	}
}
