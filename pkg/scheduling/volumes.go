package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

const defaultStorageClassAnnotation = "storageclass.kubernetes.io/is-default-class"

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
				next = append(next, r)
			}
		}
		alts = next
	}
	constrained := false
	for _, v := range c.pod.Spec.Volumes {
		var claim *corev1.PersistentVolumeClaim
		switch {
		case v.PersistentVolumeClaim != nil:
			pvc, ok := s.pvcs[c.ns+"/"+v.PersistentVolumeClaim.ClaimName]
			if !ok {
				if len(s.pvcs) == 0 && len(s.in.StorageClasses) == 0 {
					// The caller gave no volume data at all: plan without
					// volume topology rather than fail every stateful pod.
					continue
				}
				c.err = "persistentvolumeclaim " + c.ns + "/" + v.PersistentVolumeClaim.ClaimName + " not found"
				return
			}
			name := c.ns + "/" + v.PersistentVolumeClaim.ClaimName
			switch {
			case pvc.DeletionTimestamp != nil:
				c.err = "persistentvolumeclaim " + name + " is being deleted"
				return
			case pvc.Status.Phase == corev1.ClaimLost:
				c.err = "persistentvolumeclaim " + name + " is lost (its volume is gone)"
				return
			}
			claim = pvc
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			claim = &corev1.PersistentVolumeClaim{Spec: v.Ephemeral.VolumeClaimTemplate.Spec}
		default:
			continue
		}
		if claim.Spec.VolumeName == "" && len(s.in.StorageClasses) > 0 {
			if err := s.unboundClaimError(claim); err != "" {
				c.err = err
				return
			}
		}
		if claim.Spec.VolumeName != "" {
			pv, ok := s.pvs[claim.Spec.VolumeName]
			if ok && pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
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
