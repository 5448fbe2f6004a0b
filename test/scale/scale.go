// Package scale is the provisioner pass at cluster scale (issue 16): a
// generator fills a real API server (envtest) with N nodes, their
// instances in the EC2 simulator, M bound pods of realistic shapes and K
// pending pods; one provisioner pass, built as the function builds it
// (test/scale/pass, pkg/wiring), then runs as its own process and is
// measured: wall time, peak heap and RSS, requests and bytes the API
// server answered. `make bench-scale` prints the table (docs/scale.md);
// `make test` runs a small cluster as a correctness check.
package scale

import (
	"context"
	"fmt"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/ec2sim"
)

// Cluster is the generated cluster's name and the one pool (NodePool
// "bench", EC2NodeClass "bench") its nodes belong to.
const (
	Cluster = "scale"
	Pool    = "bench"
	// PoolLabel is the label the pool puts on its nodes and the pods
	// select.
	PoolLabel = "workload"
)

// Specs is the pool: on-demand t3.xlarge in two zones, on an AMI the
// generator registers in the EC2 simulator (amiID).
func Specs(amiID string) string {
	return `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: ` + Pool + `}
spec:
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: Never}
  template:
    metadata:
      labels: {` + PoolLabel + `: ` + Pool + `}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: ` + Pool + `}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.xlarge]}
      - {key: topology.kubernetes.io/zone, operator: In, values: [` + Zones[0] + `, ` + Zones[1] + `]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: ` + Pool + `}
spec:
  amiFamily: AL2023
  instanceProfile: KarpenterNodeInstanceProfile-` + Cluster + `
  amiSelectorTerms: [{id: ` + amiID + `}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
`
}

// Zones of the generated nodes (the pool's).
var Zones = []string{"ap-northeast-2a", "ap-northeast-2c"}

// Size is a generated cluster: Nodes nodes, Pods bound pods (two
// DaemonSet pods per node among them), Pending pods waiting.
type Size struct{ Nodes, Pods, Pending int }

func (s Size) String() string {
	return fmt.Sprintf("%d nodes, %d bound pods, %d pending", s.Nodes, s.Pods, s.Pending)
}

// Shape of the generated workloads.
const (
	namespaces   = 10
	replicas     = 50 // pods per "Deployment"
	appCPU       = "100m"
	sidecarCPU   = "50m"
	appMemory    = "128Mi"
	sideMemory   = "64Mi"
	dsCPU        = "50m"
	dsMemory     = "64Mi"
	pendingCPU   = "1500m" // two per new t3.xlarge; none fit beside the bound pods
	pendingMem   = "2Gi"
	nodeCPU      = "4"
	nodeAllocCPU = "3920m"
	nodeMemory   = "16Gi"
	nodeAllocMem = "15Gi"
)

// Generator fills the cluster.
type Generator struct {
	Kube kubernetes.Interface
	EC2  *ec2sim.Sim
	// Etcd is the API server's etcd client address. When set, only one
	// object of each shape goes through the API server (created, then its
	// status written, as a kubelet would: defaulted, validated, managed
	// fields stamped): the first node, each DaemonSet's first pod and each
	// Deployment's first replica. Every other node and pod is a clone of
	// its template (own name, UID, node, IPs) written to etcd directly, as
	// the API server would have stored it. Without it every object goes
	// through the API server (~45 pods a second here).
	Etcd string
	// Workers create objects in parallel (default 32).
	Workers int
}

