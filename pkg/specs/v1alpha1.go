package specs

import (
	"regexp"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/joist-dev/joist/pkg/apis/v1alpha1"
	"github.com/joist-dev/joist/pkg/model"
)

var (
	amiFamiliesV1Alpha1 = []string{v1alpha1.AMIFamilyAL2, v1alpha1.AMIFamilyBottlerocket, v1alpha1.AMIFamilyUbuntu, v1alpha1.AMIFamilyWindows2019, v1alpha1.AMIFamilyWindows2022, v1alpha1.AMIFamilyCustom}
	volumeTypes         = []string{"standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"}
	enabledDisabled     = []string{"enabled", "disabled"}
	httpTokensValues    = []string{"required", "optional"}

	// ID patterns. Karpenter matched them unanchored (so "xsubnet-1"
	// passed and failed later at EC2); Joist anchors them.
	subnetIDRe = regexp.MustCompile(`^subnet-[0-9a-z]+$`)
	sgIDRe     = regexp.MustCompile(`^sg-[0-9a-z]+$`)
	amiIDRe    = regexp.MustCompile(`^ami-[0-9a-z]+$`)

	minVolumeSize = *resource.NewScaledQuantity(1, resource.Giga)
	maxVolumeSize = *resource.NewScaledQuantity(64, resource.Tera)
)

func isIDKey(k string) bool {
	return k == v1alpha1.SelectorKeyAWSIDs || k == v1alpha1.SelectorKeyAWSIDsV2
}

// defaultAWS fills what Karpenter v0.20's launch template resolver filled
// when it built a launch template: the AL2 family, and, unless the user
// brings a launch template, IMDS options and the family's root volumes.
//
// With no metadataOptions the resolver used {enabled, disabled, hop limit
// 2, tokens required}. When metadataOptions was given in part, the unset
// fields went to EC2 unset and took EC2's defaults (enabled, disabled,
// hop limit 1, tokens optional); Joist writes those down explicitly.
func defaultAWS(a *v1alpha1.AWS) {
	if a.AMIFamily == nil {
		a.AMIFamily = ptrTo(v1alpha1.AMIFamilyAL2)
	}
	if a.LaunchTemplateName != nil {
		return
	}
	if a.MetadataOptions == nil {
		a.MetadataOptions = &v1alpha1.MetadataOptions{
			HTTPEndpoint:            ptrTo("enabled"),
			HTTPProtocolIPv6:        ptrTo("disabled"),
			HTTPPutResponseHopLimit: ptrTo(int64(2)),
			HTTPTokens:              ptrTo("required"),
		}
	} else {
		m := a.MetadataOptions
		if m.HTTPEndpoint == nil {
			m.HTTPEndpoint = ptrTo("enabled")
		}
		if m.HTTPProtocolIPv6 == nil {
			m.HTTPProtocolIPv6 = ptrTo("disabled")
		}
		if m.HTTPPutResponseHopLimit == nil {
			m.HTTPPutResponseHopLimit = ptrTo(int64(1))
		}
		if m.HTTPTokens == nil {
			m.HTTPTokens = ptrTo("optional")
		}
	}
	if len(a.BlockDeviceMappings) == 0 {
		a.BlockDeviceMappings = defaultBlockDevicesV1Alpha1(*a.AMIFamily)
	}
}

// defaultBlockDevicesV1Alpha1 are v0.20's per-family root volumes: gp3,
// encrypted, 20Gi on the family's root device; Bottlerocket adds a 4Gi OS
// volume; Custom leaves the AMI's own mappings.
func defaultBlockDevicesV1Alpha1(family string) []*v1alpha1.BlockDeviceMapping {
	ebs := func(size string) *v1alpha1.BlockDevice {
		return &v1alpha1.BlockDevice{Encrypted: ptrTo(true), VolumeType: ptrTo("gp3"), VolumeSize: ptrTo(resource.MustParse(size))}
	}
	switch family {
	case v1alpha1.AMIFamilyAL2:
		return []*v1alpha1.BlockDeviceMapping{{DeviceName: ptrTo("/dev/xvda"), EBS: ebs("20Gi")}}
	case v1alpha1.AMIFamilyBottlerocket:
		return []*v1alpha1.BlockDeviceMapping{
			{DeviceName: ptrTo("/dev/xvda"), EBS: ebs("4Gi")},
			{DeviceName: ptrTo("/dev/xvdb"), EBS: ebs("20Gi")},
		}
	case v1alpha1.AMIFamilyUbuntu:
		return []*v1alpha1.BlockDeviceMapping{{DeviceName: ptrTo("/dev/sda1"), EBS: ebs("20Gi")}}
	case v1alpha1.AMIFamilyWindows2019, v1alpha1.AMIFamilyWindows2022:
		return []*v1alpha1.BlockDeviceMapping{{DeviceName: ptrTo("/dev/sda1"), EBS: ebs("50Gi")}}
	}
	return nil
}

