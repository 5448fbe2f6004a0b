package scheduling_test

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
	"github.com/joist-dev/joist/pkg/scheduling/verify"
)

// A small synthetic catalog: three general types in two families, a GPU
// type and an arm64 type, offered on-demand and spot in three zones.
var testZones = []string{"test-1a", "test-1b", "test-1c"}

type typeSpec struct {
	name, family, category, arch string
	cpu                          int64 // cores
	memGi                        int64
	pods                         int64
	gpu                          int64
	od, spot                     float64
}

var testTypeSpecs = []typeSpec{
	{"c.large", "c", "c", "amd64", 2, 4, 29, 0, 0.08, 0.03},
	{"c.xlarge", "c", "c", "amd64", 4, 8, 58, 0, 0.16, 0.06},
	{"c.4xlarge", "c", "c", "amd64", 16, 32, 234, 0, 0.64, 0.24},
	{"m.xlarge", "m", "m", "amd64", 4, 16, 58, 0, 0.20, 0.08},
	{"m.4xlarge", "m", "m", "amd64", 16, 64, 234, 0, 0.80, 0.30},
	{"g.2xlarge", "g", "g", "amd64", 8, 32, 58, 1, 1.00, 0.40},
	{"a.xlarge", "a", "a", "arm64", 4, 8, 58, 0, 0.18, 0.07},
}

func testInstanceTypes() []*scheduling.InstanceType {
	var out []*scheduling.InstanceType
	for _, t := range testTypeSpecs {
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewQuantity(t.cpu, resource.DecimalSI),
			corev1.ResourceMemory:           *resource.NewQuantity(t.memGi<<30, resource.BinarySI),
			corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
			corev1.ResourcePods:             *resource.NewQuantity(t.pods, resource.DecimalSI),
		}
		if t.gpu > 0 {
			capacity["nvidia.com/gpu"] = *resource.NewQuantity(t.gpu, resource.DecimalSI)
		}
		alloc := capacity.DeepCopy()
		cpu := alloc[corev1.ResourceCPU]
		cpu.Sub(resource.MustParse("100m"))
		alloc[corev1.ResourceCPU] = cpu
		mem := alloc[corev1.ResourceMemory]
		mem.Sub(resource.MustParse("512Mi"))
		alloc[corev1.ResourceMemory] = mem
		eph := alloc[corev1.ResourceEphemeralStorage]
		eph.Sub(resource.MustParse("2Gi"))
		alloc[corev1.ResourceEphemeralStorage] = eph
		it := &scheduling.InstanceType{
			Name: t.name,
			Labels: map[string]string{
				corev1.LabelInstanceTypeStable:        t.name,
				corev1.LabelArchStable:                t.arch,
				corev1.LabelOSStable:                  "linux",
				"karpenter.k8s.aws/instance-family":   t.family,
				"karpenter.k8s.aws/instance-category": t.category,
				"karpenter.k8s.aws/instance-cpu":      fmt.Sprint(t.cpu),
			},
			Capacity: capacity, Allocatable: alloc,
		}
		if t.gpu > 0 {
			it.Labels["karpenter.k8s.aws/instance-gpu-count"] = fmt.Sprint(t.gpu)
		}
		for _, z := range testZones {
			it.Offerings = append(it.Offerings,
				scheduling.Offering{Zone: z, CapacityType: model.CapacityTypeOnDemand, Price: t.od},
				scheduling.Offering{Zone: z, CapacityType: model.CapacityTypeSpot, Price: t.spot})
		}
		out = append(out, it)
	}
	return out
}

// pool is an on-demand pool with no other restriction.
func pool(name string, mods ...func(*model.Pool)) *model.Pool {
	p := &model.Pool{Name: name, API: model.APIV1, Requirements: []model.Requirement{
		{Key: model.LabelCapacityType, Operator: "In", Values: []string{model.CapacityTypeOnDemand}},
	}}
	for _, m := range mods {
		m(p)
	}
	return p
}

