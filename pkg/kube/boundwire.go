package kube

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/scheduling"
)

// A reader of every bound pod of a large cluster (the provisioner) keeps
// most of them as a scheduling.BoundPod: namespace, labels, effective
// requests, host ports, DaemonSet owner. Filtering each pod's bytes,
// decoding what is left into a corev1.Pod, reducing it and then computing
// its effective requests (scheduling.NewBoundPod) cost most of a
// 100,000-pod pass's client CPU (docs/scale.md), for a result that for
// replicas differs only in namespace, labels and owner. EachBoundPod
// builds those pods' BoundPod straight from the wire instead: one walk
// over the pod's fields reads its namespace, node, labels (set aside,
// shared by encoding as podReader shares them), owners and phase, and
// the parts its requests and host ports come from (each container less
// what filterContainer drops, pod-level resources, overhead), whose
// encoding keys a BoundPod computed once per read by
// scheduling.NewBoundPod from those parts decoded. Any pod the walk
// cannot stand for is decoded whole as EachPodBorrowed decodes it: one
// with pod affinity or anti-affinity terms, a volume claim, a deletion
// time, a Node owner (or a DaemonSet owner without a name), a finished
// or pending one, one carrying an annotation the reader names, one on a
// node the reader wants whole.
// TestEachBoundPod_SameAsNewBoundPod checks that every pod it builds is
// the BoundPod the typed read, ReducePod and NewBoundPod give.

// BoundRead says which pods EachBoundPod hands over as a BoundPod and
// to what.
type BoundRead struct {
	// Annotations: a pod carrying any of these is read whole.
	Annotations []string
	// WholeNode, when not nil, says that the pods of a node are read
	// whole.
	WholeNode func(node string) bool
	// Bound takes each pod read as a BoundPod, with its node.
	Bound func(node string, b scheduling.BoundPod)
}

// Field numbers (see podwire.go) the walk reads beyond the filter's.
const (
	metaDeletionTimestamp = 9 // ObjectMeta
	metaAnnotations       = 12
	metaOwnerReferences   = 13
	ownerKind             = 1 // OwnerReference
	ownerName             = 3
	entryKey              = 1 // a map entry
	specNodeName          = 10
	specOverhead          = 32
	specResources         = 40
	affinityPod           = 2 // Affinity
	affinityPodAnti       = 3
)

// EachBoundPod reads pods as EachPodBorrowed does (fieldSelector should
// leave out pods not bound to a node: they are handed to whole), but
// hands each pod it can stand for with a scheduling.BoundPod to
// read.Bound, built from the pod's encoding (above), and only the others
// to whole, reduced, in a struct reused for the next pod (EachPodBorrowed).
// A BoundPod handed over is the one scheduling.NewBoundPod gives for the
// pod reduced, its requests shared through in. A server that answers
// JSON, or a clientset without a REST client, hands every pod to whole.
func (c *Client) EachBoundPod(ctx context.Context, fieldSelector string, in *Interner, read BoundRead, whole func(*corev1.Pod)) error {
	opts := metav1.ListOptions{FieldSelector: fieldSelector, Limit: podPageSize}
	var err error
	if rc := c.restClient(); rc != nil {
		if in == nil {
			in = NewInterner()
		}
		r := &podReader{in: in, reuse: new(corev1.Pod), bound: &read}
		err = c.eachPodWire(ctx, rc, opts, r, whole)
	} else {
		err = c.eachPodTyped(ctx, opts, func(p *corev1.Pod) {
			ReducePod(p, in)
			whole(p)
		})
	}
	if err != nil {
		return fmt.Errorf("list pods (%s): %w", fieldSelector, err)
	}
	return nil
}

// boundScan is what the walk of one pod found.
type boundScan struct {
	namespace, node, daemonSet []byte
	// key is the pod's containers, init containers (filtered as
	// filterContainer filters them), overhead and pod-level resources, as
	// encoded: itself the encoding of a PodSpec of those fields alone.
	key []byte
}

// boundPod hands the encoded pod to r.bound.Bound and reports true if it
// can stand for it with a BoundPod, or reports false (and hands nothing
// over) for a pod to be read whole.
func (r *podReader) boundPod(enc []byte) (bool, error) {
	r.labels = r.labels[:0]
	s := boundScan{key: r.key[:0]}
	ok, err := r.scanBound(&s, enc)
	r.key = s.key
	if err != nil || !ok || len(s.node) == 0 {
		return false, err
	}
	if r.bound.WholeNode != nil && r.bound.WholeNode(string(s.node)) {
		return false, nil
	}
	w := &r.in.wire
	b, found := w.bound[string(s.key)]
	if !found {
		var spec corev1.PodSpec
		if err := spec.Unmarshal(s.key); err != nil {
			return false, fmt.Errorf("decode pod: %w", err)
		}
		b, ok = scheduling.NewBoundPod(&corev1.Pod{Spec: spec}, r.in.ResourceList)
		if !ok {
			return false, nil
		}
		if w.bound == nil {
			w.bound = map[string]scheduling.BoundPod{}
		}
		w.bound[string(s.key)] = b
	}
	b.Namespace = r.in.strBytes(s.namespace)
	b.DaemonSet = r.in.strBytes(s.daemonSet)
	if len(r.labels) > 0 {
		l, err := wireShared(&w.labels, r.labels, func(m *metav1.ObjectMeta) map[string]string { return r.in.stringMap(m.Labels, "") })
		if err != nil {
			return false, err
		}
		b.Labels = l
	}
	r.bound.Bound(r.in.strBytes(s.node), b)
	return true, nil
}

