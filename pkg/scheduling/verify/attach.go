package verify

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// checkAttachments is the NodeVolumeLimits filter: the distinct claims
// of a node's pods per CSI driver stay within the node's limit for that
// driver (a driver without a limit is not limited). A node already over
// its limit is the plan's doing only when a placed pod adds a claim of
// that driver.
func (v *verifier) checkAttachments(vn *vnode, limits map[string]int64) {
	if len(limits) == 0 {
		return
	}
	all := map[string]map[string]bool{}
	added := map[string]bool{}
	count := func(p *corev1.Pod, placed bool) {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return
		}
		for _, vol := range p.Spec.Volumes {
			var claim string
			switch {
			case vol.PersistentVolumeClaim != nil:
				claim = vol.PersistentVolumeClaim.ClaimName
			case vol.Ephemeral != nil:
				claim = p.Name + "-" + vol.Name
			default:
				continue
			}
			d := v.driverOf(p.Namespace, claim, vol.Ephemeral)
			if _, limited := limits[d]; !limited {
				continue
			}
			if all[d] == nil {
				all[d] = map[string]bool{}
			}
			key := p.Namespace + "/" + claim
			if placed && !all[d][key] {
				added[d] = true
			}
			all[d][key] = true
		}
	}
	placed := map[*corev1.Pod]bool{}
	for _, p := range vn.placed {
		placed[p] = true
	}
	for _, p := range vn.pods {
		if !placed[p] {
			count(p, false)
		}
	}
	for _, p := range vn.placed {
		count(p, true)
	}
	drivers := make([]string, 0, len(all))
	for d := range all {
		drivers = append(drivers, d)
	}
	sort.Strings(drivers)
	for _, d := range drivers {
		if n := int64(len(all[d])); n > limits[d] && added[d] {
			v.fail("node %s attaches %d %s volumes, limit %d", vn.name, n, d, limits[d])
		}
	}
}

// driverOf is the CSI driver of a claim's volume: the bound volume's
// (an in-tree EBS volume migrates to ebs.csi.aws.com), else the
// provisioner of the claim's storage class (of an ephemeral volume's
// template while its claim is not made yet), or of the default class.
func (v *verifier) driverOf(ns, claim string, eph *corev1.EphemeralVolumeSource) string {
	var spec *corev1.PersistentVolumeClaimSpec
	for _, c := range v.in.PersistentVolumeClaims {
		if c.Namespace == ns && c.Name == claim {
			spec = &c.Spec
		}
	}
	if spec == nil && eph != nil && eph.VolumeClaimTemplate != nil {
		spec = &eph.VolumeClaimTemplate.Spec
	}
	if spec == nil {
		return ""
	}
	if spec.VolumeName != "" {
		for _, pv := range v.in.PersistentVolumes {
			if pv.Name != spec.VolumeName {
				continue
			}
			if pv.Spec.CSI != nil {
				return pv.Spec.CSI.Driver
			}
			if pv.Spec.AWSElasticBlockStore != nil {
				return "ebs.csi.aws.com"
			}
		}
		return ""
	}
	var sc *storagev1.StorageClass
	for _, c := range v.in.StorageClasses {
		switch {
		case spec.StorageClassName != nil && *spec.StorageClassName != "":
			if c.Name == *spec.StorageClassName {
				sc = c
			}
		case c.Annotations["storageclass.kubernetes.io/is-default-class"] == "true":
			if sc == nil || sc.CreationTimestamp.Before(&c.CreationTimestamp) {
				sc = c
			}
		}
	}
	if sc == nil {
		return ""
	}
	if sc.Provisioner == "kubernetes.io/aws-ebs" {
		return "ebs.csi.aws.com"
	}
	return sc.Provisioner
}
