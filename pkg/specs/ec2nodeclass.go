package specs

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/joist-dev/joist/pkg/apis/v1"
)

var (
	amiFamiliesV1 = []string{v1.AMIFamilyAL2, v1.AMIFamilyAL2023, v1.AMIFamilyBottlerocket, v1.AMIFamilyCustom, v1.AMIFamilyWindows2019, v1.AMIFamilyWindows2022, v1.AMIFamilyWindows2025}
	// aliasFamilies maps an alias family onto its amiFamily.
	aliasFamilies = map[string]string{
		"al2":          v1.AMIFamilyAL2,
		"al2023":       v1.AMIFamilyAL2023,
		"bottlerocket": v1.AMIFamilyBottlerocket,
		"windows2019":  v1.AMIFamilyWindows2019,
		"windows2022":  v1.AMIFamilyWindows2022,
		"windows2025":  v1.AMIFamilyWindows2025,
	}
	aliasRe          = regexp.MustCompile(`^[a-zA-Z0-9]+@.+$`)
	crIDRe           = regexp.MustCompile(`^cr-[0-9a-z]+$`)
	ownerIDRe        = regexp.MustCompile(`^[0-9]{12}$`)
	pgIDRe           = regexp.MustCompile(`^pg-[0-9a-z]+$`)
	volumeSizeV1Re   = regexp.MustCompile(`^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$`)
	matchCriteria    = []string{"open", "targeted"}
	interfaceTypes   = []string{"interface", "efa-only"}
	storePolicies    = []string{"RAID0"}
	reservedTagNames = []string{"eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass"}
)

func validateTagTerm(l *errs, tags map[string]string, p *field.Path) {
	if len(tags) > 20 {
		l.add(p, "must have at most 20 tags (got %d)", len(tags))
	}
	for _, k := range sortedKeys(tags) {
		if k == "" || tags[k] == "" {
			l.add(p, "empty tag keys or values aren't supported")
			return
		}
	}
}

// validateEC2NodeClass applies the v1 EC2NodeClass CRD schema and CEL
// rules, and the controller's kubelet validation.
//
// Where a CEL rule was written as !self.all(...) (so it only fired when
// every term broke it), Joist checks each term, as the rule's message
// says.
func validateEC2NodeClass(nc *v1.EC2NodeClass) errs {
	var l errs
	validateName(&l, nc.Name)
	spec := field.NewPath("spec")
	s := &nc.Spec

	validateSubnetTerms(&l, s, spec)
	validateSecurityGroupTerms(&l, s, spec)
	validateCapacityReservationTerms(&l, s, spec)
	validatePlacement(&l, s, spec)
	validateAMITerms(&l, nc, spec)

	validateIdentity(&l, s, spec)
	validateTags(&l, s, spec)
	validateKubeletV1(&l, s.Kubelet, spec.Child("kubelet"))

	validateBlockDevices(&l, s, spec)
	if s.InstanceStorePolicy != nil && !contains(storePolicies, *s.InstanceStorePolicy) {
		l.unsupported(spec.Child("instanceStorePolicy"), *s.InstanceStorePolicy, storePolicies)
	}

	validateNetworkInterfaces(&l, s, spec)
	validateInstanceOptions(&l, s, spec)
	return l
}

// validateSubnetTerms checks spec.subnetSelectorTerms: present, at most 30,
// each term by tags or by one id.
func validateSubnetTerms(l *errs, s *v1.EC2NodeClassSpec, spec *field.Path) {
	sp := spec.Child("subnetSelectorTerms")
	switch {
	case s.SubnetSelectorTerms == nil:
		l.required(sp)
	case len(s.SubnetSelectorTerms) == 0:
		l.add(sp, "subnetSelectorTerms cannot be empty")
	case len(s.SubnetSelectorTerms) > 30:
		l.add(sp, "must have at most 30 items (got %d)", len(s.SubnetSelectorTerms))
	}
	for i, t := range s.SubnetSelectorTerms {
		ip := sp.Index(i)
		if t.Tags == nil && t.ID == "" {
			l.add(ip, "expected at least one, got none, ['tags', 'id']")
		}
		if t.ID != "" && t.Tags != nil {
			l.add(ip, "'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term")
		}
		if t.ID != "" && !subnetIDRe.MatchString(t.ID) {
			l.invalid(ip.Child("id"), t.ID, "must match %s", subnetIDRe)
		}
		validateTagTerm(l, t.Tags, ip.Child("tags"))
	}
}