// Fill creates the DaemonSets, the nodes with their instances, the bound
// pods and the pending pods. It returns the nodes' names.
func (g *Generator) Fill(ctx context.Context, s Size) ([]string, error) {
	if g.Workers == 0 {
		g.Workers = 32
	}
	apps := s.Pods - 2*s.Nodes
	if apps < 0 || s.Nodes == 0 {
		return nil, fmt.Errorf("size %v: fewer bound pods than two DaemonSet pods per node", s)
	}
	for i := 0; i < namespaces; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i)}}
		if _, err := g.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
	}
	for _, name := range dsNames {
		if _, err := g.Kube.AppsV1().DaemonSets("kube-system").Create(ctx, daemonSet(name), metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create daemonset %s: %w", name, err)
		}
	}
	nodes := make([]string, s.Nodes)
	ids := make([]string, s.Nodes)
	for i := range nodes {
		zone := Zones[i%len(Zones)]
		id, err := g.EC2.AddRunningInstance("t3.xlarge", zone, map[string]string{
			launch.TagCluster: Cluster, launch.TagNodePool: Pool, launch.TagNodeClass: Pool,
		})
		if err != nil {
			return nil, err
		}
		ids[i] = id
		nodes[i] = node(i, id, zone).Name
	}
	// The pod at index i: two DaemonSet pods per node, then app pods
	// round-robin over the nodes.
	pod := func(i int) *corev1.Pod {
		if i < 2*s.Nodes {
			return dsPod(dsNames[i%2], nodes[i/2])
		}
		j := i - 2*s.Nodes
		return appPod(j, nodes[j%s.Nodes])
	}
	if g.Etcd == "" {
		err := g.parallel(s.Nodes, func(i int) error { _, err := g.createNode(ctx, i, ids[i]); return err })
		if err == nil {
			err = g.parallel(s.Pods, func(i int) error { _, err := g.create(ctx, pod(i), nil); return err })
		}
		if err != nil {
			return nil, err
		}
	} else if err := g.fillDirect(ctx, s, ids, pod); err != nil {
		return nil, err
	}
	err := g.parallel(s.Pending, func(i int) error {
		p := pendingPod(i)
		_, err := g.create(ctx, p, &corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/1 nodes are available: 1 Insufficient cpu.", LastTransitionTime: metav1.Now(),
		}}})
		return err
	})
	return nodes, err
}

var dsNames = []string{"node-agent", "log-shipper"}

// fillDirect creates the templates through the API server and writes
// their clones to etcd (see Generator.Etcd).
func (g *Generator) fillDirect(ctx context.Context, s Size, ids []string, pod func(int) *corev1.Pod) error {
	w := newEtcdWriter(g.Etcd)
	nodeTmpl, err := g.createNode(ctx, 0, ids[0])
	if err != nil {
		return err
	}
	err = g.batches(ctx, w, s.Nodes-1, func(k int) kv {
		i := k + 1
		n := node(i, ids[i], Zones[i%len(Zones)])
		n.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
		n.UID = uid("n", i)
		n.CreationTimestamp, n.ManagedFields = nodeTmpl.CreationTimestamp, nodeTmpl.ManagedFields
		return kv{"/registry/minions/" + n.Name, n}
	})
	if err != nil {
		return err
	}
	// Templates: the first pod of each DaemonSet and of each Deployment.
	template := func(i int) int {
		if i < 2*s.Nodes {
			return i % 2
		}
		j := i - 2*s.Nodes
		return i - j%replicas
	}
	var tmplIdx []int
	for i := 0; i < s.Pods; i++ {
		if template(i) == i {
			tmplIdx = append(tmplIdx, i)
		}
	}
	tmpls := make([]*corev1.Pod, len(tmplIdx))
	byIdx := make(map[int]int, len(tmplIdx))
	for k, i := range tmplIdx {
		byIdx[i] = k
	}
	err = g.parallel(len(tmplIdx), func(k int) error {
		p, err := g.create(ctx, pod(tmplIdx[k]), nil)
		tmpls[k] = p
		return err
	})
	if err != nil {
		return err
	}
	var clones []int
	for i := 0; i < s.Pods; i++ {
		if template(i) != i {
			clones = append(clones, i)
		}
	}
	return g.batches(ctx, w, len(clones), func(k int) kv {
		i := clones[k]
		want := pod(i)
		p := tmpls[byIdx[template(i)]].DeepCopy()
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		p.ResourceVersion = ""
		p.Name, p.UID, p.Spec.NodeName = want.Name, uid("p", i), want.Spec.NodeName
		ip := fmt.Sprintf("10.%d.%d.%d", 128+i/65536, i/256%256, i%256)
		p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		return kv{"/registry/pods/" + p.Namespace + "/" + p.Name, p}
	})
}

func uid(kind string, i int) types.UID {
	return types.UID(fmt.Sprintf("5ca1e000-%s000-4000-8000-%012d", map[string]string{"n": "0", "p": "1"}[kind], i))
}

// batches writes n objects to etcd in transactions of etcdBatch, a few
// in parallel.
func (g *Generator) batches(ctx context.Context, w *etcdWriter, n int, obj func(k int) kv) error {
	b := (n + etcdBatch - 1) / etcdBatch
	par := &Generator{Workers: 4}
	return par.parallel(b, func(k int) error {
		var kvs []kv
		for i := k * etcdBatch; i < n && i < (k+1)*etcdBatch; i++ {
			kvs = append(kvs, obj(i))
		}
		return w.put(ctx, kvs)
	})
}