// scanBound walks the encoded pod into s; false: the pod is to be read
// whole.
func (r *podReader) scanBound(s *boundScan, pod []byte) (bool, error) {
	for len(pod) > 0 {
		f, n, err := consumeField(pod)
		if err != nil {
			return false, err
		}
		pod = pod[n:]
		if f.typ != protowire.BytesType {
			continue
		}
		var ok bool
		switch f.num {
		case podMetadata:
			ok, err = r.scanBoundMeta(s, f.value)
		case podSpec:
			ok, err = r.scanBoundSpec(s, f.value)
		case podStatus:
			ok, err = scanBoundStatus(f.value)
		default:
			continue
		}
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func (r *podReader) scanBoundMeta(s *boundScan, meta []byte) (bool, error) {
	for len(meta) > 0 {
		f, n, err := consumeField(meta)
		if err != nil {
			return false, err
		}
		meta = meta[n:]
		if f.typ != protowire.BytesType {
			continue
		}
		switch f.num {
		case metaNamespace:
			s.namespace = f.value
		case metaLabels:
			r.labels = append(r.labels, f.raw...)
		case metaDeletionTimestamp:
			return false, nil
		case metaAnnotations:
			key, err := entryKeyOf(f.value)
			if err != nil {
				return false, err
			}
			for _, a := range r.bound.Annotations {
				if string(key) == a {
					return false, nil
				}
			}
		case metaOwnerReferences:
			var kind, name []byte
			for o := f.value; len(o) > 0; {
				g, m, err := consumeField(o)
				if err != nil {
					return false, err
				}
				o = o[m:]
				switch {
				case g.typ != protowire.BytesType:
				case g.num == ownerKind:
					kind = g.value
				case g.num == ownerName:
					name = g.value
				}
			}
			switch string(kind) {
			case "DaemonSet":
				if len(name) == 0 {
					return false, nil // (invalid) read whole, as its readers see it
				}
				s.daemonSet = name
			case "Node":
				return false, nil
			}
		}
	}
	return true, nil
}

// entryKeyOf is an encoded map entry's key.
func entryKeyOf(entry []byte) ([]byte, error) {
	for len(entry) > 0 {
		f, n, err := consumeField(entry)
		if err != nil {
			return nil, err
		}
		entry = entry[n:]
		if f.num == entryKey && f.typ == protowire.BytesType {
			return f.value, nil
		}
	}
	return nil, nil
}

func (r *podReader) scanBoundSpec(s *boundScan, spec []byte) (bool, error) {
	for len(spec) > 0 {
		f, n, err := consumeField(spec)
		if err != nil {
			return false, err
		}
		spec = spec[n:]
		if f.typ != protowire.BytesType {
			continue
		}
		switch f.num {
		case specNodeName:
			s.node = f.value
		case specContainers:
			if s.key, err = nested(s.key, f, boundContainer); err != nil {
				return false, err
			}
		case specInitContainers:
			if s.key, err = nested(s.key, f, boundContainer); err != nil {
				return false, err
			}
		case specOverhead, specResources:
			s.key = append(s.key, f.raw...)
		case specVolumes:
			if claimVolume(f.value) {
				return false, nil
			}
		case specAffinity:
			for a := f.value; len(a) > 0; {
				g, m, err := consumeField(a)
				if err != nil {
					return false, err
				}
				a = a[m:]
				if g.num == affinityPod || g.num == affinityPodAnti {
					return false, nil
				}
			}
		}
	}
	return true, nil
}

// scanBoundStatus reports false for a pod that finished (it takes no
// room: NewBoundPod refuses it, and readers drop it).
func scanBoundStatus(st []byte) (bool, error) {
	for len(st) > 0 {
		f, n, err := consumeField(st)
		if err != nil {
			return false, err
		}
		st = st[n:]
		if f.num == statusPhase && f.typ == protowire.BytesType {
			switch corev1.PodPhase(f.value) {
			case corev1.PodSucceeded, corev1.PodFailed:
				return false, nil
			}
		}
	}
	return true, nil
}

// boundContainer keeps of an encoded container what its requests and
// host ports are read from (podRequests, podHostPorts): its resources,
// restart policy (the sidecar rule) and ports with a host port, as
// filterContainer keeps them, less its name.
func boundContainer(dst, c []byte) ([]byte, error) {
	return filter(dst, c, func(dst []byte, it field) ([]byte, error) {
		switch it.num {
		case containerResources, containerRestartPolicy:
			return append(dst, it.raw...), nil
		case containerPorts:
			if hostPort(it.value) {
				return append(dst, it.raw...), nil
			}
		}
		return dst, nil
	})
}

// strBytes is str of b, allocated only when new to the read.
func (in *Interner) strBytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if v, ok := in.strs[string(b)]; ok {
		return v
	}
	s := string(b)
	in.strs[s] = s
	return s
}
