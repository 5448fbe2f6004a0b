package specs

import (
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/joist-dev/joist/pkg/apis/v1"
	"github.com/joist-dev/joist/pkg/apis/v1alpha1"
	"github.com/joist-dev/joist/pkg/model"
)

// The NodeOverlay CRD's patterns (sigs.k8s.io/karpenter v1.15
// pkg/apis/v1alpha1/nodeoverlay.go): an adjustment is a signed amount or
// a signed percentage (at most -100%), a price an unsigned decimal.
var (
	priceAdjustmentRe = regexp.MustCompile(`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`)
	priceRe           = regexp.MustCompile(`^\d+(\.\d+)?$`)
)

// overlayRestrictedResources may not be overlaid: the instance type
// decides them.
var overlayRestrictedResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods}

// validateNodeOverlay holds a NodeOverlay to its CRD's schema and rules
// and to Karpenter's runtime validation (requirements as a NodePool's,
// except that karpenter.sh/nodepool may be named; no well-known resource
// in capacity).
func validateNodeOverlay(o *v1alpha1.NodeOverlay) errs {
	var l errs
	validateName(&l, o.Name)
	sp := field.NewPath("spec")
	rp := sp.Child("requirements")
	if len(o.Spec.Requirements) > 100 {
		l.add(rp, "must have at most 100 items (got %d)", len(o.Spec.Requirements))
	}
	restricted := func(key string) string {
		if key == labelNodePool {
			return ""
		}
		return restrictedV1(key)
	}
	for i, r := range o.Spec.Requirements {
		p := rp.Index(i)
		validateRequirementWith(&l, v1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: r.Values}, p, restricted)
		if r.Operator == corev1.NodeSelectorOpNotIn && len(r.Values) == 0 {
			l.add(p.Child("values"), "requirements with operator 'NotIn' must have a value defined")
		}
	}
	if o.Spec.Price != nil && o.Spec.PriceAdjustment != nil {
		l.add(sp, "cannot set both 'price' and 'priceAdjustment'")
	}
	if a := o.Spec.PriceAdjustment; a != nil && !priceAdjustmentRe.MatchString(*a) {
		l.invalid(sp.Child("priceAdjustment"), *a, "must be a signed amount (+0.5, -0.5) or percentage (+10%%, -10%%, at most -100%%)")
	}
	if pr := o.Spec.Price; pr != nil && !priceRe.MatchString(*pr) {
		l.invalid(sp.Child("price"), *pr, "must be a price in USD per hour (0.125)")
	}
	for _, name := range overlayRestrictedResources {
		if _, ok := o.Spec.Capacity[name]; ok {
			l.invalid(sp.Child("capacity").Key(string(name)), string(name), "invalid resource restricted: the instance type decides cpu, memory, ephemeral-storage and pods")
		}
	}
	if w := o.Spec.Weight; w != nil && (*w < 1 || *w > 10000) {
		l.invalid(sp.Child("weight"), *w, "must be between 1 and 10000")
	}
	return l
}

// nodeOverlayToOverlay maps a valid NodeOverlay onto the model.
func nodeOverlayToOverlay(o *v1alpha1.NodeOverlay) *model.Overlay {
	out := &model.Overlay{Name: o.Name, Weight: deref(o.Spec.Weight)}
	for _, r := range o.Spec.Requirements {
		out.Requirements = append(out.Requirements, model.Requirement{Key: model.NormalizeLabelKey(r.Key), Operator: string(r.Operator), Values: append([]string(nil), r.Values...)})
	}
	if o.Spec.Price != nil {
		out.Price = *o.Spec.Price
	}
	if o.Spec.PriceAdjustment != nil {
		out.PriceAdjustment = *o.Spec.PriceAdjustment
	}
	if len(o.Spec.Capacity) > 0 {
		out.Capacity = o.Spec.Capacity.DeepCopy()
	}
	return out
}
