package pods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
		for _, a := range HostPorts(c.a) {
			for _, b := range HostPorts(c.b) {
				got = got || a.ClashesWith(b)
			}
		}
		if got != c.want {
			t.Errorf("%s: clash = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestAffinitySelectorAddsMatchAndMismatchLabelKeys(t *testing.T) {
	owner := map[string]string{"app": "web", "pod-template-hash": "abc", "tenant": "a"}
	ls := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	sel := AffinitySelector(ls, owner, []string{"pod-template-hash", "absent"}, []string{"tenant"})
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
	if AffinitySelector(nil, owner, nil, nil).Matches(labels.Set(owner)) {
		t.Error("no selector must select nothing")
	}
}
