package scheduling_test

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Each constraint has a pod shape that must land and one that must not;
// every plan also passes Verify (see solve).

type constraintCase struct {
	name string
	in   scheduling.Input
	// unschedulable is how many pods must fail; reason, when set, must
	// appear in every failure.
	unschedulable int
	reason        string
	check         func(t *testing.T, plan scheduling.Plan)
}

func runCases(t *testing.T, cases []constraintCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := solve(t, tc.in)
			if len(plan.Unschedulable) != tc.unschedulable {
				t.Fatalf("%d unschedulable, want %d:\n%s", len(plan.Unschedulable), tc.unschedulable, reasons(plan))
			}
			for _, f := range plan.Unschedulable {
				if !strings.Contains(f.Reason, tc.reason) {
					t.Errorf("reason %q does not contain %q", f.Reason, tc.reason)
				}
			}
			if tc.check != nil {
				tc.check(t, plan)
			}
		})
	}
}

func cheapestType(want string) func(t *testing.T, plan scheduling.Plan) {
	return func(t *testing.T, plan scheduling.Plan) {
		t.Helper()
		for _, n := range plan.NewNodes {
			if n.Cheapest.InstanceType != want {
				t.Errorf("node type %s, want %s", n.Cheapest.InstanceType, want)
			}
		}
	}
}

func nodeCount(want int) func(t *testing.T, plan scheduling.Plan) {
	return func(t *testing.T, plan scheduling.Plan) {
		t.Helper()
		if len(plan.NewNodes) != want {
			t.Errorf("%d new nodes, want %d", len(plan.NewNodes), want)
		}
	}
}

func TestResources(t *testing.T) {
	initC := func(cpu string, restartable bool) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			c := corev1.Container{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}
			if restartable {
				always := corev1.ContainerRestartPolicyAlways
				c.RestartPolicy = &always
			}
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		}
	}
	overhead := func(cpu string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		}
	}
	runCases(t, []constraintCase{
		{name: "cpu fits", in: input(pods("a", 1, "1", "1Gi")), check: cheapestType("c.large")},
		{name: "cpu too big", in: input(pods("a", 1, "100", "1Gi")), unschedulable: 1, reason: "no instance type has 100 cpu"},
		{name: "memory picks m family", in: input(pods("a", 1, "1", "12Gi")), check: cheapestType("m.xlarge")},
		{name: "init container sizes the pod", in: input(pods("a", 1, "1", "1Gi", initC("3", false))), check: cheapestType("c.xlarge")},
		{name: "init container too big", in: input(pods("a", 1, "1", "1Gi", initC("30", false))), unschedulable: 1, reason: "cpu"},
		{name: "sidecar adds to containers", in: input(pods("a", 1, "1500m", "1Gi", initC("1", true))), check: cheapestType("c.xlarge")},
		{name: "overhead counts", in: input(pods("a", 1, "1800m", "1Gi", overhead("500m"))), check: cheapestType("c.xlarge")},
		{name: "gpu lands on gpu type", in: input(pods("a", 1, "1", "1Gi", request("nvidia.com/gpu", "1"))), check: cheapestType("g.2xlarge")},
		{name: "too many gpus", in: input(pods("a", 1, "1", "1Gi", request("nvidia.com/gpu", "9"))), unschedulable: 1, reason: "no instance type has 9 nvidia.com/gpu"},
		{name: "unknown extended resource", in: input(pods("a", 1, "1", "1Gi", request("example.com/widget", "1"))), unschedulable: 1, reason: "example.com/widget"},
		{name: "ephemeral storage fits", in: input(pods("a", 1, "1", "1Gi", request(corev1.ResourceEphemeralStorage, "10Gi")))},
		{name: "ephemeral storage too big", in: input(pods("a", 1, "1", "1Gi", request(corev1.ResourceEphemeralStorage, "100Gi"))), unschedulable: 1, reason: "ephemeral-storage"},
		{name: "pods slots fill a node", in: input(pods("a", 40, "10m", "10Mi")), check: nodeCount(1)},
	})
}

