package ec2sim

import (
	"fmt"
	"strconv"
	"strings"
)

// System tags EC2 puts on instances it launches from a fleet and a launch
// template. Callers see them in DescribeInstances and must not try to copy
// or delete them (aws: keys are reserved).
const (
	TagFleetID               = "aws:ec2:fleet-id"
	TagLaunchTemplateID      = "aws:ec2launchtemplate:id"
	TagLaunchTemplateVersion = "aws:ec2launchtemplate:version"
)

// startInstance creates one pending instance from a resolved candidate; the
// caller has checked capacity and addresses.
func (s *Sim) startInstance(c candidate, f *fleet, rec *CreateFleetRecord, capType, reservation string, index int, groups []string) *instance {
	now := s.now()
	sn := c.subnet
	ip, _ := sn.allocate()
	d := c.ver.data
	in := &instance{
		id: s.newID("i"), reservationID: reservation, instanceType: c.it.Name,
		zone: sn.zone, zoneID: sn.zoneID, subnetID: sn.id, vpcID: sn.vpcID,
		imageID: c.imageID, arch: c.it.Arch, capacityType: capType,
		state: statePending, stateSince: now, launchTime: now,
		privateIP: ip, privateDNS: "ip-" + strings.ReplaceAll(ip, ".", "-") + "." + s.dnsSuffix(),
		launchTemplateID: c.lt.id, launchTemplateName: c.lt.name, launchTemplateVersion: itoa(c.ver.number),
		fleetID: f.id, clientToken: rec.ClientToken, securityGroups: groups,
		keyName: d.keyName, userData: d.userData, amiLaunchIndex: index,
		stuck: s.faults.takeStick(), reservationPreference: d.reservationPreference,
	}
	if im, ok := s.images[c.imageID]; ok {
		in.arch = im.arch
	}
	if capType == Spot {
		s.seq["sir"]++
		in.spotRequestID = fmt.Sprintf("sir-%08x", s.seq["sir"])
	}
	// Tags: the template's first, the request's over them, then EC2's own.
	in.tags, in.volumeTags = map[string]string{}, map[string]string{}
	for _, specs := range [][]TagSpecification{d.tagSpecs, rec.TagSpecifications} {
		for _, ts := range specs {
			switch ts.ResourceType {
			case "instance":
				mergeTags(in.tags, ts.Tags)
			case "volume":
				mergeTags(in.volumeTags, ts.Tags)
			}
		}
	}
	in.tags[TagFleetID] = f.id
	in.tags[TagLaunchTemplateID] = c.lt.id
	in.tags[TagLaunchTemplateVersion] = in.launchTemplateVersion

	in.metadata = metadataOptions{httpTokens: "optional", httpEndpoint: "enabled", httpProtocolIpv6: "disabled", instanceMetadataTags: "disabled", hopLimit: 1}
	if m := d.metadata; m.httpTokens != "" {
		in.metadata.httpTokens = m.httpTokens
	}
	if m := d.metadata; m.httpEndpoint != "" {
		in.metadata.httpEndpoint = m.httpEndpoint
	}
	if m := d.metadata; m.httpProtocolIpv6 != "" {
		in.metadata.httpProtocolIpv6 = m.httpProtocolIpv6
	}
	if m := d.metadata; m.instanceMetadataTags != "" {
		in.metadata.instanceMetadataTags = m.instanceMetadataTags
	}
	if d.metadata.hopLimit > 0 {
		in.metadata.hopLimit = d.metadata.hopLimit
	}
	switch {
	case d.iamProfileArn != "":
		in.iamProfileArn = d.iamProfileArn
	case d.iamProfileName != "":
		in.iamProfileArn = fmt.Sprintf("arn:aws:iam::%s:instance-profile/%s", s.opts.AccountID, d.iamProfileName)
	}
	for _, bd := range d.blockDevices {
		if bd.ebs == nil {
			continue
		}
		del := true
		if bd.ebs.deleteOnTermination != nil {
			del = *bd.ebs.deleteOnTermination
		}
		in.blockDevices = append(in.blockDevices, blockDevice{deviceName: bd.deviceName, volumeID: s.newID("vol"), deleteOnTermination: del})
	}
	if len(in.blockDevices) == 0 {
		in.blockDevices = []blockDevice{{deviceName: "/dev/xvda", volumeID: s.newID("vol"), deleteOnTermination: true}}
	}
	s.instances[in.id] = in
	s.instanceOrder = append(s.instanceOrder, in.id)
	return in
}

func itoa(n int) string { return strconv.Itoa(n) }

func parseFloat(v string) (float64, error) { return strconv.ParseFloat(v, 64) }
