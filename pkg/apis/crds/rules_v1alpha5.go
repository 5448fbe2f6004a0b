package crds

import "strings"

// The v1alpha5 label rules: keys in kubernetes.io, k8s.io, karpenter.sh
// and karpenter.k8s.aws (matched as domain suffixes) are restricted unless
// well known; kops.k8s.io and node.kubernetes.io are exempt.
var (
	wellKnownV1Alpha5 = []string{
		"karpenter.sh/provisioner-name", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
		"node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os", "karpenter.sh/capacity-type",
		"karpenter.k8s.aws/instance-hypervisor", "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-family",
		"karpenter.k8s.aws/instance-generation", "karpenter.k8s.aws/instance-local-nvme", "karpenter.k8s.aws/instance-size",
		"karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-memory", "karpenter.k8s.aws/instance-pods",
		"karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-gpu-count",
		"karpenter.k8s.aws/instance-gpu-memory", "karpenter.k8s.aws/instance-encryption-in-transit-supported",
		"karpenter.k8s.aws/instance-cpu-manufacturer", "karpenter.k8s.aws/instance-network-bandwidth",
		"karpenter.k8s.aws/instance-accelerator-name", "karpenter.k8s.aws/instance-accelerator-manufacturer",
		"karpenter.k8s.aws/instance-accelerator-count",
	}
	// Deprecated keys a requirement may use: they are normalised onto
	// well-known ones before the restriction applies.
	normalisedV1Alpha5 = []string{
		"failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
		"beta.kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type",
	}
	restrictedDomainsV1Alpha5 = []string{"kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws"}
)

const restrictedV1Alpha5Message = "label domain is restricted (kubernetes.io, k8s.io, karpenter.sh, karpenter.k8s.aws); use a well-known label or another domain"

// domainRule is a CEL test that key (a CEL expression) may be used.
func domainRuleV1Alpha5(key string, allowed []string) string {
	domain := key + ".substring(0, " + key + ".indexOf('/'))"
	return key + " in " + celList(allowed) +
		" || !" + key + ".contains('/')" +
		" || " + domain + " in ['kops.k8s.io', 'node.kubernetes.io']" +
		" || !" + celList(restrictedDomainsV1Alpha5) + ".exists(d, " + domain + ".endsWith(d))"
}

func provisionerEdits() map[string][]edit {
	e := map[string][]edit{
		"": {required("spec")},
		"spec": {
			cel("!(has(self.provider) && has(self.providerRef))", "provider and providerRef are mutually exclusive"),
			cel("has(self.provider) || has(self.providerRef)", "providerRef is required: name the AWSNodeTemplate to launch with (or give a legacy inline provider)"),
			cel("!(has(self.ttlSecondsAfterEmpty) && has(self.consolidation) && has(self.consolidation.enabled) && self.consolidation.enabled)", "ttlSecondsAfterEmpty and consolidation.enabled are mutually exclusive"),
		},
		"spec.ttlSecondsAfterEmpty":   {minimum(0)},
		"spec.ttlSecondsUntilExpired": {minimum(0)},
		"spec.weight":                 {minimum(1), maximum(100)},
		"spec.providerRef":            {required("name"), cel("self.name != ''", "providerRef.name may not be empty")},
		"spec.providerRef.kind":       {enum("AWSNodeTemplate")},
		"spec.providerRef.apiVersion": {enum("karpenter.k8s.aws/v1alpha1")},
		"spec.labels": {
			maxProperties(100),
			cel("self.all(k, k != 'karpenter.sh/provisioner-name')", `label "karpenter.sh/provisioner-name" is restricted`),
			cel("self.all(k, "+domainRuleV1Alpha5("k", wellKnownV1Alpha5)+")", restrictedV1Alpha5Message),
		},
		"spec.labels{}":     {maxLength(63), pattern(labelValuePattern)},
		"spec.requirements": {maxItems(100)},
		"spec.requirements[]": {
			required("key", "operator"),
			cel("self.operator != 'In' || (has(self.values) && size(self.values) > 0)", "requirements with operator 'In' must have a value defined"),
			cel("!(self.operator in ['Gt', 'Lt']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^[0-9]+$'))", "requirements operator 'Gt' or 'Lt' must have a single positive integer value"),
		},
		"spec.requirements[].key": {
			maxLength(316), pattern(qualifiedNamePattern),
			cel("self != 'karpenter.sh/provisioner-name'", `label "karpenter.sh/provisioner-name" is restricted`),
			cel(domainRuleV1Alpha5("self", append(append([]string{}, wellKnownV1Alpha5...), normalisedV1Alpha5...)), restrictedV1Alpha5Message),
		},
		"spec.requirements[].operator": {enum("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")},
		"spec.requirements[].values":   {maxItems(1000)},
		"spec.requirements[].values[]": {maxLength(63), pattern(labelValuePattern)},
		"spec.kubeletConfiguration": {
			cel("!has(self.evictionSoft) || self.evictionSoft.all(k, has(self.evictionSoftGracePeriod) && k in self.evictionSoftGracePeriod)", "each evictionSoft signal needs an evictionSoftGracePeriod"),
			cel("!has(self.evictionSoftGracePeriod) || self.evictionSoftGracePeriod.all(k, has(self.evictionSoft) && k in self.evictionSoft)", "each evictionSoftGracePeriod signal needs an evictionSoft threshold"),
			cel("!has(self.imageGCHighThresholdPercent) || !has(self.imageGCLowThresholdPercent) || self.imageGCHighThresholdPercent >= self.imageGCLowThresholdPercent", "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"),
		},
		"spec.kubeletConfiguration.maxPods":                     {minimum(0)},
		"spec.kubeletConfiguration.podsPerCore":                 {minimum(0)},
		"spec.kubeletConfiguration.imageGCHighThresholdPercent": {minimum(0), maximum(100)},
		"spec.kubeletConfiguration.imageGCLowThresholdPercent":  {minimum(0), maximum(100)},
		"spec.kubeletConfiguration.systemReserved":              {cel("self.all(k, k in "+celList(reservable)+")", "systemReserved may only reserve "+strings.Join(reservable, ", "))},
		"spec.kubeletConfiguration.kubeReserved":                {cel("self.all(k, k in "+celList(reservable)+")", "kubeReserved may only reserve "+strings.Join(reservable, ", "))},
		"spec.kubeletConfiguration.evictionHard":                {cel("self.all(k, k in "+celList(evictionSignals)+")", "evictionHard keys must be eviction signals: "+strings.Join(evictionSignals, ", "))},
		"spec.kubeletConfiguration.evictionSoft":                {cel("self.all(k, k in "+celList(evictionSignals)+")", "evictionSoft keys must be eviction signals: "+strings.Join(evictionSignals, ", "))},
		"spec.kubeletConfiguration.evictionSoftGracePeriod":     {cel("self.all(k, k in "+celList(evictionSignals)+")", "evictionSoftGracePeriod keys must be eviction signals: "+strings.Join(evictionSignals, ", "))},
		"status.conditions":                                     {maxItems(100)},
	}
	taintEdits(e, "spec.taints")
	taintEdits(e, "spec.startupTaints")
	return e
}