func withReq(key, op string, values ...string) func(*model.Pool) {
	return func(p *model.Pool) {
		for i, r := range p.Requirements {
			if r.Key == key {
				p.Requirements = append(p.Requirements[:i], p.Requirements[i+1:]...)
				break
			}
		}
		p.Requirements = append(p.Requirements, model.Requirement{Key: key, Operator: op, Values: values})
	}
}

func withTaint(key, value string, effect corev1.TaintEffect) func(*model.Pool) {
	return func(p *model.Pool) { p.Taints = append(p.Taints, corev1.Taint{Key: key, Value: value, Effect: effect}) }
}

func withLabel(k, v string) func(*model.Pool) {
	return func(p *model.Pool) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func input(pods []*corev1.Pod, pools ...*model.Pool) scheduling.Input {
	if len(pools) == 0 {
		pools = []*model.Pool{pool("default")}
	}
	return scheduling.Input{Pods: pods, Pools: pools, InstanceTypes: testInstanceTypes(), Region: "test-1"}
}

// pods makes n pods named <name>-i with label app=<name>.
func pods(name string, n int, cpu, mem string, mods ...func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: "default", Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
			}}}}},
		}
		for _, m := range mods {
			m(p)
		}
		out = append(out, p)
	}
	return out
}

func nodeSelector(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func requiredTerms(terms ...[]corev1.NodeSelectorRequirement) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		ensureAffinity(p)
		ns := &corev1.NodeSelector{}
		for _, t := range terms {
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
		}
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: ns}
	}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func ensureAffinity(p *corev1.Pod) {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
}

func tolerate(key, value string, effect corev1.TaintEffect) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: effect})
	}
}

func spread(key string, maxSkew int32, when corev1.UnsatisfiableConstraintAction, app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		})
	}
}

func term(key, app string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
}

func antiAffinity(key, app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		ensureAffinity(p)
		if p.Spec.Affinity.PodAntiAffinity == nil {
			p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a := p.Spec.Affinity.PodAntiAffinity
		a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, term(key, app))
	}
}

func affinity(key, app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		ensureAffinity(p)
		if p.Spec.Affinity.PodAffinity == nil {
			p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{}
		}
		a := p.Spec.Affinity.PodAffinity
		a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, term(key, app))
	}
}

func hostPort(port int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port})
	}
}

func request(name corev1.ResourceName, q string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q) }
}

func daemonSet(name, cpu, mem string, mods ...func(*corev1.Pod)) *appsv1.DaemonSet {
	p := pods(name, 1, cpu, mem, mods...)[0]
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}}}
}

// existingNode is a node of type c.4xlarge in a zone holding some pods.
func existingNode(name, zone string, held ...*corev1.Pod) *scheduling.Node {
	var it *scheduling.InstanceType
	for _, t := range testInstanceTypes() {
		if t.Name == "c.4xlarge" {
			it = t
		}
	}
	labels := map[string]string{
		corev1.LabelHostname: name, corev1.LabelTopologyZone: zone, model.LabelCapacityType: model.CapacityTypeOnDemand,
	}
	for k, v := range it.Labels {
		labels[k] = v
	}
	for _, p := range held {
		p.Spec.NodeName = name
	}
	return &scheduling.Node{Name: name, Labels: labels, Capacity: it.Capacity, Allocatable: it.Allocatable, Pods: held}
}