func TestNodeSelectorAndAffinity(t *testing.T) {
	runCases(t, []constraintCase{
		{name: "arch amd64", in: input(pods("a", 1, "1", "1Gi", nodeSelector(corev1.LabelArchStable, "amd64")))},
		{name: "arch arm64", in: input(pods("a", 1, "1", "1Gi", nodeSelector(corev1.LabelArchStable, "arm64"))), check: cheapestType("a.xlarge")},
		{name: "arch unknown", in: input(pods("a", 1, "1", "1Gi", nodeSelector(corev1.LabelArchStable, "s390x"))), unschedulable: 1, reason: "no instance type"},
		{name: "custom label defined by pool", in: input(pods("a", 1, "1", "1Gi", nodeSelector("team", "blue")), pool("p", withLabel("team", "blue")))},
		{name: "custom label undefined", in: input(pods("a", 1, "1", "1Gi", nodeSelector("team", "blue"))), unschedulable: 1, reason: `label "team" is not defined by pool "default"`},
		{name: "custom label other value", in: input(pods("a", 1, "1", "1Gi", nodeSelector("team", "red")), pool("p", withLabel("team", "blue"))), unschedulable: 1, reason: `incompatible with pool "p" requirement team`},
		{name: "custom Exists requirement narrows", in: input(pods("a", 1, "1", "1Gi", nodeSelector("team", "red")), pool("p", withReq("team", "Exists"))),
			check: func(t *testing.T, plan scheduling.Plan) {
				if plan.NewNodes[0].Labels["team"] != "red" {
					t.Errorf("labels %v", plan.NewNodes[0].Labels)
				}
			}},
		{name: "In", in: input(pods("a", 1, "1", "1Gi", requiredTerms([]corev1.NodeSelectorRequirement{req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m.xlarge")}))), check: cheapestType("m.xlarge")},
		{name: "NotIn", in: input(pods("a", 1, "1", "1Gi", requiredTerms([]corev1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpNotIn, "c")}))), check: cheapestType("a.xlarge")},
		{name: "Exists", in: input(pods("a", 1, "1", "1Gi", requiredTerms([]corev1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-gpu-count", corev1.NodeSelectorOpExists)}))), check: cheapestType("g.2xlarge")},
		{name: "DoesNotExist", in: input(pods("a", 1, "1", "1Gi", requiredTerms([]corev1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-gpu-count", corev1.NodeSelectorOpDoesNotExist)}))), check: cheapestType("c.large")},
		{name: "Gt", in: input(pods("a", 1, "1", "1Gi", requiredTerms([]corev1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-cpu", corev1.NodeSelectorOpGt, "8")}))), check: cheapestType("c.4xlarge")},
		{name: "Gt too high", in: input(pods("a", 1, "1", "1Gi", requiredTerms([]corev1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-cpu", corev1.NodeSelectorOpGt, "64")}))), unschedulable: 1, reason: "no instance type"},
		{name: "Lt", in: input(pods("a", 1, "1", "1Gi", requiredTerms([]corev1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-cpu", corev1.NodeSelectorOpLt, "3")}))), check: cheapestType("c.large")},
		{name: "zone In", in: input(pods("a", 1, "1", "1Gi", requiredTerms([]corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-1b")}))),
			check: func(t *testing.T, plan scheduling.Plan) {
				if z := plan.NewNodes[0].Zones; len(z) != 1 || z[0] != "test-1b" {
					t.Errorf("zones %v", z)
				}
			}},
		{name: "zone unknown", in: input(pods("a", 1, "1", "1Gi", requiredTerms([]corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "mars-1a")}))), unschedulable: 1, reason: "zones"},
		{name: "OR'ed terms: second term used", in: input(pods("a", 1, "1", "1Gi", requiredTerms(
			[]corev1.NodeSelectorRequirement{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "s390x")},
			[]corev1.NodeSelectorRequirement{req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m.xlarge")},
		))), check: cheapestType("m.xlarge")},
		{name: "OR'ed terms: none possible", in: input(pods("a", 1, "1", "1Gi", requiredTerms(
			[]corev1.NodeSelectorRequirement{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "s390x")},
			[]corev1.NodeSelectorRequirement{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "ppc64le")},
		))), unschedulable: 1},
		{name: "hostname In cannot be a new node", in: input(pods("a", 1, "1", "1Gi", nodeSelector(corev1.LabelHostname, "n1"))), unschedulable: 1, reason: "new node"},
		{name: "capacity type spot outside pool", in: input(pods("a", 1, "1", "1Gi", nodeSelector(model.LabelCapacityType, "spot"))), unschedulable: 1, reason: "capacity types"},
		{name: "capacity type spot in pool", in: input(pods("a", 1, "1", "1Gi", nodeSelector(model.LabelCapacityType, "spot")), pool("p", withReq(model.LabelCapacityType, "In", "spot", "on-demand"))),
			check: func(t *testing.T, plan scheduling.Plan) {
				if plan.NewNodes[0].Cheapest.CapacityType != "spot" {
					t.Errorf("capacity type %s", plan.NewNodes[0].Cheapest.CapacityType)
				}
			}},
	})
}

func TestPreferences(t *testing.T) {
	preferZone := func(zone string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			ensureAffinity(p)
			p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
				{Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone)}}},
			}}
		}
	}
	preferAnti := func(p *corev1.Pod) {
		ensureAffinity(p)
		p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 1, PodAffinityTerm: term(corev1.LabelTopologyZone, "a")},
		}}
	}
	runCases(t, []constraintCase{
		{name: "preferred zone honoured", in: input(pods("a", 2, "1", "1Gi", preferZone("test-1c"))),
			check: func(t *testing.T, plan scheduling.Plan) {
				if zonesOf(plan)["test-1c"] != 2 {
					t.Errorf("zones %v", zonesOf(plan))
				}
			}},
		{name: "impossible preference relaxed", in: input(pods("a", 2, "1", "1Gi", preferZone("mars-1a")))},
		// Preferred anti-affinity on zone is kept while zones last (one pod
		// per zone), then relaxed for the fourth pod, as Karpenter does.
		{name: "preferred anti-affinity relaxed after zones run out", in: input(pods("a", 4, "1", "1Gi", preferAnti)),
			check: func(t *testing.T, plan scheduling.Plan) {
				z := zonesOf(plan)
				if len(z) != 3 {
					t.Errorf("zones %v", z)
				}
				if len(plan.Relaxed) != 1 || !strings.Contains(plan.Relaxed[0].Reason, "preferred pod anti-affinity") {
					t.Errorf("relaxed %+v", plan.Relaxed)
				}
			}},
		{name: "ScheduleAnyway spread kept when possible", in: input(pods("a", 3, "1", "1Gi", spread(corev1.LabelTopologyZone, 1, corev1.ScheduleAnyway, "a"))),
			check: func(t *testing.T, plan scheduling.Plan) {
				if z := zonesOf(plan); len(z) != 3 {
					t.Errorf("zones %v", z)
				}
			}},
		{name: "IgnorePreferences packs", in: func() scheduling.Input {
			in := input(pods("a", 3, "1", "1Gi", spread(corev1.LabelTopologyZone, 1, corev1.ScheduleAnyway, "a")))
			in.Options.IgnorePreferences = true
			return in
		}(), check: nodeCount(1)},
	})
}

func TestTaints(t *testing.T) {
	tainted := pool("t", withTaint("dedicated", "gpu", corev1.TaintEffectNoSchedule))
	runCases(t, []constraintCase{
		{name: "tolerated", in: input(pods("a", 1, "1", "1Gi", tolerate("dedicated", "gpu", corev1.TaintEffectNoSchedule)), tainted),
			check: func(t *testing.T, plan scheduling.Plan) {
				if len(plan.NewNodes[0].Taints) != 1 {
					t.Errorf("taints %v", plan.NewNodes[0].Taints)
				}
			}},
		{name: "not tolerated", in: input(pods("a", 1, "1", "1Gi"), tainted), unschedulable: 1, reason: "no pool tolerates taint dedicated=gpu:NoSchedule"},
		{name: "startup taints ignored", in: input(pods("a", 1, "1", "1Gi"), pool("s", func(p *model.Pool) {
			p.StartupTaints = []corev1.Taint{{Key: "cilium", Effect: corev1.TaintEffectNoSchedule}}
		}))},
		{name: "PreferNoSchedule tolerated after relaxing", in: input(pods("a", 1, "1", "1Gi"), pool("p", withTaint("soft", "", corev1.TaintEffectPreferNoSchedule)))},
		{name: "second pool takes what the first refuses", in: input(pods("a", 1, "1", "1Gi"), tainted, pool("plain")),
			check: func(t *testing.T, plan scheduling.Plan) {
				if plan.NewNodes[0].Pool != "plain" {
					t.Errorf("pool %s", plan.NewNodes[0].Pool)
				}
			}},
	})
}

func TestTopologySpread(t *testing.T) {
	both := pool("p", withReq(model.LabelCapacityType, "In", "spot", "on-demand"))
	minDomains := func(n int32) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints[0].MinDomains = &n }
	}
	runCases(t, []constraintCase{
		{name: "zone spread balances", in: input(pods("a", 6, "1", "1Gi", spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "a"))),
			check: func(t *testing.T, plan scheduling.Plan) {
				for z, n := range zonesOf(plan) {
					if n != 2 {
						t.Errorf("zone %s has %d", z, n)
					}
				}
			}},
		{name: "zone spread with minDomains above the zones", in: input(pods("a", 6, "1", "1Gi", spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "a"), minDomains(4))),
			unschedulable: 3, reason: "topology spread on topology.kubernetes.io/zone"},
		{name: "hostname spread one per node", in: input(pods("a", 3, "100m", "100Mi", spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, "a"))), check: nodeCount(3)},
		{name: "hostname spread maxSkew 2", in: input(pods("a", 4, "100m", "100Mi", spread(corev1.LabelHostname, 2, corev1.DoNotSchedule, "a"))), check: nodeCount(2)},
		{name: "capacity-type spread", in: input(pods("a", 4, "1", "1Gi", spread(model.LabelCapacityType, 1, corev1.DoNotSchedule, "a")), both),
			check: func(t *testing.T, plan scheduling.Plan) {
				by := map[string]int{}
				for _, n := range plan.NewNodes {
					by[n.Cheapest.CapacityType] += len(n.Pods)
				}
				if by["spot"] != 2 || by["on-demand"] != 2 {
					t.Errorf("by capacity type %v", by)
				}
			}},
		{name: "capacity-type spread with one capacity type allowed", in: input(pods("a", 4, "1", "1Gi", spread(model.LabelCapacityType, 1, corev1.DoNotSchedule, "a"), minDomains(2))),
			unschedulable: 3},
		{name: "existing pods count", in: func() scheduling.Input {
			in := input(pods("a", 2, "1", "1Gi", spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "a")))
			in.Nodes = []*scheduling.Node{existingNode("n1", "test-1a", pods("a-old", 1, "1", "1Gi", func(p *corev1.Pod) { p.Labels["app"] = "a" })...)}
			return in
		}(), check: func(t *testing.T, plan scheduling.Plan) {
			if z := zonesOf(plan); z["test-1b"] != 1 || z["test-1c"] != 1 {
				t.Errorf("zones %v (existing pod in test-1a)", z)
			}
		}},
	})
}

func TestPodAffinity(t *testing.T) {
	web := func(p *corev1.Pod) { p.Labels["app"] = "web" }
	runCases(t, []constraintCase{
		{name: "hostname anti-affinity spreads nodes", in: input(pods("a", 3, "100m", "100Mi", antiAffinity(corev1.LabelHostname, "a"))), check: nodeCount(3)},
		{name: "zone anti-affinity runs out of zones", in: input(pods("a", 4, "100m", "100Mi", antiAffinity(corev1.LabelTopologyZone, "a"))),
			unschedulable: 1, reason: "pod anti-affinity"},
		{name: "zone affinity to itself", in: input(pods("a", 6, "4", "1Gi", affinity(corev1.LabelTopologyZone, "a"))),
			check: func(t *testing.T, plan scheduling.Plan) {
				if z := zonesOf(plan); len(z) != 1 {
					t.Errorf("zones %v", z)
				}
			}},
		{name: "hostname affinity to an existing pod", in: func() scheduling.Input {
			in := input(pods("b", 2, "1", "1Gi", affinity(corev1.LabelHostname, "web")))
			in.Nodes = []*scheduling.Node{existingNode("n1", "test-1a"), existingNode("n2", "test-1b", pods("w", 1, "1", "1Gi", web)...)}
			return in
		}(), check: func(t *testing.T, plan scheduling.Plan) {
			for name, node := range placedOn(plan) {
				if node != "n2" {
					t.Errorf("%s on %s, want n2", name, node)
				}
			}
		}},
		{name: "affinity with no target", in: input(pods("b", 1, "1", "1Gi", affinity(corev1.LabelHostname, "web"))), unschedulable: 1, reason: "no pod matches"},
		{name: "affinity to a pod placed later in the same plan", in: input(append(pods("b", 1, "100m", "100Mi", affinity(corev1.LabelTopologyZone, "web")), pods("w", 1, "2", "1Gi", web)...)),
			check: func(t *testing.T, plan scheduling.Plan) {
				if len(plan.NewNodes) != 1 {
					t.Errorf("%d nodes", len(plan.NewNodes))
				}
			}},
		{name: "existing pod's anti-affinity keeps new pods away", in: func() scheduling.Input {
			in := input(pods("web", 1, "1", "1Gi", web))
			in.Nodes = []*scheduling.Node{existingNode("n1", "test-1a", pods("guard", 1, "100m", "100Mi", antiAffinity(corev1.LabelHostname, "web"))...)}
			return in
		}(), check: func(t *testing.T, plan scheduling.Plan) {
			if len(plan.Existing) != 0 || len(plan.NewNodes) != 1 {
				t.Errorf("placed %v", placedOn(plan))
			}
		}},
		{name: "existing pod's zone anti-affinity blocks its zone", in: func() scheduling.Input {
			in := input(pods("web", 3, "1", "1Gi", web, nodeSelector(corev1.LabelTopologyZone, "test-1a")))
			in.Nodes = []*scheduling.Node{existingNode("n1", "test-1a", pods("guard", 1, "100m", "100Mi", antiAffinity(corev1.LabelTopologyZone, "web"))...)}
			return in
		}(), unschedulable: 3, reason: "anti-affinity"},
	})
}

func TestHostPorts(t *testing.T) {
	runCases(t, []constraintCase{
		{name: "same port on different nodes", in: input(pods("a", 2, "100m", "100Mi", hostPort(8080))), check: nodeCount(2)},
		{name: "port taken by a daemonset everywhere", in: func() scheduling.Input {
			in := input(pods("a", 1, "100m", "100Mi", hostPort(9100)))
			in.DaemonSets = append(in.DaemonSets, daemonSet("exporter", "100m", "100Mi", hostPort(9100)))
			in.Nodes = []*scheduling.Node{existingNode("n1", "test-1a", pods("exporter-x", 1, "100m", "100Mi", hostPort(9100))...)}
			return in
		}(), unschedulable: 1, reason: "host port 9100"},
		{name: "other port is free", in: func() scheduling.Input {
			in := input(pods("a", 1, "100m", "100Mi", hostPort(8080)))
			in.DaemonSets = append(in.DaemonSets, daemonSet("exporter", "100m", "100Mi", hostPort(9100)))
			return in
		}()},
		// Four pods on one host port need four nodes whatever else comes;
		// the bigger pods without a port go into those nodes' room (one
		// each on a c.large) rather than onto nodes of their own packed
		// first, which the port pods could not fill. The packer alone
		// (no local search to repair it) places the port pods first.
		{name: "others fill the port pods' nodes", in: func() scheduling.Input {
			in := input(append(pods("port", 4, "500m", "256Mi", hostPort(8080)), pods("batch", 4, "1", "1Gi")...))
			in.Options.NoImprove = true
			return in
		}(), check: func(t *testing.T, plan scheduling.Plan) {
			if len(plan.NewNodes) != 4 || math.Abs(plan.TotalPricePerHour-0.32) > 1e-9 {
				t.Errorf("%d new nodes at $%.3f/h, want 4 at $0.320/h", len(plan.NewNodes), plan.TotalPricePerHour)
			}
		}},
	})
}

func TestVolumes(t *testing.T) {
	claim := func(name string, mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		for _, m := range mods {
			m(c)
		}
		return c
	}
	useClaim := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
		}
	}
	zoneTerm := func(zone string) []corev1.NodeSelectorTerm {
		return []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req("topology.ebs.csi.aws.com/zone", corev1.NodeSelectorOpIn, zone)}}}
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: zoneTerm("test-1b")}},
	}}
	scName := "gp3"
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: scName}, AllowedTopologies: []corev1.TopologySelectorTerm{{
		MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"test-1c"}}},
	}}}
	onlyZone := func(zone string) func(t *testing.T, plan scheduling.Plan) {
		return func(t *testing.T, plan scheduling.Plan) {
			if z := plan.NewNodes[0].Zones; len(z) != 1 || z[0] != zone {
				t.Errorf("zones %v, want %s", z, zone)
			}
		}
	}
	runCases(t, []constraintCase{
		{name: "bound volume pins the zone", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("data-a")))
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("data-a", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-1" })}
			in.PersistentVolumes = []*corev1.PersistentVolume{pv}
			return in
		}(), check: onlyZone("test-1b")},
		{name: "bound volume in a zone the pod excludes", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("data-a"), nodeSelector(corev1.LabelTopologyZone, "test-1a")))
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("data-a", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-1" })}
			in.PersistentVolumes = []*corev1.PersistentVolume{pv}
			return in
		}(), unschedulable: 1},
		{name: "unbound claim follows allowed topologies", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("data-a")))
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{claim("data-a", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = &scName })}
			in.StorageClasses = []*storagev1.StorageClass{sc}
			return in
		}(), check: onlyZone("test-1c")},
		{name: "missing claim", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi", useClaim("nope")))
			in.StorageClasses = []*storagev1.StorageClass{sc}
			return in
		}(), unschedulable: 1, reason: "persistentvolumeclaim default/nope not found"},
	})
}

