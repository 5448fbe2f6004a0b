package kube

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// PageSize is how many objects one list request asks for. A page of
// realistic pods is a few MB of protobuf: client-go's read buffer, the
// decoded page and its reduction stay that size however large the
// cluster is, and only the reduced objects are kept (docs/scale.md).
const PageSize = 500

// PodPageSize is how many pods one page of EachPod asks for: more than
// PageSize because the API server's cost of a page grows with the pods
// left after it, not only with the page's own. Its watch cache collects,
// for every page of a list, every object from the page's start to the end
// of the list before it takes the page's limit (store.OrderedListPrefix,
// k8s.io/apiserver v0.37.2), so a list of N pods in pages of L costs it
// about N²/2L object steps: at 100,000 pods in pages of 500, a third of
// the API server's CPU for the read (10.4 s of CPU; 6.9 s in pages of
// 2,000: docs/scale.md). Pages of 2,000 (~17 MB of realistic pods, in
// buffers that grow by doubling, two held) took a 100,000-pod pass's peak
// RSS to 270 MB, past the 256 MB it must stay under; 1,000 halves the
// cache's part of the cost and keeps two buffers of ~9 MB.
const PodPageSize = 1000

// podPageSize and nodePageSize are PodPageSize and PageSize, but for
// tests of reads of several pages.
var (
	podPageSize  int64 = PodPageSize
	nodePageSize int64 = PageSize
)

// SetPodPageSize makes EachPod read n pods a page until restore is
// called: for tests, and the scale benchmark's small-scale check, which
// reads a small cluster in several pages, so split by namespace.
func SetPodPageSize(n int64) (restore func()) {
	podPageSize = n
	return func() { podPageSize = PodPageSize }
}

// lastApplied is kubectl's copy of the whole object as applied: often the
// largest annotation, read by nothing in Joist.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// ReducePod drops in place what no Joist decision reads from a pod, so a
// pass can hold every pod of a large cluster: managed fields, kubectl's
// last-applied copy, each container's command, environment, probes,
// mounts, lifecycle and security context (kept: name, resources, host
// ports, restart policy — the sidecar rule), ephemeral containers, every
// volume but claims (persistent and ephemeral), and the status beyond
// phase, the nominated node, the QoS class, the start time (a
// do-not-disrupt duration runs from it: pods.DoNotDisruptUntil) and the
// PodScheduled condition's status and reason. What stays is what the
// simulator (requests, labels, affinity and spread terms, tolerations,
// node selector, host ports, claims, owner), the disruption rules
// (annotations, owners, priority, deletion), the nominations
// (resourceVersion, UID) and the choice of pods to provision for
// (pods.Unschedulable: the PodScheduled condition) read. Strings repeated across pods (namespaces,
// node names, label keys and values) are shared through in when it is
// not nil.
func ReducePod(p *corev1.Pod, in *Interner) { reducePod(p, in, false) }

// reducePod is ReducePod; shared says that the pod's labels, node
// selector, affinity, tolerations and spread terms are shared already
// (podReader), so they are left as they are.
func reducePod(p *corev1.Pod, in *Interner, shared bool) {
	reduceMeta(&p.ObjectMeta, in, shared)
	s := &p.Spec
	s.InitContainers = reduceContainers(s.InitContainers, in)
	s.Containers = reduceContainers(s.Containers, in)
	s.EphemeralContainers = nil
	var vols []corev1.Volume
	for _, v := range s.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			vols = append(vols, v)
		}
	}
	s.Volumes = vols
	s.NodeName = in.str(s.NodeName)
	s.ServiceAccountName, s.DeprecatedServiceAccount = "", ""
	s.SchedulerName = in.str(s.SchedulerName)
	s.PriorityClassName = in.str(s.PriorityClassName)
	s.ImagePullSecrets, s.HostAliases, s.DNSConfig, s.SecurityContext, s.ReadinessGates = nil, nil, nil, nil, nil
	if !shared {
		reduceTerms(s, in)
	}
	st := p.Status
	p.Status = corev1.PodStatus{Phase: st.Phase, Conditions: reduceConditions(st.Conditions), NominatedNodeName: st.NominatedNodeName, QOSClass: st.QOSClass, StartTime: st.StartTime}
}