// createNode creates the i-th node and writes its status.
func (g *Generator) createNode(ctx context.Context, i int, id string) (*corev1.Node, error) {
	n := node(i, id, Zones[i%len(Zones)])
	created, err := g.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create node %s: %w", n.Name, err)
	}
	created.Status = n.Status
	updated, err := g.Kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("node %s status: %w", n.Name, err)
	}
	return updated, nil
}

// create creates the pod and writes its status: st, or Running (with
// container statuses) when nil.
func (g *Generator) create(ctx context.Context, p *corev1.Pod, st *corev1.PodStatus) (*corev1.Pod, error) {
	created, err := g.Kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if st == nil {
		r := running(p)
		st = &r
	}
	created.Status = *st
	updated, err := g.Kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s status: %w", p.Namespace, p.Name, err)
	}
	return updated, nil
}

func (g *Generator) parallel(n int, f func(i int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for w := 0; w < g.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func rl(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func node(i int, id, zone string) *corev1.Node {
	name := fmt.Sprintf("ip-10-%d-%d-%d.ap-northeast-2.compute.internal", 1+i/65536, i/256%256, i%256)
	var images []corev1.ContainerImage
	for k := 0; k < 30; k++ {
		images = append(images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("123456789012.dkr.ecr.ap-northeast-2.amazonaws.com/team-%d/service-%d@sha256:%064x", k%7, k, k*7919+i), fmt.Sprintf("123456789012.dkr.ecr.ap-northeast-2.amazonaws.com/team-%d/service-%d:v1.%d.%d", k%7, k, k, i%10)},
			SizeBytes: int64(50_000_000 + k*1_000_000),
		})
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{termination.Finalizer}, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"node.kubernetes.io/instance-type": "t3.xlarge", "topology.kubernetes.io/zone": zone,
			"topology.kubernetes.io/region": "ap-northeast-2", "karpenter.sh/capacity-type": "on-demand",
			"karpenter.sh/nodepool": Pool, PoolLabel: Pool, "karpenter.sh/initialized": "true", "karpenter.sh/registered": "true",
		}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///" + zone + "/" + id},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(nodeCPU), corev1.ResourceMemory: resource.MustParse(nodeMemory), corev1.ResourcePods: resource.MustParse("58")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(nodeAllocCPU), corev1.ResourceMemory: resource.MustParse(nodeAllocMem), corev1.ResourcePods: resource.MustParse("58")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", 1+i/65536, i/256%256, i%256)}, {Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalDNS, Address: name}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: fmt.Sprintf("ec2%029x", i), SystemUUID: fmt.Sprintf("ec2%029x", i), BootID: fmt.Sprintf("%032x", i), KernelVersion: "6.1.112-124.190.amzn2023.x86_64",
				OSImage: "Amazon Linux 2023.6.20241031", ContainerRuntimeVersion: "containerd://1.7.22", KubeletVersion: "v1.31.2-eks-94953ac", OperatingSystem: "linux", Architecture: "amd64"},
			Images: images,
		},
	}
}

func daemonSet(name string) *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, Containers: []corev1.Container{{Name: name, Image: "public.ecr.aws/eks/" + name + ":v1.2.3", Resources: corev1.ResourceRequirements{Requests: rl(dsCPU, dsMemory)}}}},
			},
		},
	}
}

func env(n int, prefix string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for i := 0; i < n; i++ {
		out = append(out, corev1.EnvVar{Name: fmt.Sprintf("%s_SETTING_%d", prefix, i), Value: strings.Repeat("v", 20+i)})
	}
	out = append(out,
		corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
	return out
}

func probe(path string, port int) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt(port)}}, PeriodSeconds: 10, TimeoutSeconds: 2, FailureThreshold: 3}
}

func projected() corev1.Volume {
	exp := int64(3607)
	return corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
	}}}}
}

func mounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}, {Name: "config", MountPath: "/etc/app"}}
}

func tolerations() []corev1.Toleration {
	s := int64(300)
	return []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s},
	}
}

