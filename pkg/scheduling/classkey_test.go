package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClassKeyReusesOnlyTheSameContainers: classKey reuses the previous
// pod's requests hash when a pod's containers, init containers and
// pod-level resources are the previous pod's very arrays (pods expanded
// from one template), and each key is the one hashing the pod afresh
// gives: a pod with its own containers, another overhead, other init
// containers or other pod-level resources is hashed in full.
func TestClassKeyReusesOnlyTheSameContainers(t *testing.T) {
	cpu := func(m int64) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(m, resource.DecimalSI)}
	}
	base := &corev1.Pod{}
	base.Name, base.Namespace = "a", "default"
	base.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(500)}}}
	base.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: cpu(100)}}}
	twin := func(edit func(p *corev1.Pod)) *corev1.Pod {
		p := *base // shares the spec's arrays, as template expansion does
		p.Name = "b"
		edit(&p)
		return &p
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		reuse   bool
		sameRes bool
	}{
		{"same arrays", twin(func(*corev1.Pod) {}), true, true},
		{"own containers, other request", twin(func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(700)}}}
		}), false, false},
		{"own containers, same request", twin(func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(500)}}}
		}), false, true},
		{"an overhead", twin(func(p *corev1.Pod) { p.Spec.Overhead = cpu(50) }), false, false},
		{"other init containers", twin(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: cpu(900)}}}
		}), false, false},
		{"pod-level resources", twin(func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: cpu(2000)}
		}), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fresh := func(p *corev1.Pod) (uint64, uint64) {
				s := newSolver(&Input{})
				return s.classKey(p)
			}
			s := newSolver(&Input{})
			k0, r0 := s.classKey(base)
			if got := s.resOf(tc.pod) != nil; got != tc.reuse {
				t.Errorf("reused the previous pod's requests hash: %v, want %v", got, tc.reuse)
			}
			k, r := s.classKey(tc.pod)
			wk, wr := fresh(tc.pod)
			if k != wk || r != wr {
				t.Errorf("key %x res %x after the base pod, %x %x hashed afresh", k, r, wk, wr)
			}
			if b0k, b0r := fresh(base); k0 != b0k || r0 != b0r {
				t.Errorf("base pod's key changed")
			}
			if (r == r0) != tc.sameRes {
				t.Errorf("same res as the base pod: %v, want %v", r == r0, tc.sameRes)
			}
		})
	}
}

// TestHasherSeparatesFields: the hash of a sequence of strings and
// words tells apart sequences that split the same bytes differently
// (the last word of a string carries its length: "a" and "a\x00" too),
// an empty string from
// none, a separator from a string, and every single-bit change of a
// string longer than a word.
func TestHasherSeparatesFields(t *testing.T) {
	type op struct {
		s   string
		u   uint64
		sep bool
		isU bool
	}
	str := func(s string) op { return op{s: s} }
	u := func(v uint64) op { return op{u: v, isU: true} }
	sep := op{sep: true}
	seqs := [][]op{
		{str("abcdefgh"), str("")},
		{str("abcdefg"), str("h")},
		{str(""), str("abcdefgh")},
		{str("abcdefgh")},
		{str("abcdefgh"), sep},
		{str("abcdefghi")},
		{str("app"), str("web")},
		{str("appw"), str("eb")},
		{str("app"), sep, str("web")},
		{u(1), u(2)},
		{u(2), u(1)},
		{u(1)},
		{},
		{str("")},
		{sep},
		{str(""), str("")},
		{str("a")},
		{str("a\x00")},
		{str("abcdefgh\x00")},
	}
	seen := map[uint64]int{}
	for i, seq := range seqs {
		h := hasher(fnvOffset)
		for _, o := range seq {
			switch {
			case o.sep:
				h.sep()
			case o.isU:
				h.u64(o.u)
			default:
				h.str(o.s)
			}
		}
		if j, dup := seen[uint64(h)]; dup {
			t.Errorf("sequences %d and %d hash alike: %+v, %+v", j, i, seqs[j], seq)
		}
		seen[uint64(h)] = i
	}
	base := []byte("karpenter.sh/nodepool=default")
	hashOf := func(b []byte) uint64 {
		h := hasher(fnvOffset)
		h.str(string(b))
		return uint64(h)
	}
	flips := map[uint64]bool{hashOf(base): true}
	for i := range base {
		for bit := range 8 {
			b := append([]byte(nil), base...)
			b[i] ^= 1 << bit
			flips[hashOf(b)] = true
		}
	}
	if want := 1 + 8*len(base); len(flips) != want {
		t.Errorf("%d distinct hashes over %d single-bit changes and the original", len(flips), want)
	}
}

// TestClasses_LabelsSplitOnlyWhereSelected: pods that differ in labels
// alone (two Deployments of the same pod size) are one class where
// nothing selects pods by label, and two wherever something may: a
// pending pod's topology spread, pod affinity or anti-affinity (required
// or preferred), or an existing pod's required anti-affinity (which keeps
// pending pods off its node by their labels).
func TestClasses_LabelsSplitOnlyWhereSelected(t *testing.T) {
	pod := func(name, app string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Name, p.Namespace, p.Labels = name, "default", map[string]string{"app": app}
		p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		}}}}
		return p
	}
	// other is a third pod of another size carrying the term under test.
	other := func(edit func(p *corev1.Pod)) *corev1.Pod {
		p := pod("z-0", "z")
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		edit(p)
		return p
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}
	term := corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: sel}
	cases := []struct {
		name  string
		extra *corev1.Pod // a pending pod besides a-0 and b-0
		held  *corev1.Pod // a pod on an existing node
		split bool
	}{
		{"nothing selects", nil, nil, false},
		{"a node affinity only", other(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
		}), nil, false},
		{"a topology spread", other(func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}
		}), nil, true},
		{"a required anti-affinity", other(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
		}), nil, true},
		{"a preferred pod affinity", other(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term}}}}
		}), nil, true},
		{"an existing pod's required anti-affinity", nil, other(func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
		}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &Input{Pods: []*corev1.Pod{pod("a-0", "a"), pod("b-0", "b")}}
			if tc.extra != nil {
				in.Pods = append(in.Pods, tc.extra)
			}
			if tc.held != nil {
				in.Nodes = []*Node{{Name: "n1", Pods: []*corev1.Pod{tc.held}}}
			}
			s := newSolver(in)
			s.buildClasses()
			of := map[string]*class{}
			for _, c := range s.classes {
				for _, p := range c.pods {
					of[p.Name] = c
				}
			}
			if got := of["a-0"] != of["b-0"]; got != tc.split {
				t.Errorf("a-0 and b-0 in different classes: %v, want %v (%d classes)", got, tc.split, len(s.classes))
			}
		})
	}
}
