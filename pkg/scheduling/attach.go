package scheduling

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Volume attachment limits. A node can attach only so many volumes of a
// CSI driver (the kube-scheduler's NodeVolumeLimits filter reads the
// node's CSINode; before it is published Karpenter uses the instance
// type's limit). They are packed as one more resource per limited driver
// (attachResource): a pod asks for its distinct claims of the driver,
// an instance type or node offers its limit, a type or node without a
// limit for the driver offers unlimitedAttach.
//
// The packer adds requests linearly, but pods sharing a claim attach it
// once per node. Pods of one class share every claim (classKey hashes the
// claim names), so a class of several pods asks for none of its claims
// per pod; instead the sum of such classes' claims is reserved on every
// node whose limit leaves room for it (attachDim.reserve), and only such
// nodes take their pods: those pods ask for one unit of a second resource
// (sharedResource) that the other nodes lack. That is exact for the
// common cases (a claim per StatefulSet pod; many pods of one Deployment
// sharing one claim) and never lets a node exceed its limit; it is dearer
// only when several classes share claims and a node's limit is nearly
// used up.

// attachResourcePrefix and sharedResourcePrefix name the per-driver
// resources; they never leave the solve (NewNode.Requests leaves every
// internalResourcePrefix resource out).
const (
	internalResourcePrefix = "joist.dev/"
	attachResourcePrefix   = internalResourcePrefix + "attachable-volumes-csi-"
	sharedResourcePrefix   = internalResourcePrefix + "shared-volumes-csi-"
)

// unlimitedAttach stands for "no limit" (more than any node has pods).
const unlimitedAttach = 1 << 20

func attachResource(driver string) corev1.ResourceName {
	return corev1.ResourceName(attachResourcePrefix + driver)
}

func sharedResource(driver string) corev1.ResourceName {
	return corev1.ResourceName(sharedResourcePrefix + driver)
}

func isAttachResource(n corev1.ResourceName) bool {
	return strings.HasPrefix(string(n), internalResourcePrefix)
}

// attachDim is one limited driver's dimensions.
type attachDim struct {
	dim     int
	shared  int // sharedResource's dimension, -1 without shared claims
	driver  string
	reserve int64 // claims of classes whose pods share them
}

// migratedDrivers are the in-tree provisioners whose volumes the CSI
// migration hands to a CSI driver (and counts against its limit).
var migratedDrivers = map[string]string{
	"kubernetes.io/aws-ebs": "ebs.csi.aws.com",
}

func csiDriverName(provisioner string) string {
	if d, ok := migratedDrivers[provisioner]; ok {
		return d
	}
	return provisioner
}

// limitedDrivers are the drivers some instance type or node declares a
// limit for.
func (s *solver) limitedDrivers() map[string]bool {
	out := map[string]bool{}
	for _, l := range s.typeLists() {
		for _, it := range l {
			for d := range it.VolumeLimits {
				out[d] = true
			}
		}
	}
	for _, n := range s.in.Nodes {
		for d := range n.VolumeLimits {
			out[d] = true
		}
	}
	return out
}

// claimDriver is the CSI driver that attaches a claim's volume: the bound
// volume's, else its storage class's provisioner; "" when unknown.
func (s *solver) claimDriver(claim *corev1.PersistentVolumeClaim) string {
	if claim.Spec.VolumeName != "" {
		pv, ok := s.pvs[claim.Spec.VolumeName]
		if !ok {
			return ""
		}
		switch {
		case pv.Spec.CSI != nil:
			return pv.Spec.CSI.Driver
		case pv.Spec.AWSElasticBlockStore != nil:
			return migratedDrivers["kubernetes.io/aws-ebs"]
		}
		return ""
	}
	if sc := s.storageClass(claim.Spec.StorageClassName); sc != nil {
		return csiDriverName(sc.Provisioner)
	}
	return ""
}

