package specs

import (
	"errors"
	"strings"
	"testing"
)

// ruleCase is one rule broken once: the manifest and the exact messages
// (a want ending in "..." matches as a prefix, for messages that quote
// Kubernetes' own long validation texts).
type ruleCase struct {
	name string
	doc  string
	want []string
}

func runRuleCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode([]byte(tc.doc), "test.yaml")
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(objs) != 1 {
				t.Fatalf("want one object, got %d", len(objs))
			}
			_, err = Load(objs[0])
			var got []string
			if err != nil {
				var oe *ObjectError
				if !errors.As(err, &oe) {
					t.Fatalf("Load error is %T: %v", err, err)
				}
				for _, fe := range oe.Errors {
					got = append(got, fe.Error())
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			for i := range got {
				w := tc.want[i]
				if p, ok := strings.CutSuffix(w, "..."); ok {
					if !strings.HasPrefix(got[i], p) {
						t.Errorf("error %d = %q, want prefix %q", i, got[i], p)
					}
				} else if got[i] != w {
					t.Errorf("error %d = %q\n          want %q", i, got[i], w)
				}
			}
		})
	}
}

// provisioner is a valid Provisioner with extra spec lines appended.
func provisioner(spec string) string {
	return "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata:\n  name: p\nspec:\n  providerRef:\n    name: t\n" + indent(spec, "  ")
}