// appPod is the j-th replica of a Deployment: an app container and an
// envoy-like sidecar, with probes, environment, a projected token and a
// ConfigMap volume, spread over zones.
func appPod(j int, nodeName string) *corev1.Pod {
	dep := j / replicas
	ns := fmt.Sprintf("app-%d", dep%namespaces)
	app := fmt.Sprintf("service-%d", dep)
	hash := fmt.Sprintf("%x", 0x5d8f7c9b6+dep)
	labels := map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop", "pod-template-hash": hash, "team": fmt.Sprintf("team-%d", dep%7)}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%s-%05d", app, hash, j), Namespace: ns, Labels: labels,
			Annotations:     map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "kubectl.kubernetes.io/restartedAt": "2026-11-30T10:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash, UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", dep)), Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName: nodeName, ServiceAccountName: app,
			Containers: []corev1.Container{
				{Name: "app", Image: "123456789012.dkr.ecr.ap-northeast-2.amazonaws.com/shop/" + app + ":v2.14.3",
					Command: []string{"/app/server"}, Args: []string{"--config=/etc/app/config.yaml", "--port=8080", "--metrics-port=9090"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
					Env:   env(12, "APP"), Resources: corev1.ResourceRequirements{Requests: rl(appCPU, appMemory), Limits: rl("500m", "512Mi")},
					LivenessProbe: probe("/healthz", 8080), ReadinessProbe: probe("/ready", 8080), VolumeMounts: mounts()},
				{Name: "envoy", Image: "public.ecr.aws/appmesh/aws-appmesh-envoy:v1.29.6.0-prod",
					Ports: []corev1.ContainerPort{{Name: "envoy", ContainerPort: 15000}, {Name: "envoy-admin", ContainerPort: 9901}},
					Env:   env(6, "ENVOY"), Resources: corev1.ResourceRequirements{Requests: rl(sidecarCPU, sideMemory)},
					ReadinessProbe: probe("/ready", 9901), VolumeMounts: mounts()[:1]},
			},
			Volumes:                   []corev1.Volume{projected(), {Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}}},
			Tolerations:               tolerations(),
			NodeSelector:              map[string]string{PoolLabel: Pool},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": app}}}},
		},
	}
}

func dsPod(ds, nodeName string) *corev1.Pod {
	short := nodeName[:strings.IndexByte(nodeName, '.')]
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: ds + "-" + short, Namespace: "kube-system", Labels: map[string]string{"app.kubernetes.io/name": ds, "controller-revision-hash": "7b9c8d6f5"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds, UID: types.UID("00000000-0000-0000-0000-0000000000d5"), Controller: ptr(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName: nodeName, ServiceAccountName: ds,
			Containers: []corev1.Container{{Name: ds, Image: "public.ecr.aws/eks/" + ds + ":v1.2.3", Env: env(8, "AGENT"),
				Resources: corev1.ResourceRequirements{Requests: rl(dsCPU, dsMemory)}, LivenessProbe: probe("/healthz", 8081),
				VolumeMounts: append(mounts()[:1], corev1.VolumeMount{Name: "varlog", MountPath: "/var/log"})}},
			Volumes:     []corev1.Volume{projected(), {Name: "varlog", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
}

// PendingName is the i-th pending pod's name (namespace "app-0").
func PendingName(i int) string { return fmt.Sprintf("burst-%05d", i) }

func pendingPod(i int) *corev1.Pod {
	p := appPod(i, "")
	p.Name, p.Namespace = PendingName(i), "app-0"
	p.Labels = map[string]string{"app.kubernetes.io/name": "burst"}
	p.OwnerReferences = nil
	p.Spec.TopologySpreadConstraints = nil
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl(pendingCPU, pendingMem)}
	return p
}

func running(p *corev1.Pod) corev1.PodStatus {
	now := metav1.Now()
	st := corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, HostIP: "10.1.0.1", PodIP: "10.1.128.17",
		PodIPs: []corev1.PodIP{{IP: "10.1.128.17"}}, HostIPs: []corev1.HostIP{{IP: "10.1.0.1"}}, StartTime: &now}
	for _, c := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image + "@sha256:" + strings.Repeat("ab", 32),
			ContainerID: "containerd://" + strings.Repeat("cd", 32), Ready: true, Started: ptr(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	return st
}

func ptr[T any](v T) *T { return &v }

// AppPod is the generator's j-th Deployment replica on nodeName, as
// written (the API server defaults it): for the pod read's tests and
// benchmarks (pkg/kube), which want the benchmark's shapes.
func AppPod(j int, nodeName string) *corev1.Pod { return appPod(j, nodeName) }

// DaemonSetPod is the generator's pod of the DaemonSet ds on nodeName.
func DaemonSetPod(ds, nodeName string) *corev1.Pod { return dsPod(ds, nodeName) }

// Running is the status the generator writes for p, as a kubelet would
// for a running pod.
func Running(p *corev1.Pod) corev1.PodStatus { return running(p) }