func TestDaemonSets(t *testing.T) {
	runCases(t, []constraintCase{
		{name: "overhead sizes the node", in: func() scheduling.Input {
			in := input(pods("a", 1, "1500m", "1Gi"))
			in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "500m", "256Mi"))
			return in
		}(), check: func(t *testing.T, plan scheduling.Plan) {
			cheapestType("c.xlarge")(t, plan)
			if got := plan.NewNodes[0].Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("2")) != 0 {
				t.Errorf("requests cpu %s, want 2 (pod + daemonset)", got.String())
			}
		}},
		{name: "daemonset not tolerating the pool is not counted", in: func() scheduling.Input {
			in := input(pods("a", 1, "1500m", "1Gi", tolerate("dedicated", "x", corev1.TaintEffectNoSchedule)), pool("t", withTaint("dedicated", "x", corev1.TaintEffectNoSchedule)))
			in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "500m", "256Mi"))
			return in
		}(), check: cheapestType("c.large")},
		{name: "daemonset selecting other arch is not counted", in: func() scheduling.Input {
			in := input(pods("a", 1, "1500m", "1Gi"))
			in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "500m", "256Mi", nodeSelector(corev1.LabelArchStable, "arm64")))
			return in
		}(), check: cheapestType("c.large")},
		{name: "daemonset leaves no room for the pod", in: func() scheduling.Input {
			in := input(pods("a", 1, "15", "1Gi", nodeSelector("karpenter.k8s.aws/instance-family", "c")))
			in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "2", "256Mi"))
			return in
		}(), unschedulable: 1, reason: "cpu"},
		{name: "in-flight node reserves missing daemonset pods", in: func() scheduling.Input {
			in := input(pods("a", 1, "1500m", "1Gi"))
			n := existingNode("i-123", "test-1a")
			n.Allocatable = n.Allocatable.DeepCopy()
			n.Allocatable[corev1.ResourceCPU] = resource.MustParse("2")
			n.InFlight = true
			in.Nodes = []*scheduling.Node{n}
			in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "1", "256Mi"))
			return in
		}(), check: func(t *testing.T, plan scheduling.Plan) {
			if len(plan.Existing) != 0 {
				t.Error("pod put on the in-flight node without room for its daemonset")
			}
		}},
	})
}

