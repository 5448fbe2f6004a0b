package ec2sim

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
)

type vpc struct {
	id        string
	cidr      string
	tags      map[string]string
	defaultSG string
}

// subnet tracks its addresses so AvailableIpAddressCount falls as instances
// launch and rises as they terminate, and a full subnet fails launches with
// InsufficientFreeAddressesInSubnet, as on AWS.
type subnet struct {
	id, vpcID, zone, zoneID, cidr string
	tags                          map[string]string
	base                          uint32 // network address
	size                          uint32 // addresses in the block
	used                          map[uint32]bool
	// blocked counts addresses held by things the simulator does not model
	// (other ENIs, load balancers), set through SetSubnetFreeIPs.
	blocked int
}

// reservedPerSubnet: AWS keeps the first four addresses and the last one of
// every subnet.
const reservedPerSubnet = 5

func (sn *subnet) available() int {
	return int(sn.size) - reservedPerSubnet - len(sn.used) - sn.blocked
}

// allocate takes the lowest free usable address.
func (sn *subnet) allocate() (string, bool) {
	if sn.available() <= 0 {
		return "", false
	}
	for off := uint32(4); off < sn.size-1; off++ {
		if !sn.used[off] {
			sn.used[off] = true
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], sn.base+off)
			return netip.AddrFrom4(b).String(), true
		}
	}
	return "", false
}

func (sn *subnet) release(ip string) {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return
	}
	b := a.As4()
	delete(sn.used, binary.BigEndian.Uint32(b[:])-sn.base)
}

func (s *Sim) subnetARN(id string) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", s.opts.Region, s.opts.AccountID, id)
}

type securityGroup struct {
	id, name, description, vpcID string
	tags                         map[string]string
}

// ---- DescribeSubnets ----

type describeSubnetsRequest struct {
	ids     []string
	filters []filter
	page    pageRequest
}

func parseDescribeSubnets(p *params) (describeSubnetsRequest, error) {
	var r describeSubnetsRequest
	var err error
	r.ids = p.strList("SubnetId")
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	r.page, err = readPage(p, "DescribeSubnets", pageLimits{min: 5, max: 1000})
	return r, err
}

var subnetFilters = filterSpec[*subnet]{
	fields: map[string]func(*subnet) []string{
		"subnet-id":                  func(sn *subnet) []string { return one(sn.id) },
		"vpc-id":                     func(sn *subnet) []string { return one(sn.vpcID) },
		"availability-zone":          func(sn *subnet) []string { return one(sn.zone) },
		"availability-zone-id":       func(sn *subnet) []string { return one(sn.zoneID) },
		"cidr-block":                 func(sn *subnet) []string { return one(sn.cidr) },
		"cidr":                       func(sn *subnet) []string { return one(sn.cidr) },
		"state":                      func(*subnet) []string { return one("available") },
		"default-for-az":             func(*subnet) []string { return boolStr(false) },
		"map-public-ip-on-launch":    func(*subnet) []string { return boolStr(false) },
		"available-ip-address-count": func(sn *subnet) []string { return one(strconv.Itoa(sn.available())) },
	},
	tags: func(sn *subnet) map[string]string { return sn.tags },
}

type subnetXML struct {
	SubnetID                    string             `xml:"subnetId"`
	SubnetArn                   string             `xml:"subnetArn"`
	State                       string             `xml:"state"`
	OwnerID                     string             `xml:"ownerId"`
	VpcID                       string             `xml:"vpcId"`
	CidrBlock                   string             `xml:"cidrBlock"`
	Ipv6CidrBlockAssociationSet itemList[struct{}] `xml:"ipv6CidrBlockAssociationSet"`
	AvailableIPAddressCount     int                `xml:"availableIpAddressCount"`
	AvailabilityZone            string             `xml:"availabilityZone"`
	AvailabilityZoneID          string             `xml:"availabilityZoneId"`
	DefaultForAz                bool               `xml:"defaultForAz"`
	MapPublicIPOnLaunch         bool               `xml:"mapPublicIpOnLaunch"`
	AssignIpv6AddressOnCreation bool               `xml:"assignIpv6AddressOnCreation"`
	Ipv6Native                  bool               `xml:"ipv6Native"`
	EnableDNS64                 bool               `xml:"enableDns64"`
	TagSet                      *itemList[tagXML]  `xml:"tagSet,omitempty"`
	PrivateDNSNameOptions       struct {
		HostnameType                    string `xml:"hostnameType"`
		EnableResourceNameDNSARecord    bool   `xml:"enableResourceNameDnsARecord"`
		EnableResourceNameDNSAAAARecord bool   `xml:"enableResourceNameDnsAAAARecord"`
	} `xml:"privateDnsNameOptionsOnLaunch"`
}

