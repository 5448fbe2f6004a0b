package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"

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

	metaManagedFields = 17 // ObjectMeta

	specVolumes             = 1 // PodSpec
	specContainers          = 2
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
	conditionMessage        = 6 // PodCondition
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

// eachPodWire lists pods page by page as protobuf and hands each one,
// reduced, to f.
func eachPodWire(ctx context.Context, rc rest.Interface, opts metav1.ListOptions, in *Interner, f func(*corev1.Pod)) error {
	var buf []byte
	for {
		var contentType string
		body, err := rc.Get().Resource("pods").VersionedParams(&opts, scheme.ParameterCodec).
			SetHeader("Accept", protobufType+", application/json").
			Do(ctx).ContentType(&contentType).Raw()
		if err != nil {
			return err
		}
		cont, err := podPage(body, contentType, &buf, in, f)
		if err != nil {
			return err
		}
		if cont == "" {
			return nil
		}
		opts.Continue = cont
	}
}

// podPage hands each pod of one page of a pod list (body, of contentType)
// to f, reduced, and returns the list's continue token. A page that is
// not protobuf (a server that answers JSON) is decoded whole, as the
// typed read does. buf is scratch space kept across pages.
func podPage(body []byte, contentType string, buf *[]byte, in *Interner, f func(*corev1.Pod)) (string, error) {
	if mt, _, _ := mime.ParseMediaType(contentType); mt != protobufType || !bytes.HasPrefix(body, protobufMagic) {
		var list corev1.PodList
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &list); err != nil {
			return "", fmt.Errorf("decode pod list (%s): %w", contentType, err)
		}
		for i := range list.Items {
			p := &list.Items[i]
			ReducePod(p, in)
			f(p)
		}
		return list.Continue, nil
	}
	list, err := unwrap(body[len(protobufMagic):])
	if err != nil {
		return "", err
	}
	var cont string
	it := wire{rest: list}
	for it.next() {
		switch {
		case it.typ != protowire.BytesType:
		case it.num == listMetadata:
			for m := (wire{rest: it.value}); m.next(); {
				if m.num == listContinue && m.typ == protowire.BytesType {
					cont = string(m.value)
				}
			}
		case it.num == listItems:
			if *buf, err = filterPod((*buf)[:0], it.value); err != nil {
				return "", err
			}
			p := new(corev1.Pod)
			if err := p.Unmarshal(*buf); err != nil {
				return "", fmt.Errorf("decode pod: %w", err)
			}
			ReducePod(p, in)
			f(p)
		}
	}
	if it.err != nil {
		return "", fmt.Errorf("decode pod list: %w", it.err)
	}
	return cont, nil
}

// unwrap returns the object inside the API server's protobuf envelope (a
// runtime.Unknown), which must be a PodList.
func unwrap(env []byte) ([]byte, error) {
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
		return nil, fmt.Errorf("decode pod list envelope: %w", it.err)
	}
	if kind != "PodList" {
		return nil, fmt.Errorf("decode pod list: the server sent a %q", kind)
	}
	return raw, nil
}

// filterPod appends to dst the encoded pod less the fields ReducePod
// drops or replaces.
func filterPod(dst, pod []byte) ([]byte, error) {
	return filter(dst, pod, func(dst []byte, it *wire) ([]byte, error) {
		switch it.num {
		case podMetadata:
			return nested(dst, it, filterMeta)
		case podSpec:
			return nested(dst, it, filterSpec)
		case podStatus:
			return nested(dst, it, filterStatus)
		}
		return append(dst, it.field...), nil
	})
}

// filterMeta drops the managed fields (reduceMeta).
func filterMeta(dst, meta []byte) ([]byte, error) {
	return filter(dst, meta, func(dst []byte, it *wire) ([]byte, error) {
		if it.num == metaManagedFields {
			return dst, nil
		}
		return append(dst, it.field...), nil
	})
}

