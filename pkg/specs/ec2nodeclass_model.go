package specs

import (
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joist-dev/joist/pkg/apis/v1"
	"github.com/joist-dev/joist/pkg/model"
)

// ec2NodeClassToNodeClass maps a defaulted, valid EC2NodeClass.
func ec2NodeClassToNodeClass(nc *v1.EC2NodeClass) *model.NodeClass {
	s := &nc.Spec
	out := &model.NodeClass{
		Name:                 nc.Name,
		API:                  model.APIV1,
		AMIFamily:            effectiveFamily(nc),
		UserData:             s.UserData,
		Role:                 s.Role,
		InstanceProfile:      deref(s.InstanceProfile),
		Tags:                 copyMap(s.Tags),
		Kubelet:              kubeletV1ToModel(s.Kubelet),
		InstanceStorePolicy:  deref(s.InstanceStorePolicy),
		AssociatePublicIP:    s.AssociatePublicIPAddress,
		DetailedMonitoring:   s.DetailedMonitoring,
		Context:              deref(s.Context),
		IPPrefixCount:        s.IPPrefixCount,
		NestedVirtualization: "",
	}
	for _, t := range s.SubnetSelectorTerms {
		out.SubnetSelector = append(out.SubnetSelector, model.SelectorTerm{Tags: copyMap(t.Tags), ID: t.ID})
	}
	for _, t := range s.SecurityGroupSelectorTerms {
		out.SecurityGroupSelector = append(out.SecurityGroupSelector, model.SelectorTerm{Tags: copyMap(t.Tags), ID: t.ID, Name: t.Name})
	}
	for _, t := range s.AMISelectorTerms {
		out.AMISelector = append(out.AMISelector, model.SelectorTerm{Tags: copyMap(t.Tags), ID: t.ID, Name: t.Name, Owner: t.Owner, Alias: t.Alias, SSMParameter: t.SSMParameter})
	}
	for _, t := range s.CapacityReservationSelectorTerms {
		out.CapacityReservationSelector = append(out.CapacityReservationSelector, model.CapacityReservationTerm{Tags: copyMap(t.Tags), ID: t.ID, OwnerID: t.OwnerID, InstanceMatchCriteria: t.InstanceMatchCriteria})
	}
	if pg := s.PlacementGroupSelector; pg != nil {
		out.PlacementGroup = &model.PlacementGroup{Name: deref(pg.Name), ID: deref(pg.ID)}
	}
	for _, ni := range s.NetworkInterfaces {
		out.NetworkInterfaces = append(out.NetworkInterfaces, model.NetworkInterface{NetworkCardIndex: ni.NetworkCardIndex, DeviceIndex: ni.DeviceIndex, InterfaceType: ni.InterfaceType})
	}
	if c := s.CPUOptions; c != nil {
		out.NestedVirtualization = deref(c.NestedVirtualization)
	}
	if e := s.EnclaveOptions; e != nil {
		out.EnclaveEnabled = e.Enabled
	}
	if ct := s.ConnectionTracking; ct != nil {
		out.ConnectionTracking = &model.ConnectionTracking{TCPEstablishedTimeout: ct.TCPEstablishedTimeout, UDPStreamTimeout: ct.UDPStreamTimeout, UDPTimeout: ct.UDPTimeout}
	}
	if m := s.MetadataOptions; m != nil {
		out.MetadataOptions = &model.MetadataOptions{
			HTTPEndpoint:            deref(m.HTTPEndpoint),
			HTTPProtocolIPv6:        deref(m.HTTPProtocolIPv6),
			HTTPPutResponseHopLimit: int32(deref(m.HTTPPutResponseHopLimit)),
			HTTPTokens:              deref(m.HTTPTokens),
		}
	}
	for _, b := range s.BlockDeviceMappings {
		bdm := model.BlockDeviceMapping{DeviceName: deref(b.DeviceName), RootVolume: b.RootVolume}
		if e := b.EBS; e != nil {
			bdm.EBS = &model.EBS{
				DeleteOnTermination:      e.DeleteOnTermination,
				Encrypted:                e.Encrypted,
				IOPS:                     e.IOPS,
				KMSKeyID:                 deref(e.KMSKeyID),
				SnapshotID:               deref(e.SnapshotID),
				Throughput:               e.Throughput,
				VolumeType:               deref(e.VolumeType),
				VolumeInitializationRate: e.VolumeInitializationRate,
			}
			if e.VolumeSize != nil {
				bdm.EBS.VolumeSize = canonicalSize(*e.VolumeSize)
			}
		}
		out.BlockDeviceMappings = append(out.BlockDeviceMappings, bdm)
	}
	return out
}

// canonicalSize writes a volume size the way resource.Quantity prints it,
// so that v1alpha1 and v1 sizes of the same volume compare equal.
func canonicalSize(s string) string {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return s
	}
	return q.String()
}
