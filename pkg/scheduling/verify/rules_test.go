package verify

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

func TestHostPortClashes(t *testing.T) {
	pod := func(ip string, proto corev1.Protocol, port int32) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{ContainerPort: 80, HostIP: ip, Protocol: proto, HostPort: port}}}}}}
	}
	for _, c := range []struct {
		name string
		a, b *corev1.Pod
		want bool
	}{
		{"same port, defaults", pod("", "", 80), pod("", "", 80), true},
		{"empty protocol is TCP", pod("", "", 80), pod("", corev1.ProtocolTCP, 80), true},
		{"other protocol", pod("", corev1.ProtocolUDP, 80), pod("", corev1.ProtocolTCP, 80), false},
		{"other port", pod("", "", 80), pod("", "", 81), false},
		{"every address against one", pod("0.0.0.0", "", 80), pod("10.0.0.1", "", 80), true},
		{"empty IP is every address", pod("", "", 80), pod("10.0.0.1", "", 80), true},
		{"two addresses", pod("10.0.0.2", "", 80), pod("10.0.0.1", "", 80), false},
		{"no host port", pod("", "", 0), pod("", "", 0), false},
	} {
		got := false
		for _, a := range hostPortsOf(c.a) {
			for _, b := range hostPortsOf(c.b) {
				got = got || a.clashesWith(b)
			}
		}
		if got != c.want {
			t.Errorf("%s: clash = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPodSelectorAddsMatchAndMismatchLabelKeys(t *testing.T) {
	owner := map[string]string{"app": "web", "pod-template-hash": "abc", "tenant": "a"}
	ls := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	sel := podSelector(ls, owner, []string{"pod-template-hash", "absent"}, []string{"tenant"})
	for _, c := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"app": "web", "pod-template-hash": "abc", "tenant": "b"}, true},
		{map[string]string{"app": "web", "pod-template-hash": "old", "tenant": "b"}, false}, // matchLabelKeys
		{map[string]string{"app": "web", "pod-template-hash": "abc", "tenant": "a"}, false}, // mismatchLabelKeys
		{map[string]string{"app": "db", "pod-template-hash": "abc"}, false},
	} {
		if got := sel.Matches(labels.Set(c.labels)); got != c.want {
			t.Errorf("selector %s on %v = %v, want %v", sel, c.labels, got, c.want)
		}
	}
	if podSelector(nil, owner, nil, nil).Matches(labels.Set(owner)) {
		t.Error("no selector must select nothing")
	}
}

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