// reduceConditions keeps, in place, what Joist reads of a pod's
// conditions: whether kube-scheduler found no node for it
// (pods.Unschedulable: the PodScheduled condition's status and reason).
// A running pod's other four conditions (Initialized, Ready, ...), the
// times and the messages were a fifth of decoding a page of pods.
func reduceConditions(cs []corev1.PodCondition) []corev1.PodCondition {
	out := cs[:0]
	for _, c := range cs {
		if c.Type == corev1.PodScheduled {
			out = append(out, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// reduceTerms shares the spec's node selector, tolerations, affinity and
// spread terms through in.
func reduceTerms(s *corev1.PodSpec, in *Interner) {
	s.NodeSelector = in.stringMap(s.NodeSelector, "")
	s.Tolerations = in.tolerations(s.Tolerations)
	if s.Affinity != nil && in != nil {
		if b, err := s.Affinity.Marshal(); err == nil {
			s.Affinity = internBy(in.affinities, b, s.Affinity)
		}
	}
	if len(s.TopologySpreadConstraints) > 0 && in != nil {
		var b []byte
		for i := range s.TopologySpreadConstraints {
			m, err := s.TopologySpreadConstraints[i].Marshal()
			if err != nil {
				b = nil
				break
			}
			b = append(append(b, m...), 0xff)
		}
		if b != nil {
			s.TopologySpreadConstraints = internBy(in.spreads, b, s.TopologySpreadConstraints)
		}
	}
}

// reduceContainers keeps of each container what Joist reads, in place
// (a new slice cost an allocation of ~1.4 KB a pod, for the read's
// garbage collector to clear again).
func reduceContainers(cs []corev1.Container, in *Interner) []corev1.Container {
	for i := range cs {
		c := &cs[i]
		ports := c.Ports[:0]
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				ports = append(ports, p)
			}
		}
		if len(ports) == 0 {
			ports = nil
		}
		*c = corev1.Container{Name: in.str(c.Name), Resources: c.Resources, Ports: ports, RestartPolicy: c.RestartPolicy}
	}
	return cs
}

// ReduceNode drops in place what no Joist decision reads from a node: its
// managed fields, kubectl's last-applied copy and the images it holds
// (often the largest part of a node).
func ReduceNode(n *corev1.Node, in *Interner) {
	reduceMeta(&n.ObjectMeta, in, false)
	n.Status.Images = nil
}

// reduceMeta drops the managed fields and kubectl's copy and shares the
// rest through in; the labels only when they are not shared already.
func reduceMeta(m *metav1.ObjectMeta, in *Interner, sharedLabels bool) {
	m.ManagedFields = nil
	m.Namespace = in.str(m.Namespace)
	m.GenerateName = in.str(m.GenerateName)
	if !sharedLabels {
		m.Labels = in.stringMap(m.Labels, "")
	}
	m.Annotations = in.stringMap(m.Annotations, lastApplied)
	for i := range m.OwnerReferences {
		o := &m.OwnerReferences[i]
		o.APIVersion, o.Kind, o.Name = in.str(o.APIVersion), in.str(o.Kind), in.str(o.Name)
	}
}

// Interner shares equal strings, label and annotation maps, request
// lists and tolerations across the objects of one read: a thousand
// replicas carry the same namespace, labels, owner kind, requests and
// tolerations, and each decoded copy would otherwise be kept. What it
// hands out is shared: readers must not modify it (Joist's decisions
// only read; a pod to be changed is deep-copied first). A nil *Interner
// keeps everything as it is.
type Interner struct {
	strs  map[string]string
	maps  map[string]map[string]string
	lists map[string]corev1.ResourceList
	tols  map[string][]corev1.Toleration
	// affinities and spreads by their protobuf encoding.
	affinities map[string]*corev1.Affinity
	spreads    map[string][]corev1.TopologySpreadConstraint
	// wire holds what the protobuf read decoded once, by encoding
	// (podReader).
	wire struct {
		labels    map[string]map[string]string
		terms     map[string]*corev1.PodSpec
		resources map[string]corev1.ResourceRequirements
		// bound: a BoundPod's requests and host ports by the encoding
		// of what they are read from (EachBoundPod).
		bound map[string]scheduling.BoundPod
	}
	// key and keys are scratch space for the keys of the maps above,
	// kept from one call to the next (a key is copied only when kept).
	key  []byte
	keys []string
}

// internBy returns the value m holds for the encoding key, or keeps v as
// that value.
func internBy[T any](m map[string]T, key []byte, v T) T {
	if got, ok := m[string(key)]; ok {
		return got
	}
	m[string(key)] = v
	return v
}

// NewInterner is an empty Interner.
func NewInterner() *Interner {
	return &Interner{
		strs: map[string]string{}, maps: map[string]map[string]string{}, lists: map[string]corev1.ResourceList{},
		tols: map[string][]corev1.Toleration{}, affinities: map[string]*corev1.Affinity{}, spreads: map[string][]corev1.TopologySpreadConstraint{},
	}
}

func (in *Interner) str(s string) string {
	if in == nil || s == "" {
		return s
	}
	if v, ok := in.strs[s]; ok {
		return v
	}
	in.strs[s] = s
	return s
}

// stringMap is m with interned keys and values, one map for equal
// contents; skip names a key left out.
func (in *Interner) stringMap(m map[string]string, skip string) map[string]string {
	if len(m) == 0 {
		return m
	}
	if in == nil {
		delete(m, skip)
		return m
	}
	keys := in.keys[:0]
	for k := range m {
		if k != skip {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	in.keys = keys
	in.key = in.key[:0]
	for _, k := range keys {
		in.key = append(append(in.key, k...), 0)
		in.key = append(append(in.key, m[k]...), 0)
	}
	if v, ok := in.maps[string(in.key)]; ok {
		return v
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[in.str(k)] = in.str(m[k])
	}
	in.maps[string(in.key)] = out
	return out
}

// ResourceList returns one list for equal lists (scheduling.Compact's
// shared).
func (in *Interner) ResourceList(l corev1.ResourceList) corev1.ResourceList {
	if in == nil || len(l) == 0 {
		return l
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	in.key = in.key[:0]
	for _, k := range keys {
		q := l[corev1.ResourceName(k)]
		in.key = append(append(in.key, k...), 0)
		in.key = append(append(in.key, q.String()...), 0)
	}
	if v, ok := in.lists[string(in.key)]; ok {
		return v
	}
	in.lists[string(in.key)] = l
	return l
}

func (in *Interner) tolerations(ts []corev1.Toleration) []corev1.Toleration {
	if in == nil || len(ts) == 0 {
		return ts
	}
	in.key = in.key[:0]
	for _, t := range ts {
		in.key = append(append(in.key, t.Key...), 0)
		in.key = append(append(in.key, t.Operator...), 0)
		in.key = append(append(in.key, t.Value...), 0)
		in.key = append(append(in.key, t.Effect...), 0)
		if t.TolerationSeconds != nil {
			in.key = strconv.AppendInt(in.key, *t.TolerationSeconds, 10)
		}
		in.key = append(in.key, 1)
	}
	if v, ok := in.tols[string(in.key)]; ok {
		return v
	}
	in.tols[string(in.key)] = ts
	return ts
}

// EachPod lists pods page by page (PodPageSize at a time) and hands each
// one, reduced (ReducePod), to f; nothing of a page is kept but what f
// keeps. The pages are read as protobuf and the fields ReducePod drops
// are dropped before they are decoded (podwire.go). The list is a
// consistent read (no resourceVersion): the API server serves it from its
// watch cache once it has caught up with etcd (consistent reads from
// cache, on by default since Kubernetes 1.31), and every page of one list
// is of the same revision. A read larger than its first page goes on with
// one list per namespace, two at once (pages.go: eachPodWire), each of
// its own revision: every pod is read once, as it was at some moment after
// the read began, not all at one moment (docs/scale.md says why that is
// enough for the provisioner and the reaper).
func (c *Client) EachPod(ctx context.Context, fieldSelector string, in *Interner, f func(*corev1.Pod)) error {
	return c.eachPod(ctx, fieldSelector, in, false, f)
}

// EachPodBorrowed is EachPod for a reader that keeps no pod it is handed,
// only copies of it (a struct copy is enough: the slices and maps of a
// pod are its own, or shared through in, never reused): the pods read as
// protobuf are each decoded into the same corev1.Pod, which spares
// allocating and collecting its ~1.2 KB for each pod of a large read.
func (c *Client) EachPodBorrowed(ctx context.Context, fieldSelector string, in *Interner, f func(*corev1.Pod)) error {
	return c.eachPod(ctx, fieldSelector, in, true, f)
}

func (c *Client) eachPod(ctx context.Context, fieldSelector string, in *Interner, borrowed bool, f func(*corev1.Pod)) error {
	opts := metav1.ListOptions{FieldSelector: fieldSelector, Limit: podPageSize}
	var err error
	if rc := c.restClient(); rc != nil {
		r := &podReader{in: in}
		if borrowed {
			r.reuse = new(corev1.Pod)
		}
		err = c.eachPodWire(ctx, rc, opts, r, f)
	} else {
		err = c.eachPodTyped(ctx, opts, func(p *corev1.Pod) {
			ReducePod(p, in)
			f(p)
		})
	}
	if err != nil {
		return fmt.Errorf("list pods (%s): %w", fieldSelector, err)
	}
	return nil
}

// eachPodTyped lists pods page by page through the typed clientset and
// hands each one, whole, to f.
func (c *Client) eachPodTyped(ctx context.Context, opts metav1.ListOptions, f func(*corev1.Pod)) error {
	for {
		list, err := c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range list.Items {
			f(&list.Items[i])
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}
