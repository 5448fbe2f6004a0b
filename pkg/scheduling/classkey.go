package scheduling

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// classKey hashes what makes two pods interchangeable for scheduling:
// namespace, labels (unless nothing selects pods by label: labelsIdle),
// node selector, affinity, tolerations, spreads, requests (with init
// containers, overhead and pod-level resources), host ports and volumes.
// Names, UIDs and annotations are left out.
//
// It is written by hand (hasher; maps hashed order-independently) because
// it runs once per pending pod: 10,000 pods must cost microseconds, not the
// milliseconds a JSON encoding would. Affinity and spreads, which are
// nested, are encoded once per distinct pointer (pods expanded from one
// template share them).
//
// res is the hash of what podRequests reads alone (containers' and init
// containers' resources and restart policies, overhead, pod-level
// resources, and the host ports beside them): classes with the same res
// have the same requests (buildDims computes them once per res).
func (s *solver) classKey(p *corev1.Pod) (key, res uint64) {
	var r hasher
	if rp := s.resOf(p); rp != nil {
		r = hasher(*rp)
	} else {
		r = hasher(fnvOffset)
		for i := range p.Spec.Containers {
			r.container(&p.Spec.Containers[i])
		}
		r.sep()
		for i := range p.Spec.InitContainers {
			r.container(&p.Spec.InitContainers[i])
			if rp := p.Spec.InitContainers[i].RestartPolicy; rp != nil {
				r.str(string(*rp))
			}
		}
		r.sep()
		r.resources(p.Spec.Overhead)
		if p.Spec.Resources != nil {
			r.resources(p.Spec.Resources.Requests)
			r.resources(p.Spec.Resources.Limits)
		}
		r.sep()
		s.lastRes = resMemo{pod: p, res: uint64(r)}
	}
	h := hasher(fnvOffset)
	h.str(p.Namespace)
	if !s.labelsIdle {
		h.strMap(p.Labels)
	}
	h.sep()
	h.strMap(p.Spec.NodeSelector)
	h.sep()
	h.u64(uint64(r))
	for _, t := range p.Spec.Tolerations {
		h.str(t.Key)
		h.str(string(t.Operator))
		h.str(t.Value)
		h.str(string(t.Effect))
	}
	h.sep()
	if a := p.Spec.Affinity; a != nil {
		v, ok := s.affinityMemo[a]
		if !ok {
			v = jsonHash(a)
			s.affinityMemo[a] = v
		}
		h.u64(v)
	}
	h.sep()
	if tsc := p.Spec.TopologySpreadConstraints; len(tsc) > 0 {
		v, ok := s.spreadMemo[&tsc[0]]
		if !ok {
			v = jsonHash(tsc)
			s.spreadMemo[&tsc[0]] = v
		}
		h.u64(v)
		h.u64(uint64(len(tsc)))
	}
	h.sep()
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			h.str(v.PersistentVolumeClaim.ClaimName)
		}
		if v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil {
			h.str(v.Name)
			if _, made := s.pvcs[p.Namespace+"/"+p.Name+"-"+v.Name]; made {
				h.str(p.Name) // its own claim decides (volumes.go)
			}
			if sc := v.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName; sc != nil {
				h.str(*sc)
			}
		}
	}
	if usesResourceClaims(&p.Spec) {
		h.u64(1)
	} else {
		h.u64(0)
	}
	return uint64(h), uint64(r)
}

// resMemo is the res hash of the last pod classKey hashed in full.
type resMemo struct {
	pod *corev1.Pod
	res uint64
}

// resOf returns the res hash of the last pod hashed in full when p's
// containers, init containers and pod-level resources are that pod's very
// own (the same arrays: pods made from one template by a shallow copy of
// its spec, as workload expansion makes them, come in a row) and neither
// has an overhead; nil otherwise.
func (s *solver) resOf(p *corev1.Pod) *uint64 {
	q := s.lastRes.pod
	if q == nil || len(p.Spec.Overhead) > 0 || len(q.Spec.Overhead) > 0 || p.Spec.Resources != q.Spec.Resources ||
		!sameArray(p.Spec.Containers, q.Spec.Containers) || !sameArray(p.Spec.InitContainers, q.Spec.InitContainers) {
		return nil
	}
	return &s.lastRes.res
}

// sameArray tells whether a and b are the same elements in the same
// memory (both empty counts).
func sameArray[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hasher hashes a sequence of words: each is xored into the state, which
// a bijective mixer (splitmix64's finalizer) then spreads over every bit.
// Strings go in eight bytes a word, the last word carrying the bytes
// left and their count: classKey reads every pod's labels, and a byte at
// a time (FNV-1a) was most of its time.
type hasher uint64

func (h *hasher) word(v uint64) {
	x := uint64(*h) ^ v
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	*h = hasher(x)
}

func (h *hasher) str(s string) {
	for ; len(s) >= 8; s = s[8:] {
		h.word(uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56)
	}
	last := uint64(len(s)+1) << 56
	for i := 0; i < len(s); i++ {
		last |= uint64(s[i]) << (8 * i)
	}
	h.word(last)
}

// sep ends a field (a word no string's last word is: its top byte is 0).
func (h *hasher) sep() { h.word(0xfe) }

func (h *hasher) u64(v uint64) { h.word(v) }

// strMap hashes a map independently of iteration order: each pair is
// hashed alone and the results summed.
func (h *hasher) strMap(m map[string]string) {
	var sum uint64
	for k, v := range m {
		e := hasher(fnvOffset)
		e.str(k)
		e.str(v)
		sum += uint64(e)
	}
	h.u64(sum)
	h.u64(uint64(len(m)))
}

func (h *hasher) resources(rl corev1.ResourceList) {
	var sum uint64
	for n, q := range rl {
		e := hasher(fnvOffset)
		e.str(string(n))
		e.u64(uint64(quantityValue(n, q)))
		if n != corev1.ResourceCPU {
			e.u64(uint64(q.MilliValue() % 1000))
		}
		sum += uint64(e)
	}
	h.u64(sum)
	h.u64(uint64(len(rl)))
}

func (h *hasher) container(c *corev1.Container) {
	h.resources(c.Resources.Requests)
	h.resources(c.Resources.Limits)
	for _, p := range c.Ports {
		if p.HostPort > 0 {
			h.str(p.HostIP)
			h.str(string(p.Protocol))
			h.u64(uint64(p.HostPort))
		}
	}
	h.sep()
}

func jsonHash(v any) uint64 {
	b, _ := json.Marshal(v)
	h := hasher(fnvOffset)
	h.str(string(b))
	return uint64(h)
}
