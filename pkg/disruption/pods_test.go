package disruption

import (
	"fmt"
	"math/rand"
	"reflect"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// variedCluster is randomCluster with the pods a real cluster's nodes
// hold beside their replicas: DaemonSet pods, mirror (static) pods,
// standalone pods (no owner), finished and terminating pods, pods with
// do-not-evict, required anti-affinity, a host port or a zone spread,
// ReplicaSet-owned replicas; nodes of different ages under an expiring
// pool now and then, and a Balanced pool now and then.
func variedCluster(rng *rand.Rand, types []*scheduling.InstanceType) *simCluster {
	c := randomCluster(rng, types)
	pool := c.in.Pools[0]
	if rng.Intn(4) == 0 {
		pool.Disruption.ExpireAfter = dur(90 * time.Minute)
	}
	small := func(name, cpu string, annotations ...string) *corev1.Pod {
		p := app(name, cpu, annotations...)
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("64Mi")
		return p
	}
	for i := range c.nodes {
		n := &c.nodes[i]
		name := n.Node.Name
		if rng.Intn(3) == 0 {
			n.Node.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Hour))
		}
		for _, p := range n.Pods {
			switch rng.Intn(6) {
			case 0: // standalone: no owner
			case 1:
				p.Labels = map[string]string{"app": "spread"}
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}
			default:
				p.Labels = map[string]string{"app": fmt.Sprintf("rs%d", rng.Intn(3))}
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: p.Labels["app"], Controller: new(bool)}}
			}
		}
		var extra []*corev1.Pod
		if rng.Intn(2) == 0 {
			p := small(name+"-agent", "50m")
			p.Namespace = "kube-system"
			p.Labels = map[string]string{"app": "agent"}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent"}}
			extra = append(extra, p)
		}
		if rng.Intn(6) == 0 {
			p := small(name+"-static", "20m")
			p.Annotations[corev1.MirrorPodAnnotationKey] = "x"
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name}}
			extra = append(extra, p)
		}
		if rng.Intn(3) == 0 { // finished, matching the spread
			p := small(name+"-done", "500m")
			p.Labels = map[string]string{"app": "spread"}
			p.Status.Phase = []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed}[rng.Intn(2)]
			if rng.Intn(2) == 0 {
				p.Annotations[AnnotationDoNotDisrupt] = "true"
			}
			extra = append(extra, p)
		}
		if rng.Intn(6) == 0 { // terminating, with do-not-disrupt: neither moves nor blocks
			p := small(name+"-going", "100m")
			p.DeletionTimestamp = &metav1.Time{Time: now}
			p.Annotations[AnnotationDoNotDisrupt] = "true"
			extra = append(extra, p)
		}
		if rng.Intn(10) == 0 {
			extra = append(extra, small(name+"-keep", "50m", AnnotationDoNotEvict))
		}
		if rng.Intn(6) == 0 {
			p := small(name+"-single", "100m")
			p.Labels = map[string]string{"app": "single"}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "single"}}}}}}
			extra = append(extra, p)
		}
		if rng.Intn(6) == 0 {
			p := small(name+"-port", "50m")
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}
			extra = append(extra, p)
		}
		for _, p := range extra {
			p.Spec.NodeName = name
		}
		// Interleaved, as a list returns them (by name).
		n.Pods = append(n.Pods, extra...)
		rng.Shuffle(len(n.Pods), func(a, b int) { n.Pods[a], n.Pods[b] = n.Pods[b], n.Pods[a] })
	}
	// Now and then a Balanced pool: its score reads every node's pods,
	// compact ones too.
	if rng.Intn(3) == 0 {
		pool.Disruption.ConsolidationPolicy = "Balanced"
	}
	return c
}

// compactSnapshot is the snapshot pkg/reaping builds of the same cluster:
// every pod given to Node.Add (shared through one kube.Interner, as a
// read does), and PodsOn giving a node's pods back whole, compacted as a
// read again does. reads counts the nodes read again.
func compactSnapshot(s Snapshot, reads *int) Snapshot {
	in := kube.NewInterner()
	whole := map[string][]*corev1.Pod{}
	nodes := make([]Node, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		cn := Node{Node: n.Node}
		for _, p := range n.Pods {
			cn.Add(p.DeepCopy(), in.ResourceList)
		}
		whole[n.Node.Name] = n.Pods
		nodes = append(nodes, cn)
	}
	s.Nodes = nodes
	s.PodsOn = func(node string) ([]*corev1.Pod, error) {
		*reads++
		var out []*corev1.Pod
		for _, p := range whole[node] {
			cp := p.DeepCopy()
			scheduling.Compact(cp, nil)
			out = append(out, cp)
		}
		return out, nil
	}
	return s
}