type describeSubnetsResponse struct {
	responseMeta
	Subnets   itemList[subnetXML] `xml:"subnetSet"`
	NextToken string              `xml:"nextToken,omitempty"`
}

func (s *Sim) describeSubnets(r describeSubnetsRequest) (response, error) {
	match, err := subnetFilters.compile(r.filters)
	if err != nil {
		return nil, err
	}
	candidates, err := s.subnetsByID(r.ids)
	if err != nil {
		return nil, err
	}
	s.advanceAll() // terminated instances give their addresses back
	var out []subnetXML
	for _, sn := range candidates {
		if !match(sn) {
			continue
		}
		x := subnetXML{
			SubnetID: sn.id, SubnetArn: s.subnetARN(sn.id), State: "available", OwnerID: s.opts.AccountID,
			VpcID: sn.vpcID, CidrBlock: sn.cidr, AvailableIPAddressCount: sn.available(),
			AvailabilityZone: sn.zone, AvailabilityZoneID: sn.zoneID, TagSet: optItems(tagsXML(sn.tags)),
		}
		x.PrivateDNSNameOptions.HostnameType = "ip-name"
		out = append(out, x)
	}
	page, next := paginate(out, r.page)
	return &describeSubnetsResponse{Subnets: items(page), NextToken: next}, nil
}

