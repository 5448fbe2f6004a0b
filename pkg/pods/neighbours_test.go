package pods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFits_Neighbours: what kube-scheduler's NodePorts and InterPodAffinity
// filters refuse, the binder refuses too: a pod kube-scheduler put on the
// new node since the plan must not end up sharing a host port or breaking
// a required anti-affinity with a pod the binder binds there.
func TestFits_Neighbours(t *testing.T) {
	node := readyNode("8", "32Gi")
	node.Spec.Taints = nil
	node.Labels = map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: "us-east-1a"}
	withPort := func(p *corev1.Pod, port int32, proto corev1.Protocol, ip string) *corev1.Pod {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: proto, HostIP: ip})
		return p
	}
	sidecarPort := func(p *corev1.Pod, port int32) *corev1.Pod {
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always, Ports: []corev1.ContainerPort{{ContainerPort: port, HostPort: port}}}}
		return p
	}
	labelled := func(p *corev1.Pod, kv ...string) *corev1.Pod {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
		return p
	}
	inNamespace := func(p *corev1.Pod, ns string) *corev1.Pod { p.Namespace = ns; return p }
	apart := func(p *corev1.Pod, key string, term func(*corev1.PodAffinityTerm)) *corev1.Pod {
		tm := corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		if term != nil {
			term(&tm)
		}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{tm}}}
		return p
	}
	near := func(p *corev1.Pod, key string) *corev1.Pod {
		tm := corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{tm}}}
		return p
	}
	web := func(name string) *corev1.Pod {
		return labelled(pod(name, "100m", "128Mi"), "app", "web", "pod-template-hash", "h1")
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		onNode  []*corev1.Pod
		wantErr string
	}{
		{"a host port taken", withPort(pod("a", "1", "1Gi"), 8080, "", ""), []*corev1.Pod{withPort(pod("b", "1", "1Gi"), 8080, corev1.ProtocolTCP, "")},
			"host port TCP/8080 is taken by pod default/b on node n1"},
		{"a host port taken on all addresses", withPort(pod("a", "1", "1Gi"), 8080, "", "10.0.0.1"), []*corev1.Pod{withPort(pod("b", "1", "1Gi"), 8080, "", "0.0.0.0")},
			"host port"},
		{"a host port on another address", withPort(pod("a", "1", "1Gi"), 8080, "", "10.0.0.1"), []*corev1.Pod{withPort(pod("b", "1", "1Gi"), 8080, "", "10.0.0.2")}, ""},
		{"a host port of another protocol", withPort(pod("a", "1", "1Gi"), 53, corev1.ProtocolUDP, ""), []*corev1.Pod{withPort(pod("b", "1", "1Gi"), 53, corev1.ProtocolTCP, "")}, ""},
		{"a sidecar's host port", sidecarPort(pod("a", "1", "1Gi"), 15001), []*corev1.Pod{sidecarPort(pod("b", "1", "1Gi"), 15001)}, "host port TCP/15001"},
		{"a finished pod's host port", withPort(pod("a", "1", "1Gi"), 8080, "", ""), []*corev1.Pod{func() *corev1.Pod {
			p := withPort(pod("b", "1", "1Gi"), 8080, "", "")
			p.Status.Phase = corev1.PodSucceeded
			return p
		}()}, ""},
		{"the pod's anti-affinity", apart(web("a"), corev1.LabelHostname, nil), []*corev1.Pod{web("b")},
			"pod default/b on node n1 matches the pod's required anti-affinity (kubernetes.io/hostname)"},
		{"a zone's anti-affinity is broken on the node", apart(web("a"), corev1.LabelTopologyZone, nil), []*corev1.Pod{web("b")}, "required anti-affinity"},
		{"a neighbour's anti-affinity", web("a"), []*corev1.Pod{apart(labelled(pod("b", "1", "1Gi"), "app", "db"), corev1.LabelHostname, nil)},
			"the pod matches the required anti-affinity (kubernetes.io/hostname) of pod default/b on node n1"},
		{"anti-affinity in another namespace", apart(web("a"), corev1.LabelHostname, nil), []*corev1.Pod{inNamespace(web("b"), "other")}, ""},
		{"anti-affinity naming the namespace", apart(web("a"), corev1.LabelHostname, func(tm *corev1.PodAffinityTerm) { tm.Namespaces = []string{"other"} }),
			[]*corev1.Pod{inNamespace(web("b"), "other")}, "required anti-affinity"},
		{"anti-affinity over every namespace", apart(web("a"), corev1.LabelHostname, func(tm *corev1.PodAffinityTerm) { tm.NamespaceSelector = &metav1.LabelSelector{} }),
			[]*corev1.Pod{inNamespace(web("b"), "other")}, "required anti-affinity"},
		{"anti-affinity on a key the node lacks", apart(web("a"), "rack", nil), []*corev1.Pod{web("b")}, ""},
		{"anti-affinity by matchLabelKeys, another revision", apart(web("a"), corev1.LabelHostname, func(tm *corev1.PodAffinityTerm) { tm.MatchLabelKeys = []string{"pod-template-hash"} }),
			[]*corev1.Pod{labelled(pod("b", "100m", "128Mi"), "app", "web", "pod-template-hash", "h2")}, ""},
		{"anti-affinity by matchLabelKeys, the same revision", apart(web("a"), corev1.LabelHostname, func(tm *corev1.PodAffinityTerm) { tm.MatchLabelKeys = []string{"pod-template-hash"} }),
			[]*corev1.Pod{web("b")}, "required anti-affinity"},
		{"the pod itself", apart(web("a"), corev1.LabelHostname, nil), []*corev1.Pod{web("a")}, ""},
		{"affinity met on the node", near(labelled(pod("a", "1", "1Gi"), "app", "api"), corev1.LabelHostname), []*corev1.Pod{web("b")}, ""},
		{"affinity met by no pod on the node", near(labelled(pod("a", "1", "1Gi"), "app", "api"), corev1.LabelHostname),
			[]*corev1.Pod{labelled(pod("b", "1", "1Gi"), "app", "db")}, "no pod on node n1 meets the pod's required pod affinity (kubernetes.io/hostname)"},
		{"affinity on an empty node", near(labelled(pod("a", "1", "1Gi"), "app", "api"), corev1.LabelHostname), nil, "required pod affinity"},
		{"affinity met only by a finished pod", near(labelled(pod("a", "1", "1Gi"), "app", "api"), corev1.LabelHostname), []*corev1.Pod{func() *corev1.Pod {
			p := web("b")
			p.Status.Phase = corev1.PodFailed
			return p
		}()}, "required pod affinity"},
		{"affinity the pod meets itself", near(web("a"), corev1.LabelHostname), nil, ""},
		{"affinity the pod meets only in part itself", func() *corev1.Pod {
			p := near(web("a"), corev1.LabelHostname)
			pa := p.Spec.Affinity.PodAffinity
			pa.RequiredDuringSchedulingIgnoredDuringExecution = append(pa.RequiredDuringSchedulingIgnoredDuringExecution,
				corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}})
			return p
		}(), nil, "required pod affinity"},
		{"affinity by namespace labels, left to the plan", func() *corev1.Pod {
			p := near(labelled(pod("a", "1", "1Gi"), "app", "api"), corev1.LabelHostname)
			p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}
			return p
		}(), []*corev1.Pod{inNamespace(web("b"), "data")}, ""},
		{"affinity by zone, met elsewhere", near(labelled(pod("a", "1", "1Gi"), "app", "api"), corev1.LabelTopologyZone), nil, ""},
		{"affinity on a key the node lacks", near(web("a"), "rack"), []*corev1.Pod{web("b")}, "node n1 has no label rack for the pod's required pod affinity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantFit(t, Fits(tc.pod, node, tc.onNode), tc.wantErr)
		})
	}
}
