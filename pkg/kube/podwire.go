package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// A pod list read the usual way (the typed clientset) decodes every field
// of every pod, and ReducePod then throws most of them away: at 100,000
// realistic pods that decoding is almost all of a pass's CPU
// (docs/scale.md). The read below asks for the page in protobuf, finds
// each pod's bytes in it and drops, still encoded, the fields ReducePod
// would drop (managed fields, each container's environment, probes and
// mounts, every volume but claims, the status beyond phase, conditions
// and nominated node...), then decodes what is left with the generated
// decoder and applies ReducePod as before. Every field the filter drops
// is one ReducePod drops or overwrites, so the pods are the same ones
// the typed read gives (TestEachPod_SameAsTypedRead checks it on the API
// server for pods of every shape Joist reads).

// protobufType is the API server's protobuf media type.
const protobufType = "application/vnd.kubernetes.protobuf"

// protobufMagic starts every protobuf-encoded object the API server sends
// (its runtime.Unknown envelope follows).
var protobufMagic = []byte("k8s\x00")

// Field numbers, from the generated.proto files of k8s.io/apimachinery
// (runtime.Unknown, meta/v1 ListMeta and ObjectMeta) and k8s.io/api
// (core/v1).
const (
	unknownTypeMeta = 1 // runtime.Unknown
	unknownRaw      = 2
	typeMetaKind    = 2 // runtime.TypeMeta

	listMetadata = 1 // PodList
	listItems    = 2
	listContinue = 3 // ListMeta

	podMetadata = 1 // Pod
	podSpec     = 2
	podStatus   = 3

	metaNamespace     = 3 // ObjectMeta
	metaLabels        = 11
	metaManagedFields = 17

	specVolumes             = 1 // PodSpec
	specContainers          = 2
	specNodeSelector        = 7
	specAffinity            = 18
	specTolerations         = 22
	specSpreads             = 33
	specServiceAccountName  = 8
	specServiceAccount      = 9
	specSecurityContext     = 14
	specImagePullSecrets    = 15
	specInitContainers      = 20
	specHostAliases         = 23
	specDNSConfig           = 26
	specReadinessGates      = 28
	specEphemeralContainers = 34

	volumeSource            = 2  // Volume
	sourcePersistentClaim   = 10 // VolumeSource
	sourceEphemeral         = 29
	containerName           = 1 // Container
	containerPorts          = 6
	containerResources      = 8
	containerRestartPolicy  = 24
	portHostPort            = 2 // ContainerPort
	statusPhase             = 1 // PodStatus
	statusConditions        = 2
	statusQOSClass          = 9
	statusNominatedNodeName = 11
	statusStartTime         = 7
	conditionType           = 1 // PodCondition
	conditionStatus         = 2
	conditionReason         = 5
)

// restClient is the clientset's core/v1 REST client, or nil where there
// is none (client-go's fake clientset: its pods are read typed).
func (c *Client) restClient() rest.Interface {
	rc := c.CoreV1().RESTClient()
	if r, ok := rc.(*rest.RESTClient); rc == nil || ok && r == nil {
		return nil
	}
	return rc
}

// listing is a list the API server is asked for in protobuf: its
// resource and the kind of list it must answer with.
type listing struct{ resource, kind string }

var (
	podListing  = listing{"pods", "PodList"}
	nodeListing = listing{"nodes", "NodeList"}
)

