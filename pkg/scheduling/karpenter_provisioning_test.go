package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Karpenter's provisioning suite (sigs.k8s.io/karpenter v1.15.0,
// pkg/controllers/provisioning/suite_test.go): the cases that are plans.
// Karpenter's rounds ("schedule, then schedule again") are an existing
// node of the pool holding the first round's pods.

func withLimits(kv ...string) func(*model.Pool) {
	return func(p *model.Pool) {
		p.Limits = corev1.ResourceList{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Limits[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
	}
}

func withWeight(w int32) func(*model.Pool) { return func(p *model.Pool) { p.Weight = w } }

// inPool makes a node one of the pool's (its capacity counts against the
// pool's limits).
func inPool(n *scheduling.Node, pool string) *scheduling.Node {
	n.Pool = pool
	n.Labels[model.LabelNodePool] = pool
	return n
}

// withInit adds an init container requesting cpu and memory, with limits
// (kv pairs) of its own.
func withInit(cpu, mem string, limits ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		c := corev1.Container{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}
		if cpu != "" {
			c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			c.Resources.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		if len(limits) > 0 {
			c.Resources.Limits = corev1.ResourceList{}
			for i := 0; i+1 < len(limits); i += 2 {
				c.Resources.Limits[corev1.ResourceName(limits[i])] = resource.MustParse(limits[i+1])
			}
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

// containerLimits sets the first container's limits.
func containerLimits(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
	}
}

func noRequests(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{} }

// onPool checks that every new node is of the named pool.
func onPool(name string) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		if len(plan.NewNodes) == 0 {
			t.Fatalf("no new node")
		}
		for i, n := range plan.NewNodes {
			if n.Pool != name {
				t.Errorf("new-%d of pool %q, want %q", i, n.Pool, name)
			}
		}
	}
}

func TestKarpenterProvisioningLimits(t *testing.T) {
	host := corev1.LabelHostname
	spread := func(n int, cpu string) []*corev1.Pod {
		return pods("foo", n, cpu, "100Mi", antiAffinity(host, "foo"))
	}
	runK(t, []kcase{
		{name: "should not schedule when limits are exceeded", in: func() scheduling.Input {
			big := inPool(cordoned("big", "test-1a"), "default")
			big.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}
			return withNodes(input(pods("a", 1, "100m", "100Mi"), pool("default", withLimits("cpu", "20"))), big)
		}, unschedulable: 1, reason: "limit"},
		{name: "should schedule if limits would be met", in: func() scheduling.Input {
			return input(pods("a", 1, "1750m", "100Mi"), pool("default", withLimits("cpu", "2")))
		}, check: cheapest("c.large")},
		{name: "should partially schedule if limits would be exceeded", in: func() scheduling.Input {
			return input(spread(2, "1500m"), pool("default", withLimits("cpu", "3")))
		}, unschedulable: 1, reason: "limit", check: newNodes(1)},
		{name: "should not schedule if limits would be exceeded", in: func() scheduling.Input {
			return input(pods("a", 1, "2100m", "100Mi"), pool("default", withLimits("cpu", "2")))
		}, unschedulable: 1, reason: "limit"},
		// The only GPU type holds 58 pods, over the pool's limit of 1.
		{name: "should not schedule if limits would be exceeded (GPU)", in: func() scheduling.Input {
			return input(pods("a", 1, "100m", "100Mi", request("nvidia.com/gpu", "1")), pool("default", withLimits("pods", "1")))
		}, unschedulable: 1, reason: "limit"},
		{name: "should not schedule to a nodepool after a scheduling round if limits would be exceeded", in: func() scheduling.Input {
			first := inPool(existingNode("first", "test-1a", pods("a-old", 1, "1750m", "100Mi")...), "default")
			first.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
			first.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1900m"), corev1.ResourceMemory: resource.MustParse("3Gi"), corev1.ResourcePods: resource.MustParse("29")}
			return withNodes(input(pods("a", 1, "1750m", "100Mi"), pool("default", withLimits("cpu", "2"))), first)
		}, unschedulable: 1, reason: "limit", check: newNodes(0)},
		{name: "should not schedule if limits would be exceeded (node)", in: func() scheduling.Input {
			return input(spread(3, "1500m"), pool("default", withLimits("nodes", "2")))
		}, unschedulable: 1, reason: "limit", check: newNodes(2)},
	})
}

func TestKarpenterProvisioningResources(t *testing.T) {
	ds := func(in scheduling.Input, mods ...func(*corev1.Pod)) scheduling.Input {
		in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "1", "100Mi", mods...))
		return in
	}
	small := func() scheduling.Input { return input(pods("a", 1, "100m", "100Mi")) }
	runK(t, []kcase{
		// The DaemonSet's memory request comes from its 10000Gi limit.
		{name: "should not schedule if resource requests are not defined and limits (requests) are too large", in: func() scheduling.Input {
			return ds(small(), func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			}, containerLimits("cpu", "10000", "memory", "10000Gi"))
		}, unschedulable: 1},
		// The DaemonSet's init container (3 CPU) outweighs its container
		// (1 CPU): with the pod, 3.1 CPU, a 4-core node.
		{name: "should schedule based on the max resource requests of containers and initContainers", in: func() scheduling.Input {
			return ds(small(), withInit("3", "1Gi"))
		}, check: cheapest("c.xlarge")},
		{name: "should not schedule if combined max resources are too large for any node", in: func() scheduling.Input {
			return ds(small(), withInit("1", "", "memory", "10000Gi"))
		}, unschedulable: 1},
		{name: "should not schedule if initContainer resources are too large", in: func() scheduling.Input {
			return ds(small(), withInit("10000", "10000Gi"))
		}, unschedulable: 1},
		{name: "should be able to schedule pods if resource requests and limits are not defined", in: func() scheduling.Input {
			in := input(pods("a", 1, "100m", "100Mi", noRequests))
			in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "1", "100Mi", noRequests))
			return in
		}, check: newNodes(1)},
		// suite_test.go (scheduling): the init container's 3 CPU, not the
		// containers' 1, sizes the node.
		{name: "should take into account initContainer resource requests when binpacking", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", withInit("3", "1Gi")))
		}, check: cheapest("c.xlarge")},
		{name: "should not schedule pods when initContainer resource requests are greater than available instance types", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", withInit("10000", "10000Gi")))
		}, unschedulable: 1},
	})
}