// validateSecurityGroupTerms checks spec.securityGroupSelectorTerms:
// present, at most 30, each term by tags, by one id or by one name.
func validateSecurityGroupTerms(l *errs, s *v1.EC2NodeClassSpec, spec *field.Path) {
	gp := spec.Child("securityGroupSelectorTerms")
	switch {
	case s.SecurityGroupSelectorTerms == nil:
		l.required(gp)
	case len(s.SecurityGroupSelectorTerms) == 0:
		l.add(gp, "securityGroupSelectorTerms cannot be empty")
	case len(s.SecurityGroupSelectorTerms) > 30:
		l.add(gp, "must have at most 30 items (got %d)", len(s.SecurityGroupSelectorTerms))
	}
	for i, t := range s.SecurityGroupSelectorTerms {
		ip := gp.Index(i)
		if t.Tags == nil && t.ID == "" && t.Name == "" {
			l.add(ip, "expected at least one, got none, ['tags', 'id', 'name']")
		}
		if t.ID != "" && (t.Tags != nil || t.Name != "") {
			l.add(ip, "'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term")
		}
		if t.Name != "" && (t.Tags != nil || t.ID != "") {
			l.add(ip, "'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term")
		}
		if t.ID != "" && !sgIDRe.MatchString(t.ID) {
			l.invalid(ip.Child("id"), t.ID, "must match %s", sgIDRe)
		}
		validateTagTerm(l, t.Tags, ip.Child("tags"))
	}
}

// validateCapacityReservationTerms checks
// spec.capacityReservationSelectorTerms: at most 30, each term by one id or
// by tags, owner and match criteria.
func validateCapacityReservationTerms(l *errs, s *v1.EC2NodeClassSpec, spec *field.Path) {
	cp := spec.Child("capacityReservationSelectorTerms")
	if len(s.CapacityReservationSelectorTerms) > 30 {
		l.add(cp, "must have at most 30 items (got %d)", len(s.CapacityReservationSelectorTerms))
	}
	for i, t := range s.CapacityReservationSelectorTerms {
		ip := cp.Index(i)
		if t.Tags == nil && t.ID == "" && t.InstanceMatchCriteria == "" {
			l.add(ip, "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']")
		}
		if t.ID != "" && (t.Tags != nil || t.OwnerID != "" || t.InstanceMatchCriteria != "") {
			l.add(ip, "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term")
		}
		if t.ID != "" && !crIDRe.MatchString(t.ID) {
			l.invalid(ip.Child("id"), t.ID, "must match %s", crIDRe)
		}
		if t.OwnerID != "" && !ownerIDRe.MatchString(t.OwnerID) {
			l.invalid(ip.Child("ownerID"), t.OwnerID, "must be a 12-digit account id")
		}
		if t.InstanceMatchCriteria != "" && !contains(matchCriteria, t.InstanceMatchCriteria) {
			l.unsupported(ip.Child("instanceMatchCriteria"), t.InstanceMatchCriteria, matchCriteria)
		}
		validateTagTerm(l, t.Tags, ip.Child("tags"))
	}
}

// validatePlacement checks the placement group selector (a name or an id)
// and the IP prefix count.
func validatePlacement(l *errs, s *v1.EC2NodeClassSpec, spec *field.Path) {
	if pg := s.PlacementGroupSelector; pg != nil {
		pp := spec.Child("placementGroupSelector")
		switch {
		case pg.Name == nil && pg.ID == nil:
			l.add(pp, "expected at least one, got none, ['name', 'id']")
		case pg.Name != nil && pg.ID != nil:
			l.add(pp, "'name' and 'id' are mutually exclusive")
		}
		if pg.Name != nil && *pg.Name == "" {
			l.add(pp.Child("name"), "must not be empty")
		}
		if pg.ID != nil && !pgIDRe.MatchString(*pg.ID) {
			l.invalid(pp.Child("id"), *pg.ID, "must match %s", pgIDRe)
		}
	}
	if s.IPPrefixCount != nil && *s.IPPrefixCount < 0 {
		l.invalid(spec.Child("ipPrefixCount"), *s.IPPrefixCount, "must not be negative")
	}
}

// validateIdentity checks that the node gets exactly one of a role or an
// instance profile.
func validateIdentity(l *errs, s *v1.EC2NodeClassSpec, spec *field.Path) {
	hasRole, hasProfile := s.Role != "", s.InstanceProfile != nil
	if hasRole == hasProfile {
		l.add(spec, "must specify exactly one of ['role', 'instanceProfile']")
	}
	if hasProfile && *s.InstanceProfile == "" {
		l.add(spec.Child("instanceProfile"), "instanceProfile cannot be empty")
	}
}

