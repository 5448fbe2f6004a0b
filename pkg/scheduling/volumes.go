package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

const (
	defaultStorageClassAnnotation = "storageclass.kubernetes.io/is-default-class"
	annBindCompleted              = "pv.kubernetes.io/bind-completed"
)

// classVolumes turns the zonal topology of a class's volumes into OR'ed
// node requirements, as Karpenter's volumetopology.go does:
//
//   - a bound claim contributes its PersistentVolume's required node
//     affinity (an EBS volume lives in one zone);
//   - an unbound claim, or a generic ephemeral volume, contributes its
//     StorageClass's allowedTopologies (the volume will be created where
//     the pod lands, within those);
//   - a claim that does not exist makes the pod unschedulable, since the
//     kube-scheduler would not place it either.
//
// Several volumes combine by AND; alternatives within one volume by OR.
func (s *solver) classVolumes(c *class) {
	alts := []*reqs{newReqs()}
	and := func(terms []corev1.NodeSelectorTerm) {
		if len(terms) == 0 {
			return
		}
		var next []*reqs
		for _, a := range alts {
			for _, t := range terms {
				r := a.clone()
				r.addNodeSelectorRequirements(t.MatchExpressions)
				s.zoneIDsAsZones(r)
				next = append(next, r)
			}
		}
		alts = next
	}
	constrained := false
	for _, v := range c.pod.Spec.Volumes {
		var claim *corev1.PersistentVolumeClaim
		var name string
		switch {
		case v.PersistentVolumeClaim != nil:
			name = c.ns + "/" + v.PersistentVolumeClaim.ClaimName
			pvc, ok := s.pvcs[name]
			if !ok {
				if len(s.pvcs) == 0 && len(s.in.StorageClasses) == 0 {
					// The caller gave no volume data at all: plan without
					// volume topology rather than fail every stateful pod.
					continue
				}
				c.err = "persistentvolumeclaim " + name + " not found"
				return
			}
			claim = pvc
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			// Once the ephemeral volume controller has made the pod's
			// claim (<pod>-<volume>), the claim decides (it may be bound);
			// before, the template (classKey keeps such pods apart).
			name = c.ns + "/" + c.pod.Name + "-" + v.Name
			if pvc, ok := s.pvcs[name]; ok {
				if !controlledByPod(pvc, c.pod) {
					c.err = "persistentvolumeclaim " + name + " was not created for pod " + c.ns + "/" + c.pod.Name + " (the pod does not own it)"
					return
				}
				claim = pvc
			} else {
				claim = &corev1.PersistentVolumeClaim{Spec: v.Ephemeral.VolumeClaimTemplate.Spec}
				name = ""
			}
		default:
			continue
		}
		if name != "" {
			switch {
			case claim.DeletionTimestamp != nil:
				c.err = "persistentvolumeclaim " + name + " is being deleted"
				return
			case claim.Status.Phase == corev1.ClaimLost:
				c.err = "persistentvolumeclaim " + name + " is lost (its volume is gone)"
				return
			}
		}
		if claim.Spec.VolumeName == "" && len(s.in.StorageClasses) > 0 {
			if err := s.unboundClaimError(claim); err != "" {
				c.err = err
				return
			}
		}
		if claim.Spec.VolumeName != "" {
			pv, ok := s.pvs[claim.Spec.VolumeName]
			if !ok {
				if len(s.pvs) > 0 {
					c.err = "persistentvolume " + claim.Spec.VolumeName + " of claim " + name + " not found"
					return
				}
				continue // no volume data given
			}
			if err := boundVolumeError(claim, pv); err != "" {
				c.err = err
				return
			}
			// A local or hostPath volume's hostname term is kept (Karpenter
			// drops it): a new node cannot be the volume's node.
			if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
				and(pv.Spec.NodeAffinity.Required.NodeSelectorTerms)
				constrained = true
			}
			continue
		}
		sc := s.storageClass(claim.Spec.StorageClassName)
		if sc == nil {
			continue
		}
		var terms []corev1.NodeSelectorTerm
		for _, t := range sc.AllowedTopologies {
			var term corev1.NodeSelectorTerm
			for _, e := range t.MatchLabelExpressions {
				term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{
					Key: e.Key, Operator: corev1.NodeSelectorOpIn, Values: e.Values,
				})
			}
			terms = append(terms, term)
		}
		if len(terms) > 0 {
			and(terms)
			constrained = true
		}
	}
	if constrained {
		c.volTerms = alts
	}
}

// boundVolumeError is why a claim naming volume pv cannot be planned, ""
// when it can: the volume is being deleted (Karpenter launches nothing for
// it), or the binding is not complete (no bind-completed annotation) and
// never will be because the volume is reserved for another claim. A
// binding that will complete — the volume is free or reserved for this
// claim — is planned as bound: the PV controller completes it within
// seconds, before a new node is up (the kube-scheduler and Karpenter wait
// for it).
func boundVolumeError(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) string {
	if pv.DeletionTimestamp != nil {
		return "persistentvolume " + pv.Name + " is being deleted"
	}
	if _, done := claim.Annotations[annBindCompleted]; done {
		return ""
	}
	if ref := pv.Spec.ClaimRef; ref != nil {
		if ref.Name != claim.Name || ref.Namespace != claim.Namespace || (ref.UID != "" && claim.UID != "" && ref.UID != claim.UID) {
			return "persistentvolume " + pv.Name + " is bound to another claim (" + ref.Namespace + "/" + ref.Name + ")"
		}
	}
	return ""
}

// unboundClaimError is why the kube-scheduler's volume binding refuses a
// pod with this unbound claim (or ephemeral volume template), "" when it
// waits for the pod to be placed: a claim of the class "" or of an
// Immediate class is bound before the pod can be scheduled (and not where
// the plan would put it), and a class that does not exist provisions
// nothing. A claim without a class and no default class is left alone.
func (s *solver) unboundClaimError(claim *corev1.PersistentVolumeClaim) string {
	name := claim.Spec.StorageClassName
	if name != nil && *name == "" {
		return "unbound immediate persistentvolumeclaim (storage class \"\")"
	}
	sc := s.storageClass(name)
	switch {
	case sc == nil && name != nil:
		return "storageclass " + *name + " not found"
	case sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingImmediate:
		return "unbound immediate persistentvolumeclaim (storage class " + sc.Name + ")"
	}
	return ""
}

// storageClass finds a class by name, or for nil the default class (the
// newest when several are marked default, as the admission plugin picks).
func (s *solver) storageClass(name *string) *storagev1.StorageClass {
	var def *storagev1.StorageClass
	for _, sc := range s.in.StorageClasses {
		if name != nil && *name != "" {
			if sc.Name == *name {
				return sc
			}
			continue
		}
		if sc.Annotations[defaultStorageClassAnnotation] != "true" {
			continue
		}
		if def == nil || def.CreationTimestamp.Before(&sc.CreationTimestamp) ||
			(def.CreationTimestamp.Equal(&sc.CreationTimestamp) && sc.Name < def.Name) {
			def = sc
		}
	}
	return def
}

// controlledByPod tells whether the pod controls the claim, as the
// ephemeral volume controller makes it and the kube-scheduler requires
// (component-helpers' ephemeral.VolumeIsForPod): a controller reference
// to the pod, by UID (by name when the input's pod has no UID).
func controlledByPod(pvc *corev1.PersistentVolumeClaim, pod *corev1.Pod) bool {
	for _, o := range pvc.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		return o.Kind == "Pod" && o.Name == pod.Name && (pod.UID == "" || o.UID == pod.UID)
	}
	return false
}