func TestKarpenterProvisioningPools(t *testing.T) {
	np := model.LabelNodePool
	runK(t, []kcase{
		{name: "should schedule to an explicitly selected NodePool", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", nodeSelector(np, "target")), pool("other"), pool("target"))
		}, check: onPool("target")},
		{name: "should schedule to a NodePool by labels", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", nodeSelector("foo", "bar")), pool("other"), pool("target", withLabel("foo", "bar")))
		}, check: onPool("target")},
		{name: "should not match NodePool with PreferNoSchedule taint when other NodePool match", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi"), pool("a-tainted", withTaint("foo", "bar", corev1.TaintEffectPreferNoSchedule)), pool("b-plain"))
		}, check: onPool("b-plain")},
		{name: "should schedule to the nodepool with the highest priority always", in: func() scheduling.Input {
			return input(pods("a", 3, "1", "1Gi"), pool("a-none"), pool("b-20", withWeight(20)), pool("c-100", withWeight(100)))
		}, check: onPool("c-100")},
		{name: "should schedule to explicitly selected nodepool even if other nodePools are higher priority", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", nodeSelector(np, "a-none")), pool("a-none"), pool("b-20", withWeight(20)), pool("c-100", withWeight(100)))
		}, check: onPool("a-none")},
		{name: "should not create NodeClaims for StaticNodePool", in: func() scheduling.Input {
			two := int64(2)
			return input(pods("a", 1, "1", "1Gi"), pool("static", func(p *model.Pool) { p.Replicas = &two }))
		}, unschedulable: 1, check: newNodes(0)},
		{name: "should still provision dynamic NodeClaims when there are both Static and Dynamic NodePools", in: func() scheduling.Input {
			one := int64(1)
			return input(pods("a", 1, "1", "1Gi"), pool("dynamic"), pool("static", func(p *model.Pool) { p.Replicas = &one }))
		}, check: onPool("dynamic")},
		{name: "should schedule pods that tolerate taints", in: func() scheduling.Input {
			return input(concat(
				pods("a", 1, "1", "1Gi", tolerate("test-key", "test-value", corev1.TaintEffectNoSchedule)),
				pods("b", 1, "1", "1Gi", func(p *corev1.Pod) {
					p.Spec.Tolerations = []corev1.Toleration{{Key: "test-key", Operator: corev1.TolerationOpExists}}
				}),
				pods("c", 1, "1", "1Gi", func(p *corev1.Pod) {
					p.Spec.Tolerations = []corev1.Toleration{{Key: "test-key", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
				})), pool("p", withTaint("test-key", "test-value", corev1.TaintEffectNoSchedule)))
		}, check: onPool("p")},
	})
}

