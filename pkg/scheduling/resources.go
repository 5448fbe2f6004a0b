package scheduling

import (
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Resources are handled as vectors of int64 over a per-solve list of
// dimensions: cpu in millicores, everything else in its base unit (bytes,
// counts). Quantities are converted once, on the way in, so the packing
// loops only add and compare integers.
const (
	dimCPU = iota
	dimMemory
	dimEphemeral
	dimPods
	numFixedDims
)

var fixedDims = [numFixedDims]corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods,
}

// vec is a resource vector over the solve's dimensions.
type vec []int64

// dims maps resource names to vector positions.
type dims struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int
}

// newDims builds the dimensions: the four fixed ones, then every other
// resource the pods or DaemonSets request, sorted by name. Resources only
// instance types advertise are not tracked (nobody asks for them).
func newDims(extra map[corev1.ResourceName]bool) *dims {
	d := &dims{index: map[corev1.ResourceName]int{}}
	for i, n := range fixedDims {
		d.names = append(d.names, n)
		d.index[n] = i
	}
	var names []string
	for n := range extra {
		if _, ok := d.index[n]; !ok {
			names = append(names, string(n))
		}
	}
	sort.Strings(names)
	for _, n := range names {
		d.index[corev1.ResourceName(n)] = len(d.names)
		d.names = append(d.names, corev1.ResourceName(n))
	}
	return d
}

func (d *dims) n() int { return len(d.names) }

func (d *dims) zero() vec { return make(vec, len(d.names)) }

// quantityValue converts a quantity to the dimension's unit.
func quantityValue(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// fromList converts a resource list; resources outside the dimensions are
// dropped.
func (d *dims) fromList(rl corev1.ResourceList) vec {
	v := d.zero()
	for name, q := range rl {
		if i, ok := d.index[name]; ok {
			v[i] = quantityValue(name, q)
		}
	}
	return v
}

// toList converts back, leaving zero entries out except cpu and memory.
func (d *dims) toList(v vec) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for i, n := range d.names {
		if (v[i] == 0 && i != dimCPU && i != dimMemory) || isAttachResource(n) {
			continue
		}
		if i == dimCPU {
			rl[n] = *resource.NewMilliQuantity(v[i], resource.DecimalSI)
		} else if i == dimMemory || i == dimEphemeral || strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix) {
			rl[n] = *resource.NewQuantity(v[i], resource.BinarySI)
		} else {
			rl[n] = *resource.NewQuantity(v[i], resource.DecimalSI)
		}
	}
	return rl
}

func (v vec) add(o vec) {
	for i := range v {
		v[i] += o[i]
	}
}

func (v vec) addScaled(o vec, k int64) {
	for i := range v {
		v[i] += o[i] * k
	}
}

func (v vec) sub(o vec) {
	for i := range v {
		v[i] -= o[i]
	}
}

func (v vec) clone() vec { return append(vec(nil), v...) }

// le reports v ≤ o in every dimension.
func (v vec) le(o vec) bool {
	for i := range v {
		if v[i] > o[i] {
			return false
		}
	}
	return true
}

// maxCopies is how many copies of r fit into limit − used (0 if none; a
// large number when r is zero everywhere).
func maxCopies(used, r, limit vec) int {
	k := int64(math.MaxInt32)
	for i := range r {
		free := limit[i] - used[i]
		if r[i] <= 0 {
			if free < 0 {
				return 0
			}
			continue
		}
		if free < r[i] {
			return 0
		}
		if c := free / r[i]; c < k {
			k = c
		}
	}
	return int(k)
}

