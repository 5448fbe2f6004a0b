package specs

import (
	"strings"
	"testing"
)

// nodePool is a valid NodePool; tmpl lines go under spec.template.spec,
// spec lines under spec.
func nodePool(tmpl, spec string) string {
	return "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: np\nspec:\n" + indent(spec, "  ") +
		"  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: nc}\n" +
		func() string {
			if strings.Contains(tmpl, "requirements:") {
				return ""
			}
			return "      requirements: []\n"
		}() + indent(tmpl, "      ")
}

func TestNodePoolRules(t *testing.T) {
	runRuleCases(t, []ruleCase{
		// A value that does not decode (a Quantity's or a duration's
		// error names no field) is named by its path, each one.
		{"values that do not decode are named", nodePool("", "limits: {cpu: abc, memory: 1x}\ndisruption: {consolidateAfter: 30}"), []string{
			"spec.disruption.consolidateAfter: invalid type: got JSON number, want a string",
			`spec.limits[cpu]: invalid value "abc": quantities must match the regular expression...`,
			`spec.limits[memory]: invalid value "1x": quantities must match the regular expression...`}},
		{"valid with every field", strings.Replace(nodePool(`
taints: [{key: a, value: b, effect: NoSchedule}]
startupTaints: [{key: c, effect: NoExecute}]
requirements:
  - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, m6i, c5], minValues: 2}
  - {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]}
  - {key: karpenter.k8s.aws/instance-memory, operator: Lte, values: ["65536"]}
  - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand, reserved]}
  - {key: kubernetes.io/arch, operator: NotIn, values: [arm64]}
  - {key: example.com/team, operator: Exists}
expireAfter: Never
terminationGracePeriod: 48h
`, `
disruption:
  consolidationPolicy: Balanced
  consolidateAfter: 1h30m
  budgets:
    - {nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h, reasons: [Underutilized, Drifted]}
    - {nodes: 100%, schedule: "@daily", duration: 1h30m}
    - {nodes: "5"}
limits: {cpu: "1000", memory: 1000Gi, nodes: "10"}
weight: 50
`), "    spec:\n", "    metadata:\n      labels: {team: a, karpenter.sh/capacity-type: spot, karpenter.k8s.aws/instance-family: m5, kubernetes.io/arch: amd64}\n      annotations: {a: b}\n    spec:\n", 1), nil},
		{"static pool", nodePool("", "replicas: 3\nlimits: {nodes: '5'}"), nil},
		{"name", strings.Replace(nodePool("", ""), "name: np", "name: NP", 1), []string{`metadata.name: invalid value "NP": a lowercase RFC 1123 subdomain...`}},
		{"requirements required", strings.Replace(nodePool("", ""), "      requirements: []\n", "", 1), []string{"spec.template.spec.requirements: required value"}},
		{"at most 100 requirements", nodePool("requirements:\n"+strings.Repeat("  - {key: a, operator: Exists}\n", 101), ""),
			[]string{"spec.template.spec.requirements: must have at most 100 items (got 101)"}},
		{"operator", nodePool("requirements: [{key: a, operator: Inn, values: [x]}]", ""),
			[]string{`spec.template.spec.requirements[0].operator: unsupported value "Inn": supported values: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte`}},
		{"In needs values", nodePool("requirements: [{key: a, operator: In}]", ""),
			[]string{"spec.template.spec.requirements[0].values: requirements with operator 'In' must have a value defined"}},
		{"Gte needs one integer", nodePool("requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['1', '2']}]", ""),
			[]string{"spec.template.spec.requirements[0].values: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"}},
		{"Lte needs an integer", nodePool("requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: [x]}]", ""),
			[]string{"spec.template.spec.requirements[0].values: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"}},
		{"minValues at least 1", nodePool("requirements: [{key: a, operator: Exists, minValues: 0}]", ""),
			[]string{"spec.template.spec.requirements[0].minValues: invalid value 0: must be between 1 and 50"}},
		{"minValues at most 50", nodePool("requirements: [{key: a, operator: Exists, minValues: 51}]", ""),
			[]string{"spec.template.spec.requirements[0].minValues: invalid value 51: must be between 1 and 50"}},
		{"minValues needs that many values", nodePool("requirements: [{key: a, operator: In, values: [x], minValues: 2}]", ""),
			[]string{"spec.template.spec.requirements[0].values: requirements with 'minValues' must have at least that many values specified in the 'values' field"}},
		{"capacity-type needs a known value", nodePool("requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [cheap]}]", ""),
			[]string{`spec.template.spec.requirements[0].values: no valid values found in [cheap] for karpenter.sh/capacity-type, expected one of: "on-demand", "spot", "reserved"`}},
		{"tenancy needs enough known values", nodePool("requirements: [{key: karpenter.k8s.aws/instance-tenancy, operator: In, values: [default, host], minValues: 2}]", ""),
			[]string{`spec.template.spec.requirements[0].values: not enough valid values found in [default host] for karpenter.k8s.aws/instance-tenancy, expected at least 2 valid values from: "default", "dedicated"`}},
		{"requirement: nodepool restricted", nodePool("requirements: [{key: karpenter.sh/nodepool, operator: In, values: [x]}]", ""),
			[]string{`spec.template.spec.requirements[0].key: label "karpenter.sh/nodepool" is restricted`}},
		{"requirement: hostname restricted", nodePool("requirements: [{key: kubernetes.io/hostname, operator: Exists}]", ""),
			[]string{`spec.template.spec.requirements[0].key: label "kubernetes.io/hostname" is restricted`}},
		{"requirement: karpenter.sh domain", nodePool("requirements: [{key: sub.karpenter.sh/x, operator: Exists}]", ""),
			[]string{`spec.template.spec.requirements[0].key: label domain "karpenter.sh" is restricted`}},
		{"requirement: karpenter.k8s.aws domain", nodePool("requirements: [{key: karpenter.k8s.aws/ec2nodeclass, operator: Exists}]", ""),
			[]string{`spec.template.spec.requirements[0].key: label domain "karpenter.k8s.aws" is restricted`}},
		{"requirement: key qualified", nodePool("requirements: [{key: '-a', operator: Exists}]", ""),
			[]string{`spec.template.spec.requirements[0].key: invalid value "-a": name part must consist of...`}},
		{"requirement: value", nodePool("requirements: [{key: a, operator: In, values: ['x y']}]", ""),
			[]string{`spec.template.spec.requirements[0].values[0]: invalid value "x y": a valid label must be...`}},
		{"labels: restricted", strings.Replace(nodePool("", ""), "    spec:\n", "    metadata: {labels: {karpenter.sh/nodepool: x, kubernetes.io/hostname: h, karpenter.sh/foo: y1}}\n    spec:\n", 1),
			[]string{
				`spec.template.metadata.labels[karpenter.sh/foo]: label domain "karpenter.sh" is restricted`,
				`spec.template.metadata.labels[karpenter.sh/nodepool]: label "karpenter.sh/nodepool" is restricted`,
				`spec.template.metadata.labels[kubernetes.io/hostname]: label "kubernetes.io/hostname" is restricted`,
			}},
		{"labels: value", strings.Replace(nodePool("", ""), "    spec:\n", "    metadata: {labels: {a: 'x y'}}\n    spec:\n", 1),
			[]string{`spec.template.metadata.labels[a]: invalid value "x y": a valid label must be...`}},
		{"taints: effect", nodePool("taints: [{key: a, effect: Never}]", ""),
			[]string{`spec.template.spec.taints[0].effect: unsupported value "Never": supported values: NoSchedule, PreferNoSchedule, NoExecute`}},
		{"taints: duplicate", nodePool("taints: [{key: a, effect: NoSchedule}, {key: a, value: b, effect: NoSchedule}]", ""),
			[]string{"spec.template.spec.taints[1]: duplicate taint key/effect pair a:NoSchedule"}},
		{"nodeClassRef required", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {template: {spec: {requirements: []}}}\n",
			[]string{"spec.template.spec.nodeClassRef: required value"}},
		{"nodeClassRef fields not empty", strings.Replace(nodePool("", ""), "{group: karpenter.k8s.aws, kind: EC2NodeClass, name: nc}", "{group: '', kind: '', name: ''}", 1),
			[]string{"spec.template.spec.nodeClassRef.group: group may not be empty", "spec.template.spec.nodeClassRef.kind: kind may not be empty", "spec.template.spec.nodeClassRef.name: name may not be empty"}},
		{"nodeClassRef group has no slash", strings.Replace(nodePool("", ""), "group: karpenter.k8s.aws", "group: karpenter.k8s.aws/v1", 1),
			[]string{`spec.template.spec.nodeClassRef.group: invalid value "karpenter.k8s.aws/v1": must not contain '/'`}},
		{"nodeClassRef kind is EC2NodeClass", strings.Replace(nodePool("", ""), "kind: EC2NodeClass", "kind: AWSNodeTemplate", 1),
			[]string{`spec.template.spec.nodeClassRef.kind: unsupported value "AWSNodeTemplate": supported values: EC2NodeClass`}},
		{"expireAfter pattern", nodePool("expireAfter: 30d", ""), []string{`spec.template.spec.expireAfter: invalid value "30d": must match ^(([0-9]+(s|m|h))+|Never)$`}},
		{"terminationGracePeriod has no Never", nodePool("terminationGracePeriod: Never", ""),
			[]string{`spec.template.spec.terminationGracePeriod: invalid value "Never": must match ^([0-9]+(s|m|h))+$`}},
		{"consolidateAfter pattern", nodePool("", "disruption: {consolidateAfter: 1.5h}"),
			[]string{`spec.disruption.consolidateAfter: invalid value "1.5h": must match ^(([0-9]+(s|m|h))+|Never)$`}},
		{"consolidationPolicy", nodePool("", "disruption: {consolidationPolicy: WhenUnderutilized}"),
			[]string{`spec.disruption.consolidationPolicy: unsupported value "WhenUnderutilized": supported values: WhenEmpty, WhenEmptyOrUnderutilized, Balanced`}},
		{"budget nodes format", nodePool("", "disruption: {budgets: [{nodes: 101%}]}"),
			[]string{`spec.disruption.budgets[0].nodes: invalid value "101%": must be a count (5) or a percentage from 0% to 100%`}},
		{"budget schedule needs duration", nodePool("", "disruption: {budgets: [{nodes: '1', schedule: '@daily'}]}"),
			[]string{"spec.disruption.budgets[0]: 'schedule' must be set with 'duration'"}},
		{"budget duration needs schedule", nodePool("", "disruption: {budgets: [{nodes: '1', duration: 1h}]}"),
			[]string{"spec.disruption.budgets[0]: 'schedule' must be set with 'duration'"}},
		{"budget schedule shape", nodePool("", "disruption: {budgets: [{nodes: '1', schedule: 'daily', duration: 1h}]}"),
			[]string{`spec.disruption.budgets[0].schedule: invalid value "daily": must be a cron schedule (five fields) or a macro such as @daily`}},
		{"budget schedule parses", nodePool("", "disruption: {budgets: [{nodes: '1', schedule: '61 * * * *', duration: 1h}]}"),
			[]string{`spec.disruption.budgets[0].schedule: invalid value "61 * * * *": end of range (61) above maximum (59): 61`}},
		{"budget duration is hours and minutes", nodePool("", "disruption: {budgets: [{nodes: '1', schedule: '@daily', duration: 30s}]}"),
			[]string{`spec.disruption.budgets[0].duration: invalid value "30s": must be hours and/or minutes, such as 1h, 30m or 1h30m`}},
		{"budget reasons", nodePool("", "disruption: {budgets: [{nodes: '1', reasons: [Expired]}]}"),
			[]string{`spec.disruption.budgets[0].reasons[0]: unsupported value "Expired": supported values: Underutilized, Empty, Drifted, Unhealthy`}},
		{"budget reasons are a set", nodePool("", "disruption: {budgets: [{nodes: '1', reasons: [Empty, Empty]}]}"),
			[]string{`spec.disruption.budgets[0].reasons[1]: duplicate value "Empty"`}},
		{"at most 50 budgets", nodePool("", "disruption:\n  budgets:\n"+strings.Repeat("  - {nodes: '1'}\n", 51)),
			[]string{"spec.disruption.budgets: must have at most 50 items (got 51)"}},
		{"weight", nodePool("", "weight: 0"), []string{"spec.weight: invalid value 0: must be between 1 and 100"}},
		{"replicas not negative", nodePool("", "replicas: -1"), []string{"spec.replicas: invalid value -1: must not be negative"}},
		{"static pool limits only nodes", nodePool("", "replicas: 1\nlimits: {cpu: '4'}"),
			[]string{"spec.limits[cpu]: only 'limits.nodes' is supported on static NodePools"}},
		{"static pool has no weight", nodePool("", "replicas: 1\nweight: 10"), []string{"spec.weight: 'weight' is not supported on static NodePools"}},
		{"unknown field", nodePool("expiresAfter: 1h", ""), []string{"spec.template.spec.expiresAfter: unknown field"}},
	})
}