func indent(s, by string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = by + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestProvisionerRules(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"valid with every field", provisioner(`
labels: {team: a, node.kubernetes.io/lifecycle: x, kops.k8s.io/ig: z, kubernetes.io/arch: amd64}
annotations: {a: b}
taints: [{key: a, value: b, effect: NoSchedule}]
startupTaints: [{key: a, effect: NoExecute}]
requirements:
  - {key: beta.kubernetes.io/arch, operator: In, values: [arm64]}
  - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["3"]}
  - {key: topology.kubernetes.io/zone, operator: Exists}
kubeletConfiguration:
  clusterDNS: [10.0.0.10]
  containerRuntime: containerd
  maxPods: 20
  podsPerCore: 2
  systemReserved: {cpu: 100m, memory: 100Mi, ephemeral-storage: 1Gi, pid: "100"}
  kubeReserved: {cpu: 200m}
  evictionHard: {memory.available: 5%, nodefs.available: 1Gi}
  evictionSoft: {memory.available: 10%}
  evictionSoftGracePeriod: {memory.available: 1m}
  evictionMaxPodGracePeriod: 60
  imageGCHighThresholdPercent: 85
  imageGCLowThresholdPercent: 80
  cpuCFSQuota: true
ttlSecondsUntilExpired: 0
ttlSecondsAfterEmpty: 0
limits: {resources: {cpu: "1000", memory: 1000Gi}}
weight: 100
consolidation: {enabled: false}
`), nil},
		{"name must be a DNS subdomain", strings.Replace(provisioner(""), "name: p", "name: Bad_Name", 1),
			[]string{`metadata.name: invalid value "Bad_Name": a lowercase RFC 1123 subdomain...`}},
		{"name is required", strings.Replace(provisioner(""), "name: p", "name: ''", 1), []string{"metadata.name: required value"}},
		{"ttlSecondsUntilExpired not negative", provisioner("ttlSecondsUntilExpired: -1"), []string{"spec.ttlSecondsUntilExpired: invalid value -1: must not be negative"}},
		{"ttlSecondsAfterEmpty not negative", provisioner("ttlSecondsAfterEmpty: -5"), []string{"spec.ttlSecondsAfterEmpty: invalid value -5: must not be negative"}},
		{"ttlSecondsAfterEmpty excludes consolidation", provisioner("ttlSecondsAfterEmpty: 30\nconsolidation: {enabled: true}"), []string{"spec: ttlSecondsAfterEmpty and consolidation.enabled are mutually exclusive"}},
		{"weight at least 1", provisioner("weight: 0"), []string{"spec.weight: invalid value 0: must be between 1 and 100"}},
		{"weight at most 100", provisioner("weight: 101"), []string{"spec.weight: invalid value 101: must be between 1 and 100"}},
		{"provider excludes providerRef", provisioner("provider: {subnetSelector: {a: b}}"), []string{"spec: provider and providerRef are mutually exclusive"}},
		{"provider or providerRef required", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {}\n",
			[]string{"spec.providerRef: required value: name the AWSNodeTemplate to launch with (or give a legacy inline provider)"}},
		{"providerRef name required", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {providerRef: {kind: AWSNodeTemplate}}\n", []string{"spec.providerRef.name: required value"}},
		{"providerRef kind", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {providerRef: {name: t, kind: EC2NodeClass}}\n",
			[]string{`spec.providerRef.kind: unsupported value "EC2NodeClass": supported values: AWSNodeTemplate`}},
		{"providerRef apiVersion", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {providerRef: {name: t, apiVersion: karpenter.k8s.aws/v1}}\n",
			[]string{`spec.providerRef.apiVersion: unsupported value "karpenter.k8s.aws/v1": supported values: karpenter.k8s.aws/v1alpha1`}},
		{"inline provider is validated", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {provider: {securityGroupSelector: {a: b}}}\n",
			[]string{"spec.provider.subnetSelector: required value"}},
		{"inline provider fields are strict", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {provider: {subnetSelecter: {a: b}}}\n",
			[]string{"spec.provider.subnetSelecter: unknown field"}},
		{"labels: provisioner-name restricted", provisioner("labels: {karpenter.sh/provisioner-name: x}"), []string{`spec.labels[karpenter.sh/provisioner-name]: label "karpenter.sh/provisioner-name" is restricted`}},
		{"labels: key qualified name", provisioner(`labels: {"a b": x}`), []string{"spec.labels[a b]: invalid key: name part must consist of alphanumeric characters..."}},
		{"labels: value", provisioner(`labels: {a: "x y"}`), []string{`spec.labels[a]: invalid value "x y": a valid label must be...`}},
		{"labels: kubernetes.io restricted", provisioner(`labels: {example.kubernetes.io/x: z}`),
			[]string{`spec.labels[example.kubernetes.io/x]: label domain "kubernetes.io" is restricted; use a well-known label or a custom label outside kubernetes.io, k8s.io, karpenter.sh, karpenter.k8s.aws`}},
		{"labels: k8s.io restricted but kops exception is exact", provisioner(`labels: {x.kops.k8s.io/x: z}`), []string{`spec.labels[x.kops.k8s.io/x]: label domain "k8s.io" is restricted...`}},
		{"labels: karpenter.k8s.aws restricted unless well-known", provisioner(`labels: {karpenter.k8s.aws/foo: z}`), []string{`spec.labels[karpenter.k8s.aws/foo]: label domain "karpenter.k8s.aws" is restricted...`}},
		{"labels: hostname restricted", provisioner(`labels: {kubernetes.io/hostname: z}`), []string{`spec.labels[kubernetes.io/hostname]: label domain "kubernetes.io" is restricted...`}},
		{"taints: key required", provisioner("taints: [{effect: NoSchedule}]"), []string{"spec.taints[0].key: required value"}},
		{"taints: key qualified", provisioner("taints: [{key: 'a b', effect: NoSchedule}]"), []string{`spec.taints[0].key: invalid value "a b": name part must consist of...`}},
		{"taints: value qualified", provisioner("taints: [{key: a, value: 'x y', effect: NoSchedule}]"), []string{`spec.taints[0].value: invalid value "x y": name part must consist of...`}},
		{"taints: effect", provisioner("taints: [{key: a, effect: NoRun}]"), []string{`spec.taints[0].effect: unsupported value "NoRun": supported values: NoSchedule, PreferNoSchedule, NoExecute`}},
		{"taints: effect required", provisioner("taints: [{key: a}]"), []string{"spec.taints[0].effect: required value"}},
		{"taints: key/effect unique across startupTaints", provisioner("taints: [{key: a, effect: NoSchedule}]\nstartupTaints: [{key: a, value: b, effect: NoSchedule}]"),
			[]string{"spec.startupTaints[0]: duplicate taint key/effect pair a:NoSchedule"}},
		{"requirements: operator", provisioner("requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}, {key: karpenter.sh/capacity-type, operator: Inn, values: [spot]}]"),
			[]string{`spec.requirements[1].operator: unsupported value "Inn": supported values: In, NotIn, Exists, DoesNotExist, Gt, Lt`}},
		{"requirements: Gte is v1 only", provisioner("requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['2']}]"),
			[]string{`spec.requirements[0].operator: unsupported value "Gte": supported values: In, NotIn, Exists, DoesNotExist, Gt, Lt`}},
		{"requirements: provisioner-name restricted", provisioner("requirements: [{key: karpenter.sh/provisioner-name, operator: In, values: [x]}]"),
			[]string{`spec.requirements[0].key: label "karpenter.sh/provisioner-name" is restricted`}},
		{"requirements: restricted domain", provisioner("requirements: [{key: karpenter.sh/foo, operator: Exists}]"),
			[]string{`spec.requirements[0].key: label domain "karpenter.sh" is restricted...`}},
		{"requirements: hostname restricted", provisioner("requirements: [{key: kubernetes.io/hostname, operator: Exists}]"),
			[]string{`spec.requirements[0].key: label domain "kubernetes.io" is restricted...`}},
		{"requirements: key qualified", provisioner("requirements: [{key: 'a b', operator: Exists}]"), []string{`spec.requirements[0].key: invalid value "a b": name part must consist of...`}},
		{"requirements: values are label values", provisioner("requirements: [{key: team, operator: In, values: ['a b']}]"), []string{`spec.requirements[0].values[0]: invalid value "a b": a valid label must be...`}},
		{"requirements: In needs values", provisioner("requirements: [{key: team, operator: In}]"), []string{"spec.requirements[0].values: operator In needs at least one value"}},
		{"requirements: Gt needs one value", provisioner("requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ['1', '2']}]"),
			[]string{"spec.requirements[0].values: operator Gt needs a single non-negative integer value"}},
		{"requirements: Lt needs an integer", provisioner("requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: [four]}]"),
			[]string{"spec.requirements[0].values: operator Lt needs a single non-negative integer value"}},
		{"requirements: Gt not negative", provisioner("requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ['-1']}]"),
			[]string{`spec.requirements[0].values[0]: invalid value "-1": a valid label must be...`, "spec.requirements[0].values: operator Gt needs a single non-negative integer value"}},
		{"kubelet: eviction signal", provisioner("kubeletConfiguration: {evictionHard: {memory.free: 5%}}"),
			[]string{`spec.kubeletConfiguration.evictionHard[memory.free]: unsupported value "memory.free": supported values: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available`}},
		{"kubelet: percentage parses", provisioner("kubeletConfiguration: {evictionHard: {memory.available: x%}}"), []string{`spec.kubeletConfiguration.evictionHard[memory.available]: invalid value "x%": not a percentage`}},
		{"kubelet: percentage at most 100", provisioner("kubeletConfiguration: {evictionHard: {memory.available: 101%}}"),
			[]string{`spec.kubeletConfiguration.evictionHard[memory.available]: invalid value "101%": percentage must be between 0 and 100`}},
		{"kubelet: percentage not negative", provisioner("kubeletConfiguration: {evictionHard: {memory.available: -1%}}"),
			[]string{`spec.kubeletConfiguration.evictionHard[memory.available]: invalid value "-1%": percentage must be between 0 and 100`}},
		{"kubelet: threshold quantity", provisioner("kubeletConfiguration: {evictionHard: {memory.available: lots}}"),
			[]string{`spec.kubeletConfiguration.evictionHard[memory.available]: invalid value "lots": must be a percentage or a resource quantity`}},
		{"kubelet: evictionSoft needs a grace period", provisioner("kubeletConfiguration: {evictionSoft: {memory.available: 5%}}"),
			[]string{"spec.kubeletConfiguration.evictionSoft[memory.available]: has no matching evictionSoftGracePeriod"}},
		{"kubelet: grace period needs evictionSoft", provisioner("kubeletConfiguration: {evictionSoftGracePeriod: {memory.available: 1m}}"),
			[]string{"spec.kubeletConfiguration.evictionSoftGracePeriod[memory.available]: has no matching evictionSoft"}},
		{"kubelet: grace period signal", provisioner("kubeletConfiguration: {evictionSoft: {memory.free: 5%}, evictionSoftGracePeriod: {memory.free: 1m}}"),
			[]string{`spec.kubeletConfiguration.evictionSoft[memory.free]: unsupported value "memory.free"...`, `spec.kubeletConfiguration.evictionSoftGracePeriod[memory.free]: unsupported value "memory.free"...`}},
		{"kubelet: reserved resources", provisioner("kubeletConfiguration: {kubeReserved: {nvidia.com/gpu: '1'}}"),
			[]string{`spec.kubeletConfiguration.kubeReserved[nvidia.com/gpu]: unsupported value "nvidia.com/gpu": supported values: cpu, memory, ephemeral-storage, pid`}},
		{"kubelet: reserved not negative", provisioner("kubeletConfiguration: {systemReserved: {cpu: '-1'}}"), []string{`spec.kubeletConfiguration.systemReserved[cpu]: invalid value "-1": must not be negative`}},
		{"kubelet: maxPods not negative", provisioner("kubeletConfiguration: {maxPods: -1}"), []string{"spec.kubeletConfiguration.maxPods: invalid value -1: must not be negative"}},
		{"kubelet: podsPerCore not negative", provisioner("kubeletConfiguration: {podsPerCore: -1}"), []string{"spec.kubeletConfiguration.podsPerCore: invalid value -1: must not be negative"}},
		{"kubelet: image GC percent", provisioner("kubeletConfiguration: {imageGCLowThresholdPercent: 101}"),
			[]string{"spec.kubeletConfiguration.imageGCLowThresholdPercent: invalid value 101: must be between 0 and 100"}},
		{"kubelet: image GC high above low", provisioner("kubeletConfiguration: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}"),
			[]string{"spec.kubeletConfiguration.imageGCHighThresholdPercent: must be greater than imageGCLowThresholdPercent"}},
		{"unknown fields are refused", provisioner("ttlSecondsAfterEmtpy: 30"), []string{"spec.ttlSecondsAfterEmtpy: unknown field"}},
		{"field names are case-sensitive", provisioner("TTLSecondsAfterEmpty: 30"), []string{"spec.TTLSecondsAfterEmpty: unknown field"}},
		{"wrong types are refused", provisioner("ttlSecondsAfterEmpty: soon"), []string{"spec.ttlSecondsAfterEmpty: invalid type: got JSON string, want an integer"}},
		{"a quantity that does not decode is named", provisioner("limits: {resources: {cpu: lots}}"),
			[]string{`spec.limits.resources[cpu]: invalid value "lots": quantities must match the regular expression...`}},
		{"status is not checked", provisioner("") + "status: {resources: {cpu: '4'}, somethingNew: 1}\n", nil},
	})
}

