// Package workloadgen generates seeded benchmark workloads of many shapes,
// as Kubernetes manifests (Provisioners, AWSNodeTemplates, Deployments,
// DaemonSets, volumes), so they go through the same readers and AWS
// defaults as a user's files. The same shape, size and seed always give
// the same bytes.
package workloadgen

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/joist-dev/joist/pkg/internal/benchdata"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Shape is one kind of workload.
type Shape struct {
	Name string
	// Unconstrained shapes have no topology or placement constraint beyond
	// resources and one pool, so the LP bound is tight: their plans are
	// held to 1.10× the bound from 200 pods.
	Unconstrained bool
	// Loose says why the bound is loose for the shape ("" when tight).
	Loose string
	gen   func(g *gen)
}

// Shapes are the generated shapes, in table order.
var Shapes = []Shape{
	{Name: "small-uniform", Unconstrained: true, gen: genSmall},
	{Name: "web-six", Unconstrained: true, gen: genWeb},
	{Name: "few-big", Unconstrained: true, gen: genBig},
	{Name: "memory-heavy", Unconstrained: true, gen: genMemory},
	{Name: "many-shapes", Unconstrained: true, gen: genManyShapes},
	{Name: "gpu", gen: genGPU}, // the shape bound sees that a GPU type brings its cpu and memory
	{Name: "spot-limits", gen: genSpotLimits, Loose: "the limits bind the LP only (whole nodes); a limited pool's local search only rebuilds"},
	{Name: "weighted-tainted-pools", gen: genPools, Loose: "weights make a dearer pool first; the bound prices every pool"},
	{Name: "zone-spread", gen: genZoneSpread, Loose: "spread minimum per zone ignored by the bound"},
	{Name: "hostname-anti", gen: genHostnameAnti, Loose: "one pod per node ignored by the bound"},
	{Name: "pod-affinity", gen: genPodAffinity, Loose: "co-location ignored by the bound"},
	{Name: "hostports", gen: genHostPorts, Loose: "one pod per port per node ignored by the bound"},
	{Name: "daemonsets", Unconstrained: true, gen: genDaemonSets},
	{Name: "zonal-volumes", gen: genVolumes, Loose: "zone pinning ignored by the bound"},
	{Name: "mix", gen: genMix, Loose: "mixes every constraint above"},
}

// Sizes are the pod counts of the benchmark table.
var Sizes = []int{50, 500, 2000, 10000, 50000}

// ShapeByName finds a shape.
func ShapeByName(name string) (Shape, bool) {
	for _, s := range Shapes {
		if s.Name == name {
			return s, true
		}
	}
	return Shape{}, false
}

// Manifest generates a shape's workload of about pods pods (exactly pods
// for every shape: the last Deployment takes the remainder).
func Manifest(shape Shape, pods int, seed int64) []byte {
	g := &gen{rnd: rand.New(rand.NewSource(seed)), left: pods}
	fmt.Fprintf(&g.b, "# workloadgen %s, %d pods, seed %d\n", shape.Name, pods, seed)
	shape.gen(g)
	return []byte(g.b.String())
}

// Input generates a workload and reads it with the us-east-1 catalog (as
// the shared benchmarks are read).
func Input(shape Shape, pods int, seed int64) (scheduling.Input, error) {
	in, err := benchdata.FromManifest(Manifest(shape, pods, seed), "workloadgen:"+shape.Name)
	if err != nil {
		return in, fmt.Errorf("workloadgen %s/%d: %w", shape.Name, pods, err)
	}
	return in, nil
}

type gen struct {
	rnd  *rand.Rand
	b    strings.Builder
	left int
	n    int // deployments written
}

func (g *gen) doc(s string) {
	g.b.WriteString("---\n")
	g.b.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		g.b.WriteString("\n")
	}
}

