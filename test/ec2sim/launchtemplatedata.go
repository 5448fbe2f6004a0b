package ec2sim

import (
	"encoding/base64"
	"strings"
)

// metadataOptions are an instance's IMDS settings; empty strings and a zero
// hop limit mean "not set" in a template and EC2's defaults on an instance.
type metadataOptions struct {
	httpTokens, httpEndpoint, httpProtocolIpv6, instanceMetadataTags string
	hopLimit                                                         int
}

type ebsSpec struct {
	volumeSize, iops, throughput     *int
	volumeType, kmsKeyID, snapshotID string
	encrypted, deleteOnTermination   *bool
}

type blockDeviceSpec struct {
	deviceName, noDevice, virtualName string
	ebs                               *ebsSpec
}

type networkInterfaceSpec struct {
	deviceIndex, networkCardIndex          *int
	associatePublicIP, deleteOnTermination *bool
	groups                                 []string
	interfaceType, subnetID, description   string
}

// launchTemplateData is the part of RequestLaunchTemplateData the simulator
// keeps and returns from DescribeLaunchTemplateVersions; CreateLaunchTemplate
// refuses any other field with UnknownParameter.
type launchTemplateData struct {
	imageID, instanceType, keyName, userData string
	securityGroupIDs, securityGroupNames     []string
	iamProfileArn, iamProfileName            string
	metadata                                 metadataOptions
	blockDevices                             []blockDeviceSpec
	networkInterfaces                        []networkInterfaceSpec
	tagSpecs                                 []TagSpecification
	monitoring, ebsOptimized                 *bool
	// reservationPreference is CapacityReservationSpecification's
	// preference (capacity-reservations-only, open, none; "" is open),
	// reservationTarget the reservation it targets; marketType is
	// InstanceMarketOptions.MarketType (only capacity-block is
	// simulated).
	reservationPreference, reservationTarget, marketType string
	// placement is the template's Placement: the placement group its
	// instances go in, by ID or name, and the partition (partition groups
	// only; nil lets EC2 choose).
	placement placementSpec
}

type placementSpec struct {
	groupID, groupName string
	partitionNumber    *int
}