func TestKarpenterProvisioningPreferences(t *testing.T) {
	zone, it := corev1.LabelTopologyZone, corev1.LabelInstanceTypeStable
	invalid := func(p *corev1.Pod) {
		preferNode(1, req(zone, corev1.NodeSelectorOpIn, "invalid"))(p)
		preferNode(1, req(it, corev1.NodeSelectorOpIn, "invalid"))(p)
	}
	runK(t, []kcase{
		{name: "should relax all node affinity terms", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", invalid))
		}, check: newNodes(1)},
		{name: "should relax to use lighter weights", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi",
				preferNode(100, req(it, corev1.NodeSelectorOpIn, "test-1c")),
				preferNode(50, req(zone, corev1.NodeSelectorOpIn, "test-1b")),
				preferNode(1, req(zone, corev1.NodeSelectorOpIn, "test-1a"))),
				pool("p", withReq(zone, "In", "test-1b", "test-1c")))
		}, check: podNodeHas("a-0", zone, "test-1b")},
		{name: "should tolerate PreferNoSchedule taint only after trying to relax Affinity terms", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", invalid), pool("p", withTaint("foo", "bar", corev1.TaintEffectPreferNoSchedule)))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes) != 1 || len(plan.NewNodes[0].Taints) != 1 {
				t.Fatalf("want one node with the pool's PreferNoSchedule taint, got %+v", plan.NewNodes)
			}
		}},
		// PREFERENCE_POLICY=Ignore: preferences are dropped up front, so
		// the pod goes where the preference would not have it.
		{name: "should ignore node affinity preferences", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", preferNode(1, req(zone, corev1.NodeSelectorOpIn, "test-1c"))), pool("p", withReq(zone, "In", "test-1a", "test-1c")))
			in.Options.IgnorePreferences = true
			return in
		}, check: func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
			if len(plan.Relaxed) != 0 {
				t.Errorf("relaxed %v: an ignored preference is not relaxed", plan.Relaxed)
			}
			if len(plan.NewNodes) != 1 || len(plan.NewNodes[0].Zones) != 2 {
				t.Errorf("want one node open to both zones, got %+v", plan.NewNodes)
			}
		}},
		{name: "should ignore topologySpreadConstraint preferences", in: func() scheduling.Input {
			in := input(pods("a", 3, "100m", "100Mi", spread(zone, 1, corev1.ScheduleAnyway, "a")))
			in.Options.IgnorePreferences = true
			return in
		}, check: newNodes(1)},
		{name: "should ignore pod anti-affinity preferences", in: func() scheduling.Input {
			in := input(pods("a", 3, "100m", "100Mi", preferAnti(1, corev1.LabelHostname, "a")))
			in.Options.IgnorePreferences = true
			return in
		}, check: newNodes(1)},
	})
}