// validateAWS applies the v0.20 provider webhook rules to AWS settings
// found at p (spec for a template, spec.provider for an inline provider).
func validateAWS(l *errs, a *v1alpha1.AWS, p *field.Path) {
	if a.LaunchTemplateName != nil {
		if a.SecurityGroupSelector != nil {
			l.exclusive(p, "launchTemplate", "securityGroupSelector")
		}
		if a.MetadataOptions != nil {
			l.exclusive(p, "launchTemplate", "metadataOptions")
		}
		if a.InstanceProfile != nil {
			l.exclusive(p, "launchTemplate", "instanceProfile")
		}
		if len(a.BlockDeviceMappings) != 0 {
			l.exclusive(p, "launchTemplate", "blockDeviceMappings")
		}
	}
	if a.SubnetSelector == nil {
		l.required(p.Child("subnetSelector"))
	}
	validateSelectorMap(l, a.SubnetSelector, p.Child("subnetSelector"), isIDKey, subnetIDRe, "subnet id")
	if a.LaunchTemplateName == nil && a.SecurityGroupSelector == nil {
		l.required(p.Child("securityGroupSelector"))
	}
	validateSelectorMap(l, a.SecurityGroupSelector, p.Child("securityGroupSelector"), isIDKey, sgIDRe, "security group id")
	for _, k := range sortedKeys(a.Tags) {
		if k == "" {
			l.add(p.Child("tags"), "empty tag keys are not supported")
		}
	}
	if m := a.MetadataOptions; m != nil {
		mp := p.Child("metadataOptions")
		if m.HTTPEndpoint != nil && !contains(enabledDisabled, *m.HTTPEndpoint) {
			l.unsupported(mp.Child("httpEndpoint"), *m.HTTPEndpoint, enabledDisabled)
		}
		if m.HTTPProtocolIPv6 != nil && !contains(enabledDisabled, *m.HTTPProtocolIPv6) {
			l.unsupported(mp.Child("httpProtocolIPv6"), *m.HTTPProtocolIPv6, enabledDisabled)
		}
		if m.HTTPPutResponseHopLimit != nil && (*m.HTTPPutResponseHopLimit < 1 || *m.HTTPPutResponseHopLimit > 64) {
			l.invalid(mp.Child("httpPutResponseHopLimit"), *m.HTTPPutResponseHopLimit, "must be between 1 and 64")
		}
		if m.HTTPTokens != nil && !contains(httpTokensValues, *m.HTTPTokens) {
			l.unsupported(mp.Child("httpTokens"), *m.HTTPTokens, httpTokensValues)
		}
	}
	if a.AMIFamily != nil && !contains(amiFamiliesV1Alpha1, *a.AMIFamily) {
		l.unsupported(p.Child("amiFamily"), *a.AMIFamily, amiFamiliesV1Alpha1)
	}
	for i, b := range a.BlockDeviceMappings {
		bp := p.Child("blockDeviceMappings").Index(i)
		if b == nil {
			l.required(bp)
			continue
		}
		if b.DeviceName == nil {
			l.required(bp.Child("deviceName"))
		}
		if b.EBS == nil {
			l.required(bp.Child("ebs"))
			continue
		}
		ep := bp.Child("ebs")
		if b.EBS.VolumeType != nil && !contains(volumeTypes, *b.EBS.VolumeType) {
			l.unsupported(ep.Child("volumeType"), *b.EBS.VolumeType, volumeTypes)
		}
		switch {
		case b.EBS.VolumeSize == nil && b.EBS.SnapshotID == nil:
			l.add(ep.Child("volumeSize"), "required value: give volumeSize or snapshotID")
		case b.EBS.VolumeSize != nil && (b.EBS.VolumeSize.Cmp(minVolumeSize) < 0 || b.EBS.VolumeSize.Cmp(maxVolumeSize) > 0):
			l.invalid(ep.Child("volumeSize"), b.EBS.VolumeSize.String(), "must be between %s and %s", minVolumeSize.String(), maxVolumeSize.String())
		}
	}
}

// validateAWSNodeTemplate applies the v0.20 AWSNodeTemplate webhook: the
// provider rules plus userData, amiSelector and amiFamily.
func validateAWSNodeTemplate(t *v1alpha1.AWSNodeTemplate) errs {
	var l errs
	validateName(&l, t.Name)
	spec := field.NewPath("spec")
	validateAWS(&l, &t.Spec.AWS, spec)
	if t.Spec.UserData != nil && t.Spec.LaunchTemplateName != nil {
		l.exclusive(spec, "userData", "launchTemplate")
	}
	if t.Spec.AMISelector != nil && t.Spec.LaunchTemplateName != nil {
		l.exclusive(spec, "amiSelector", "launchTemplate")
	}
	validateSelectorMap(&l, t.Spec.AMISelector, spec.Child("amiSelector"), isIDKey, amiIDRe, "ami id")
	if deref(t.Spec.AMIFamily) == v1alpha1.AMIFamilyCustom && t.Spec.AMISelector == nil {
		l.add(spec.Child("amiSelector"), "required value: amiFamily Custom needs an amiSelector")
	}
	return l
}