func parseLaunchTemplateData(p *params, pre string) (launchTemplateData, error) {
	var d launchTemplateData
	var err error
	d.imageID = p.str(pre + "ImageId")
	d.instanceType = p.str(pre + "InstanceType")
	d.keyName = p.str(pre + "KeyName")
	if ud, ok := p.get(pre + "UserData"); ok {
		raw, derr := base64.StdEncoding.DecodeString(ud)
		if derr != nil {
			return d, clientErr("InvalidUserData.Malformed", "Invalid BASE64 encoding of user data.")
		}
		if len(raw) > maxUserDataBytes {
			return d, invalidParam("User data is limited to %d bytes (got %d).", maxUserDataBytes, len(raw))
		}
		d.userData = ud
	}
	d.securityGroupIDs = p.strList(pre + "SecurityGroupId")
	d.securityGroupNames = p.strList(pre + "SecurityGroup")
	d.iamProfileArn = p.str(pre + "IamInstanceProfile.Arn")
	d.iamProfileName = p.str(pre + "IamInstanceProfile.Name")
	mo := pre + "MetadataOptions."
	d.metadata.httpTokens = p.str(mo + "HttpTokens")
	d.metadata.httpEndpoint = p.str(mo + "HttpEndpoint")
	d.metadata.httpProtocolIpv6 = p.str(mo + "HttpProtocolIpv6")
	d.metadata.instanceMetadataTags = p.str(mo + "InstanceMetadataTags")
	hop, err := p.optInt(mo + "HttpPutResponseHopLimit")
	if err != nil {
		return d, err
	}
	if hop != nil {
		if *hop < 1 || *hop > 64 {
			return d, invalidParam("Value (%d) for parameter HttpPutResponseHopLimit is invalid. Expecting a value between 1 and 64.", *hop)
		}
		d.metadata.hopLimit = *hop
	}
	for _, n := range p.indices(pre + "BlockDeviceMapping") {
		bk := key(pre+"BlockDeviceMapping", n, "")
		bd := blockDeviceSpec{deviceName: p.str(bk + ".DeviceName"), noDevice: p.str(bk + ".NoDevice"), virtualName: p.str(bk + ".VirtualName")}
		if hasPrefix(p, bk+".Ebs.") {
			e := &ebsSpec{volumeType: p.str(bk + ".Ebs.VolumeType"), kmsKeyID: p.str(bk + ".Ebs.KmsKeyId"), snapshotID: p.str(bk + ".Ebs.SnapshotId")}
			if e.volumeSize, err = p.optInt(bk + ".Ebs.VolumeSize"); err != nil {
				return d, err
			}
			if e.iops, err = p.optInt(bk + ".Ebs.Iops"); err != nil {
				return d, err
			}
			if e.throughput, err = p.optInt(bk + ".Ebs.Throughput"); err != nil {
				return d, err
			}
			if e.encrypted, err = optBool(p, bk+".Ebs.Encrypted"); err != nil {
				return d, err
			}
			if e.deleteOnTermination, err = optBool(p, bk+".Ebs.DeleteOnTermination"); err != nil {
				return d, err
			}
			bd.ebs = e
		}
		d.blockDevices = append(d.blockDevices, bd)
	}
	for _, n := range p.indices(pre + "NetworkInterface") {
		nk := key(pre+"NetworkInterface", n, "")
		ni := networkInterfaceSpec{groups: p.strList(nk + ".SecurityGroupId"), interfaceType: p.str(nk + ".InterfaceType"),
			subnetID: p.str(nk + ".SubnetId"), description: p.str(nk + ".Description")}
		if ni.deviceIndex, err = p.optInt(nk + ".DeviceIndex"); err != nil {
			return d, err
		}
		if ni.networkCardIndex, err = p.optInt(nk + ".NetworkCardIndex"); err != nil {
			return d, err
		}
		if ni.associatePublicIP, err = optBool(p, nk+".AssociatePublicIpAddress"); err != nil {
			return d, err
		}
		if ni.deleteOnTermination, err = optBool(p, nk+".DeleteOnTermination"); err != nil {
			return d, err
		}
		d.networkInterfaces = append(d.networkInterfaces, ni)
	}
	if d.tagSpecs, err = p.tagSpecs(pre + "TagSpecification"); err != nil {
		return d, err
	}
	for _, ts := range d.tagSpecs {
		switch ts.ResourceType {
		case "instance", "volume", "network-interface", "spot-instances-request":
		default:
			return d, invalidParam("'%s' is not a valid taggable resource type for a launch template.", ts.ResourceType)
		}
	}
	if d.monitoring, err = optBool(p, pre+"Monitoring.Enabled"); err != nil {
		return d, err
	}
	if d.ebsOptimized, err = optBool(p, pre+"EbsOptimized"); err != nil {
		return d, err
	}
	crs := pre + "CapacityReservationSpecification."
	if d.reservationPreference, err = oneOf(p, crs+"CapacityReservationPreference", []string{"capacity-reservations-only", "open", "none"}); err != nil {
		return d, err
	}
	d.reservationTarget = p.str(crs + "CapacityReservationTarget.CapacityReservationId")
	if d.reservationTarget != "" && !reservationIDPattern.MatchString(d.reservationTarget) {
		return d, clientErr("InvalidCapacityReservationId.Malformed", "Invalid id: \"%s\"", d.reservationTarget)
	}
	if d.reservationTarget != "" && d.reservationPreference == "none" {
		return d, clientErr("InvalidParameterCombination", "A capacity reservation target cannot be combined with the preference none")
	}
	if d.marketType, err = oneOf(p, pre+"InstanceMarketOptions.MarketType", []string{CapacityBlock}); err != nil {
		return d, err
	}
	if d.placement, err = parsePlacement(p, pre+"Placement."); err != nil {
		return d, err
	}
	return d, nil
}

// parsePlacement reads a template's Placement. Only the placement group
// is simulated (zone, tenancy, host and affinity stay UnknownParameter).
// What can be checked without the group is checked here, the way the
// other IDs of a template are; whether the group exists, takes the
// partition and the instance type is for the launch to find out, as on
// EC2, where a template names a group that may not exist yet.
func parsePlacement(p *params, pl string) (placementSpec, error) {
	var ps placementSpec
	var err error
	ps.groupID = p.str(pl + "GroupId")
	ps.groupName = p.str(pl + "GroupName")
	if ps.partitionNumber, err = p.optInt(pl + "PartitionNumber"); err != nil {
		return ps, err
	}
	switch {
	case ps.groupID != "" && !placementGroupIDPattern.MatchString(ps.groupID):
		return ps, clientErr("InvalidPlacementGroupId.Malformed", "Invalid id: \"%s\" (expecting \"pg-...\")", ps.groupID)
	case ps.groupID != "" && ps.groupName != "":
		return ps, clientErr("InvalidParameterCombination", "A placement group is specified by its ID or by its name, not both (GroupId %s, GroupName %s).", ps.groupID, ps.groupName)
	case ps.partitionNumber != nil && ps.groupID == "" && ps.groupName == "":
		return ps, clientErr("InvalidParameterCombination", "A partition number needs a partition placement group (GroupId or GroupName).")
	case ps.partitionNumber != nil && *ps.partitionNumber < 1:
		return ps, invalidParam("Value (%d) for parameter PartitionNumber is invalid. Partitions are numbered from 1.", *ps.partitionNumber)
	}
	return ps, nil
}