// validateTags rejects empty tag keys and the tags Kubernetes, EKS and
// Karpenter keep for themselves.
func validateTags(l *errs, s *v1.EC2NodeClassSpec, spec *field.Path) {
	for _, k := range sortedKeys(s.Tags) {
		tp := spec.Child("tags").Key(k)
		switch {
		case k == "":
			l.add(spec.Child("tags"), "empty tag keys aren't supported")
		case strings.HasPrefix(k, "kubernetes.io/cluster"):
			l.add(tp, "tag contains a restricted tag matching kubernetes.io/cluster/")
		case contains(reservedTagNames, k):
			l.add(tp, "tag contains a restricted tag matching %s", k)
		}
	}
}

// validateBlockDevices checks spec.blockDeviceMappings: at most 50, one root
// volume, and each EBS volume's size, type and initialization rate.
func validateBlockDevices(l *errs, s *v1.EC2NodeClassSpec, spec *field.Path) {
	bp := spec.Child("blockDeviceMappings")
	if len(s.BlockDeviceMappings) > 50 {
		l.add(bp, "must have at most 50 items (got %d)", len(s.BlockDeviceMappings))
	}
	roots := 0
	for i, b := range s.BlockDeviceMappings {
		ip := bp.Index(i)
		if b == nil {
			l.required(ip)
			continue
		}
		if b.RootVolume {
			roots++
		}
		if b.EBS == nil {
			continue
		}
		ep := ip.Child("ebs")
		e := b.EBS
		if e.SnapshotID == nil && e.VolumeSize == nil {
			l.add(ep, "snapshotID or volumeSize must be defined")
		}
		if e.VolumeInitializationRate != nil {
			if e.SnapshotID == nil || *e.SnapshotID == "" {
				l.add(ep, "snapshotID must be set when volumeInitializationRate is set")
			}
			if *e.VolumeInitializationRate < 100 || *e.VolumeInitializationRate > 300 {
				l.invalid(ep.Child("volumeInitializationRate"), *e.VolumeInitializationRate, "must be between 100 and 300")
			}
		}
		if e.VolumeSize != nil && !volumeSizeV1Re.MatchString(*e.VolumeSize) {
			l.invalid(ep.Child("volumeSize"), *e.VolumeSize, "must be 1Gi-59000Gi, 1G-64000G, 1Ti-58Ti or 1T-64T")
		}
		if e.VolumeType != nil && !contains(volumeTypes, *e.VolumeType) {
			l.unsupported(ep.Child("volumeType"), *e.VolumeType, volumeTypes)
		}
	}
	if roots > 1 {
		l.add(bp, "must have only one blockDeviceMappings with rootVolume")
	}
}

// validateNetworkInterfaces checks spec.networkInterfaces: at most 150, a
// primary interface, no duplicate card and device pairs, and at most one EFA
// device per card.
func validateNetworkInterfaces(l *errs, s *v1.EC2NodeClassSpec, spec *field.Path) {
	np := spec.Child("networkInterfaces")
	if n := len(s.NetworkInterfaces); n > 150 {
		l.add(np, "must have at most 150 items (got %d)", n)
	}
	if len(s.NetworkInterfaces) > 0 {
		primary := false
		pairs := map[[2]int32]int{}
		efa := map[int32]int{}
		for i, ni := range s.NetworkInterfaces {
			if ni == nil {
				l.required(np.Index(i))
				continue
			}
			ip := np.Index(i)
			if ni.NetworkCardIndex < 0 {
				l.invalid(ip.Child("networkCardIndex"), ni.NetworkCardIndex, "must not be negative")
			}
			if ni.DeviceIndex < 0 {
				l.invalid(ip.Child("deviceIndex"), ni.DeviceIndex, "must not be negative")
			}
			if !contains(interfaceTypes, ni.InterfaceType) {
				l.unsupported(ip.Child("interfaceType"), ni.InterfaceType, interfaceTypes)
			}
			if ni.NetworkCardIndex == 0 && ni.DeviceIndex == 0 && ni.InterfaceType == "interface" {
				primary = true
			}
			pairs[[2]int32{ni.NetworkCardIndex, ni.DeviceIndex}]++
			if ni.InterfaceType == "efa-only" {
				efa[ni.NetworkCardIndex]++
			}
		}
		if !primary {
			l.add(np, "networkInterfaces must include a primary interface with interfaceType='interface'")
		}
		bad := false
		for _, c := range pairs {
			bad = bad || c > 1
		}
		for _, c := range efa {
			bad = bad || c > 1
		}
		if bad {
			l.add(np, "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card")
		}
	}
}