// filterSpec drops what ReducePod clears of the spec and filters the
// containers; it keeps a volume only if it is a claim, persistent or
// ephemeral. Any other field is kept: a field added to PodSpec later is
// ReducePod's to keep or drop.
func filterSpec(dst, spec []byte) ([]byte, error) {
	return filter(dst, spec, func(dst []byte, it *wire) ([]byte, error) {
		switch it.num {
		case specContainers, specInitContainers:
			return nested(dst, it, filterContainer)
		case specVolumes:
			if !claimVolume(it.value) {
				return dst, nil
			}
		case specEphemeralContainers, specServiceAccountName, specServiceAccount, specSecurityContext,
			specImagePullSecrets, specHostAliases, specDNSConfig, specReadinessGates:
			return dst, nil
		}
		return append(dst, it.field...), nil
	})
}

// filterContainer keeps what reduceContainers keeps of a container (it
// builds a new one of these alone): name, resources, restart policy and
// the ports with a host port.
func filterContainer(dst, c []byte) ([]byte, error) {
	return filter(dst, c, func(dst []byte, it *wire) ([]byte, error) {
		switch it.num {
		case containerName, containerResources, containerRestartPolicy:
			return append(dst, it.field...), nil
		case containerPorts:
			if hostPort(it.value) {
				return append(dst, it.field...), nil
			}
		}
		return dst, nil
	})
}

// filterStatus keeps what ReducePod keeps of the status (it builds a new
// one of these alone): phase, conditions (less their messages), the
// nominated node and the QoS class.
func filterStatus(dst, st []byte) ([]byte, error) {
	return filter(dst, st, func(dst []byte, it *wire) ([]byte, error) {
		switch it.num {
		case statusPhase, statusNominatedNodeName, statusQOSClass:
			return append(dst, it.field...), nil
		case statusConditions:
			return nested(dst, it, func(dst, cond []byte) ([]byte, error) {
				return filter(dst, cond, func(dst []byte, it *wire) ([]byte, error) {
					if it.num == conditionMessage {
						return dst, nil
					}
					return append(dst, it.field...), nil
				})
			})
		}
		return dst, nil
	})
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
// are kept as they are.
func filter(dst, msg []byte, keep func(dst []byte, it *wire) ([]byte, error)) ([]byte, error) {
	it := wire{rest: msg}
	for it.next() {
		if it.typ != protowire.BytesType {
			dst = append(dst, it.field...)
			continue
		}
		var err error
		if dst, err = keep(dst, &it); err != nil {
			return dst, err
		}
	}
	return dst, it.err
}

// nested appends the field it is at, a message, with its contents passed
// through f; its length prefix is rewritten to the filtered length.
func nested(dst []byte, it *wire, f func(dst, msg []byte) ([]byte, error)) ([]byte, error) {
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

// wire steps through the fields of an encoded message.
type wire struct {
	rest  []byte
	num   protowire.Number
	typ   protowire.Type
	field []byte // the whole field, tag included
	value []byte // a length-delimited field's contents
	// varint is a varint field's value.
	varint uint64
	err    error
}

var errGroup = errors.New("group fields are not used by Kubernetes")

func (it *wire) next() bool {
	if len(it.rest) == 0 || it.err != nil {
		return false
	}
	num, typ, n := protowire.ConsumeTag(it.rest)
	if n < 0 {
		it.err = protowire.ParseError(n)
		return false
	}
	it.num, it.typ, it.value = num, typ, nil
	var m int
	switch typ {
	case protowire.BytesType:
		it.value, m = protowire.ConsumeBytes(it.rest[n:])
	case protowire.VarintType:
		it.varint, m = protowire.ConsumeVarint(it.rest[n:])
	case protowire.StartGroupType, protowire.EndGroupType:
		it.err = errGroup
		return false
	default:
		m = protowire.ConsumeFieldValue(num, typ, it.rest[n:])
	}
	if m < 0 {
		it.err = protowire.ParseError(m)
		return false
	}
	it.field, it.rest = it.rest[:n+m], it.rest[n+m:]
	return true
}
