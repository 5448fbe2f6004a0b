package crds

// v1 label rules, as the AWS provider's NodePool CRD has them.
var awsLabelsV1 = []string{
	"karpenter.k8s.aws/instance-tenancy", "karpenter.k8s.aws/capacity-reservation-type", "karpenter.k8s.aws/capacity-reservation-id",
	"karpenter.k8s.aws/capacity-reservation-interruptible", "karpenter.k8s.aws/instance-encryption-in-transit-supported",
	"karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-hypervisor", "karpenter.k8s.aws/instance-family",
	"karpenter.k8s.aws/instance-generation", "karpenter.k8s.aws/instance-local-nvme", "karpenter.k8s.aws/instance-size",
	"karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-cpu-manufacturer", "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
	"karpenter.k8s.aws/instance-memory", "karpenter.k8s.aws/instance-ebs-bandwidth", "karpenter.k8s.aws/instance-network-bandwidth",
	"karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-gpu-count",
	"karpenter.k8s.aws/instance-gpu-memory", "karpenter.k8s.aws/instance-accelerator-name", "karpenter.k8s.aws/instance-accelerator-manufacturer",
	"karpenter.k8s.aws/instance-accelerator-count", "karpenter.k8s.aws/instance-capability-flex", "karpenter.k8s.aws/placement-group-id",
	"karpenter.k8s.aws/placement-group-partition",
}

// labelRulesV1 are the restrictions on a label key (a CEL expression).
func labelRulesV1(key string) []struct{ rule, message string } {
	domain := key + ".find('^([^/]+)')"
	return []struct{ rule, message string }{
		{key + " == 'karpenter.sh/capacity-type' || !" + domain + ".endsWith('karpenter.sh')", `label domain "karpenter.sh" is restricted`},
		{key + " != 'karpenter.sh/nodepool'", `label "karpenter.sh/nodepool" is restricted`},
		{key + " != 'kubernetes.io/hostname'", `label "kubernetes.io/hostname" is restricted`},
		{key + " in " + celList(awsLabelsV1) + " || !" + domain + ".endsWith('karpenter.k8s.aws')", `label domain "karpenter.k8s.aws" is restricted`},
	}
}

const durationOrNever = `^(([0-9]+(s|m|h))+|Never)$`