// validateInstanceOptions checks the instance options: metadata service,
// enclaves, connection tracking and nested virtualisation.
func validateInstanceOptions(l *errs, s *v1.EC2NodeClassSpec, spec *field.Path) {
	if m := s.MetadataOptions; m != nil {
		mp := spec.Child("metadataOptions")
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
	if s.EnclaveOptions != nil && s.EnclaveOptions.Enabled == nil {
		l.required(spec.Child("enclaveOptions", "enabled"))
	}
	if ct := s.ConnectionTracking; ct != nil {
		ctp := spec.Child("connectionTracking")
		if ct.TCPEstablishedTimeout == nil && ct.UDPStreamTimeout == nil && ct.UDPTimeout == nil {
			l.add(ctp, "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set")
		}
		bound := func(v *int32, name string, lo, hi int32) {
			if v != nil && (*v < lo || *v > hi) {
				l.invalid(ctp.Child(name), *v, "must be between %d and %d", lo, hi)
			}
		}
		bound(ct.TCPEstablishedTimeout, "tcpEstablishedTimeout", 60, 432000)
		bound(ct.UDPStreamTimeout, "udpStreamTimeout", 60, 180)
		bound(ct.UDPTimeout, "udpTimeout", 30, 60)
	}
	if c := s.CPUOptions; c != nil && c.NestedVirtualization != nil && !contains(enabledDisabled, *c.NestedVirtualization) {
		l.unsupported(spec.Child("cpuOptions", "nestedVirtualization"), *c.NestedVirtualization, enabledDisabled)
	}
}

func validateAMITerms(l *errs, nc *v1.EC2NodeClass, spec *field.Path) {
	s := &nc.Spec
	ap := spec.Child("amiSelectorTerms")
	switch {
	case s.AMISelectorTerms == nil:
		l.required(ap)
	case len(s.AMISelectorTerms) == 0:
		l.add(ap, "must have at least 1 item")
	case len(s.AMISelectorTerms) > 30:
		l.add(ap, "must have at most 30 items (got %d)", len(s.AMISelectorTerms))
	}
	hasAlias := false
	for i, t := range s.AMISelectorTerms {
		ip := ap.Index(i)
		if t.Tags == nil && t.ID == "" && t.Name == "" && t.Alias == "" && t.SSMParameter == "" {
			l.add(ip, "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']")
		}
		if t.ID != "" && (t.Alias != "" || t.Tags != nil || t.Name != "" || t.Owner != "") {
			l.add(ip, "'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms")
		}
		if t.Alias != "" && (t.ID != "" || t.Tags != nil || t.Name != "" || t.Owner != "") {
			l.add(ip, "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms")
		}
		if t.ID != "" && !amiIDRe.MatchString(t.ID) {
			l.invalid(ip.Child("id"), t.ID, "must match %s", amiIDRe)
		}
		validateTagTerm(l, t.Tags, ip.Child("tags"))
		if t.Alias == "" {
			continue
		}
		hasAlias = true
		alp := ip.Child("alias")
		if len(t.Alias) > 30 {
			l.invalid(alp, t.Alias, "must be at most 30 characters")
		}
		if !aliasRe.MatchString(t.Alias) {
			l.add(alp, "'alias' is improperly formatted, must match the format 'family@version'")
			continue
		}
		fam, version, _ := strings.Cut(t.Alias, "@")
		if _, ok := aliasFamilies[fam]; !ok {
			l.add(alp, "family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'")
		} else if strings.HasPrefix(fam, "windows") && version != "latest" {
			l.add(alp, "windows families may only specify version 'latest'")
		}
	}
	if hasAlias && len(s.AMISelectorTerms) != 1 {
		l.add(ap, "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms")
	}
	fp := spec.Child("amiFamily")
	if s.AMIFamily != nil && !contains(amiFamiliesV1, *s.AMIFamily) {
		l.unsupported(fp, *s.AMIFamily, amiFamiliesV1)
	}
	aliasFam := aliasFamily(nc)
	switch {
	case !hasAlias && s.AMIFamily == nil:
		l.add(fp, "must specify amiFamily if amiSelectorTerms does not contain an alias")
	case aliasFam != "" && s.AMIFamily != nil && *s.AMIFamily != aliasFam && *s.AMIFamily != v1.AMIFamilyCustom:
		l.add(fp, "if set, amiFamily must be '%s' or 'Custom' when using an %s alias", aliasFam, aliasFam)
	}
}