// podAttachments are a pod's claims per limited driver, as claim keys
// (namespace/name; a generic ephemeral volume is its claim <pod>-<volume>,
// made or to be made).
func (s *solver) podAttachments(p *corev1.Pod, limited map[string]bool) map[string][]string {
	var out map[string][]string
	for _, v := range p.Spec.Volumes {
		var claim *corev1.PersistentVolumeClaim
		var key string
		switch {
		case v.PersistentVolumeClaim != nil:
			key = p.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
			claim = s.pvcs[key]
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			key = p.Namespace + "/" + p.Name + "-" + v.Name
			claim = s.pvcs[key]
			if claim == nil {
				claim = &corev1.PersistentVolumeClaim{Spec: v.Ephemeral.VolumeClaimTemplate.Spec}
			}
		}
		if claim == nil {
			continue
		}
		d := s.claimDriver(claim)
		if !limited[d] {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		if !containsString(out[d], key) {
			out[d] = append(out[d], key)
		}
	}
	return out
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// addAttachRequests adds the attachment requests of each class to its
// request list (requests[i] for s.classes[i], copied before it is
// changed), notes the reserves, and returns the resources to track.
func (s *solver) addAttachRequests(requests []corev1.ResourceList, extra map[corev1.ResourceName]bool) map[string]int64 {
	claims := false
	for _, c := range s.classes {
		for _, v := range c.pod.Spec.Volumes {
			claims = claims || v.PersistentVolumeClaim != nil || v.Ephemeral != nil
		}
	}
	if !claims {
		return nil
	}
	limited := s.limitedDrivers()
	if len(limited) == 0 {
		return nil
	}
	reserve := map[string]int64{}
	for i, c := range s.classes {
		for d, claims := range s.podAttachments(c.pod, limited) {
			extra[attachResource(d)] = true
			r := requests[i].DeepCopy()
			if len(c.pods) > 1 {
				reserve[d] += int64(len(claims))
				extra[sharedResource(d)] = true
				r[sharedResource(d)] = *resource.NewQuantity(1, resource.DecimalSI)
			} else {
				r[attachResource(d)] = *resource.NewQuantity(int64(len(claims)), resource.DecimalSI)
			}
			requests[i] = r
		}
	}
	return reserve
}

// buildAttachDims records the attachment dimensions once the dimensions
// are built.
func (s *solver) buildAttachDims(reserve map[string]int64) {
	for i, n := range s.dims.names {
		if d, ok := strings.CutPrefix(string(n), attachResourcePrefix); ok {
			a := attachDim{dim: i, shared: -1, driver: d, reserve: reserve[d]}
			if j, ok := s.dims.index[sharedResource(d)]; ok {
				a.shared = j
			}
			s.attach = append(s.attach, a)
		}
	}
}

// offer is what a node with these limits, with used claims already
// attached, offers: for its own claims, its limit less what is attached
// and, when the rest holds it, the reserve; for shared claims, unlimited
// when the reserve is held back, else nothing. Without a limit both are
// unlimited.
func (a *attachDim) offer(limits map[string]int64, used int64) (own, shared int64) {
	l, ok := limits[a.driver]
	if !ok {
		return unlimitedAttach, unlimitedAttach
	}
	free := max(l-used, 0)
	if a.reserve > 0 && free >= a.reserve {
		return free - a.reserve, unlimitedAttach
	}
	return free, 0
}

// setTypeAttach fills a type's attachment dimensions.
func (s *solver) setTypeAttach(t *ptype) {
	for i := range s.attach {
		a := &s.attach[i]
		own, shared := a.offer(t.it.VolumeLimits, 0)
		t.net[a.dim], t.capv[a.dim] = own, own
		if a.shared >= 0 {
			t.net[a.shared], t.capv[a.shared] = shared, shared
		}
	}
}

// setNodeAttach fills an existing or in-flight node's attachment
// dimensions from its CSINode limits, else its instance type's
// (Karpenter's "until the CSINode driver is published"), less the
// distinct claims its pods use.
func (s *solver) setNodeAttach(b *bin) {
	if len(s.attach) == 0 {
		return
	}
	n := b.node
	limits := n.VolumeLimits
	if limits == nil {
		if it := s.nodeType(n); it != nil {
			limits = it.VolumeLimits
		}
	}
	limited := map[string]bool{}
	for _, a := range s.attach {
		limited[a.driver] = true
	}
	used := map[string][]string{}
	for _, p := range n.Pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for d, claims := range s.podAttachments(p, limited) {
			for _, c := range claims {
				if !containsString(used[d], c) {
					used[d] = append(used[d], c)
				}
			}
		}
	}
	for i := range n.Bound {
		bp := &n.Bound[i]
		for _, key := range bp.claims {
			if c, ok := s.pvcs[key]; ok {
				if d := s.claimDriver(c); limited[d] && !containsString(used[d], key) {
					used[d] = append(used[d], key)
				}
			}
		}
	}
	for i := range s.attach {
		a := &s.attach[i]
		// The attached claims are taken off the offer (not counted as
		// used), so a node over its limit still takes pods without
		// volumes.
		own, shared := a.offer(limits, int64(len(used[a.driver])))
		b.alloc[a.dim], b.used[a.dim] = own, 0
		if a.shared >= 0 {
			b.alloc[a.shared], b.used[a.shared] = shared, 0
		}
	}
}

// nodeType is the instance type a node's label names, among the pool's
// list when it has one.
func (s *solver) nodeType(n *Node) *InstanceType {
	name := nodeLabel(n.Labels, corev1.LabelInstanceTypeStable)
	if name == "" {
		return nil
	}
	lists := [][]*InstanceType{s.in.PoolInstanceTypes[n.Pool], s.in.InstanceTypes}
	for _, l := range lists {
		for _, it := range l {
			if it.Name == name {
				return it
			}
		}
	}
	return nil
}

// podClaimKeys are the claim keys of a pod's volumes (for BoundPod).
func podClaimKeys(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, p.Namespace+"/"+p.Name+"-"+v.Name)
		}
	}
	sort.Strings(out)
	return out
}