// subnetsByID returns the named subnets, or every subnet when ids is empty;
// any unknown ID fails the whole call, as EC2 does.
func (s *Sim) subnetsByID(ids []string) ([]*subnet, error) {
	if len(ids) == 0 {
		out := make([]*subnet, 0, len(s.subnetOrder))
		for _, id := range s.subnetOrder {
			out = append(out, s.subnets[id])
		}
		return out, nil
	}
	var out []*subnet
	var missing []string
	for _, id := range ids {
		sn, ok := s.subnets[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		out = append(out, sn)
	}
	if len(missing) == 1 {
		return nil, notFound("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", missing[0])
	}
	if len(missing) > 1 {
		return nil, notFound("InvalidSubnetID.NotFound", "The subnet IDs %s do not exist", quotedIDs(missing))
	}
	return out, nil
}

// ---- DescribeSecurityGroups ----

type describeSecurityGroupsRequest struct {
	ids, names []string
	filters    []filter
	page       pageRequest
}

func parseDescribeSecurityGroups(p *params) (describeSecurityGroupsRequest, error) {
	var r describeSecurityGroupsRequest
	var err error
	r.ids = p.strList("GroupId")
	r.names = p.strList("GroupName")
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	r.page, err = readPage(p, "DescribeSecurityGroups", pageLimits{min: 5, max: 1000})
	return r, err
}

var securityGroupFilters = filterSpec[*securityGroup]{
	fields: map[string]func(*securityGroup) []string{
		"group-id":    func(g *securityGroup) []string { return one(g.id) },
		"group-name":  func(g *securityGroup) []string { return one(g.name) },
		"vpc-id":      func(g *securityGroup) []string { return one(g.vpcID) },
		"description": func(g *securityGroup) []string { return one(g.description) },
	},
	tags: func(g *securityGroup) map[string]string { return g.tags },
}

type securityGroupXML struct {
	OwnerID             string             `xml:"ownerId"`
	GroupID             string             `xml:"groupId"`
	GroupName           string             `xml:"groupName"`
	GroupDescription    string             `xml:"groupDescription"`
	VpcID               string             `xml:"vpcId"`
	SecurityGroupArn    string             `xml:"securityGroupArn"`
	IPPermissions       itemList[struct{}] `xml:"ipPermissions"`
	IPPermissionsEgress itemList[struct{}] `xml:"ipPermissionsEgress"`
	TagSet              *itemList[tagXML]  `xml:"tagSet,omitempty"`
}

type describeSecurityGroupsResponse struct {
	responseMeta
	SecurityGroups itemList[securityGroupXML] `xml:"securityGroupInfo"`
	NextToken      string                     `xml:"nextToken,omitempty"`
}

func (s *Sim) describeSecurityGroups(r describeSecurityGroupsRequest) (response, error) {
	match, err := securityGroupFilters.compile(r.filters)
	if err != nil {
		return nil, err
	}
	var candidates []*securityGroup
	if len(r.ids) == 0 && len(r.names) == 0 {
		for _, id := range s.groupOrder {
			candidates = append(candidates, s.groups[id])
		}
	}
	for _, id := range r.ids {
		g, ok := s.groups[id]
		if !ok {
			return nil, notFound("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
		candidates = append(candidates, g)
	}
	for _, name := range r.names {
		g := s.groupByName(s.defaultVPC, name)
		if g == nil {
			return nil, notFound("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'", name, s.defaultVPC)
		}
		candidates = append(candidates, g)
	}
	var out []securityGroupXML
	for _, g := range candidates {
		if !match(g) {
			continue
		}
		out = append(out, securityGroupXML{
			OwnerID: s.opts.AccountID, GroupID: g.id, GroupName: g.name, GroupDescription: g.description, VpcID: g.vpcID,
			SecurityGroupArn: fmt.Sprintf("arn:aws:ec2:%s:%s:security-group/%s", s.opts.Region, s.opts.AccountID, g.id),
			TagSet:           optItems(tagsXML(g.tags)),
		})
	}
	page, next := paginate(out, r.page)
	return &describeSecurityGroupsResponse{SecurityGroups: items(page), NextToken: next}, nil
}

func (s *Sim) groupByName(vpcID, name string) *securityGroup {
	for _, id := range s.groupOrder {
		if g := s.groups[id]; g.vpcID == vpcID && g.name == name {
			return g
		}
	}
	return nil
}

// ---- DescribeAvailabilityZones ----

type describeAvailabilityZonesRequest struct {
	names, ids []string
	filters    []filter
}

func parseDescribeAvailabilityZones(p *params) (describeAvailabilityZonesRequest, error) {
	var r describeAvailabilityZonesRequest
	var err error
	r.names = p.strList("ZoneName")
	r.ids = p.strList("ZoneId")
	// Every simulated zone is an opted-in availability zone, so asking for
	// all zones (local and wavelength ones included) changes nothing.
	if _, err = p.boolean("AllAvailabilityZones"); err != nil {
		return r, err
	}
	r.filters, err = p.filters()
	return r, err
}

type zoneXML struct {
	ZoneName           string             `xml:"zoneName"`
	ZoneID             string             `xml:"zoneId"`
	ZoneState          string             `xml:"zoneState"`
	RegionName         string             `xml:"regionName"`
	GroupName          string             `xml:"groupName"`
	NetworkBorderGroup string             `xml:"networkBorderGroup"`
	OptInStatus        string             `xml:"optInStatus"`
	ZoneType           string             `xml:"zoneType"`
	MessageSet         itemList[struct{}] `xml:"messageSet"`
}

type describeAvailabilityZonesResponse struct {
	responseMeta
	Zones itemList[zoneXML] `xml:"availabilityZoneInfo"`
}

func (s *Sim) describeAvailabilityZones(r describeAvailabilityZonesRequest) (response, error) {
	region := s.opts.Region
	spec := filterSpec[zone]{fields: map[string]func(zone) []string{
		"zone-name":            func(z zone) []string { return one(z.name) },
		"zone-id":              func(z zone) []string { return one(z.id) },
		"state":                func(zone) []string { return one("available") },
		"region-name":          func(zone) []string { return one(region) },
		"group-name":           func(zone) []string { return one(region) },
		"zone-type":            func(zone) []string { return one("availability-zone") },
		"opt-in-status":        func(zone) []string { return one("opt-in-not-required") },
		"network-border-group": func(zone) []string { return one(region) },
	}}
	match, err := spec.compile(r.filters)
	if err != nil {
		return nil, err
	}
	wanted := func(z zone) bool {
		if len(r.names) == 0 && len(r.ids) == 0 {
			return true
		}
		for _, n := range r.names {
			if n == z.name {
				return true
			}
		}
		for _, id := range r.ids {
			if id == z.id {
				return true
			}
		}
		return false
	}
	for _, n := range r.names {
		if _, ok := s.zoneByName(n); !ok {
			return nil, invalidParam("Invalid availability zone: [%s]", n)
		}
	}
	var out []zoneXML
	for _, z := range s.zones {
		if !wanted(z) || !match(z) {
			continue
		}
		out = append(out, zoneXML{
			ZoneName: z.name, ZoneID: z.id, ZoneState: "available", RegionName: region, GroupName: region,
			NetworkBorderGroup: region, OptInStatus: "opt-in-not-required", ZoneType: "availability-zone",
		})
	}
	return &describeAvailabilityZonesResponse{Zones: items(out)}, nil
}
