package specs

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/joist-dev/joist/pkg/apis/v1alpha1"
	"github.com/joist-dev/joist/pkg/apis/v1alpha5"
	"github.com/joist-dev/joist/pkg/model"
)

var operatorsV1Alpha5 = []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}

// InlineNodeClassName is the node class name Joist gives the inline
// spec.provider of a v1alpha5 Provisioner. It cannot clash with an
// AWSNodeTemplate name, since object names may not hold ':'.
func InlineNodeClassName(provisioner string) string { return "provisioner:" + provisioner }

// defaultProvisioner applies the AWS provider's v0.20 mutating webhook:
// missing os, arch and capacity-type requirements get linux, amd64 and
// on-demand, and when no requirement narrows instance types by type,
// family, category or generation, the pool is limited to current
// generation c, m and r types. Keys are compared after normalisation
// (beta.kubernetes.io/arch counts as kubernetes.io/arch), as Karpenter's
// requirement sets did.
func defaultProvisioner(p *v1alpha5.Provisioner) {
	has := map[string]bool{}
	for _, r := range p.Spec.Requirements {
		has[model.NormalizeLabelKey(r.Key)] = true
	}
	add := func(key string, op corev1.NodeSelectorOperator, values ...string) {
		p.Spec.Requirements = append(p.Spec.Requirements, corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values})
	}
	if !has[corev1.LabelOSStable] {
		add(corev1.LabelOSStable, corev1.NodeSelectorOpIn, string(corev1.Linux))
	}
	if !has[corev1.LabelArchStable] {
		add(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")
	}
	if !has[labelCapacityType] {
		add(labelCapacityType, corev1.NodeSelectorOpIn, model.CapacityTypeOnDemand)
	}
	if !has[corev1.LabelInstanceTypeStable] && !has[labelInstanceFamily] && !has[labelInstanceCategory] && !has[labelInstanceGeneration] {
		add(labelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r")
		add(labelInstanceGeneration, corev1.NodeSelectorOpGt, "2")
	}
}

// validateProvisioner applies every rule of Karpenter v0.20's Provisioner
// webhooks (core and AWS) and CRD schema, plus what Joist needs to launch
// (a node class). It returns the decoded inline provider, if any.
func validateProvisioner(p *v1alpha5.Provisioner) (errs, *v1alpha1.AWS) {
	var l errs
	validateName(&l, p.Name)
	spec := field.NewPath("spec")
	s := &p.Spec

	if s.TTLSecondsUntilExpired != nil && *s.TTLSecondsUntilExpired < 0 {
		l.invalid(spec.Child("ttlSecondsUntilExpired"), *s.TTLSecondsUntilExpired, "must not be negative")
	}
	if s.TTLSecondsAfterEmpty != nil && *s.TTLSecondsAfterEmpty < 0 {
		l.invalid(spec.Child("ttlSecondsAfterEmpty"), *s.TTLSecondsAfterEmpty, "must not be negative")
	}
	if s.Consolidation != nil && deref(s.Consolidation.Enabled) && s.TTLSecondsAfterEmpty != nil {
		l.exclusive(spec, "ttlSecondsAfterEmpty", "consolidation.enabled")
	}
	if s.Weight != nil && (*s.Weight < 1 || *s.Weight > 100) {
		l.invalid(spec.Child("weight"), *s.Weight, "must be between 1 and 100")
	}

	var inline *v1alpha1.AWS
	switch {
	case s.Provider != nil && s.ProviderRef != nil:
		l.exclusive(spec, "provider", "providerRef")
	case s.Provider == nil && s.ProviderRef == nil:
		l.add(spec.Child("providerRef"), "required value: name the AWSNodeTemplate to launch with (or give a legacy inline provider)")
	case s.ProviderRef != nil:
		ref := s.ProviderRef
		rp := spec.Child("providerRef")
		if ref.Name == "" {
			l.required(rp.Child("name"))
		}
		if ref.Kind != "" && ref.Kind != v1alpha1.Kind {
			l.unsupported(rp.Child("kind"), ref.Kind, []string{v1alpha1.Kind})
		}
		if ref.APIVersion != "" && ref.APIVersion != v1alpha1.APIVersion {
			l.unsupported(rp.Child("apiVersion"), ref.APIVersion, []string{v1alpha1.APIVersion})
		}
	default:
		pp := spec.Child("provider")
		var a v1alpha1.AWS
		if de := decodeStrict(*s.Provider, &a); len(de) > 0 {
			for _, e := range de {
				f := pp.String()
				if e.Field != "" {
					f += "." + e.Field
				}
				l = append(l, &FieldError{Field: f, Detail: e.Detail})
			}
		} else {
			defaultAWS(&a)
			validateAWS(&l, &a, pp)
			inline = &a
		}
	}

	validateLabelsV1Alpha5(&l, s.Labels, spec.Child("labels"))
	validateTaints(&l, s.Taints, s.StartupTaints, spec)
	for i, r := range s.Requirements {
		validateRequirementV1Alpha5(&l, r, spec.Child("requirements").Index(i))
	}
	if s.KubeletConfiguration != nil {
		validateKubeletV1Alpha5(&l, s.KubeletConfiguration, spec.Child("kubeletConfiguration"))
	}
	return l, inline
}

func validateLabelsV1Alpha5(l *errs, labels map[string]string, p *field.Path) {
	for _, k := range sortedKeys(labels) {
		kp := p.Key(k)
		if k == labelProvisionerName {
			l.add(kp, "label %q is restricted", k)
			continue
		}
		for _, msg := range validation.IsQualifiedName(k) {
			l.add(kp, "invalid key: %s", msg)
		}
		for _, msg := range validation.IsValidLabelValue(labels[k]) {
			l.invalid(kp, labels[k], "%s", msg)
		}
		if why := restrictedV1Alpha5(k); why != "" {
			l.add(kp, "%s", why)
		}
	}
}

func validateRequirementV1Alpha5(l *errs, r corev1.NodeSelectorRequirement, p *field.Path) {
	key := model.NormalizeLabelKey(r.Key)
	if key == labelProvisionerName {
		l.add(p.Child("key"), "label %q is restricted", key)
	} else if why := restrictedV1Alpha5(key); why != "" {
		l.add(p.Child("key"), "%s", why)
	}
	for _, msg := range validation.IsQualifiedName(key) {
		l.invalid(p.Child("key"), r.Key, "%s", msg)
	}
	if !contains(operatorsV1Alpha5, string(r.Operator)) {
		l.unsupported(p.Child("operator"), string(r.Operator), operatorsV1Alpha5)
	}
	for i, v := range r.Values {
		for _, msg := range validation.IsValidLabelValue(v) {
			l.invalid(p.Child("values").Index(i), v, "%s", msg)
		}
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		if len(r.Values) == 0 {
			l.add(p.Child("values"), "operator In needs at least one value")
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 || !isNonNegativeInt(r.Values[0]) {
			l.add(p.Child("values"), "operator %s needs a single non-negative integer value", r.Operator)
		}
	}
}

func validateKubeletV1Alpha5(l *errs, kc *v1alpha5.KubeletConfiguration, p *field.Path) {
	validateEvictionThresholds(l, kc.EvictionHard, p.Child("evictionHard"))
	validateEvictionThresholds(l, kc.EvictionSoft, p.Child("evictionSoft"))
	grace := map[string]string{}
	for _, k := range sortedKeys(kc.EvictionSoftGracePeriod) {
		grace[k] = kc.EvictionSoftGracePeriod[k].Duration.String()
		if !contains(evictionSignals, k) {
			l.unsupported(p.Child("evictionSoftGracePeriod").Key(k), k, evictionSignals)
		}
	}
	validateSoftPairs(l, kc.EvictionSoft, grace, p)
	for _, f := range []struct {
		name string
		list corev1.ResourceList
	}{{"kubeReserved", kc.KubeReserved}, {"systemReserved", kc.SystemReserved}} {
		for _, k := range sortedKeys(f.list) {
			kp := p.Child(f.name).Key(k)
			if !contains(reservedResources, k) {
				l.unsupported(kp, k, reservedResources)
			}
			if q := f.list[corev1.ResourceName(k)]; q.Sign() < 0 {
				l.invalid(kp, q.String(), "must not be negative")
			}
		}
	}
	if kc.MaxPods != nil && *kc.MaxPods < 0 {
		l.invalid(p.Child("maxPods"), *kc.MaxPods, "must not be negative")
	}
	if kc.PodsPerCore != nil && *kc.PodsPerCore < 0 {
		l.invalid(p.Child("podsPerCore"), *kc.PodsPerCore, "must not be negative")
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{{"imageGCHighThresholdPercent", kc.ImageGCHighThresholdPercent}, {"imageGCLowThresholdPercent", kc.ImageGCLowThresholdPercent}} {
		if f.v != nil && (*f.v < 0 || *f.v > 100) {
			l.invalid(p.Child(f.name), *f.v, "must be between 0 and 100")
		}
	}
	if kc.ImageGCHighThresholdPercent != nil && *kc.ImageGCHighThresholdPercent < deref(kc.ImageGCLowThresholdPercent) {
		l.add(p.Child("imageGCHighThresholdPercent"), "must be greater than imageGCLowThresholdPercent")
	}
}

// provisionerToPool maps a defaulted, valid Provisioner onto a pool.
// v1alpha5 had no disruption budgets: every node could be disrupted at
// once, which the pool says as a single 100% budget.
func provisionerToPool(p *v1alpha5.Provisioner) *model.Pool {
	s := &p.Spec
	pool := &model.Pool{
		Name:              p.Name,
		API:               model.APIV1Alpha5,
		Requirements:      requirementsToModel(s.Requirements),
		Labels:            copyMap(s.Labels),
		Annotations:       copyMap(s.Annotations),
		ObjectAnnotations: copyMap(p.Annotations),
		Taints:            s.Taints,
		StartupTaints:     s.StartupTaints,
		Weight:            deref(s.Weight),
		Kubelet:           kubeletV1Alpha5ToModel(s.KubeletConfiguration),
	}
	if s.Limits != nil && len(s.Limits.Resources) > 0 {
		pool.Limits = s.Limits.Resources.DeepCopy()
	}
	if s.ProviderRef != nil {
		pool.NodeClass = s.ProviderRef.Name
	} else {
		pool.NodeClass = InlineNodeClassName(p.Name)
	}
	d := &pool.Disruption
	switch {
	case s.Consolidation != nil && deref(s.Consolidation.Enabled):
		d.ConsolidationPolicy = "WhenEmptyOrUnderutilized"
		d.ConsolidateAfter = ptrTo(time.Duration(0))
	case s.TTLSecondsAfterEmpty != nil:
		d.ConsolidationPolicy = "WhenEmpty"
		d.ConsolidateAfter = ptrTo(time.Duration(*s.TTLSecondsAfterEmpty) * time.Second)
	default:
		// Neither emptiness TTL nor consolidation: nodes are never
		// consolidated.
		d.ConsolidationPolicy = "WhenEmpty"
	}
	if s.TTLSecondsUntilExpired != nil {
		d.ExpireAfter = ptrTo(time.Duration(*s.TTLSecondsUntilExpired) * time.Second)
	}
	d.Budgets = []model.Budget{{Nodes: "100%"}}
	return pool
}

func requirementsToModel(reqs []corev1.NodeSelectorRequirement) []model.Requirement {
	out := make([]model.Requirement, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, model.Requirement{Key: model.NormalizeLabelKey(r.Key), Operator: string(r.Operator), Values: append([]string(nil), r.Values...)})
	}
	return out
}

func kubeletV1Alpha5ToModel(kc *v1alpha5.KubeletConfiguration) *model.Kubelet {
	if kc == nil {
		return nil
	}
	k := &model.Kubelet{
		ClusterDNS:                  append([]string(nil), kc.ClusterDNS...),
		MaxPods:                     kc.MaxPods,
		PodsPerCore:                 kc.PodsPerCore,
		SystemReserved:              resourceListToMap(kc.SystemReserved),
		KubeReserved:                resourceListToMap(kc.KubeReserved),
		EvictionHard:                copyMap(kc.EvictionHard),
		EvictionSoft:                copyMap(kc.EvictionSoft),
		EvictionMaxPodGracePeriod:   kc.EvictionMaxPodGracePeriod,
		ImageGCHighThresholdPercent: kc.ImageGCHighThresholdPercent,
		ImageGCLowThresholdPercent:  kc.ImageGCLowThresholdPercent,
		CPUCFSQuota:                 kc.CPUCFSQuota,
		ContainerRuntime:            deref(kc.ContainerRuntime),
	}
	if len(kc.EvictionSoftGracePeriod) > 0 {
		k.EvictionSoftGracePeriod = map[string]string{}
		for key, d := range kc.EvictionSoftGracePeriod {
			k.EvictionSoftGracePeriod[key] = d.Duration.String()
		}
	}
	return k
}

func resourceListToMap(rl corev1.ResourceList) map[string]string {
	if len(rl) == 0 {
		return nil
	}
	out := make(map[string]string, len(rl))
	for k, q := range rl {
		out[string(k)] = q.String()
	}
	return out
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