func TestPools(t *testing.T) {
	limited := func(cpu string) func(*model.Pool) {
		return func(p *model.Pool) { p.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)} }
	}
	weighted := func(w int32) func(*model.Pool) { return func(p *model.Pool) { p.Weight = w } }
	runCases(t, []constraintCase{
		{name: "higher weight first even when dearer", in: input(pods("a", 1, "1", "1Gi"),
			pool("cheap", withReq("karpenter.k8s.aws/instance-family", "In", "c")),
			pool("dear", weighted(10), withReq("karpenter.k8s.aws/instance-family", "In", "m"))),
			check: func(t *testing.T, plan scheduling.Plan) {
				if plan.NewNodes[0].Pool != "dear" {
					t.Errorf("pool %s", plan.NewNodes[0].Pool)
				}
			}},
		{name: "limit respected", in: input(pods("a", 3, "3", "1Gi", antiAffinity(corev1.LabelHostname, "a")), pool("p", limited("8"))),
			unschedulable: 1, reason: `exceeds pool "p" cpu limit`},
		{name: "limit counts existing nodes", in: func() scheduling.Input {
			in := input(pods("a", 1, "15", "1Gi"), pool("p", limited("20")))
			n := existingNode("n1", "test-1a", pods("full", 1, "15", "1Gi")...)
			n.Pool = "p"
			in.Nodes = []*scheduling.Node{n}
			return in
		}(), unschedulable: 1, reason: "limit"},
		{name: "nodes limit", in: input(pods("a", 2, "1", "1Gi", antiAffinity(corev1.LabelHostname, "a")), pool("p", func(p *model.Pool) {
			p.Limits = corev1.ResourceList{"nodes": resource.MustParse("1")}
		})), unschedulable: 1, reason: "nodes limit"},
		{name: "falls to the next pool at its limit", in: input(pods("a", 2, "3", "1Gi", antiAffinity(corev1.LabelHostname, "a")), pool("first", weighted(10), limited("4")), pool("second")),
			check: func(t *testing.T, plan scheduling.Plan) {
				pools := map[string]int{}
				for _, n := range plan.NewNodes {
					pools[n.Pool]++
				}
				if pools["first"] != 1 || pools["second"] != 1 {
					t.Errorf("pools %v", pools)
				}
			}},
		{name: "static pool never scaled", in: input(pods("a", 1, "1", "1Gi"), pool("s", func(p *model.Pool) { n := int64(2); p.Replicas = &n })), unschedulable: 1, reason: "static"},
		{name: "minValues not met", in: input(pods("a", 1, "1", "1Gi"), pool("p", func(p *model.Pool) {
			n := 3
			p.Requirements = append(p.Requirements, model.Requirement{Key: "karpenter.k8s.aws/instance-family", Operator: "In", Values: []string{"c", "m"}, MinValues: &n})
		})), unschedulable: 1, reason: "distinct"},
		{name: "minValues met", in: input(pods("a", 1, "1", "1Gi"), pool("p", func(p *model.Pool) {
			n := 2
			p.Requirements = append(p.Requirements, model.Requirement{Key: "karpenter.k8s.aws/instance-family", Operator: "In", Values: []string{"c", "m"}, MinValues: &n})
		}))},
	})
}