// More of the scheduling suite (suite_test.go, topology_test.go,
// instance_selection_test.go) under Karpenter's names.
func TestKarpenterSuiteRemaining(t *testing.T) {
	zone, ct, it := corev1.LabelTopologyZone, model.LabelCapacityType, corev1.LabelInstanceTypeStable
	ctSpread := spread(ct, 1, corev1.DoNotSchedule, "a")
	notReady := []corev1.Taint{
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule},
	}
	two, one := 2, 1
	runK(t, []kcase{
		// defaultconstraints_test.go: Joist adds no default spread (the
		// one configuration an EKS control plane has: see
		// docs/scheduling.md), as Karpenter with none configured: pods
		// of one ReplicaSet without constraints share a node.
		{name: "should be a no-op when no default constraints are configured", in: func() scheduling.Input {
			return input(pods("a", 3, "100m", "100Mi", func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "a-123", Controller: &[]bool{true}[0]}}
			}))
		}, check: newNodes(1)},
		{name: "should not schedule nodes with a hostname selector", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", nodeSelector(corev1.LabelHostname, "red-node")))
		}, unschedulable: 1, check: newNodes(0)},
		{name: "should schedule pods that have node selectors with label in kubernetes domains", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi"), pool("p", withReq("kubernetes.io/test", "In", "test-value"), withReq("k8s.io/test", "In", "test-value")))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes) != 1 {
				t.Fatalf("%d nodes, want 1", len(plan.NewNodes))
			}
			for _, k := range []string{"kubernetes.io/test", "k8s.io/test"} {
				if v := plan.NewNodes[0].Labels[k]; v != "test-value" {
					t.Errorf("label %s = %q, want test-value", k, v)
				}
			}
		}},
		// Our catalog's big types are amd64: the pool allows only arm64,
		// whose one type has 4 cores.
		{name: "should exclude instance types that are not supported by the provider constraints (arch)", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", noRequests, containerLimits("cpu", "14")), pool("p", withReq(corev1.LabelArchStable, "In", "arm64")))
		}, unschedulable: 1},
		{name: "should consider a tainted NotReady node as in-flight even if initialized", in: func() scheduling.Input {
			n := inPool(existingNode("booting", "test-1a"), "default")
			n.InFlight = true
			n.Labels["karpenter.sh/initialized"] = "true"
			n.Taints = notReady
			return withNodes(input(pods("a", 1, "10m", "10Mi")), n)
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if on := placedOn(plan)["a-0"]; on != "booting" {
				t.Errorf("a-0 on %q, want the in-flight node", on)
			}
		}},
		{name: "should balance pods across capacity types", in: func() scheduling.Input {
			return input(pods("a", 4, "1", "1Gi", ctSpread), spotAndOD())
		}, check: wantSkew(ct, "a", 2, 2)},
		{name: "should respect NodePool capacity type constraints", in: func() scheduling.Input {
			return input(pods("a", 4, "1", "1Gi", ctSpread), pool("p", withReq(ct, "In", model.CapacityTypeSpot, model.CapacityTypeOnDemand), withReq(zone, "In", "test-1a")))
		}, check: wantSkew(ct, "a", 2, 2)},
		{name: "should taint nodes with NodePool taints", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Effect: corev1.TaintEffectNoSchedule, Operator: corev1.TolerationOpExists}}
			}), pool("p", withTaint("test", "bar", corev1.TaintEffectNoSchedule)))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes) != 1 || len(plan.NewNodes[0].Taints) != 1 || plan.NewNodes[0].Taints[0].Key != "test" {
				t.Errorf("want one node with the pool's taint, got %+v", plan.NewNodes)
			}
		}},
		{name: "should schedule pods that tolerate NodePool constraints", in: func() scheduling.Input {
			tol := func(ts ...corev1.Toleration) func(*corev1.Pod) {
				return func(p *corev1.Pod) { p.Spec.Tolerations = ts }
			}
			return input(concat(
				pods("exists", 1, "1", "1Gi", tol(corev1.Toleration{Key: "test-key", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})),
				pods("equal", 1, "1", "1Gi", tol(corev1.Toleration{Key: "test-key", Value: "test-value", Operator: corev1.TolerationOpEqual, Effect: corev1.TaintEffectNoSchedule})),
				pods("none", 1, "1", "1Gi"),
				pods("other-key", 1, "1", "1Gi", tol(corev1.Toleration{Key: "invalid", Operator: corev1.TolerationOpExists})),
				pods("other-value", 1, "1", "1Gi", tol(corev1.Toleration{Key: "test-key", Value: "invalid", Operator: corev1.TolerationOpEqual, Effect: corev1.TaintEffectNoSchedule})),
			), pool("p", withTaint("test-key", "test-value", corev1.TaintEffectNoSchedule)))
		}, unschedulable: 3, reason: "taint", check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			on := placedOn(plan)
			if on["exists-0"] == "" || on["equal-0"] == "" {
				t.Errorf("tolerating pods not placed: %v", on)
			}
		}},
		{name: "should provision nodes with taints and schedule pods if the taint is only a startup taint", in: func() scheduling.Input {
			return input(pods("a", 1, "1", "1Gi"), pool("p", func(p *model.Pool) {
				p.StartupTaints = []corev1.Taint{{Key: "ignore-me", Value: "nothing-to-see-here", Effect: corev1.TaintEffectNoSchedule}}
			}))
		}, check: newNodes(1)},
		// Two requirements on the instance type, minValues 1 and 2: the
		// larger holds. Two 1-CPU pods fit together only on c.xlarge, so
		// each node keeps c.large as an option by holding one pod.
		{name: "should schedule and pick the max of minValues of InstanceTypes if multiple operators are used for the same requirement.", in: func() scheduling.Input {
			return input(pods("a", 2, "1", "1Gi"), pool("p", func(p *model.Pool) {
				p.Requirements = append(p.Requirements,
					model.Requirement{Key: it, Operator: "Exists", MinValues: &one},
					model.Requirement{Key: it, Operator: "In", Values: []string{"c.large", "c.xlarge"}, MinValues: &two})
			}))
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes) != 2 {
				t.Fatalf("%d nodes, want 2", len(plan.NewNodes))
			}
			for i, n := range plan.NewNodes {
				names := map[string]bool{}
				for _, o := range n.InstanceTypeOptions {
					names[o.Name] = true
				}
				if len(names) < 2 {
					t.Errorf("new-%d may be %v, want both types", i, names)
				}
			}
		}},
	})
}