func template(spec string) string {
	return "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata:\n  name: t\nspec:\n" + indent(spec, "  ")
}

const sel = "subnetSelector: {k: v}\nsecurityGroupSelector: {k: v}\n"

func TestAWSNodeTemplateRules(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"valid with every field", template(sel + `
amiFamily: Bottlerocket
amiSelector: {aws-ids: "ami-123,ami-456"}
userData: "[settings]"
instanceProfile: p
tags: {a: b}
context: c
detailedMonitoring: true
metadataOptions: {httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 3, httpTokens: optional}
blockDeviceMappings:
  - deviceName: /dev/xvda
    ebs: {volumeSize: 1G, volumeType: gp3, encrypted: true, deleteOnTermination: true, iops: 3000, throughput: 125, kmsKeyID: k}
  - deviceName: /dev/xvdb
    ebs: {snapshotID: snap-1}
  - deviceName: /dev/xvdc
    ebs: {volumeSize: 64T}
`), nil},
		{"subnetSelector required", template("securityGroupSelector: {k: v}"), []string{"spec.subnetSelector: required value"}},
		{"subnetSelector empty value", template("subnetSelector: {k: ''}\nsecurityGroupSelector: {k: v}"),
			[]string{"spec.subnetSelector[k]: empty selector keys and values are not supported"}},
		{"subnetSelector aws-ids", template("subnetSelector: {aws-ids: 'subnet-1,sg-2'}\nsecurityGroupSelector: {k: v}"),
			[]string{`spec.subnetSelector[aws-ids]: invalid value "sg-2": must be a valid subnet id (regex: ^subnet-[0-9a-z]+$)`}},
		{"securityGroupSelector required", template("subnetSelector: {k: v}"), []string{"spec.securityGroupSelector: required value"}},
		{"securityGroupSelector aws-ids", template("subnetSelector: {k: v}\nsecurityGroupSelector: {aws-ids: subnet-1}"),
			[]string{`spec.securityGroupSelector[aws-ids]: invalid value "subnet-1": must be a valid security group id (regex: ^sg-[0-9a-z]+$)`}},
		{"launchTemplate makes securityGroupSelector optional", template("subnetSelector: {k: v}\nlaunchTemplate: lt"), nil},
		{"launchTemplate excludes securityGroupSelector", template(sel + "launchTemplate: lt"), []string{"spec: launchTemplate and securityGroupSelector are mutually exclusive"}},
		{"launchTemplate excludes metadataOptions", template("subnetSelector: {k: v}\nlaunchTemplate: lt\nmetadataOptions: {httpTokens: required}"),
			[]string{"spec: launchTemplate and metadataOptions are mutually exclusive"}},
		{"launchTemplate excludes instanceProfile", template("subnetSelector: {k: v}\nlaunchTemplate: lt\ninstanceProfile: p"), []string{"spec: launchTemplate and instanceProfile are mutually exclusive"}},
		{"launchTemplate excludes blockDeviceMappings", template("subnetSelector: {k: v}\nlaunchTemplate: lt\nblockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi}}]"),
			[]string{"spec: launchTemplate and blockDeviceMappings are mutually exclusive"}},
		{"launchTemplate excludes userData", template("subnetSelector: {k: v}\nlaunchTemplate: lt\nuserData: x"), []string{"spec: userData and launchTemplate are mutually exclusive"}},
		{"launchTemplate excludes amiSelector", template("subnetSelector: {k: v}\nlaunchTemplate: lt\namiSelector: {k: v}"), []string{"spec: amiSelector and launchTemplate are mutually exclusive"}},
		{"tags: empty key", template(sel + "tags: {'': v}"), []string{"spec.tags: empty tag keys are not supported"}},
		{"metadata: httpEndpoint", template(sel + "metadataOptions: {httpEndpoint: open}"),
			[]string{`spec.metadataOptions.httpEndpoint: unsupported value "open": supported values: enabled, disabled`}},
		{"metadata: httpProtocolIPv6", template(sel + "metadataOptions: {httpProtocolIPv6: true}"),
			[]string{`spec.metadataOptions.httpProtocolIPv6: invalid type: got JSON bool, want a string`}},
		{"metadata: httpProtocolIPv6 value", template(sel + "metadataOptions: {httpProtocolIPv6: both}"),
			[]string{`spec.metadataOptions.httpProtocolIPv6: unsupported value "both": supported values: enabled, disabled`}},
		{"metadata: hop limit at least 1", template(sel + "metadataOptions: {httpPutResponseHopLimit: 0}"),
			[]string{"spec.metadataOptions.httpPutResponseHopLimit: invalid value 0: must be between 1 and 64"}},
		{"metadata: hop limit at most 64", template(sel + "metadataOptions: {httpPutResponseHopLimit: 65}"),
			[]string{"spec.metadataOptions.httpPutResponseHopLimit: invalid value 65: must be between 1 and 64"}},
		{"metadata: httpTokens", template(sel + "metadataOptions: {httpTokens: maybe}"),
			[]string{`spec.metadataOptions.httpTokens: unsupported value "maybe": supported values: required, optional`}},
		{"amiFamily", template(sel + "amiFamily: AL2023"),
			[]string{`spec.amiFamily: unsupported value "AL2023": supported values: AL2, Bottlerocket, Ubuntu, Windows2019, Windows2022, Custom`}},
		{"Custom needs amiSelector", template(sel + "amiFamily: Custom"), []string{"spec.amiSelector: required value: amiFamily Custom needs an amiSelector"}},
		{"amiSelector empty key", template(sel + "amiSelector: {'': v}"), []string{"spec.amiSelector[]: empty selector keys and values are not supported"}},
		{"amiSelector aws-ids", template(sel + "amiSelector: {aws-ids: 'ami-1, img-2'}"),
			[]string{`spec.amiSelector[aws-ids]: invalid value "img-2": must be a valid ami id (regex: ^ami-[0-9a-z]+$)`}},
		{"block device: deviceName", template(sel + "blockDeviceMappings: [{ebs: {volumeSize: 20Gi}}]"), []string{"spec.blockDeviceMappings[0].deviceName: required value"}},
		{"block device: ebs", template(sel + "blockDeviceMappings: [{deviceName: /dev/xvda}]"), []string{"spec.blockDeviceMappings[0].ebs: required value"}},
		{"block device: volumeType", template(sel + "blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, volumeType: gp4}}]"),
			[]string{`spec.blockDeviceMappings[0].ebs.volumeType: unsupported value "gp4": supported values: standard, io1, io2, gp2, sc1, st1, gp3`}},
		{"block device: volumeSize or snapshot", template(sel + "blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeType: gp3}}]"),
			[]string{"spec.blockDeviceMappings[0].ebs.volumeSize: required value: give volumeSize or snapshotID"}},
		{"block device: at least 1G", template(sel + "blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 999M}}]"),
			[]string{`spec.blockDeviceMappings[0].ebs.volumeSize: invalid value "999M": must be between 1G and 64T`}},
		{"block device: at most 64T", template(sel + "blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 65T}}]"),
			[]string{`spec.blockDeviceMappings[0].ebs.volumeSize: invalid value "65T": must be between 1G and 64T`}},
		{"unknown field", template(sel + "amiSelecter: {k: v}"), []string{"spec.amiSelecter: unknown field"}},
	})
}
