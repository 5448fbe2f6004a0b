package ec2sim

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// The seeding helpers panic on bad input, like regexp.MustCompile: they
// are for test and demo setup, where a malformed CIDR or an unknown zone is
// a bug in the setup, not a condition to handle.

// AddVPC creates a VPC with its "default" security group, as AWS does. The
// first VPC becomes the default VPC that AddSubnet and AddSecurityGroup use.
func (s *Sim) AddVPC(cidr string, tags map[string]string) string {
	if _, err := netip.ParsePrefix(cidr); err != nil {
		panic(fmt.Sprintf("ec2sim: AddVPC: bad CIDR %q: %v", cidr, err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := &vpc{id: s.newID("vpc"), cidr: cidr, tags: copyTags(tags)}
	s.vpcs[v.id] = v
	s.vpcOrder = append(s.vpcOrder, v.id)
	if s.defaultVPC == "" {
		s.defaultVPC = v.id
	}
	v.defaultSG = s.addGroupLocked(v.id, "default", "default VPC security group", nil)
	return v.id
}

// AddSubnet creates a subnet in the default VPC (creating a 10.0.0.0/16 one
// if there is none). Its size sets how many instances fit: AWS reserves
// five addresses of every subnet, so a /28 holds 11.
func (s *Sim) AddSubnet(zone, cidr string, tags map[string]string) string {
	s.mu.Lock()
	vpcID := s.defaultVPC
	s.mu.Unlock()
	if vpcID == "" {
		vpcID = s.AddVPC("10.0.0.0/16", nil)
	}
	return s.AddSubnetInVPC(vpcID, zone, cidr, tags)
}

// AddSubnetInVPC creates a subnet in the given VPC.
func (s *Sim) AddSubnetInVPC(vpcID, zone, cidr string, tags map[string]string) string {
	pfx, err := netip.ParsePrefix(cidr)
	if err != nil || !pfx.Addr().Is4() || pfx.Bits() > 28 || pfx.Bits() < 16 {
		panic(fmt.Sprintf("ec2sim: AddSubnet: %q is not an IPv4 CIDR between /16 and /28 (as AWS requires)", cidr))
	}
	pfx = pfx.Masked()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.vpcs[vpcID]; !ok {
		panic(fmt.Sprintf("ec2sim: AddSubnet: no VPC %s", vpcID))
	}
	z, ok := s.zoneByName(zone)
	if !ok {
		panic(fmt.Sprintf("ec2sim: AddSubnet: zone %q is not one of %v", zone, s.opts.Zones))
	}
	b := pfx.Addr().As4()
	sn := &subnet{
		id: s.newID("subnet"), vpcID: vpcID, zone: z.name, zoneID: z.id, cidr: pfx.String(), tags: copyTags(tags),
		base: binary.BigEndian.Uint32(b[:]), size: 1 << (32 - pfx.Bits()), used: map[uint32]bool{},
	}
	s.subnets[sn.id] = sn
	s.subnetOrder = append(s.subnetOrder, sn.id)
	return sn.id
}

// SetSubnetFreeIPs makes the subnet have exactly free addresses left, as if
// other interfaces held the rest, to test address exhaustion and subnet
// choice without tiny CIDRs. It fails if more than that are already used by
// instances.
func (s *Sim) SetSubnetFreeIPs(subnetID string, free int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, ok := s.subnets[subnetID]
	if !ok {
		return fmt.Errorf("ec2sim: SetSubnetFreeIPs: no subnet %s", subnetID)
	}
	blocked := int(sn.size) - reservedPerSubnet - len(sn.used) - free
	if blocked < 0 {
		return fmt.Errorf("ec2sim: SetSubnetFreeIPs: subnet %s cannot have %d free addresses (%d in use of %d usable)",
			subnetID, free, len(sn.used), int(sn.size)-reservedPerSubnet)
	}
	sn.blocked = blocked
	return nil
}

// AddSecurityGroup creates a security group in the default VPC.
func (s *Sim) AddSecurityGroup(name string, tags map[string]string) string {
	s.mu.Lock()
	vpcID := s.defaultVPC
	s.mu.Unlock()
	if vpcID == "" {
		vpcID = s.AddVPC("10.0.0.0/16", nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addGroupLocked(vpcID, name, name, tags)
}

func (s *Sim) addGroupLocked(vpcID, name, description string, tags map[string]string) string {
	if s.groupByName(vpcID, name) != nil {
		panic(fmt.Sprintf("ec2sim: security group %q already exists in %s", name, vpcID))
	}
	g := &securityGroup{id: s.newID("sg"), name: name, description: description, vpcID: vpcID, tags: copyTags(tags)}
	s.groups[g.id] = g
	s.groupOrder = append(s.groupOrder, g.id)
	return g.id
}

// AddImage registers an AMI and returns its ID. Tags may use the reserved
// aws: prefix here, since seeding plays AWS.
func (s *Sim) AddImage(spec ImageSpec) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := spec.ID
	if id == "" {
		id = s.newID("ami")
	}
	if !imageIDPattern.MatchString(id) {
		panic(fmt.Sprintf("ec2sim: AddImage: %q is not an AMI ID (ami- and 8 or 17 hex digits)", id))
	}
	if _, dup := s.images[id]; dup {
		panic(fmt.Sprintf("ec2sim: AddImage: %s already exists", id))
	}
	im := &image{
		id: id, name: spec.Name, description: spec.Description, arch: normalizeArch(spec.Architecture),
		ownerID: spec.OwnerID, ownerAlias: spec.OwnerAlias, state: spec.State,
		creationDate: spec.CreationDate.UTC(), deprecation: spec.DeprecationTime.UTC(), tags: copyTags(spec.Tags), public: spec.Public,
	}
	if im.ownerID == "" {
		im.ownerID = s.opts.AccountID
	}
	if im.state == "" {
		im.state = "available"
	}
	if spec.CreationDate.IsZero() {
		im.creationDate = s.start.UTC()
	}
	s.images[id] = im
	s.imageOrder = append(s.imageOrder, id)
	return id
}

// Seeded is what SeedDefault created.
type Seeded struct {
	VPCID string
	// SubnetIDs maps each zone to its subnet.
	SubnetIDs map[string]string
	// SecurityGroupID is the cluster security group.
	SecurityGroupID string
}

// SeedDefault builds the network an EKS cluster named cluster would have,
// tagged so both the seed AWSNodeTemplate selectors
// (subnetSelector karpenter.sh/discovery/<cluster>: '*',
// securityGroupSelector aws:eks:cluster-name: <cluster>) and the common
// karpenter.sh/discovery: <cluster> convention match: a 10.0.0.0/16 VPC, a
// /19 private subnet per zone, and the cluster security group.
func (s *Sim) SeedDefault(cluster string) Seeded {
	out := Seeded{SubnetIDs: map[string]string{}}
	out.VPCID = s.AddVPC("10.0.0.0/16", map[string]string{"Name": cluster + "-vpc"})
	s.mu.Lock()
	s.defaultVPC = out.VPCID
	s.mu.Unlock()
	for i, z := range s.opts.Zones {
		cidr := fmt.Sprintf("10.0.%d.0/19", i*32)
		if i >= 8 {
			panic("ec2sim: SeedDefault: at most 8 zones fit the 10.0.0.0/16 layout")
		}
		out.SubnetIDs[z] = s.AddSubnetInVPC(out.VPCID, z, cidr, map[string]string{
			"Name":                              fmt.Sprintf("%s-private-%s", cluster, z),
			"karpenter.sh/discovery/" + cluster: cluster,
			"karpenter.sh/discovery":            cluster,
			"kubernetes.io/cluster/" + cluster:  "shared",
			"kubernetes.io/role/internal-elb":   "1",
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out.SecurityGroupID = s.addGroupLocked(out.VPCID, "eks-cluster-sg-"+cluster, "EKS created security group applied to ENI that is attached to EKS Control Plane master nodes, as well as any managed workloads.", map[string]string{
		"Name":                             "eks-cluster-sg-" + cluster,
		"aws:eks:cluster-name":             cluster,
		"kubernetes.io/cluster/" + cluster: "owned",
		"karpenter.sh/discovery":           cluster,
	})
	return out
}