// TestPropertyCompactPodsDecideAsWhole: a snapshot whose pods are kept as
// the reaper keeps them (Node.Add: compact, whole only where their terms
// are read; finished ones dropped; a candidate's pods read again through
// PodsOn) gives exactly the plan the same snapshot gives with every pod
// whole, pass after pass of a varied cluster: emptiness (DaemonSet,
// static, finished and terminating pods make a node no less empty),
// do-not-disrupt and do-not-evict pods blocking, expiry's replace flag,
// consolidation's candidates, their order, prefilter and simulations
// (requests, host ports, spreads, anti-affinity, DaemonSet pods on the
// nodes that stay). PDBs are not in it: no decision reads them, the drain
// does (pkg/termination).
func TestPropertyCompactPodsDecideAsWhole(t *testing.T) {
	types := testTypes(t)
	clusters := 60
	if testing.Short() {
		clusters = 15
	}
	passes, decided, reads, bound := 0, 0, 0, 0
	for seed := 0; seed < clusters; seed++ {
		rng := rand.New(rand.NewSource(int64(1000 + seed)))
		c := variedCluster(rng, types)
		for pass := 0; pass < 10; pass++ {
			s := c.snapshot()
			cs := compactSnapshot(s, &reads)
			for _, n := range cs.Nodes {
				bound += len(n.Bound)
			}
			want, got := Decide(s), Decide(cs)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("seed %d pass %d: compact pods decide otherwise:\nwhole   %+v\ncompact %+v", seed, pass, want, got)
			}
			passes++
			if len(want.Retire)+len(want.Stamp)+len(want.StampConsolidation)+len(want.Blocked) > 0 {
				decided++
			}
			// Expiry retires nodes whatever their pods: one pinned to
			// its node has no place after, and the cluster goes no
			// further (this test compares decisions, not outcomes).
			if err := c.apply(want); err != nil {
				break
			}
			if len(want.Retire) == 0 && len(want.StampConsolidation) == 0 {
				break
			}
			c.now = c.now.Add(ValidationDelay)
		}
	}
	t.Logf("%d clusters, %d passes (%d deciding something), %d compact pods, %d nodes read again", clusters, passes, decided, bound, reads)
	if decided < passes/3 || reads < clusters || bound == 0 {
		t.Errorf("barely exercised: %d of %d passes decide something, %d nodes read again, %d compact pods", decided, passes, reads, bound)
	}
}

// TestCompactPodsWithoutPodsOn: a candidate whose pods were kept compact
// and cannot be read again is not consolidated (its pods cannot be moved
// in a simulation), and says why.
func TestCompactPodsWithoutPodsOn(t *testing.T) {
	types := testTypes(t)
	pool := consolidating("on-demand")
	nodes := []Node{typed(types, "big", "m5.2xlarge", "on-demand", app("p1", "1")), typed(types, "other", "m5.2xlarge", "on-demand", app("p2", "1"))}
	s := Snapshot{Now: now, Pools: []*model.Pool{pool}, Nodes: nodes, Simulation: scheduling.Input{InstanceTypes: types, Region: "us-east-1"}}
	if p := Decide(s); len(p.StampConsolidation) == 0 {
		t.Fatalf("whole: nothing stamped, want a command")
	}
	reads := 0
	cs := compactSnapshot(s, &reads)
	cs.PodsOn = nil
	if p := Decide(cs); len(p.StampConsolidation) > 0 || len(p.Retire) > 0 {
		t.Fatalf("compact without PodsOn: stamped %v retired %v, want nothing", p.StampConsolidation, describe(p.Retire))
	}
}