// pageContinue returns the list (of the kind named) inside a protobuf
// page's envelope (nil for a page that is not protobuf: JSON) and the
// list's continue token. A page is told by its first bytes, the protobuf
// envelope's magic number, which no JSON document starts with.
func pageContinue(body []byte, kind string) ([]byte, string, error) {
	if !bytes.HasPrefix(body, protobufMagic) {
		var list struct {
			Metadata metav1.ListMeta `json:"metadata"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, "", fmt.Errorf("decode %s (not protobuf): %w", kind, err)
		}
		return nil, list.Metadata.Continue, nil
	}
	list, err := unwrap(body[len(protobufMagic):], kind)
	if err != nil {
		return nil, "", err
	}
	var cont string
	it := wire{rest: list}
	for it.next() {
		if it.num == listMetadata && it.typ == protowire.BytesType {
			for m := (wire{rest: it.value}); m.next(); {
				if m.num == listContinue && m.typ == protowire.BytesType {
					cont = string(m.value)
				}
			}
		}
	}
	if it.err != nil {
		return nil, "", fmt.Errorf("decode %s: %w", kind, it.err)
	}
	return list, cont, nil
}

// podPage hands each pod of one page of a pod list to f, reduced: of
// list, the PodList of a protobuf page (pageContinue), or, when list is
// nil, of body, a page that is not protobuf (a server that answers JSON),
// decoded whole as the typed read does. r is kept across the pages of a
// read. The pods of namespace skip (when not "") are left out.
func podPage(body, list []byte, skip string, r *podReader, f func(*corev1.Pod)) error {
	if list == nil {
		var l corev1.PodList
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &l); err != nil {
			return fmt.Errorf("decode pod list: %w", err)
		}
		for i := range l.Items {
			p := &l.Items[i]
			ReducePod(p, r.in)
			f(p)
		}
		return nil
	}
	it := wire{rest: list}
	for it.next() {
		if it.num != listItems || it.typ != protowire.BytesType {
			continue
		}
		if skip != "" {
			if ns, err := podNamespace(it.value); err != nil {
				return err
			} else if ns == skip {
				continue
			}
		}
		if r.bound != nil {
			if ok, err := r.boundPod(it.value); err != nil {
				return err
			} else if ok {
				continue
			}
		}
		p, err := r.pod(it.value)
		if err != nil {
			return err
		}
		f(p)
	}
	if it.err != nil {
		return fmt.Errorf("decode pod list: %w", it.err)
	}
	return nil
}

// lastNamespace is the namespace of the last pod of a protobuf PodList.
func lastNamespace(list []byte) (string, error) {
	var last []byte
	it := wire{rest: list}
	for it.next() {
		if it.num == listItems && it.typ == protowire.BytesType {
			last = it.value
		}
	}
	if it.err != nil {
		return "", fmt.Errorf("decode pod list: %w", it.err)
	}
	return podNamespace(last)
}

// podNamespace reads an encoded pod's namespace.
func podNamespace(pod []byte) (string, error) {
	var ns string
	it := wire{rest: pod}
	for it.next() {
		if it.num == podMetadata && it.typ == protowire.BytesType {
			for m := (wire{rest: it.value}); m.next(); {
				if m.num == metaNamespace && m.typ == protowire.BytesType {
					ns = string(m.value)
				}
			}
		}
	}
	if it.err != nil {
		return "", fmt.Errorf("decode pod: %w", it.err)
	}
	return ns, nil
}

// podReader decodes the pods of one read, reduced. With an Interner, the
// fields replicas share (labels; node selector, affinity, tolerations and
// spread terms; each container's resources) are not decoded for every
// pod: the filter sets their bytes aside, and each distinct encoding is
// decoded and reduced once and then shared (Interner.wire), which spares
// the decoding of their maps and quantities and ReducePod's keying of
// them. (Annotations are not: they are often unique to a pod, and large.)
type podReader struct {
	in  *Interner
	buf []byte // the pod less what is dropped and what is set aside
	// The fields set aside, as encoded (tags included, so each is an
	// encoding of its message with these fields alone): the pod's labels,
	// its scheduling terms, and each container's and init container's
	// resources (at resources[i][j], j the container's index).
	labels, terms []byte
	resources     [2][][]byte
	// containers counts the pod's containers and init containers, so
	// their slices are made their size before they are decoded (the
	// generated decoder appends to them: grown one by one, a pod's two
	// containers cost three, ~1.2 KB of the ~4 KB a pod allocated).
	containers [2]int
	// reuse, when not nil, is the pod every pod is decoded into
	// (EachPodBorrowed).
	reuse *corev1.Pod
	// bound, when not nil, takes the pods that can be read as a
	// scheduling.BoundPod (EachBoundPod); key is its scratch space.
	bound *BoundRead
	key   []byte
}

// pod decodes one encoded pod, reduced.
func (r *podReader) pod(enc []byte) (*corev1.Pod, error) {
	r.labels, r.terms = r.labels[:0], r.terms[:0]
	r.resources[0], r.resources[1] = r.resources[0][:0], r.resources[1][:0]
	r.containers = [2]int{}
	var err error
	if r.buf, err = r.filterPod(r.buf[:0], enc); err != nil {
		return nil, err
	}
	p := r.reuse
	if p == nil {
		p = new(corev1.Pod)
	} else {
		*p = corev1.Pod{}
	}
	if n := r.containers[0]; n > 0 {
		p.Spec.Containers = make([]corev1.Container, 0, n)
	}
	if n := r.containers[1]; n > 0 {
		p.Spec.InitContainers = make([]corev1.Container, 0, n)
	}
	if err := p.Unmarshal(r.buf); err != nil {
		return nil, fmt.Errorf("decode pod: %w", err)
	}
	if r.in == nil {
		ReducePod(p, nil)
		return p, nil
	}
	if err := r.setShared(p); err != nil {
		return nil, err
	}
	reducePod(p, r.in, true)
	return p, nil
}

// setShared sets the fields set aside on p, shared.
func (r *podReader) setShared(p *corev1.Pod) error {
	w := &r.in.wire
	if len(r.labels) > 0 {
		l, err := wireShared(&w.labels, r.labels, func(m *metav1.ObjectMeta) map[string]string { return r.in.stringMap(m.Labels, "") })
		if err != nil {
			return err
		}
		p.Labels = l
	}
	if len(r.terms) > 0 {
		t, err := wireShared(&w.terms, r.terms, func(s *corev1.PodSpec) *corev1.PodSpec {
			return &corev1.PodSpec{NodeSelector: r.in.stringMap(s.NodeSelector, ""), Affinity: s.Affinity,
				Tolerations: r.in.tolerations(s.Tolerations), TopologySpreadConstraints: s.TopologySpreadConstraints}
		})
		if err != nil {
			return err
		}
		p.Spec.NodeSelector, p.Spec.Affinity, p.Spec.Tolerations, p.Spec.TopologySpreadConstraints = t.NodeSelector, t.Affinity, t.Tolerations, t.TopologySpreadConstraints
	}
	for k, cs := range [2][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		if len(r.resources[k]) != len(cs) {
			return fmt.Errorf("decode pod %s/%s: %d containers, %d resources", p.Namespace, p.Name, len(cs), len(r.resources[k]))
		}
		for i := range cs {
			if len(r.resources[k][i]) == 0 {
				continue
			}
			res, err := wireShared(&w.resources, r.resources[k][i], func(c *corev1.Container) corev1.ResourceRequirements { return c.Resources })
			if err != nil {
				return err
			}
			cs[i].Resources = res
		}
	}
	return nil
}

// wireShared returns the value m holds for the encoding enc, or decodes
// enc as a message of type M, keeps what get makes of it as that value,
// and returns it.
func wireShared[T any, M any, PM interface {
	*M
	Unmarshal([]byte) error
}](m *map[string]T, enc []byte, get func(PM) T) (T, error) {
	if v, ok := (*m)[string(enc)]; ok {
		return v, nil
	}
	if *m == nil {
		*m = map[string]T{}
	}
	var msg M
	if err := PM(&msg).Unmarshal(enc); err != nil {
		var zero T
		return zero, fmt.Errorf("decode pod: %w", err)
	}
	v := get(&msg)
	(*m)[string(enc)] = v
	return v, nil
}

// unwrap returns the object inside the API server's protobuf envelope (a
// runtime.Unknown), which must be of the kind named.
func unwrap(env []byte, want string) ([]byte, error) {
	var kind string
	var raw []byte
	it := wire{rest: env}
	for it.next() {
		if it.typ != protowire.BytesType {
			continue
		}
		switch it.num {
		case unknownTypeMeta:
			for m := (wire{rest: it.value}); m.next(); {
				if m.num == typeMetaKind && m.typ == protowire.BytesType {
					kind = string(m.value)
				}
			}
		case unknownRaw:
			raw = it.value
		}
	}
	if it.err != nil {
		return nil, fmt.Errorf("decode %s envelope: %w", want, it.err)
	}
	if kind != want {
		return nil, fmt.Errorf("decode %s: the server sent a %q", want, kind)
	}
	return raw, nil
}

// filterPod appends to dst the encoded pod less the fields ReducePod
// drops or replaces, and, with an Interner, less the fields it sets aside
// (podReader).
func (r *podReader) filterPod(dst, pod []byte) ([]byte, error) {
	return filter(dst, pod, func(dst []byte, it field) ([]byte, error) {
		switch it.num {
		case podMetadata:
			return nested(dst, it, r.filterMeta)
		case podSpec:
			return nested(dst, it, r.filterSpec)
		case podStatus:
			return nested(dst, it, filterStatus)
		}
		return append(dst, it.raw...), nil
	})
}

// filterPod is the filter alone, nothing set aside.
func filterPod(dst, pod []byte) ([]byte, error) {
	var r podReader
	return r.filterPod(dst, pod)
}

// filterMeta drops the managed fields (reduceMeta) and sets the labels
// aside.
func (r *podReader) filterMeta(dst, meta []byte) ([]byte, error) {
	return filter(dst, meta, func(dst []byte, it field) ([]byte, error) {
		switch {
		case it.num == metaManagedFields:
			return dst, nil
		case it.num == metaLabels && r.in != nil:
			r.labels = append(r.labels, it.raw...)
			return dst, nil
		}
		return append(dst, it.raw...), nil
	})
}

// filterSpec drops what ReducePod clears of the spec and filters the
// containers; it keeps a volume only if it is a claim, persistent or
// ephemeral, and sets the scheduling terms aside. Any other field is
// kept: a field added to PodSpec later is ReducePod's to keep or drop.
func (r *podReader) filterSpec(dst, spec []byte) ([]byte, error) {
	return filter(dst, spec, func(dst []byte, it field) ([]byte, error) {
		switch it.num {
		case specContainers:
			return nested(dst, it, r.filterContainer(0))
		case specInitContainers:
			return nested(dst, it, r.filterContainer(1))
		case specVolumes:
			if !claimVolume(it.value) {
				return dst, nil
			}
		case specNodeSelector, specAffinity, specTolerations, specSpreads:
			if r.in != nil {
				r.terms = append(r.terms, it.raw...)
				return dst, nil
			}
		case specEphemeralContainers, specServiceAccountName, specServiceAccount, specSecurityContext,
			specImagePullSecrets, specHostAliases, specDNSConfig, specReadinessGates:
			return dst, nil
		}
		return append(dst, it.raw...), nil
	})
}

// filterContainer keeps what reduceContainers keeps of a container (it
// builds a new one of these alone): name, resources, restart policy and
// the ports with a host port. With an Interner the resources are set
// aside, at r.resources[kind] (0: containers, 1: init containers), one
// entry a container.
func (r *podReader) filterContainer(kind int) func(dst, c []byte) ([]byte, error) {
	return func(dst, c []byte) ([]byte, error) {
		r.containers[kind]++
		at := -1
		if r.in != nil {
			at = len(r.resources[kind])
			r.resources[kind] = append(r.resources[kind], nil)
		}
		return filter(dst, c, func(dst []byte, it field) ([]byte, error) {
			switch it.num {
			case containerResources:
				if at >= 0 {
					r.resources[kind][at] = append(r.resources[kind][at], it.raw...)
					return dst, nil
				}
				return append(dst, it.raw...), nil
			case containerName, containerRestartPolicy:
				return append(dst, it.raw...), nil
			case containerPorts:
				if hostPort(it.value) {
					return append(dst, it.raw...), nil
				}
			}
			return dst, nil
		})
	}
}

// filterStatus keeps what ReducePod keeps of the status (it builds a new
// one of these alone): phase, the nominated node, the QoS class, the
// start time and the PodScheduled condition's type, status and reason
// (reduceConditions).
func filterStatus(dst, st []byte) ([]byte, error) {
	return filter(dst, st, func(dst []byte, it field) ([]byte, error) {
		switch it.num {
		case statusPhase, statusNominatedNodeName, statusQOSClass, statusStartTime:
			return append(dst, it.raw...), nil
		case statusConditions:
			if !scheduledCondition(it.value) {
				return dst, nil
			}
			return nested(dst, it, func(dst, cond []byte) ([]byte, error) {
				// Scalars too are dropped (observedGeneration): filter
				// would keep them.
				for len(cond) > 0 {
					f, n, err := consumeField(cond)
					if err != nil {
						return dst, err
					}
					cond = cond[n:]
					if f.num == conditionType || f.num == conditionStatus || f.num == conditionReason {
						dst = append(dst, f.raw...)
					}
				}
				return dst, nil
			})
		}
		return dst, nil
	})
}

// scheduledCondition says whether an encoded PodCondition is the
// PodScheduled one.
func scheduledCondition(c []byte) bool {
	for it := (wire{rest: c}); it.next(); {
		if it.num == conditionType && it.typ == protowire.BytesType {
			return string(it.value) == string(corev1.PodScheduled)
		}
	}
	return false
}

// claimVolume says whether an encoded Volume is a persistent or an
// ephemeral claim.
func claimVolume(v []byte) bool {
	for it := (wire{rest: v}); it.next(); {
		if it.num != volumeSource || it.typ != protowire.BytesType {
			continue
		}
		for s := (wire{rest: it.value}); s.next(); {
			if s.num == sourcePersistentClaim || s.num == sourceEphemeral {
				return true
			}
		}
	}
	return false
}

// hostPort says whether an encoded ContainerPort has a host port.
func hostPort(p []byte) bool {
	for it := (wire{rest: p}); it.next(); {
		if it.num == portHostPort && it.typ == protowire.VarintType {
			return int32(it.varint) > 0
		}
	}
	return false
}

// filter appends to dst what keep appends for each field of msg.
// Length-delimited fields only are passed to keep; the others (scalars)
// are kept as they are. The fields are read and passed by value, so
// nothing of the iteration is on the heap: an iterator there cost an
// allocation per message filtered and a write barrier per field read
// while the collector runs (a fifth of the filter's time,
// BenchmarkPodPage).
func filter(dst, msg []byte, keep func(dst []byte, it field) ([]byte, error)) ([]byte, error) {
	for len(msg) > 0 {
		f, n, err := consumeField(msg)
		if err != nil {
			return dst, err
		}
		msg = msg[n:]
		if f.typ != protowire.BytesType {
			dst = append(dst, f.raw...)
			continue
		}
		if dst, err = keep(dst, f); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// nested appends the field it is at, a message, with its contents passed
// through f; its length prefix is rewritten to the filtered length.
func nested(dst []byte, it field, f func(dst, msg []byte) ([]byte, error)) ([]byte, error) {
	dst = protowire.AppendTag(dst, it.num, protowire.BytesType)
	at := len(dst)
	room := protowire.SizeVarint(uint64(len(it.value))) // the filtered length is no longer
	dst = append(dst, make([]byte, room)...)
	dst, err := f(dst, it.value)
	if err != nil {
		return dst, err
	}
	n := len(dst) - at - room
	size := protowire.SizeVarint(uint64(n))
	protowire.AppendVarint(dst[at:at], uint64(n)) // in place: size <= room
	if size < room {
		dst = append(dst[:at+size], dst[at+room:]...)
	}
	return dst, nil
}

// field is one field of an encoded message.
type field struct {
	num protowire.Number
	typ protowire.Type
	raw []byte // the whole field, tag included
	// value is a length-delimited field's contents.
	value []byte
	// varint is a varint field's value.
	varint uint64
}

// wire steps through the fields of an encoded message.
type wire struct {
	rest []byte
	field
	err error
}

var errGroup = errors.New("group fields are not used by Kubernetes")

func (it *wire) next() bool {
	if len(it.rest) == 0 || it.err != nil {
		return false
	}
	f, n, err := consumeField(it.rest)
	if err != nil {
		it.err = err
		return false
	}
	it.field, it.rest = f, it.rest[n:]
	return true
}

// consumeField reads the field b starts with and returns it and its
// length.
func consumeField(b []byte) (field, int, error) {
	// Most fields of a Kubernetes object have a one-byte tag (field
	// numbers below 16) and, if length-delimited, a length below 128: read
	// those here, the rest through protowire.
	if t := b[0]; len(b) >= 2 && t < 0x80 && t>>3 != 0 && b[1] < 0x80 {
		switch typ := protowire.Type(t & 7); typ {
		case protowire.BytesType:
			if end := 2 + int(b[1]); end <= len(b) {
				return field{num: protowire.Number(t >> 3), typ: typ, raw: b[:end], value: b[2:end]}, end, nil
			}
		case protowire.VarintType:
			return field{num: protowire.Number(t >> 3), typ: typ, raw: b[:2], varint: uint64(b[1])}, 2, nil
		}
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, 0, protowire.ParseError(n)
	}
	f := field{num: num, typ: typ}
	var m int
	switch typ {
	case protowire.BytesType:
		f.value, m = protowire.ConsumeBytes(b[n:])
	case protowire.VarintType:
		f.varint, m = protowire.ConsumeVarint(b[n:])
	case protowire.StartGroupType, protowire.EndGroupType:
		return field{}, 0, errGroup
	default:
		m = protowire.ConsumeFieldValue(num, typ, b[n:])
	}
	if m < 0 {
		return field{}, 0, protowire.ParseError(m)
	}
	f.raw = b[:n+m]
	return f, n + m, nil
}