// nodeClass is a valid EC2NodeClass with spec lines appended; base lines
// are replaced by the same key given in spec.
func nodeClass(spec string) string {
	base := map[string]string{
		"subnetSelectorTerms":        "subnetSelectorTerms: [{tags: {k: v}}]",
		"securityGroupSelectorTerms": "securityGroupSelectorTerms: [{tags: {k: v}}]",
		"amiSelectorTerms":           "amiSelectorTerms: [{alias: al2023@latest}]",
		"role":                       "role: KarpenterNodeRole",
	}
	var lines []string
	for _, k := range []string{"subnetSelectorTerms", "securityGroupSelectorTerms", "amiSelectorTerms", "role"} {
		if strings.Contains(spec, k+":") || (k == "role" && strings.Contains(spec, "instanceProfile:")) || strings.Contains(spec, "-"+k) {
			continue
		}
		lines = append(lines, base[k])
	}
	var rest []string
	for _, l := range strings.Split(spec, "\n") {
		if !strings.HasPrefix(l, "-") {
			rest = append(rest, l)
		}
	}
	return "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata:\n  name: nc\nspec:\n" + indent(strings.Join(lines, "\n"), "  ") + indent(strings.Join(rest, "\n"), "  ")
}

func TestEC2NodeClassRules(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"a value that does not decode is named", nodeClass("blockDeviceMappings: [{deviceName: a, ebs: {volumeSize: 20Gi}}, {deviceName: b, ebs: {volumeSize: 20Gi, iops: many}}]"),
			[]string{"spec.blockDeviceMappings[1].ebs.iops: invalid type: got JSON string, want an integer"}},
		{"valid with every field", nodeClass(`
subnetSelectorTerms: [{tags: {k: '*'}}, {id: subnet-0abc}]
securityGroupSelectorTerms: [{tags: {k: v}}, {id: sg-123}, {name: default}]
capacityReservationSelectorTerms: [{id: cr-123}, {tags: {a: b}, ownerID: "123456789012", instanceMatchCriteria: targeted}]
placementGroupSelector: {name: pg}
associatePublicIPAddress: false
ipPrefixCount: 1
amiSelectorTerms: [{tags: {a: b}, name: my-ami, owner: self}, {id: ami-123}, {ssmParameter: /my/ami}]
amiFamily: AL2023
userData: "#!/bin/bash"
tags: {team: a}
kubelet:
  clusterDNS: [10.0.0.10]
  maxPods: 110
  podsPerCore: 10
  systemReserved: {cpu: 100m}
  kubeReserved: {memory: "vcpus * 10"}
  evictionHard: {memory.available: 5%}
  evictionSoft: {nodefs.available: 10%}
  evictionSoftGracePeriod: {nodefs.available: 1m30s}
  evictionMaxPodGracePeriod: 30
  evictionMinimumReclaim: {memory.available: 100Mi}
  imageGCHighThresholdPercent: 85
  imageGCLowThresholdPercent: 80
  cpuCFSQuota: true
  serializeImagePulls: false
blockDeviceMappings:
  - {deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 100Gi, volumeType: gp3, encrypted: true, iops: 3000, throughput: 125}}
  - {deviceName: /dev/xvdb, ebs: {snapshotID: snap-1, volumeInitializationRate: 100}}
  - {deviceName: /dev/xvdc, ebs: {volumeSize: 64T}}
instanceStorePolicy: RAID0
networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}]
detailedMonitoring: true
metadataOptions: {httpEndpoint: enabled, httpProtocolIPv6: enabled, httpPutResponseHopLimit: 64, httpTokens: optional}
enclaveOptions: {enabled: true}
connectionTracking: {tcpEstablishedTimeout: 60, udpStreamTimeout: 180, udpTimeout: 30}
context: ctx
cpuOptions: {nestedVirtualization: enabled}
`), nil},
		{"instanceProfile instead of role", nodeClass("instanceProfile: p"), nil},
		{"subnetSelectorTerms required", nodeClass("-subnetSelectorTerms"), []string{"spec.subnetSelectorTerms: required value"}},
		{"subnetSelectorTerms not empty", nodeClass("subnetSelectorTerms: []"), []string{"spec.subnetSelectorTerms: subnetSelectorTerms cannot be empty"}},
		{"subnetSelectorTerms at most 30", nodeClass("subnetSelectorTerms: [" + strings.TrimSuffix(strings.Repeat("{id: subnet-1},", 31), ",") + "]"),
			[]string{"spec.subnetSelectorTerms: must have at most 30 items (got 31)"}},
		{"subnet term needs a field", nodeClass("subnetSelectorTerms: [{}]"), []string{"spec.subnetSelectorTerms[0]: expected at least one, got none, ['tags', 'id']"}},
		{"subnet id excludes tags", nodeClass("subnetSelectorTerms: [{tags: {a: b}}, {id: subnet-1, tags: {a: b}}]"),
			[]string{"spec.subnetSelectorTerms[1]: 'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term"}},
		{"subnet id pattern", nodeClass("subnetSelectorTerms: [{id: sn-1}]"), []string{`spec.subnetSelectorTerms[0].id: invalid value "sn-1": must match ^subnet-[0-9a-z]+$`}},
		{"subnet tags not empty", nodeClass("subnetSelectorTerms: [{tags: {a: ''}}]"), []string{"spec.subnetSelectorTerms[0].tags: empty tag keys or values aren't supported"}},
		{"subnet tags at most 20", nodeClass("subnetSelectorTerms: [{tags: {" + func() string {
			var kv []string
			for i := 0; i < 21; i++ {
				kv = append(kv, "k"+strings.Repeat("x", i)+": v")
			}
			return strings.Join(kv, ", ")
		}() + "}}]"), []string{"spec.subnetSelectorTerms[0].tags: must have at most 20 tags (got 21)"}},
		{"securityGroupSelectorTerms required", nodeClass("-securityGroupSelectorTerms"), []string{"spec.securityGroupSelectorTerms: required value"}},
		{"securityGroupSelectorTerms not empty", nodeClass("securityGroupSelectorTerms: []"), []string{"spec.securityGroupSelectorTerms: securityGroupSelectorTerms cannot be empty"}},
		{"security group term needs a field", nodeClass("securityGroupSelectorTerms: [{}]"),
			[]string{"spec.securityGroupSelectorTerms[0]: expected at least one, got none, ['tags', 'id', 'name']"}},
		{"security group id excludes others", nodeClass("securityGroupSelectorTerms: [{id: sg-1, name: x}]"),
			[]string{"spec.securityGroupSelectorTerms[0]: 'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term",
				"spec.securityGroupSelectorTerms[0]: 'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"}},
		{"security group name excludes tags", nodeClass("securityGroupSelectorTerms: [{name: x, tags: {a: b}}]"),
			[]string{"spec.securityGroupSelectorTerms[0]: 'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"}},
		{"security group id pattern", nodeClass("securityGroupSelectorTerms: [{id: group-1}]"), []string{`spec.securityGroupSelectorTerms[0].id: invalid value "group-1": must match ^sg-[0-9a-z]+$`}},
		{"capacity reservation term needs a field", nodeClass("capacityReservationSelectorTerms: [{ownerID: '123456789012'}]"),
			[]string{"spec.capacityReservationSelectorTerms[0]: expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']"}},
		{"capacity reservation id excludes others", nodeClass("capacityReservationSelectorTerms: [{id: cr-1, instanceMatchCriteria: open}]"),
			[]string{"spec.capacityReservationSelectorTerms[0]: 'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term"}},
		{"capacity reservation id pattern", nodeClass("capacityReservationSelectorTerms: [{id: odcr-1}]"),
			[]string{`spec.capacityReservationSelectorTerms[0].id: invalid value "odcr-1": must match ^cr-[0-9a-z]+$`}},
		{"capacity reservation owner", nodeClass("capacityReservationSelectorTerms: [{tags: {a: b}, ownerID: '123'}]"),
			[]string{`spec.capacityReservationSelectorTerms[0].ownerID: invalid value "123": must be a 12-digit account id`}},
		{"capacity reservation match criteria", nodeClass("capacityReservationSelectorTerms: [{instanceMatchCriteria: any}]"),
			[]string{`spec.capacityReservationSelectorTerms[0].instanceMatchCriteria: unsupported value "any": supported values: open, targeted`}},
		{"placement group needs name or id", nodeClass("placementGroupSelector: {}"), []string{"spec.placementGroupSelector: expected at least one, got none, ['name', 'id']"}},
		{"placement group name excludes id", nodeClass("placementGroupSelector: {name: a, id: pg-1}"), []string{"spec.placementGroupSelector: 'name' and 'id' are mutually exclusive"}},
		{"placement group id pattern", nodeClass("placementGroupSelector: {id: group}"), []string{`spec.placementGroupSelector.id: invalid value "group": must match ^pg-[0-9a-z]+$`}},
		{"ipPrefixCount not negative", nodeClass("ipPrefixCount: -1"), []string{"spec.ipPrefixCount: invalid value -1: must not be negative"}},
		{"amiSelectorTerms required", nodeClass("-amiSelectorTerms\namiFamily: AL2023"), []string{"spec.amiSelectorTerms: required value"}},
		{"amiSelectorTerms at least one", nodeClass("amiSelectorTerms: []\namiFamily: AL2023"), []string{"spec.amiSelectorTerms: must have at least 1 item"}},
		{"ami term needs a field", nodeClass("amiSelectorTerms: [{owner: self}]\namiFamily: AL2023"),
			[]string{"spec.amiSelectorTerms[0]: expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"}},
		{"ami id excludes others", nodeClass("amiSelectorTerms: [{id: ami-1, owner: self}]\namiFamily: AL2023"),
			[]string{"spec.amiSelectorTerms[0]: 'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"}},
		{"ami id pattern", nodeClass("amiSelectorTerms: [{id: image-1}]\namiFamily: AL2023"), []string{`spec.amiSelectorTerms[0].id: invalid value "image-1": must match ^ami-[0-9a-z]+$`}},
		{"alias excludes other fields", nodeClass("amiSelectorTerms: [{alias: al2023@latest, tags: {a: b}}]"),
			[]string{"spec.amiSelectorTerms[0]: 'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"}},
		{"alias is the only term", nodeClass("amiSelectorTerms: [{alias: al2023@latest}, {id: ami-1}]"),
			[]string{"spec.amiSelectorTerms: 'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"}},
		{"alias format", nodeClass("amiSelectorTerms: [{alias: al2023}]\namiFamily: AL2023"),
			[]string{"spec.amiSelectorTerms[0].alias: 'alias' is improperly formatted, must match the format 'family@version'"}},
		{"alias family", nodeClass("amiSelectorTerms: [{alias: ubuntu@latest}]\namiFamily: Custom"),
			[]string{"spec.amiSelectorTerms[0].alias: family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'"}},
		{"windows alias is latest only", nodeClass("amiSelectorTerms: [{alias: windows2022@v1}]"),
			[]string{"spec.amiSelectorTerms[0].alias: windows families may only specify version 'latest'"}},
		{"alias at most 30 characters", nodeClass("amiSelectorTerms: [{alias: bottlerocket@v1.20.0-1234567890}]"),
			[]string{`spec.amiSelectorTerms[0].alias: invalid value "bottlerocket@v1.20.0-1234567890": must be at most 30 characters`}},
		{"amiFamily required without alias", nodeClass("amiSelectorTerms: [{id: ami-1}]"), []string{"spec.amiFamily: must specify amiFamily if amiSelectorTerms does not contain an alias"}},
		{"amiFamily matches alias", nodeClass("amiFamily: Bottlerocket"), []string{"spec.amiFamily: if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias"}},
		{"amiFamily Custom with alias", nodeClass("amiFamily: Custom"), nil},
		{"amiFamily enum", nodeClass("amiSelectorTerms: [{id: ami-1}]\namiFamily: Ubuntu"),
			[]string{`spec.amiFamily: unsupported value "Ubuntu": supported values: AL2, AL2023, Bottlerocket, Custom, Windows2019, Windows2022, Windows2025`}},
		{"role or instanceProfile", nodeClass("-role"), []string{"spec: must specify exactly one of ['role', 'instanceProfile']"}},
		{"not both role and instanceProfile", nodeClass("role: r\ninstanceProfile: p"), []string{"spec: must specify exactly one of ['role', 'instanceProfile']"}},
		{"instanceProfile not empty", nodeClass("instanceProfile: ''"), []string{"spec.instanceProfile: instanceProfile cannot be empty"}},
		{"tags: empty key", nodeClass("tags: {'': v}"), []string{"spec.tags: empty tag keys aren't supported"}},
		{"tags: cluster tag reserved", nodeClass("tags: {kubernetes.io/cluster/prod: owned}"),
			[]string{"spec.tags[kubernetes.io/cluster/prod]: tag contains a restricted tag matching kubernetes.io/cluster/"}},
		{"tags: eks cluster name reserved", nodeClass("tags: {'eks:eks-cluster-name': x}"),
			[]string{"spec.tags[eks:eks-cluster-name]: tag contains a restricted tag matching eks:eks-cluster-name"}},
		{"tags: nodepool reserved", nodeClass("tags: {karpenter.sh/nodepool: x}"), []string{"spec.tags[karpenter.sh/nodepool]: tag contains a restricted tag matching karpenter.sh/nodepool"}},
		{"tags: nodeclaim reserved", nodeClass("tags: {karpenter.sh/nodeclaim: x}"), []string{"spec.tags[karpenter.sh/nodeclaim]: tag contains a restricted tag matching karpenter.sh/nodeclaim"}},
		{"tags: ec2nodeclass reserved", nodeClass("tags: {karpenter.k8s.aws/ec2nodeclass: x}"),
			[]string{"spec.tags[karpenter.k8s.aws/ec2nodeclass]: tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass"}},
		{"kubelet: registerWithTaints is Joist's", nodeClass("kubelet: {registerWithTaints: []}"),
			[]string{"spec.kubelet.registerWithTaints: can't be set, Joist sets it from the pool's taints so the node registers unschedulable until it's ready"}},
		{"kubelet: wrong type", nodeClass("kubelet: {podsPerCore: many}"), []string{"spec.kubelet.podsPerCore: invalid type: got JSON string, want an integer"}},
		{"kubelet: unknown fields are refused", nodeClass("kubelet: {maxPod: 110}"), []string{"spec.kubelet.maxPod: unknown field: not a KubeletConfiguration field"}},
		{"kubelet: upstream field types", nodeClass("kubelet: {serializeImagePulls: 'no'}"), []string{"spec.kubelet.serializeImagePulls: invalid type: got JSON string, want a boolean"}},
		{"kubelet: every upstream value that does not decode", nodeClass("kubelet: {serializeImagePulls: 'no', shutdownGracePeriod: soon}"), []string{
			"spec.kubelet.serializeImagePulls: invalid type: got JSON string, want a boolean",
			`spec.kubelet.shutdownGracePeriod: invalid value "soon": time: invalid duration "soon"`}},
		{"kubelet: maxPods type", nodeClass("kubelet: {maxPods: [1]}"), []string{"spec.kubelet.maxPods: invalid type: want an integer or a CEL expression string"}},
		{"kubelet: maxPods not negative", nodeClass("kubelet: {maxPods: -1}"), []string{"spec.kubelet.maxPods: invalid value -1: must not be negative"}},
		{"kubelet: eviction signal", nodeClass("kubelet: {evictionHard: {disk.available: 1Gi}}"), []string{`spec.kubelet.evictionHard[disk.available]: unsupported value "disk.available"...`}},
		{"kubelet: eviction value", nodeClass("kubelet: {evictionHard: {memory.available: -1Gi}}"), []string{`spec.kubelet.evictionHard[memory.available]: invalid value "-1Gi": must not be negative`}},
		{"kubelet: minimum reclaim", nodeClass("kubelet: {evictionMinimumReclaim: {memory.available: 200%}}"),
			[]string{`spec.kubelet.evictionMinimumReclaim[memory.available]: invalid value "200%": percentage must be between 0 and 100`}},
		{"kubelet: grace period is a duration", nodeClass("kubelet: {evictionSoft: {memory.available: 5%}, evictionSoftGracePeriod: {memory.available: soon}}"),
			[]string{`spec.kubelet.evictionSoftGracePeriod[memory.available]: invalid value "soon": must be a duration`}},
		{"kubelet: soft needs grace", nodeClass("kubelet: {evictionSoft: {memory.available: 5%}}"), []string{"spec.kubelet.evictionSoft[memory.available]: has no matching evictionSoftGracePeriod"}},
		{"kubelet: grace needs soft", nodeClass("kubelet: {evictionSoftGracePeriod: {memory.available: 1m}}"), []string{"spec.kubelet.evictionSoftGracePeriod[memory.available]: has no matching evictionSoft"}},
		{"kubelet: reservable resources", nodeClass("kubelet: {kubeReserved: {gpu: '1'}}"), []string{`spec.kubelet.kubeReserved[gpu]: unsupported value "gpu": supported values: cpu, memory, ephemeral-storage, pid`}},
		{"kubelet: reserved not negative", nodeClass("kubelet: {systemReserved: {cpu: -100m}}"), []string{`spec.kubelet.systemReserved[cpu]: invalid value "-100m": must not be negative`}},
		{"kubelet: image GC percent", nodeClass("kubelet: {imageGCHighThresholdPercent: 101}"), []string{"spec.kubelet.imageGCHighThresholdPercent: invalid value 101: must be between 0 and 100"}},
		{"kubelet: image GC high above low", nodeClass("kubelet: {imageGCHighThresholdPercent: 80, imageGCLowThresholdPercent: 80}"),
			[]string{"spec.kubelet: imageGCHighThresholdPercent (80) must be greater than imageGCLowThresholdPercent (80)"}},
		{"kubelet: podsPerCore not negative", nodeClass("kubelet: {podsPerCore: -1}"), []string{"spec.kubelet.podsPerCore: invalid value -1: must not be negative"}},
		{"block devices at most one root", nodeClass("blockDeviceMappings: [{deviceName: a, rootVolume: true, ebs: {volumeSize: 1Gi}}, {deviceName: b, rootVolume: true, ebs: {volumeSize: 1Gi}}]"),
			[]string{"spec.blockDeviceMappings: must have only one blockDeviceMappings with rootVolume"}},
		{"block device size or snapshot", nodeClass("blockDeviceMappings: [{deviceName: a, ebs: {volumeType: gp3}}]"),
			[]string{"spec.blockDeviceMappings[0].ebs: snapshotID or volumeSize must be defined"}},
		{"block device size pattern", nodeClass("blockDeviceMappings: [{deviceName: a, ebs: {volumeSize: 65T}}]"),
			[]string{`spec.blockDeviceMappings[0].ebs.volumeSize: invalid value "65T": must be 1Gi-59000Gi, 1G-64000G, 1Ti-58Ti or 1T-64T`}},
		{"block device size units", nodeClass("blockDeviceMappings: [{deviceName: a, ebs: {volumeSize: 20000Mi}}]"),
			[]string{`spec.blockDeviceMappings[0].ebs.volumeSize: invalid value "20000Mi": must be 1Gi-59000Gi, 1G-64000G, 1Ti-58Ti or 1T-64T`}},
		{"block device volume type", nodeClass("blockDeviceMappings: [{deviceName: a, ebs: {volumeSize: 1Gi, volumeType: ssd}}]"),
			[]string{`spec.blockDeviceMappings[0].ebs.volumeType: unsupported value "ssd": supported values: standard, io1, io2, gp2, sc1, st1, gp3`}},
		{"initialization rate needs a snapshot", nodeClass("blockDeviceMappings: [{deviceName: a, ebs: {volumeSize: 1Gi, volumeInitializationRate: 100}}]"),
			[]string{"spec.blockDeviceMappings[0].ebs: snapshotID must be set when volumeInitializationRate is set"}},
		{"initialization rate range", nodeClass("blockDeviceMappings: [{deviceName: a, ebs: {snapshotID: s, volumeInitializationRate: 301}}]"),
			[]string{"spec.blockDeviceMappings[0].ebs.volumeInitializationRate: invalid value 301: must be between 100 and 300"}},
		{"instance store policy", nodeClass("instanceStorePolicy: RAID1"), []string{`spec.instanceStorePolicy: unsupported value "RAID1": supported values: RAID0`}},
		{"network interfaces need a primary", nodeClass("networkInterfaces: [{networkCardIndex: 0, deviceIndex: 1, interfaceType: interface}]"),
			[]string{"spec.networkInterfaces: networkInterfaces must include a primary interface with interfaceType='interface'"}},
		{"network interfaces unique", nodeClass("networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}]"),
			[]string{"spec.networkInterfaces: networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card"}},
		{"network interface type", nodeClass("networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa}]"),
			[]string{`spec.networkInterfaces[1].interfaceType: unsupported value "efa": supported values: interface, efa-only`}},
		{"network interface index", nodeClass("networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: -1, deviceIndex: 0, interfaceType: interface}]"),
			[]string{"spec.networkInterfaces[1].networkCardIndex: invalid value -1: must not be negative"}},
		{"metadata hop limit", nodeClass("metadataOptions: {httpPutResponseHopLimit: 0}"), []string{"spec.metadataOptions.httpPutResponseHopLimit: invalid value 0: must be between 1 and 64"}},
		{"metadata tokens", nodeClass("metadataOptions: {httpTokens: none}"), []string{`spec.metadataOptions.httpTokens: unsupported value "none": supported values: required, optional`}},
		{"metadata endpoint", nodeClass("metadataOptions: {httpEndpoint: open}"), []string{`spec.metadataOptions.httpEndpoint: unsupported value "open": supported values: enabled, disabled`}},
		{"enclave enabled required", nodeClass("enclaveOptions: {}"), []string{"spec.enclaveOptions.enabled: required value"}},
		{"connection tracking needs a timeout", nodeClass("connectionTracking: {}"),
			[]string{"spec.connectionTracking: at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set"}},
		{"connection tracking ranges", nodeClass("connectionTracking: {tcpEstablishedTimeout: 59, udpStreamTimeout: 181, udpTimeout: 61}"),
			[]string{"spec.connectionTracking.tcpEstablishedTimeout: invalid value 59: must be between 60 and 432000",
				"spec.connectionTracking.udpStreamTimeout: invalid value 181: must be between 60 and 180",
				"spec.connectionTracking.udpTimeout: invalid value 61: must be between 30 and 60"}},
		{"nested virtualization", nodeClass("cpuOptions: {nestedVirtualization: on-demand}"),
			[]string{`spec.cpuOptions.nestedVirtualization: unsupported value "on-demand": supported values: enabled, disabled`}},
		{"unknown field", nodeClass("subnetSelector: {a: b}"), []string{"spec.subnetSelector: unknown field"}},
	})
}