// realisticPod is a replica as a Deployment's ReplicaSet makes it and the
// kubelet reports it: an app container and a sidecar with requests and
// limits, environment, probes, mounts, a zone spread, the default
// tolerations, Running with its conditions and container statuses.
func realisticPod(i int) *corev1.Pod {
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	container := func(name, cpu, mem string) corev1.Container {
		return corev1.Container{Name: name, Image: "registry.example.com/" + name + ":1.2.3",
			Env:            []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "PORT", Value: "8080"}},
			Resources:      corev1.ResourceRequirements{Requests: rl(cpu, mem), Limits: rl(cpu, mem)},
			Ports:          []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}},
			VolumeMounts:   []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets"}}}
	}
	app := fmt.Sprintf("app-%d", i%20)
	labels := map[string]string{"app": app, "pod-template-hash": "7c9f8d6b5", "team": "payments", "tier": "backend"}
	secs := int64(300)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-7c9f8d6b5-%06d", app, i), Namespace: "ns-" + app,
			UID: types.UID(fmt.Sprintf("0b7e2a8c-3f1d-4c55-9a1e-%012d", i)), ResourceVersion: fmt.Sprint(100000 + i),
			Labels: labels, Annotations: map[string]string{"prometheus.io/scrape": "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7c9f8d6b5", Controller: new(bool)}}},
		Spec: corev1.PodSpec{
			NodeName:   fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/20/250, i/20%250),
			Containers: []corev1.Container{container("app", "250m", "512Mi"), container("envoy", "100m", "128Mi")},
			Volumes:    []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}},
			Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.1.2", QOSClass: corev1.PodQOSGuaranteed,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}, {Name: "envoy", Ready: true}}},
	}
	return p
}

// BenchmarkPodMemory is the heap the reaper retains per pod of a large
// cluster after its read (kube.ReducePod through one kube.Interner, then
// kept): "compact" as Node.Add keeps it (a scheduling.BoundPod), "whole"
// as the reaper kept every pod before (AddWhole: a compacted corev1.Pod).
//
//	go test -run '^$' -bench PodMemory -benchmem ./pkg/disruption/
func BenchmarkPodMemory(b *testing.B) {
	const n = 100_000
	for _, kind := range []string{"compact", "whole"} {
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				in := kube.NewInterner()
				nodes := map[string]*Node{}
				for i := range n {
					p := realisticPod(i)
					kube.ReducePod(p, in)
					nd := nodes[p.Spec.NodeName]
					if nd == nil {
						nd = &Node{}
						nodes[p.Spec.NodeName] = nd
					}
					if kind == "compact" {
						nd.Add(p, in.ResourceList)
					} else {
						nd.AddWhole(p, in.ResourceList)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heapB/pod")
				runtime.KeepAlive(nodes)
			}
		})
	}
}

// TestAddBound_SameAsAdd checks that a pod meeting AddBound's conditions,
// given to it as its BoundPod, leaves the node as Add leaves it with the
// whole pod (pkg/kube's tests check that the BoundPod a reader builds
// from the wire is NewBoundPod's), on the pods of varied clusters:
// replicas, DaemonSet pods, standalone ones.
func TestAddBound_SameAsAdd(t *testing.T) {
	types := testTypes(t)
	meets := func(p *corev1.Pod) bool {
		if p.Spec.NodeName == "" || pods.Finished(p) || p.DeletionTimestamp != nil || readsTerms(p) {
			return false
		}
		for _, a := range WholeAnnotations {
			if _, ok := p.Annotations[a]; ok {
				return false
			}
		}
		for _, o := range p.OwnerReferences {
			if o.Kind == "Node" || o.Kind == "DaemonSet" && o.Name == "" {
				return false
			}
		}
		return true
	}
	checked, daemons := 0, 0
	for seed := range 20 {
		c := variedCluster(rand.New(rand.NewSource(int64(2000+seed))), types)
		for _, n := range c.nodes {
			in := kube.NewInterner()
			var whole, bound Node
			for _, p := range n.Pods {
				p = p.DeepCopy()
				p.Spec.NodeName = n.Node.Name
				if !meets(p) {
					continue
				}
				b, ok := scheduling.NewBoundPod(p, in.ResourceList)
				if !ok {
					t.Fatalf("pod %s meets AddBound's conditions, NewBoundPod refuses it", p.Name)
				}
				whole.Add(p, in.ResourceList)
				bound.AddBound(b)
				checked++
				if b.DaemonSet != "" {
					daemons++
				}
			}
			if !reflect.DeepEqual(whole, bound) {
				t.Fatalf("seed %d node %s: AddBound leaves %+v, Add %+v", seed, n.Node.Name, bound, whole)
			}
		}
	}
	if checked == 0 || daemons == 0 || daemons == checked {
		t.Fatalf("%d pods checked, %d of them DaemonSet pods: want both kinds", checked, daemons)
	}
}