// awsToNodeClass maps defaulted, valid AWS settings onto a node class.
func awsToNodeClass(name string, a *v1alpha1.AWS) *model.NodeClass {
	nc := &model.NodeClass{
		Name:                  name,
		API:                   model.APIV1Alpha5,
		SubnetSelector:        selectorMapToTerms(a.SubnetSelector, nil),
		SecurityGroupSelector: selectorMapToTerms(a.SecurityGroupSelector, nil),
		AMIFamily:             deref(a.AMIFamily),
		InstanceProfile:       deref(a.InstanceProfile),
		Tags:                  copyMap(a.Tags),
		LaunchTemplate:        deref(a.LaunchTemplateName),
		Context:               deref(a.Context),
	}
	if nc.LaunchTemplate == "" {
		// Without an amiSelector, v0.20 launched the family's recommended
		// (latest) EKS AMI: that is what a v1 alias says.
		if alias := aliasForFamily(nc.AMIFamily); alias != "" {
			nc.AMISelector = []model.SelectorTerm{{Alias: alias}}
		}
	}
	if m := a.MetadataOptions; m != nil {
		nc.MetadataOptions = &model.MetadataOptions{
			HTTPEndpoint:            deref(m.HTTPEndpoint),
			HTTPProtocolIPv6:        deref(m.HTTPProtocolIPv6),
			HTTPPutResponseHopLimit: int32(deref(m.HTTPPutResponseHopLimit)),
			HTTPTokens:              deref(m.HTTPTokens),
		}
	}
	for _, b := range a.BlockDeviceMappings {
		bdm := model.BlockDeviceMapping{DeviceName: deref(b.DeviceName), VirtualName: deref(b.VirtualName)}
		if e := b.EBS; e != nil {
			bdm.EBS = &model.EBS{
				DeleteOnTermination: e.DeleteOnTermination,
				Encrypted:           e.Encrypted,
				IOPS:                e.IOPS,
				KMSKeyID:            deref(e.KMSKeyID),
				SnapshotID:          deref(e.SnapshotID),
				Throughput:          e.Throughput,
				VolumeType:          deref(e.VolumeType),
			}
			if e.VolumeSize != nil {
				bdm.EBS.VolumeSize = e.VolumeSize.String()
			}
		}
		nc.BlockDeviceMappings = append(nc.BlockDeviceMappings, bdm)
	}
	return nc
}

func templateToNodeClass(t *v1alpha1.AWSNodeTemplate) *model.NodeClass {
	nc := awsToNodeClass(t.Name, &t.Spec.AWS)
	if len(t.Spec.AMISelector) > 0 {
		nc.AMISelector = selectorMapToTerms(t.Spec.AMISelector, amiSpecialKeys)
	}
	nc.UserData = t.Spec.UserData
	nc.DetailedMonitoring = t.Spec.DetailedMonitoring
	return nc
}

// amiSpecialKeys maps the aws::name and aws::owners AMI selector keys
// onto term fields.
var amiSpecialKeys = map[string]bool{v1alpha1.SelectorKeyAMIName: true, v1alpha1.SelectorKeyAMIOwner: true}

// selectorMapToTerms turns a v1alpha1 selector map (tags AND'ed, aws-ids a
// comma-separated list of IDs) into v1-style terms: one term per ID (and,
// for AMIs, per owner), each carrying the remaining tags, so that the
// terms OR'ed select exactly what the map selected.
func selectorMapToTerms(m map[string]string, special map[string]bool) []model.SelectorTerm {
	if len(m) == 0 {
		return nil
	}
	var ids, owners []string
	base := model.SelectorTerm{}
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch {
		case isIDKey(k):
			ids = append(ids, splitCommaList(v)...)
		case special[k] && k == v1alpha1.SelectorKeyAMIName:
			base.Name = v
		case special[k] && k == v1alpha1.SelectorKeyAMIOwner:
			owners = append(owners, splitCommaList(v)...)
		default:
			if base.Tags == nil {
				base.Tags = map[string]string{}
			}
			base.Tags[k] = v
		}
	}
	if len(ids) == 0 {
		ids = []string{""}
	}
	if len(owners) == 0 {
		owners = []string{""}
	}
	var terms []model.SelectorTerm
	for _, id := range ids {
		for _, owner := range owners {
			t := base
			t.Tags = copyMap(base.Tags)
			t.ID, t.Owner = id, owner
			terms = append(terms, t)
		}
	}
	return terms
}
