package kube

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// The node read is the pod read's (podwire.go) for nodes: each page asked
// for in protobuf and read while the one before is decoded, and each node
// decoded less what ReduceNode drops. A kubelet's node carries the images
// it holds (up to 50 in its status, each with its names and digests) and
// the managed fields of the kubelet's, the node controller's and every
// labeller's writes: most of its bytes, read by nothing in Joist. Decoded
// whole, they were most of the 0.5 s a pass spent reading 5,000 nodes
// (docs/scale.md).

// Field numbers (k8s.io/api core/v1 generated.proto).
const (
	nodeStatus   = 3 // Node
	nodeImages   = 8 // NodeStatus
	nodeListItem = 2 // NodeList
)

// eachNodeWire lists nodes page by page as protobuf and hands each one,
// reduced (ReduceNode), to f.
func eachNodeWire(ctx context.Context, rc rest.Interface, opts metav1.ListOptions, in *Interner, f func(*corev1.Node)) error {
	var buf []byte
	return eachPage(ctx, rc, nodeListing, opts, func(pg fetched) error {
		var err error
		buf, err = nodePage(buf, pg.body, pg.list, in, f)
		return err
	})
}

// nodePage hands each node of one page of a node list to f, reduced: of
// list, the NodeList of a protobuf page (pageContinue), or, when list is
// nil, of body, a page that is not protobuf, decoded whole. buf is
// scratch space for the filtered node, returned for the next page.
func nodePage(buf, body, list []byte, in *Interner, f func(*corev1.Node)) ([]byte, error) {
	if list == nil {
		var l corev1.NodeList
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &l); err != nil {
			return buf, fmt.Errorf("decode node list: %w", err)
		}
		for i := range l.Items {
			ReduceNode(&l.Items[i], in)
			f(&l.Items[i])
		}
		return buf, nil
	}
	it := wire{rest: list}
	for it.next() {
		if it.num != nodeListItem || it.typ != protowire.BytesType {
			continue
		}
		var err error
		if buf, err = filterNode(buf[:0], it.value); err != nil {
			return buf, fmt.Errorf("decode node: %w", err)
		}
		n := new(corev1.Node)
		if err := n.Unmarshal(buf); err != nil {
			return buf, fmt.Errorf("decode node: %w", err)
		}
		ReduceNode(n, in)
		f(n)
	}
	if it.err != nil {
		return buf, fmt.Errorf("decode node list: %w", it.err)
	}
	return buf, nil
}

// filterNode appends to dst the encoded node less what ReduceNode drops
// and is not needed to decode the rest: the managed fields and the
// images. Everything else is kept, a field added to Node later included.
func filterNode(dst, node []byte) ([]byte, error) {
	return filter(dst, node, func(dst []byte, it field) ([]byte, error) {
		switch it.num {
		case podMetadata: // ObjectMeta is field 1 of Node as of Pod
			return nested(dst, it, func(dst, meta []byte) ([]byte, error) {
				return filter(dst, meta, func(dst []byte, it field) ([]byte, error) {
					if it.num == metaManagedFields {
						return dst, nil
					}
					return append(dst, it.raw...), nil
				})
			})
		case nodeStatus:
			return nested(dst, it, func(dst, st []byte) ([]byte, error) {
				return filter(dst, st, func(dst []byte, it field) ([]byte, error) {
					if it.num == nodeImages {
						return dst, nil
					}
					return append(dst, it.raw...), nil
				})
			})
		}
		return append(dst, it.raw...), nil
	})
}
