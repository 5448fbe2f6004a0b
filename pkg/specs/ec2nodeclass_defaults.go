package specs

import (
	"strings"

	v1 "github.com/joist-dev/joist/pkg/apis/v1"
)

// defaultEC2NodeClass applies the v1 CRD default for metadataOptions
// (httpEndpoint enabled, IPv6 disabled, hop limit 1, tokens required),
// field by field as the schema does, and the family's root volumes as the
// provider's AMI families do when no blockDeviceMappings are given.
func defaultEC2NodeClass(nc *v1.EC2NodeClass) {
	s := &nc.Spec
	if s.MetadataOptions == nil {
		s.MetadataOptions = &v1.MetadataOptions{}
	}
	m := s.MetadataOptions
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
		m.HTTPTokens = ptrTo("required")
	}
	if len(s.BlockDeviceMappings) == 0 {
		s.BlockDeviceMappings = defaultBlockDevicesV1(effectiveFamily(nc))
	}
}

func effectiveFamily(nc *v1.EC2NodeClass) string {
	if nc.Spec.AMIFamily != nil {
		return *nc.Spec.AMIFamily
	}
	return aliasFamily(nc)
}

// aliasFamily returns the amiFamily an alias term names ("" if none).
func aliasFamily(nc *v1.EC2NodeClass) string {
	for _, t := range nc.Spec.AMISelectorTerms {
		if t.Alias != "" {
			fam, _, _ := strings.Cut(t.Alias, "@")
			return aliasFamilies[fam]
		}
	}
	return ""
}

// defaultBlockDevicesV1 are v1.15's per-family root volumes: gp3,
// encrypted, 20Gi; Bottlerocket adds a 6Gi OS volume; Windows gets 50Gi;
// Custom leaves the AMI's own.
func defaultBlockDevicesV1(family string) []*v1.BlockDeviceMapping {
	ebs := func(size string) *v1.BlockDevice {
		return &v1.BlockDevice{Encrypted: ptrTo(true), VolumeType: ptrTo("gp3"), VolumeSize: ptrTo(size)}
	}
	switch family {
	case v1.AMIFamilyAL2, v1.AMIFamilyAL2023:
		return []*v1.BlockDeviceMapping{{DeviceName: ptrTo("/dev/xvda"), EBS: ebs("20Gi")}}
	case v1.AMIFamilyBottlerocket:
		return []*v1.BlockDeviceMapping{
			{DeviceName: ptrTo("/dev/xvda"), EBS: ebs("6Gi")},
			{DeviceName: ptrTo("/dev/xvdb"), EBS: ebs("20Gi")},
		}
	case v1.AMIFamilyWindows2019, v1.AMIFamilyWindows2022, v1.AMIFamilyWindows2025:
		return []*v1.BlockDeviceMapping{{DeviceName: ptrTo("/dev/sda1"), EBS: ebs("50Gi")}}
	}
	return nil
}