func TestExistingCapacityFirst(t *testing.T) {
	runCases(t, []constraintCase{
		{name: "existing node used", in: func() scheduling.Input {
			in := input(pods("a", 3, "1", "1Gi"))
			in.Nodes = []*scheduling.Node{existingNode("n1", "test-1a")}
			return in
		}(), check: func(t *testing.T, plan scheduling.Plan) {
			if len(plan.NewNodes) != 0 || len(plan.Existing) != 1 || len(plan.Existing[0].Pods) != 3 {
				t.Errorf("placed %v", placedOn(plan))
			}
		}},
		{name: "in-flight node used", in: func() scheduling.Input {
			in := input(pods("a", 3, "1", "1Gi"))
			n := existingNode("i-1", "test-1a")
			n.InFlight = true
			n.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
			in.Nodes = []*scheduling.Node{n}
			return in
		}(), check: func(t *testing.T, plan scheduling.Plan) {
			if len(plan.NewNodes) != 0 || !plan.Existing[0].InFlight {
				t.Errorf("placed %v", placedOn(plan))
			}
		}},
		{name: "cordoned node not used", in: func() scheduling.Input {
			in := input(pods("a", 1, "1", "1Gi"))
			n := existingNode("n1", "test-1a")
			n.Unschedulable = true
			in.Nodes = []*scheduling.Node{n}
			return in
		}(), check: nodeCount(1)},
		{name: "full existing node overflows to new", in: func() scheduling.Input {
			in := input(pods("a", 2, "10", "1Gi"))
			in.Nodes = []*scheduling.Node{existingNode("n1", "test-1a")}
			return in
		}(), check: nodeCount(1)},
	})
}

func TestSkipped(t *testing.T) {
	yes := true
	ds := pods("d", 1, "1", "1Gi", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "x", Controller: &yes}}
	})
	bound := pods("b", 1, "1", "1Gi", func(p *corev1.Pod) { p.Spec.NodeName = "n9" })
	plan := solve(t, input(append(ds, bound...)))
	if len(plan.Skipped) != 2 || len(plan.NewNodes) != 0 {
		t.Errorf("skipped %v", plan.Skipped)
	}
}
