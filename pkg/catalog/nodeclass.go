package catalog

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/model"
)

// amiFamily holds what an AMI family changes about a node's size, as
// Karpenter's AMI families declare it.
type amiFamily struct {
	// eniLimitedPods: the default pod density is the VPC CNI's ENI limit
	// (otherwise 110).
	eniLimitedPods bool
	// eniLimitedMemoryOverhead: kube-reserved memory counts ENI-limited
	// pods whatever maxPods says (otherwise the node's pod count).
	eniLimitedMemoryOverhead bool
	// podsPerCore: the kubelet honours podsPerCore.
	podsPerCore bool
	windows     bool
	// ephemeralDevice is the device pods' ephemeral storage lives on; ""
	// when unknown (Custom).
	ephemeralDevice string
	// defaultVolume is that device's size when the node class does not
	// map it.
	defaultVolume int64
}

var (
	familyDefault = amiFamily{
		eniLimitedPods: true, eniLimitedMemoryOverhead: true, podsPerCore: true,
		ephemeralDevice: "/dev/xvda", defaultVolume: DefaultEphemeralStorage,
	}
	familyUbuntu = amiFamily{
		eniLimitedPods: true, eniLimitedMemoryOverhead: true, podsPerCore: true,
		ephemeralDevice: "/dev/sda1", defaultVolume: DefaultEphemeralStorage,
	}
	familyCustom = amiFamily{
		eniLimitedPods: true, eniLimitedMemoryOverhead: true, podsPerCore: true,
		defaultVolume: DefaultEphemeralStorage,
	}
	// Bottlerocket keeps pods' storage on its data volume, /dev/xvdb.
	familyBottlerocket = amiFamily{
		eniLimitedPods:  true,
		ephemeralDevice: "/dev/xvdb", defaultVolume: DefaultEphemeralStorage,
	}
	familyWindows = amiFamily{
		podsPerCore: true, windows: true,
		ephemeralDevice: "/dev/sda1", defaultVolume: 50 * gibi,
	}
)

// familyOf is the node class's family (model.NodeClass.Windows says
// whether it is Windows).
func familyOf(nc *model.NodeClass) amiFamily {
	if _, ok := nc.Windows(); ok {
		return familyWindows
	}
	name := nc.AMIFamily
	switch {
	case strings.EqualFold(name, "Bottlerocket"):
		return familyBottlerocket
	case strings.EqualFold(name, "Custom"):
		return familyCustom
	case strings.EqualFold(name, "Ubuntu"):
		return familyUbuntu
	default: // AL2, AL2023, or unset
		return familyDefault
	}
}

// shape is what of a node class changes a node's size.
type shape struct {
	family amiFamily
	// volume is the ephemeral-storage volume's size from the node class's
	// blockDeviceMappings; nil for the family default.
	volume *resource.Quantity
	raid0  bool
	// efaOnlyOnCard0 is the EFA-only interfaces on the first network card,
	// which take ENIs away from pods.
	efaOnlyOnCard0 int64
	// reservedENIs are the ENIs the VPC CNI may not give pods (the
	// operator's RESERVED_ENIS, model.NodeClass.ReservedENIs).
	reservedENIs int64
	// efaInterfaces is the EFA-only interfaces listed by the node class,
	// or -1 when it lists none (then the type's EFA count is advertised).
	efaInterfaces int64
}

// shapeOf reads a node class; nil is AL2023 with defaults.
func shapeOf(nc *model.NodeClass) shape {
	s := shape{family: familyDefault, efaInterfaces: -1}
	if nc == nil {
		return s
	}
	s.family = familyOf(nc)
	s.reservedENIs = max(nc.ReservedENIs, 0)
	s.raid0 = strings.EqualFold(nc.InstanceStorePolicy, "RAID0")
	s.volume = volumeOf(nc.BlockDeviceMappings, s.family)
	if nc.NetworkInterfaces != nil {
		s.efaInterfaces = 0
		for _, ni := range nc.NetworkInterfaces {
			if ni.InterfaceType != "efa-only" {
				continue
			}
			s.efaInterfaces++
			if ni.NetworkCardIndex == 0 {
				s.efaOnlyOnCard0++
			}
		}
	}
	return s
}

// volumeOf picks the volume pods' ephemeral storage lives on, as Karpenter
// does: the mapping marked rootVolume; for Custom AMIs the last mapping;
// otherwise the mapping of the family's ephemeral device. Sizes that do
// not parse are ignored.
func volumeOf(bdms []model.BlockDeviceMapping, f amiFamily) *resource.Quantity {
	if len(bdms) == 0 {
		return nil
	}
	size := func(b model.BlockDeviceMapping) *resource.Quantity {
		if b.EBS == nil || b.EBS.VolumeSize == "" {
			return nil
		}
		q, err := resource.ParseQuantity(b.EBS.VolumeSize)
		if err != nil || q.Sign() <= 0 {
			return nil
		}
		return &q
	}
	for _, b := range bdms {
		if b.RootVolume {
			if q := size(b); q != nil {
				return q
			}
		}
	}
	if f.ephemeralDevice == "" {
		return size(bdms[len(bdms)-1])
	}
	for _, b := range bdms {
		if b.DeviceName == f.ephemeralDevice {
			return size(b)
		}
	}
	return nil
}

// SizeKey names what of a node class changes a node's size: its AMI
// family's sizing rules, the ephemeral-storage volume (the family default
// when it maps none), RAID0 and the EFA-only interfaces. Node classes with
// equal keys give every instance type the same capacity, overhead and pod
// count, so callers can share the sized lists; nil and a default AL2 or
// AL2023 class have the same key.
func SizeKey(nc *model.NodeClass) string {
	s := shapeOf(nc)
	f := s.family
	vol := resource.NewQuantity(f.defaultVolume, resource.BinarySI)
	if s.volume != nil {
		vol = s.volume
	}
	return fmt.Sprintf("eni-pods=%t eni-memory=%t per-core=%t windows=%t volume=%d raid0=%t efa-card0=%d efa=%d reserved-enis=%d",
		f.eniLimitedPods, f.eniLimitedMemoryOverhead, f.podsPerCore, f.windows, vol.Value(), s.raid0, s.efaOnlyOnCard0, s.efaInterfaces, s.reservedENIs)
}

// LabelKey names what of a node class changes the labels of its nodes'
// instance types (LabelsFor): "" for Linux families, the OS and build for
// Windows. Node classes with equal SizeKey and LabelKey give every
// instance type the same scheduling.InstanceType.
func LabelKey(nc *model.NodeClass) string {
	if w, ok := nc.Windows(); ok {
		return "os=windows build=" + w.Build
	}
	return ""
}