// sizedTypes are types named t<cpu> with exactly cpu cores and memGi GiB
// allocatable (no reserve), pricier as they grow.
func sizedTypes(sizes ...[2]int64) []*scheduling.InstanceType {
	var out []*scheduling.InstanceType
	for _, sz := range sizes {
		res := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(sz[0], resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(sz[1]<<30, resource.BinarySI),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		name := "t" + resource.NewQuantity(sz[0], resource.DecimalSI).String()
		it := &scheduling.InstanceType{Name: name, Capacity: res, Allocatable: res, Labels: map[string]string{
			corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}}
		for _, z := range testZones {
			it.Offerings = append(it.Offerings, scheduling.Offering{Zone: z, CapacityType: model.CapacityTypeOnDemand, Price: float64(sz[0]) / 10})
		}
		out = append(out, it)
	}
	return out
}

func TestKarpenterProvisioningSidecars(t *testing.T) {
	ctr := func(name, cpu, mem string, sidecar bool) corev1.Container {
		c := corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}
		if sidecar {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		return c
	}
	shaped := func(main corev1.Container, inits ...corev1.Container) scheduling.Input {
		p := pods("a", 1, "1", "1Gi")[0]
		p.Spec.Containers = []corev1.Container{main}
		p.Spec.InitContainers = inits
		in := input([]*corev1.Pod{p})
		in.InstanceTypes = sizedTypes([2]int64{10, 4}, [2]int64{11, 5}, [2]int64{12, 6})
		return in
	}
	runK(t, []kcase{
		// Init 10/4Gi runs alone; then the 4.9/2.9Gi sidecar runs beside
		// the 6/2Gi container: 10.9 CPU, 4.9 GiB.
		{name: "should schedule based on the max resource requests of containers and initContainers with sidecar containers when initcontainer comes first", in: func() scheduling.Input {
			return shaped(ctr("c", "6", "2Gi", false), ctr("init", "10", "4Gi", false), ctr("sidecar", "4.9", "2.9Gi", true))
		}, check: cheapest("t11")},
		{name: "should schedule based on the max resource requests of containers and initContainers with sidecar containers when sidecar container comes first and init container resources are smaller than container resources", in: func() scheduling.Input {
			return shaped(ctr("c", "6", "2Gi", false), ctr("sidecar", "4.9", "2.9Gi", true), ctr("init", "5", "1Gi", false))
		}, check: cheapest("t11")},
		{name: "should schedule based on the max resource requests of containers and initContainers with sidecar containers when sidecar container comes first and init container resources are bigger than container resources", in: func() scheduling.Input {
			return shaped(ctr("c", "5", "1Gi", false), ctr("sidecar", "4.9", "2.9Gi", true), ctr("init", "6", "2Gi", false))
		}, check: cheapest("t11")},
		// Pod-level requests (9.9 CPU, 3.9 GiB) stand for the containers'.
		{name: "should schedule based on the pod level resources requests", in: func() scheduling.Input {
			in := shaped(ctr("c", "5", "1Gi", false), ctr("init", "6", "2Gi", false), ctr("sidecar", "4", "2Gi", true))
			in.Pods[0].Spec.Resources = &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("9.9"), corev1.ResourceMemory: resource.MustParse("3.9Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10"), corev1.ResourceMemory: resource.MustParse("4Gi")}}
			return in
		}, check: cheapest("t10")},
	})
}