// ref is how the template names its group, for error messages.
func (ps placementSpec) ref() string {
	if ps.groupID != "" {
		return ps.groupID
	}
	return ps.groupName
}

func hasPrefix(p *params, prefix string) bool {
	for k := range p.v {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func optBool(p *params, k string) (*bool, error) {
	if _, ok := p.v[k]; !ok {
		return nil, nil
	}
	b, err := p.boolean(k)
	return &b, err
}

type ebsXML struct {
	DeleteOnTermination *bool  `xml:"deleteOnTermination,omitempty"`
	Encrypted           *bool  `xml:"encrypted,omitempty"`
	Iops                *int   `xml:"iops,omitempty"`
	KmsKeyID            string `xml:"kmsKeyId,omitempty"`
	SnapshotID          string `xml:"snapshotId,omitempty"`
	Throughput          *int   `xml:"throughput,omitempty"`
	VolumeSize          *int   `xml:"volumeSize,omitempty"`
	VolumeType          string `xml:"volumeType,omitempty"`
}

type ltBlockDeviceXML struct {
	DeviceName  string  `xml:"deviceName,omitempty"`
	Ebs         *ebsXML `xml:"ebs,omitempty"`
	NoDevice    string  `xml:"noDevice,omitempty"`
	VirtualName string  `xml:"virtualName,omitempty"`
}

// ltNetworkInterfaceXML: note its security groups are <groupSet> with
// <groupId> members, one of the places EC2 does not use <item>.
type ltNetworkInterfaceXML struct {
	AssociatePublicIPAddress *bool    `xml:"associatePublicIpAddress,omitempty"`
	DeleteOnTermination      *bool    `xml:"deleteOnTermination,omitempty"`
	Description              string   `xml:"description,omitempty"`
	DeviceIndex              *int     `xml:"deviceIndex,omitempty"`
	Groups                   []string `xml:"groupSet>groupId"`
	InterfaceType            string   `xml:"interfaceType,omitempty"`
	NetworkCardIndex         *int     `xml:"networkCardIndex,omitempty"`
	SubnetID                 string   `xml:"subnetId,omitempty"`
}

type ltTagSpecXML struct {
	ResourceType string           `xml:"resourceType"`
	TagSet       itemList[tagXML] `xml:"tagSet"`
}

type ltMetadataXML struct {
	State                   string `xml:"state"`
	HTTPTokens              string `xml:"httpTokens,omitempty"`
	HTTPPutResponseHopLimit int    `xml:"httpPutResponseHopLimit,omitempty"`
	HTTPEndpoint            string `xml:"httpEndpoint,omitempty"`
	HTTPProtocolIpv6        string `xml:"httpProtocolIpv6,omitempty"`
	InstanceMetadataTags    string `xml:"instanceMetadataTags,omitempty"`
}

type launchTemplateDataXML struct {
	BlockDeviceMappings *itemList[ltBlockDeviceXML] `xml:"blockDeviceMappingSet,omitempty"`
	EbsOptimized        *bool                       `xml:"ebsOptimized,omitempty"`
	IamInstanceProfile  *struct {
		Arn  string `xml:"arn,omitempty"`
		Name string `xml:"name,omitempty"`
	} `xml:"iamInstanceProfile,omitempty"`
	ImageID         string         `xml:"imageId,omitempty"`
	InstanceType    string         `xml:"instanceType,omitempty"`
	KeyName         string         `xml:"keyName,omitempty"`
	MetadataOptions *ltMetadataXML `xml:"metadataOptions,omitempty"`
	Monitoring      *struct {
		Enabled bool `xml:"enabled"`
	} `xml:"monitoring,omitempty"`
	NetworkInterfaces                *itemList[ltNetworkInterfaceXML] `xml:"networkInterfaceSet,omitempty"`
	SecurityGroupIDs                 *itemList[string]                `xml:"securityGroupIdSet,omitempty"`
	SecurityGroups                   *itemList[string]                `xml:"securityGroupSet,omitempty"`
	TagSpecifications                *itemList[ltTagSpecXML]          `xml:"tagSpecificationSet,omitempty"`
	UserData                         string                           `xml:"userData,omitempty"`
	CapacityReservationSpecification *ltReservationSpecXML            `xml:"capacityReservationSpecification,omitempty"`
	InstanceMarketOptions            *struct {
		MarketType string `xml:"marketType"`
	} `xml:"instanceMarketOptions,omitempty"`
	Placement *ltPlacementXML `xml:"placement,omitempty"`
}

type ltPlacementXML struct {
	GroupID         string `xml:"groupId,omitempty"`
	GroupName       string `xml:"groupName,omitempty"`
	PartitionNumber *int   `xml:"partitionNumber,omitempty"`
}

type ltReservationSpecXML struct {
	CapacityReservationPreference string `xml:"capacityReservationPreference,omitempty"`
	CapacityReservationTarget     *struct {
		CapacityReservationID string `xml:"capacityReservationId"`
	} `xml:"capacityReservationTarget,omitempty"`
}

func launchTemplateDataToXML(d launchTemplateData) launchTemplateDataXML {
	x := launchTemplateDataXML{
		EbsOptimized: d.ebsOptimized, ImageID: d.imageID, InstanceType: d.instanceType, KeyName: d.keyName,
		SecurityGroupIDs: optItems(d.securityGroupIDs), SecurityGroups: optItems(d.securityGroupNames), UserData: d.userData,
	}
	var bdms []ltBlockDeviceXML
	for _, bd := range d.blockDevices {
		b := ltBlockDeviceXML{DeviceName: bd.deviceName, NoDevice: bd.noDevice, VirtualName: bd.virtualName}
		if e := bd.ebs; e != nil {
			b.Ebs = &ebsXML{DeleteOnTermination: e.deleteOnTermination, Encrypted: e.encrypted, Iops: e.iops, KmsKeyID: e.kmsKeyID,
				SnapshotID: e.snapshotID, Throughput: e.throughput, VolumeSize: e.volumeSize, VolumeType: e.volumeType}
		}
		bdms = append(bdms, b)
	}
	x.BlockDeviceMappings = optItems(bdms)
	if d.iamProfileArn != "" || d.iamProfileName != "" {
		x.IamInstanceProfile = &struct {
			Arn  string `xml:"arn,omitempty"`
			Name string `xml:"name,omitempty"`
		}{d.iamProfileArn, d.iamProfileName}
	}
	if m := d.metadata; m != (metadataOptions{}) {
		x.MetadataOptions = &ltMetadataXML{State: "applied", HTTPTokens: m.httpTokens, HTTPPutResponseHopLimit: m.hopLimit,
			HTTPEndpoint: m.httpEndpoint, HTTPProtocolIpv6: m.httpProtocolIpv6, InstanceMetadataTags: m.instanceMetadataTags}
	}
	if d.monitoring != nil {
		x.Monitoring = &struct {
			Enabled bool `xml:"enabled"`
		}{*d.monitoring}
	}
	var nis []ltNetworkInterfaceXML
	for _, ni := range d.networkInterfaces {
		nis = append(nis, ltNetworkInterfaceXML{AssociatePublicIPAddress: ni.associatePublicIP, DeleteOnTermination: ni.deleteOnTermination,
			Description: ni.description, DeviceIndex: ni.deviceIndex, Groups: ni.groups, InterfaceType: ni.interfaceType,
			NetworkCardIndex: ni.networkCardIndex, SubnetID: ni.subnetID})
	}
	x.NetworkInterfaces = optItems(nis)
	var specs []ltTagSpecXML
	for _, ts := range d.tagSpecs {
		specs = append(specs, ltTagSpecXML{ResourceType: ts.ResourceType, TagSet: items(tagsXML(ts.Tags))})
	}
	x.TagSpecifications = optItems(specs)
	if d.reservationPreference != "" || d.reservationTarget != "" {
		x.CapacityReservationSpecification = &ltReservationSpecXML{CapacityReservationPreference: d.reservationPreference}
		if d.reservationTarget != "" {
			x.CapacityReservationSpecification.CapacityReservationTarget = &struct {
				CapacityReservationID string `xml:"capacityReservationId"`
			}{d.reservationTarget}
		}
	}
	if d.marketType != "" {
		x.InstanceMarketOptions = &struct {
			MarketType string `xml:"marketType"`
		}{d.marketType}
	}
	if pl := d.placement; pl != (placementSpec{}) {
		x.Placement = &ltPlacementXML{GroupID: pl.groupID, GroupName: pl.groupName, PartitionNumber: pl.partitionNumber}
	}
	return x
}