// poolSpec is a Provisioner with its node template.
type poolSpec struct {
	name       string
	categories []string
	capacity   []string
	weight     int
	taint      string // key=value:Effect
	cpuLimit   string
}

func (g *gen) pool(p poolSpec) {
	if len(p.capacity) == 0 {
		p.capacity = []string{"on-demand"}
	}
	if len(p.categories) == 0 {
		p.categories = []string{"c", "m", "r"}
	}
	var s strings.Builder
	fmt.Fprintf(&s, "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: %s\nspec:\n", p.name)
	if p.weight > 0 {
		fmt.Fprintf(&s, "  weight: %d\n", p.weight)
	}
	fmt.Fprintf(&s, "  requirements:\n    - key: karpenter.sh/capacity-type\n      operator: In\n      values: [%s]\n", quoteList(p.capacity))
	fmt.Fprintf(&s, "    - key: kubernetes.io/arch\n      operator: In\n      values: [\"amd64\"]\n")
	fmt.Fprintf(&s, "    - key: karpenter.k8s.aws/instance-category\n      operator: In\n      values: [%s]\n", quoteList(p.categories))
	if p.taint != "" {
		kv, effect, _ := strings.Cut(p.taint, ":")
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&s, "  taints:\n    - key: %s\n      value: %q\n      effect: %s\n", k, v, effect)
	}
	if p.cpuLimit != "" {
		fmt.Fprintf(&s, "  limits:\n    resources:\n      cpu: %q\n", p.cpuLimit)
	}
	fmt.Fprintf(&s, "  providerRef:\n    name: %s\n", p.name)
	g.doc(s.String())
	g.doc(fmt.Sprintf("apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata:\n  name: %s\nspec:\n  subnetSelector:\n    karpenter.sh/discovery: bench\n  securityGroupSelector:\n    karpenter.sh/discovery: bench\n", p.name))
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// dep describes one Deployment.
type dep struct {
	replicas  int
	cpu, mem  string
	extra     map[string]string // extended resources
	spec      string            // extra pod spec lines (indented 6)
	tolerate  string            // key=value
	nodeZone  string
	claimZone string // a volume per Deployment pinned there
	hostPort  int
}

// take returns a replica count for the next Deployment: about want, and
// the remainder when it is the last.
func (g *gen) take(want int) int {
	if want < 1 {
		want = 1
	}
	if want > g.left {
		want = g.left
	}
	g.left -= want
	return want
}