// generated is the generated workload of the named shape (workloadgen),
// its pods and seed given; the test stops on an unknown shape.
func generated(t testing.TB, shape string, pods int, seed int64) scheduling.Input {
	t.Helper()
	sh, ok := workloadgen.ShapeByName(shape)
	if !ok {
		t.Fatalf("no shape %s", shape)
	}
	in, err := workloadgen.Input(sh, pods, seed)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// solve runs Solve and fails the test on any violation Verify finds.
func solve(t *testing.T, in scheduling.Input) scheduling.Plan {
	t.Helper()
	plan := scheduling.Solve(in)
	for _, err := range verify.Plan(in, plan) {
		t.Errorf("verify: %v", err)
	}
	return plan
}

// placedOn maps pod name to the node it went to ("new-i" for new nodes).
func placedOn(plan scheduling.Plan) map[string]string {
	out := map[string]string{}
	for _, pl := range plan.Existing {
		for _, p := range pl.Pods {
			out[p.Name] = pl.Node
		}
	}
	for i, n := range plan.NewNodes {
		for _, p := range n.Pods {
			out[p.Name] = fmt.Sprintf("new-%d", i)
		}
	}
	return out
}

func reasons(plan scheduling.Plan) string {
	var out []string
	for _, f := range plan.Unschedulable {
		out = append(out, f.Pod.Name+": "+f.Reason)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// zonesOf counts a plan's pods per zone of their node (new nodes only).
func zonesOf(plan scheduling.Plan) map[string]int {
	out := map[string]int{}
	for _, n := range plan.NewNodes {
		out[n.Cheapest.Zone] += len(n.Pods)
	}
	return out
}

// bruteCase is a brute-force case: n pods, pod k asking cpu[k]
// millicores and mem[k] MiB.
type bruteCase struct {
	pods     []*corev1.Pod
	cpu, mem []int64
}

// randomBrute draws n pods of 1 to cpuSteps × cpuStep millicores and 1
// to memSteps × memStep MiB (for the tests that brute-force the cheapest
// plan of a few pods).
func randomBrute(rnd *rand.Rand, n int, cpuStep int64, cpuSteps int, memStep int64, memSteps int) bruteCase {
	bc := bruteCase{cpu: make([]int64, n), mem: make([]int64, n)}
	for k := 0; k < n; k++ {
		bc.cpu[k] = cpuStep * int64(1+rnd.Intn(cpuSteps))
		bc.mem[k] = memStep * int64(1+rnd.Intn(memSteps))
		bc.pods = append(bc.pods, pods(fmt.Sprintf("p%d", k), 1, fmt.Sprintf("%dm", bc.cpu[k]), fmt.Sprintf("%dMi", bc.mem[k]))...)
	}
	return bc
}

// holds tells whether a node of type s holds the pods of mask m (the
// test catalog's allocatable: 100m and 512Mi less than capacity).
func (bc bruteCase) holds(s typeSpec, m int) bool {
	var c, g, p int64
	for k := range bc.cpu {
		if m&(1<<k) != 0 {
			c, g, p = c+bc.cpu[k], g+bc.mem[k], p+1
		}
	}
	return c <= s.cpu*1000-100 && g <= s.memGi*1024-512 && p <= s.pods
}

// cmSpecs are the test catalog's c and m types.
func cmSpecs() []typeSpec {
	var specs []typeSpec
	for _, s := range testTypeSpecs {
		if s.category == "c" || s.category == "m" {
			specs = append(specs, s)
		}
	}
	return specs
}

// withTypeSelectors gives each Deployment (app label) of a generated
// workload, in turn, one way of selecting instance types by label, or
// none: a node selector on the family or the category, a preferred node
// affinity for two types or a family, a required one on the generation
// or against the biggest sizes. The generated shapes select no type
// labels; real workloads often do.
func withTypeSelectors(in scheduling.Input) scheduling.Input {
	cuts := []func(*corev1.Pod){
		nodeSelector("karpenter.k8s.aws/instance-family", "m5"),
		nodeSelector("karpenter.k8s.aws/instance-category", "r"),
		preferNode(10, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "m5.xlarge")),
		preferNode(50, req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "c6i")),
		requiredTerms([]corev1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-generation", corev1.NodeSelectorOpIn, "6", "7")}),
		requiredTerms([]corev1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-size", corev1.NodeSelectorOpNotIn, "metal", "24xlarge", "48xlarge")}),
		func(*corev1.Pod) {},
	}
	apps := map[string]int{}
	for _, p := range in.Pods {
		k, ok := apps[p.Labels["app"]]
		if !ok {
			k = len(apps) % len(cuts)
			apps[p.Labels["app"]] = k
		}
		cuts[k](p)
	}
	return in
}

// tally counts the answers a check hook is handed, and those not as they
// should be.
type tally struct{ asked, wrong int }

// tallyChecks sets a check hook (set) that counts into the tally it
// returns; the caller unsets it.
func tallyChecks(set func(func(ok bool))) *tally {
	c := &tally{}
	set(func(ok bool) {
		c.asked++
		if !ok {
			c.wrong++
		}
	})
	return c
}