func nodePoolEdits() map[string][]edit {
	e := map[string][]edit{
		"": {required("spec")},
		"spec": {
			required("template"),
			cel("has(self.replicas) == has(oldSelf.replicas)", "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes"),
			cel("!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits))", "only 'limits.nodes' is supported on static NodePools"),
			cel("!has(self.replicas) || !has(self.weight)", "'weight' is not supported on static NodePools"),
		},
		"spec.weight":                         {minimum(1), maximum(100)},
		"spec.replicas":                       {minimum(0)},
		"spec.disruption":                     {defaultJSON(map[string]string{"consolidateAfter": "0s"})},
		"spec.disruption.consolidateAfter":    {defaultJSON("0s"), pattern(durationOrNever)},
		"spec.disruption.consolidationPolicy": {defaultJSON("WhenEmptyOrUnderutilized"), enum("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")},
		"spec.disruption.budgets": {
			defaultJSON([]map[string]string{{"nodes": "10%"}}), maxItems(50), listType("atomic"),
			cel("self.all(x, has(x.schedule) == has(x.duration))", "'schedule' must be set with 'duration'"),
		},
		"spec.disruption.budgets[]":                 {required("nodes")},
		"spec.disruption.budgets[].nodes":           {defaultJSON("10%"), pattern(`^((100|[0-9]{1,2})%|[0-9]+)$`)},
		"spec.disruption.budgets[].schedule":        {pattern(`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`)},
		"spec.disruption.budgets[].duration":        {pattern(`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`)},
		"spec.disruption.budgets[].reasons":         {maxItems(50), listType("set")},
		"spec.disruption.budgets[].reasons[]":       {enum("Underutilized", "Empty", "Drifted", "Unhealthy")},
		"spec.template.metadata.labels":             {maxProperties(100)},
		"spec.template.metadata.labels{}":           {maxLength(63), pattern(labelValuePattern)},
		"spec.template.spec":                        {required("nodeClassRef", "requirements")},
		"spec.template.spec.expireAfter":            {defaultJSON("720h"), pattern(durationOrNever)},
		"spec.template.spec.terminationGracePeriod": {pattern(`^([0-9]+(s|m|h))+$`)},
		"spec.template.spec.nodeClassRef": {
			required("group", "kind", "name"),
			cel("self.group == oldSelf.group", "nodeClassRef.group is immutable"),
			cel("self.kind == oldSelf.kind", "nodeClassRef.kind is immutable"),
			cel("self.group == 'karpenter.k8s.aws' && self.kind == 'EC2NodeClass'", "Joist launches with karpenter.k8s.aws EC2NodeClasses only"),
		},
		"spec.template.spec.nodeClassRef.group": {pattern(`^[^/]*$`), cel("self != ''", "group may not be empty")},
		"spec.template.spec.nodeClassRef.kind":  {cel("self != ''", "kind may not be empty")},
		"spec.template.spec.nodeClassRef.name":  {cel("self != ''", "name may not be empty")},
		"spec.template.spec.requirements": {
			maxItems(100), listType("atomic"),
			cel("self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)", "requirements with operator 'In' must have a value defined"),
			cel("self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && x.values[0].matches('^[0-9]+$')) : true)", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"),
			cel("self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)", "requirements with 'minValues' must have at least that many values specified in the 'values' field"),
		},
		"spec.template.spec.requirements[]":           {required("key", "operator")},
		"spec.template.spec.requirements[].key":       {maxLength(316), pattern(qualifiedNamePattern)},
		"spec.template.spec.requirements[].operator":  {enum("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")},
		"spec.template.spec.requirements[].values":    {maxItems(1000), listType("atomic")},
		"spec.template.spec.requirements[].values[]":  {maxLength(63), pattern(labelValuePattern)},
		"spec.template.spec.requirements[].minValues": {minimum(1), maximum(50)},
	}
	for _, r := range labelRulesV1("self") {
		e["spec.template.spec.requirements[].key"] = append(e["spec.template.spec.requirements[].key"], cel(r.rule, r.message))
	}
	for _, r := range labelRulesV1("x") {
		e["spec.template.metadata.labels"] = append(e["spec.template.metadata.labels"], cel("self.all(x, "+r.rule+")", r.message))
	}
	taintEdits(e, "spec.template.spec.taints")
	taintEdits(e, "spec.template.spec.startupTaints")
	return e
}

func tagTerm() []edit {
	return []edit{maxProperties(20), cel("self.all(k, k != '' && self[k] != '')", "empty tag keys or values aren't supported")}
}

func aliasFamilyRule(alias, family string) edit {
	return cel("!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == '"+alias+"') ? (self.amiFamily == 'Custom' || self.amiFamily == '"+family+"') : true)",
		"if set, amiFamily must be '"+family+"' or 'Custom' when using an "+family+" alias")
}

var reservedTags = []string{"eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass"}

func ec2NodeClassEdits() map[string][]edit {
	e := map[string][]edit{
		"": {required("spec")},
		"spec": {
			required("subnetSelectorTerms", "securityGroupSelectorTerms", "amiSelectorTerms"),
			cel("(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))", "must specify exactly one of ['role', 'instanceProfile']"),
			aliasFamilyRule("al2", "AL2"),
			aliasFamilyRule("al2023", "AL2023"),
			aliasFamilyRule("bottlerocket", "Bottlerocket"),
			aliasFamilyRule("windows2019", "Windows2019"),
			aliasFamilyRule("windows2022", "Windows2022"),
			aliasFamilyRule("windows2025", "Windows2025"),
			cel("self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)", "must specify amiFamily if amiSelectorTerms does not contain an alias"),
		},
		"spec.subnetSelectorTerms": {minItems(1), maxItems(30)},
		"spec.subnetSelectorTerms[]": {
			cel("has(self.tags) || has(self.id)", "expected at least one, got none, ['tags', 'id']"),
			cel("!(has(self.id) && has(self.tags))", "'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term"),
		},
		"spec.subnetSelectorTerms[].id":   {pattern(`^subnet-[0-9a-z]+$`)},
		"spec.subnetSelectorTerms[].tags": tagTerm(),
		"spec.securityGroupSelectorTerms": {minItems(1), maxItems(30)},
		"spec.securityGroupSelectorTerms[]": {
			cel("has(self.tags) || has(self.id) || has(self.name)", "expected at least one, got none, ['tags', 'id', 'name']"),
			cel("!(has(self.id) && (has(self.tags) || has(self.name)))", "'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"),
			cel("!(has(self.name) && (has(self.tags) || has(self.id)))", "'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"),
		},
		"spec.securityGroupSelectorTerms[].id":   {pattern(`^sg-[0-9a-z]+$`)},
		"spec.securityGroupSelectorTerms[].tags": tagTerm(),
		"spec.capacityReservationSelectorTerms":  {maxItems(30)},
		"spec.capacityReservationSelectorTerms[]": {
			cel("has(self.tags) || has(self.id) || has(self.instanceMatchCriteria)", "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']"),
			cel("!(has(self.id) && (has(self.tags) || has(self.ownerID) || has(self.instanceMatchCriteria)))", "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term"),
		},
		"spec.capacityReservationSelectorTerms[].id":                    {pattern(`^cr-[0-9a-z]+$`)},
		"spec.capacityReservationSelectorTerms[].ownerID":               {pattern(`^[0-9]{12}$`)},
		"spec.capacityReservationSelectorTerms[].instanceMatchCriteria": {enum("open", "targeted")},
		"spec.capacityReservationSelectorTerms[].tags":                  tagTerm(),
		"spec.placementGroupSelector": {
			cel("has(self.name) || has(self.id)", "expected at least one, got none, ['name', 'id']"),
			cel("!(has(self.name) && has(self.id))", "'name' and 'id' are mutually exclusive"),
		},
		"spec.placementGroupSelector.name": {minLength(1)},
		"spec.placementGroupSelector.id":   {pattern(`^pg-[0-9a-z]+$`)},
		"spec.ipPrefixCount":               {minimum(0)},
		"spec.amiSelectorTerms": {
			minItems(1), maxItems(30),
			cel("!(self.exists(x, has(x.alias)) && self.size() != 1)", "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"),
		},
		"spec.amiSelectorTerms[]": {
			cel("has(self.tags) || has(self.id) || has(self.name) || has(self.alias) || has(self.ssmParameter)", "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"),
			cel("!(has(self.id) && (has(self.alias) || has(self.tags) || has(self.name) || has(self.owner)))", "'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"),
			cel("!(has(self.alias) && (has(self.id) || has(self.tags) || has(self.name) || has(self.owner)))", "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"),
		},
		"spec.amiSelectorTerms[].alias": {
			maxLength(30),
			cel("self.matches('^[a-zA-Z0-9]+@.+$')", "'alias' is improperly formatted, must match the format 'family@version'"),
			cel("self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']", "family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'"),
			cel("self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? self.split('@')[1] == 'latest' : true", "windows families may only specify version 'latest'"),
		},
		"spec.amiSelectorTerms[].id":   {pattern(`^ami-[0-9a-z]+$`)},
		"spec.amiSelectorTerms[].tags": tagTerm(),
		"spec.amiFamily":               {enum("AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025")},
		"spec.role":                    {cel("self != ''", "role cannot be empty")},
		"spec.instanceProfile":         {cel("self != ''", "instanceProfile cannot be empty")},
		"spec.tags": {
			maxProperties(50),
			cel("self.all(k, k != '')", "empty tag keys aren't supported"),
			cel("self.all(k, !k.startsWith('kubernetes.io/cluster'))", "tag contains a restricted tag matching kubernetes.io/cluster/"),
		},
		"spec.blockDeviceMappings": {
			maxItems(50),
			cel("self.filter(x, has(x.rootVolume) ? x.rootVolume == true : false).size() <= 1", "must have only one blockDeviceMappings with rootVolume"),
		},
		"spec.blockDeviceMappings[].ebs": {
			cel("has(self.snapshotID) || has(self.volumeSize)", "snapshotID or volumeSize must be defined"),
			cel("!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID != '')", "snapshotID must be set when volumeInitializationRate is set"),
		},
		"spec.blockDeviceMappings[].ebs.volumeInitializationRate": {minimum(100), maximum(300)},
		"spec.blockDeviceMappings[].ebs.volumeSize":               {pattern(`^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$`)},
		"spec.blockDeviceMappings[].ebs.volumeType":               {enum(volumeTypes...)},
		"spec.instanceStorePolicy":                                {enum("RAID0")},
		"spec.networkInterfaces": {
			maxItems(150),
			cel("self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && x.interfaceType == 'interface')", "networkInterfaces must include a primary interface with interfaceType='interface'"),
			cel("self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && x.deviceIndex == y.deviceIndex).size() == 1 && (x.interfaceType != 'efa-only' || self.filter(y, x.networkCardIndex == y.networkCardIndex && y.interfaceType == 'efa-only').size() == 1))", "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card"),
		},
		"spec.networkInterfaces[]":                     {required("networkCardIndex", "deviceIndex", "interfaceType")},
		"spec.networkInterfaces[].networkCardIndex":    {minimum(0)},
		"spec.networkInterfaces[].deviceIndex":         {minimum(0)},
		"spec.networkInterfaces[].interfaceType":       {enum("interface", "efa-only")},
		"spec.metadataOptions":                         {defaultJSON(map[string]any{"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1, "httpTokens": "required"})},
		"spec.metadataOptions.httpEndpoint":            {defaultJSON("enabled"), enum("enabled", "disabled")},
		"spec.metadataOptions.httpProtocolIPv6":        {defaultJSON("disabled"), enum("enabled", "disabled")},
		"spec.metadataOptions.httpPutResponseHopLimit": {defaultJSON(1), minimum(1), maximum(64)},
		"spec.metadataOptions.httpTokens":              {defaultJSON("required"), enum("required", "optional")},
		"spec.enclaveOptions":                          {required("enabled")},
		"spec.connectionTracking": {
			cel("has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)", "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set"),
		},
		"spec.connectionTracking.tcpEstablishedTimeout": {minimum(60), maximum(432000)},
		"spec.connectionTracking.udpStreamTimeout":      {minimum(60), maximum(180)},
		"spec.connectionTracking.udpTimeout":            {minimum(30), maximum(60)},
		"spec.cpuOptions.nestedVirtualization":          {enum("enabled", "disabled")},
	}
	for _, t := range reservedTags {
		e["spec.tags"] = append(e["spec.tags"], cel("self.all(k, k != '"+t+"')", "tag contains a restricted tag matching "+t))
	}
	return e
}