func (g *gen) deployment(d dep) {
	if d.replicas <= 0 {
		return
	}
	name := fmt.Sprintf("d%04d", g.n)
	g.n++
	var s strings.Builder
	fmt.Fprintf(&s, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  replicas: %d\n  selector:\n    matchLabels:\n      app: %s\n  template:\n    metadata:\n      labels:\n        app: %s\n    spec:\n", name, d.replicas, name, name)
	spec := strings.ReplaceAll(d.spec, "APP", name)
	s.WriteString(spec)
	if d.tolerate != "" {
		k, v, _ := strings.Cut(d.tolerate, "=")
		fmt.Fprintf(&s, "      tolerations:\n        - key: %s\n          operator: Equal\n          value: %q\n          effect: NoSchedule\n", k, v)
	}
	if d.nodeZone != "" {
		fmt.Fprintf(&s, "      nodeSelector:\n        topology.kubernetes.io/zone: %s\n", d.nodeZone)
	}
	fmt.Fprintf(&s, "      containers:\n        - name: app\n          image: registry.k8s.io/pause:3.9\n")
	if d.hostPort > 0 {
		fmt.Fprintf(&s, "          ports:\n            - containerPort: %d\n              hostPort: %d\n", d.hostPort, d.hostPort)
	}
	fmt.Fprintf(&s, "          resources:\n            requests:\n              cpu: %s\n              memory: %s\n", d.cpu, d.mem)
	for k, v := range d.extra {
		fmt.Fprintf(&s, "              %s: %q\n", k, v)
	}
	if len(d.extra) > 0 {
		fmt.Fprintf(&s, "            limits:\n")
		for k, v := range d.extra {
			fmt.Fprintf(&s, "              %s: %q\n", k, v)
		}
	}
	if d.claimZone != "" {
		fmt.Fprintf(&s, "      volumes:\n        - name: data\n          persistentVolumeClaim:\n            claimName: %s-data\n", name)
	}
	g.doc(s.String())
	if d.claimZone != "" {
		g.doc(fmt.Sprintf("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: %s-data\n  namespace: default\nspec:\n  accessModes: [ReadWriteMany]\n  volumeName: %s-pv\n  resources:\n    requests:\n      storage: 10Gi\n", name, name))
		g.doc(fmt.Sprintf("apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: %s-pv\nspec:\n  capacity:\n    storage: 10Gi\n  accessModes: [ReadWriteMany]\n  claimRef:\n    namespace: default\n    name: %s-data\n  csi:\n    driver: ebs.csi.aws.com\n    volumeHandle: vol-%s\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n        - matchExpressions:\n            - key: topology.kubernetes.io/zone\n              operator: In\n              values: [%q]\n", name, name, name, d.claimZone))
	}
}

// replicasFor sizes Deployments so a workload has about `count` of them.
func (g *gen) replicasFor(count int) int {
	total := g.left
	r := total / max(count, 1)
	// ±50 % around the mean.
	return max(1, r/2+g.rnd.Intn(r+1))
}

var cpus = []string{"100m", "250m", "500m", "750m", "1", "1500m", "2"}
var mems = []string{"128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "3Gi", "4Gi"}

func (g *gen) pick(list []string) string { return list[g.rnd.Intn(len(list))] }

// fill writes Deployments from mk until every pod is given out.
func (g *gen) fill(count int, mk func(r int) dep) {
	for g.left > 0 {
		r := g.take(g.replicasFor(count))
		if g.left < r/2 { // fold a small remainder into this one
			r += g.left
			g.left = 0
		}
		d := mk(r)
		d.replicas = r
		g.deployment(d)
	}
}

func deploymentsFor(pods, per int) int { return max(1, pods/per) }

func genSmall(g *gen) {
	g.pool(poolSpec{name: "default"})
	g.fill(deploymentsFor(g.left, 50), func(int) dep {
		i := g.rnd.Intn(4)
		return dep{cpu: cpus[i], mem: mems[i]}
	})
}

// genWeb is the case: six web Deployments, 100m to 2 CPU.
func genWeb(g *gen) {
	g.pool(poolSpec{name: "default"})
	shapes := [][2]string{{"100m", "128Mi"}, {"250m", "512Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}, {"1500m", "2Gi"}, {"2", "4Gi"}}
	total := g.left
	for i, sh := range shapes {
		r := total / len(shapes)
		if i == len(shapes)-1 {
			r = g.left
		}
		g.deployment(dep{replicas: g.take(r), cpu: sh[0], mem: sh[1]})
	}
}

func genBig(g *gen) {
	g.pool(poolSpec{name: "default"})
	big := []string{"4", "6", "8", "12", "16", "24"}
	g.fill(deploymentsFor(g.left, 10), func(int) dep {
		c := g.pick(big)
		return dep{cpu: c, mem: fmt.Sprintf("%dGi", 2*atoi(c)+g.rnd.Intn(8))}
	})
}

func genMemory(g *gen) {
	g.pool(poolSpec{name: "default"})
	g.fill(deploymentsFor(g.left, 25), func(int) dep {
		return dep{cpu: g.pick([]string{"250m", "500m", "1"}), mem: g.pick([]string{"4Gi", "8Gi", "12Gi", "16Gi", "24Gi"})}
	})
}

func genManyShapes(g *gen) {
	g.pool(poolSpec{name: "default"})
	g.fill(deploymentsFor(g.left, 5), func(int) dep {
		return dep{cpu: fmt.Sprintf("%dm", 50+10*g.rnd.Intn(300)), mem: fmt.Sprintf("%dMi", 64+32*g.rnd.Intn(200))}
	})
}

func genGPU(g *gen) {
	g.pool(poolSpec{name: "default"})
	g.pool(poolSpec{name: "gpu", categories: []string{"g", "p"}, taint: "nvidia.com/gpu=true:NoSchedule"})
	gpuPods := g.left / 10
	rest := g.left - gpuPods
	g.left = gpuPods
	g.fill(deploymentsFor(gpuPods, 5), func(int) dep {
		return dep{cpu: g.pick([]string{"2", "4"}), mem: g.pick([]string{"8Gi", "16Gi"}), extra: map[string]string{"nvidia.com/gpu": "1"}, tolerate: "nvidia.com/gpu=true"}
	})
	g.left = rest
	g.fill(deploymentsFor(rest, 50), func(int) dep { i := g.rnd.Intn(5); return dep{cpu: cpus[i], mem: mems[i]} })
}

func genSpotLimits(g *gen) {
	limit := max(16, g.left/4) // cpu cores: spot takes part, on-demand the rest
	g.pool(poolSpec{name: "spot", capacity: []string{"spot", "on-demand"}, weight: 50, cpuLimit: fmt.Sprint(limit)})
	g.pool(poolSpec{name: "on-demand"})
	g.fill(deploymentsFor(g.left, 50), func(int) dep { i := g.rnd.Intn(5); return dep{cpu: cpus[i], mem: mems[i]} })
}

func genPools(g *gen) {
	g.pool(poolSpec{name: "general", weight: 10, categories: []string{"m"}})
	g.pool(poolSpec{name: "compute", weight: 5, categories: []string{"c"}})
	g.pool(poolSpec{name: "batch", categories: []string{"c", "m", "r"}, taint: "team=batch:NoSchedule"})
	g.fill(deploymentsFor(g.left, 40), func(int) dep {
		i := g.rnd.Intn(5)
		d := dep{cpu: cpus[i], mem: mems[i]}
		if g.rnd.Intn(3) == 0 {
			d.tolerate = "team=batch"
		}
		return d
	})
}

func spreadSpec(key string) string {
	return "      topologySpreadConstraints:\n        - maxSkew: 1\n          topologyKey: " + key + "\n          whenUnsatisfiable: DoNotSchedule\n          labelSelector:\n            matchLabels:\n              app: APP\n"
}

func antiSpec(key string) string {
	return "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            - topologyKey: " + key + "\n              labelSelector:\n                matchLabels:\n                  app: APP\n"
}

func affSpec(key, target string) string {
	return "      affinity:\n        podAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            - topologyKey: " + key + "\n              labelSelector:\n                matchLabels:\n                  app: " + target + "\n"
}

func genZoneSpread(g *gen) {
	g.pool(poolSpec{name: "default"})
	g.fill(deploymentsFor(g.left, 30), func(int) dep {
		i := g.rnd.Intn(5)
		return dep{cpu: cpus[i], mem: mems[i], spec: spreadSpec("topology.kubernetes.io/zone")}
	})
}

func genHostnameAnti(g *gen) {
	g.pool(poolSpec{name: "default"})
	// Half the pods keep one replica per node, the other half fill in.
	anti := g.left / 2
	rest := g.left - anti
	g.left = anti
	g.fill(deploymentsFor(anti, 10), func(int) dep {
		i := g.rnd.Intn(5)
		return dep{cpu: cpus[i], mem: mems[i], spec: antiSpec("kubernetes.io/hostname")}
	})
	g.left = rest
	g.fill(deploymentsFor(rest, 50), func(int) dep { i := g.rnd.Intn(5); return dep{cpu: cpus[i], mem: mems[i]} })
}

func genPodAffinity(g *gen) {
	g.pool(poolSpec{name: "default"})
	g.fill(deploymentsFor(g.left, 30), func(int) dep {
		i := g.rnd.Intn(5)
		d := dep{cpu: cpus[i], mem: mems[i]}
		if g.n > 0 && g.rnd.Intn(2) == 0 {
			// Next to an earlier Deployment, in its zone.
			d.spec = affSpec("topology.kubernetes.io/zone", fmt.Sprintf("d%04d", g.rnd.Intn(g.n)))
		}
		return d
	})
}

func genHostPorts(g *gen) {
	g.pool(poolSpec{name: "default"})
	port := 8000
	g.fill(deploymentsFor(g.left, 20), func(int) dep {
		i := g.rnd.Intn(5)
		d := dep{cpu: cpus[i], mem: mems[i]}
		if g.rnd.Intn(2) == 0 {
			d.hostPort = port + g.rnd.Intn(3) // some Deployments share a port
		}
		return d
	})
}

func genDaemonSets(g *gen) {
	g.pool(poolSpec{name: "default"})
	for i, ds := range [][2]string{{"200m", "256Mi"}, {"100m", "128Mi"}, {"50m", "64Mi"}} {
		g.doc(fmt.Sprintf("apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: ds%d\n  namespace: kube-system\nspec:\n  selector:\n    matchLabels:\n      app: ds%d\n  template:\n    metadata:\n      labels:\n        app: ds%d\n    spec:\n      tolerations:\n        - operator: Exists\n      containers:\n        - name: agent\n          image: registry.k8s.io/pause:3.9\n          resources:\n            requests:\n              cpu: %s\n              memory: %s\n", i, i, i, ds[0], ds[1]))
	}
	g.fill(deploymentsFor(g.left, 40), func(int) dep { i := g.rnd.Intn(5); return dep{cpu: cpus[i], mem: mems[i]} })
}

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

func genVolumes(g *gen) {
	g.pool(poolSpec{name: "default"})
	g.fill(deploymentsFor(g.left, 20), func(int) dep {
		i := g.rnd.Intn(5)
		return dep{cpu: cpus[i], mem: mems[i], claimZone: g.pick(zones)}
	})
}

func genMix(g *gen) {
	g.pool(poolSpec{name: "default", weight: 10})
	g.pool(poolSpec{name: "spot", capacity: []string{"spot"}, cpuLimit: fmt.Sprint(max(16, g.left/8))})
	g.pool(poolSpec{name: "gpu", categories: []string{"g"}, taint: "nvidia.com/gpu=true:NoSchedule"})
	g.doc("apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\n  namespace: kube-system\nspec:\n  selector:\n    matchLabels:\n      app: agent\n  template:\n    metadata:\n      labels:\n        app: agent\n    spec:\n      containers:\n        - name: agent\n          image: registry.k8s.io/pause:3.9\n          resources:\n            requests:\n              cpu: 100m\n              memory: 128Mi\n")
	g.fill(deploymentsFor(g.left, 25), func(int) dep {
		i := g.rnd.Intn(5)
		d := dep{cpu: cpus[i], mem: mems[i]}
		switch g.rnd.Intn(8) {
		case 0:
			d.spec = spreadSpec("topology.kubernetes.io/zone")
		case 1:
			d.spec = antiSpec("kubernetes.io/hostname")
		case 2:
			if g.n > 0 {
				d.spec = affSpec("topology.kubernetes.io/zone", fmt.Sprintf("d%04d", g.rnd.Intn(g.n)))
			}
		case 3:
			d.claimZone = g.pick(zones)
		case 4:
			d.hostPort = 9000 + g.rnd.Intn(2)
		case 5:
			d.extra = map[string]string{"nvidia.com/gpu": "1"}
			d.tolerate = "nvidia.com/gpu=true"
			d.cpu, d.mem = "2", "8Gi"
		}
		return d
	})
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}