// podRequests computes a pod's effective requests the way the kubelet and
// kube-scheduler do (k8s.io/component-helpers/resource.PodRequests):
//
//   - regular containers and restartable init containers (sidecars,
//     KEP-753) run together, so their requests add up;
//   - each ordinary init container runs alone next to the sidecars started
//     before it, so the pod needs the maximum of those peaks and the sum
//     of the long-running containers;
//   - pod-level resources (KEP-2837), when set, replace cpu, memory and
//     hugepages;
//   - the RuntimeClass overhead is added on top.
//
// A container with a limit but no request for a resource gets the limit as
// its request, as API defaulting does, so raw manifests size like admitted
// pods. The pod itself takes one "pods" slot.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	// Sized for the usual pod (one container's requests, and pods) so
	// that the map is made once: a solve reads every class's requests.
	n := 1
	if len(pod.Spec.Containers) > 0 {
		n += len(pod.Spec.Containers[0].Resources.Requests)
	}
	reqs := make(corev1.ResourceList, n)
	for i := range pod.Spec.Containers {
		addList(reqs, containerRequests(&pod.Spec.Containers[i]))
	}
	var sidecars, initPeak corev1.ResourceList
	if len(pod.Spec.InitContainers) > 0 {
		sidecars, initPeak = corev1.ResourceList{}, corev1.ResourceList{}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cr := containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addList(reqs, cr)
			addList(sidecars, cr)
			maxList(initPeak, sidecars)
			continue
		}
		peak := cr.DeepCopy()
		addList(peak, sidecars)
		maxList(initPeak, peak)
	}
	maxList(reqs, initPeak)
	if pr := pod.Spec.Resources; pr != nil {
		for name, q := range pr.Requests {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				reqs[name] = q.DeepCopy()
			}
		}
	}
	addList(reqs, pod.Spec.Overhead)
	reqs[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return reqs
}

// containerOnly is the requests of a pod whose requests are its lone
// container's, as they are (no init containers, pod-level resources or
// overhead, no limit standing in for a missing request, no request for
// pods), for the caller to read in place and count the pod's slot
// itself: podRequests without making a list (a solve reads every
// class's, and most pods are so).
func containerOnly(pod *corev1.Pod) (corev1.ResourceList, bool) {
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) > 0 || pod.Spec.Resources != nil || len(pod.Spec.Overhead) > 0 {
		return nil, false
	}
	r := &pod.Spec.Containers[0].Resources
	if _, ok := r.Requests[corev1.ResourcePods]; ok {
		return nil, false
	}
	for n := range r.Limits {
		if _, ok := r.Requests[n]; !ok {
			return nil, false
		}
	}
	return r.Requests, true
}

// containerRequests is a container's requests with limits standing in for
// missing requests.
func containerRequests(c *corev1.Container) corev1.ResourceList {
	if len(c.Resources.Limits) == 0 {
		return c.Resources.Requests
	}
	out := corev1.ResourceList{}
	for n, q := range c.Resources.Limits {
		out[n] = q
	}
	for n, q := range c.Resources.Requests {
		out[n] = q
	}
	return out
}

func addList(dst, src corev1.ResourceList) {
	for n, q := range src {
		if cur, ok := dst[n]; ok {
			cur.Add(q)
			dst[n] = cur
		} else {
			dst[n] = q.DeepCopy()
		}
	}
}

func maxList(dst, src corev1.ResourceList) {
	for n, q := range src {
		if cur, ok := dst[n]; !ok || q.Cmp(cur) > 0 {
			dst[n] = q.DeepCopy()
		}
	}
}

// Compact reduces, in place, a pod bound to a node to what the simulator
// reads of it: its effective requests (init containers, sidecars,
// pod-level resources and overhead folded in, as podRequests computes
// them) become its overhead and its containers go, but for one carrying
// its host ports if it has any; its status keeps only its phase and start
// time (a do-not-disrupt duration runs from it, pkg/pods).
// Everything else the simulator reads of a bound pod (namespace, labels,
// owners, affinity, spread terms, tolerations, volumes) is left as it is.
// A reader that holds the pods of a whole cluster (pkg/provisioning,
// pkg/reaping) compacts each as it arrives; shared, when not nil, returns
// one map for equal request lists so that a thousand replicas hold one.
func Compact(pod *corev1.Pod, shared func(corev1.ResourceList) corev1.ResourceList) {
	reqs := podRequests(pod)
	delete(reqs, corev1.ResourcePods)
	if shared != nil {
		reqs = shared(reqs)
	}
	var ports []corev1.ContainerPort
	for _, hp := range podHostPorts(pod) {
		ports = append(ports, corev1.ContainerPort{HostIP: hp.ip, Protocol: hp.proto, HostPort: hp.port, ContainerPort: hp.port})
	}
	pod.Spec.Containers = nil
	if len(ports) > 0 {
		pod.Spec.Containers = []corev1.Container{{Name: "host-ports", Ports: ports}}
	}
	pod.Spec.InitContainers, pod.Spec.Resources = nil, nil
	pod.Spec.Overhead = reqs
	pod.Status = corev1.PodStatus{Phase: pod.Status.Phase, StartTime: pod.Status.StartTime}
}
