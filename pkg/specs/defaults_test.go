package specs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/joist-dev/joist/pkg/model"
)

// buildOne builds a document set and fails on any error.
func buildOne(t *testing.T, doc string) *model.Spec {
	t.Helper()
	spec, errs := Build(mustDecode(t, doc))
	if len(errs) != 0 {
		t.Fatalf("Build: %v", errs)
	}
	return spec
}

const awsTemplateT = "\n---\napiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata: {name: t}\nspec: {subnetSelector: {k: v}, securityGroupSelector: {k: v}}\n"

func reqStrings(reqs []model.Requirement) string {
	var out []string
	for _, r := range reqs {
		s := r.Key + " " + r.Operator + " " + strings.Join(r.Values, ",")
		if r.MinValues != nil {
			s += " min=" + itoa(*r.MinValues)
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestProvisionerRequirementDefaults(t *testing.T) {
	tests := []struct {
		name string
		reqs string
		want string
	}{
		{"nothing given: linux, amd64, on-demand, current c/m/r", "[]",
			"kubernetes.io/os In linux; kubernetes.io/arch In amd64; karpenter.sh/capacity-type In on-demand; karpenter.k8s.aws/instance-category In c,m,r; karpenter.k8s.aws/instance-generation Gt 2"},
		{"instance types given: no category or generation", "[{key: node.kubernetes.io/instance-type, operator: In, values: [t3.large]}]",
			"node.kubernetes.io/instance-type In t3.large; kubernetes.io/os In linux; kubernetes.io/arch In amd64; karpenter.sh/capacity-type In on-demand"},
		{"family given", "[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]",
			"karpenter.k8s.aws/instance-family In m5; kubernetes.io/os In linux; kubernetes.io/arch In amd64; karpenter.sh/capacity-type In on-demand"},
		{"category given", "[{key: karpenter.k8s.aws/instance-category, operator: In, values: [t]}]",
			"karpenter.k8s.aws/instance-category In t; kubernetes.io/os In linux; kubernetes.io/arch In amd64; karpenter.sh/capacity-type In on-demand"},
		{"generation given", "[{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ['5']}]",
			"karpenter.k8s.aws/instance-generation Gt 5; kubernetes.io/os In linux; kubernetes.io/arch In amd64; karpenter.sh/capacity-type In on-demand"},
		{"deprecated keys count and are normalised", "[{key: beta.kubernetes.io/arch, operator: In, values: [arm64]}, {key: beta.kubernetes.io/instance-type, operator: In, values: [m6g.large]}]",
			"kubernetes.io/arch In arm64; node.kubernetes.io/instance-type In m6g.large; kubernetes.io/os In linux; karpenter.sh/capacity-type In on-demand"},
		{"os, arch and capacity type given", "[{key: kubernetes.io/os, operator: In, values: [windows]}, {key: kubernetes.io/arch, operator: Exists}, {key: karpenter.sh/capacity-type, operator: In, values: [spot]}, {key: node.kubernetes.io/instance-type, operator: Exists}]",
			"kubernetes.io/os In windows; kubernetes.io/arch Exists ; karpenter.sh/capacity-type In spot; node.kubernetes.io/instance-type Exists "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := buildOne(t, "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {providerRef: {name: t}, requirements: "+tc.reqs+"}"+awsTemplateT)
			if got := reqStrings(spec.Pools[0].Requirements); got != tc.want {
				t.Errorf("requirements:\n  %s\nwant:\n  %s", got, tc.want)
			}
		})
	}
}

func TestProvisionerDisruptionMapping(t *testing.T) {
	d := func(s string) *time.Duration { v, _ := time.ParseDuration(s); return &v }
	tests := []struct {
		name        string
		spec        string
		policy      string
		after, life *time.Duration
	}{
		{"ttlSecondsAfterEmpty is WhenEmpty after that long", "ttlSecondsAfterEmpty: 30", "WhenEmpty", d("30s"), nil},
		{"consolidation is WhenEmptyOrUnderutilized at once", "consolidation: {enabled: true}", "WhenEmptyOrUnderutilized", d("0s"), nil},
		{"neither never consolidates", "consolidation: {enabled: false}", "WhenEmpty", nil, nil},
		{"ttlSecondsUntilExpired is expireAfter", "ttlSecondsUntilExpired: 1209600", "WhenEmpty", nil, d("336h")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := buildOne(t, "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec:\n  providerRef: {name: t}\n  "+tc.spec+awsTemplateT)
			got := spec.Pools[0].Disruption
			if got.ConsolidationPolicy != tc.policy || !sameDuration(got.ConsolidateAfter, tc.after) || !sameDuration(got.ExpireAfter, tc.life) {
				t.Errorf("disruption = %s %v %v, want %s %v %v", got.ConsolidationPolicy, got.ConsolidateAfter, got.ExpireAfter, tc.policy, tc.after, tc.life)
			}
			if len(got.Budgets) != 1 || got.Budgets[0].Nodes != "100%" {
				t.Errorf("budgets = %+v, want one unlimited budget", got.Budgets)
			}
		})
	}
}

func sameDuration(a, b *time.Duration) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func TestProvisionerFieldsMapOntoThePool(t *testing.T) {
	spec := buildOne(t, `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: p}
spec:
  providerRef: {name: t}
  labels: {team: a}
  annotations: {note: b}
  startupTaints: [{key: s, effect: NoSchedule}]
  limits: {resources: {cpu: "100"}}
  weight: 7
  kubeletConfiguration:
    clusterDNS: [10.0.0.10]
    containerRuntime: containerd
    maxPods: 50
    systemReserved: {memory: 1Gi}
    evictionSoft: {memory.available: 10%}
    evictionSoftGracePeriod: {memory.available: 90s}
`+awsTemplateT)
	p := spec.Pools[0]
	if p.Weight != 7 || p.Labels["team"] != "a" || p.Annotations["note"] != "b" || len(p.StartupTaints) != 1 || p.Limits.Cpu().String() != "100" {
		t.Errorf("pool = %+v", p)
	}
	k := p.Kubelet
	if k == nil || *k.MaxPods != 50 || k.ContainerRuntime != "containerd" || k.SystemReserved["memory"] != "1Gi" || k.EvictionSoftGracePeriod["memory.available"] != "1m30s" || k.ClusterDNS[0] != "10.0.0.10" {
		t.Errorf("kubelet = %+v", k)
	}
	if spec.NodeClasses["t"].Kubelet != nil {
		t.Errorf("a v1alpha1 node class carries no kubelet")
	}
}

func TestAWSNodeTemplateDefaults(t *testing.T) {
	tests := []struct {
		name     string
		extra    string
		metadata string
		devices  string
		ami      string
	}{
		{"AL2: hop limit 2, 20Gi gp3 root, latest AL2", "", "enabled disabled 2 required", "/dev/xvda 20Gi gp3 true", "alias=al2@latest"},
		{"partial metadata takes EC2's defaults", "metadataOptions: {httpTokens: required}", "enabled disabled 1 required", "/dev/xvda 20Gi gp3 true", "alias=al2@latest"},
		{"Bottlerocket: 4Gi OS and 20Gi data volumes", "amiFamily: Bottlerocket", "enabled disabled 2 required", "/dev/xvda 4Gi gp3 true; /dev/xvdb 20Gi gp3 true", "alias=bottlerocket@latest"},
		{"Ubuntu: /dev/sda1", "amiFamily: Ubuntu", "enabled disabled 2 required", "/dev/sda1 20Gi gp3 true", ""},
		{"Windows: 50Gi", "amiFamily: Windows2022", "enabled disabled 2 required", "/dev/sda1 50Gi gp3 true", "alias=windows2022@latest"},
		{"Custom: the AMI's own volumes", "amiFamily: Custom\namiSelector: {aws::name: my-ami, aws::owners: 'self,123456789012'}", "enabled disabled 2 required", "", "name=my-ami owner=self; name=my-ami owner=123456789012"},
		{"given volumes replace the defaults", "blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 100G, volumeType: io2}}]", "enabled disabled 2 required", "/dev/xvda 100G io2 <nil>", "alias=al2@latest"},
		{"launch template: no defaults", "launchTemplate: lt", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sg := "securityGroupSelector: {k: v}\n"
			if strings.Contains(tc.extra, "launchTemplate") {
				sg = ""
			}
			spec := buildOne(t, "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata: {name: t}\nspec:\n"+indent("subnetSelector: {k: v}\n"+sg+tc.extra, "  "))
			nc := spec.NodeClasses["t"]
			if got := metadataString(nc.MetadataOptions); got != tc.metadata {
				t.Errorf("metadata = %q, want %q", got, tc.metadata)
			}
			if got := devicesString(nc.BlockDeviceMappings); got != tc.devices {
				t.Errorf("devices = %q, want %q", got, tc.devices)
			}
			if got := termsString(nc.AMISelector); got != tc.ami {
				t.Errorf("ami = %q, want %q", got, tc.ami)
			}
		})
	}
}

func metadataString(m *model.MetadataOptions) string {
	if m == nil {
		return ""
	}
	return m.HTTPEndpoint + " " + m.HTTPProtocolIPv6 + " " + itoa(int(m.HTTPPutResponseHopLimit)) + " " + m.HTTPTokens
}

func devicesString(bdms []model.BlockDeviceMapping) string {
	var out []string
	for _, b := range bdms {
		enc := "<nil>"
		if b.EBS.Encrypted != nil {
			enc = map[bool]string{true: "true", false: "false"}[*b.EBS.Encrypted]
		}
		out = append(out, b.DeviceName+" "+b.EBS.VolumeSize+" "+b.EBS.VolumeType+" "+enc)
	}
	return strings.Join(out, "; ")
}

func termsString(terms []model.SelectorTerm) string {
	var out []string
	for _, t := range terms {
		var parts []string
		for _, kv := range [][2]string{{"alias", t.Alias}, {"id", t.ID}, {"name", t.Name}, {"owner", t.Owner}, {"ssm", t.SSMParameter}} {
			if kv[1] != "" {
				parts = append(parts, kv[0]+"="+kv[1])
			}
		}
		for _, k := range sortedKeys(t.Tags) {
			parts = append(parts, "tag:"+k+"="+t.Tags[k])
		}
		out = append(out, strings.Join(parts, " "))
	}
	return strings.Join(out, "; ")
}

func TestV1Alpha1SelectorsBecomeTerms(t *testing.T) {
	spec := buildOne(t, `apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: t}
spec:
  subnetSelector: {aws-ids: "subnet-1, subnet-2", tier: private}
  securityGroupSelector: {aws::ids: sg-1}
  amiSelector: {team: a, aws::name: img}
`)
	nc := spec.NodeClasses["t"]
	if got, want := termsString(nc.SubnetSelector), "id=subnet-1 tag:tier=private; id=subnet-2 tag:tier=private"; got != want {
		t.Errorf("subnets = %q, want %q", got, want)
	}
	if got, want := termsString(nc.SecurityGroupSelector), "id=sg-1"; got != want {
		t.Errorf("security groups = %q, want %q", got, want)
	}
	if got, want := termsString(nc.AMISelector), "name=img tag:team=a"; got != want {
		t.Errorf("amis = %q, want %q", got, want)
	}
}

const ec2NodeClassHead = "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: nc}\nspec:\n  subnetSelectorTerms: [{tags: {k: v}}]\n  securityGroupSelectorTerms: [{tags: {k: v}}]\n  role: r\n"

func TestEC2NodeClassDefaults(t *testing.T) {
	tests := []struct {
		name, extra, metadata, devices, family string
	}{
		{"AL2023 alias: hop limit 1, 20Gi", "amiSelectorTerms: [{alias: al2023@latest}]", "enabled disabled 1 required", "/dev/xvda 20Gi gp3 true", "AL2023"},
		{"family from the alias", "amiSelectorTerms: [{alias: bottlerocket@v1.20.0}]", "enabled disabled 1 required", "/dev/xvda 6Gi gp3 true; /dev/xvdb 20Gi gp3 true", "Bottlerocket"},
		{"Windows 50Gi", "amiSelectorTerms: [{alias: windows2025@latest}]", "enabled disabled 1 required", "/dev/sda1 50Gi gp3 true", "Windows2025"},
		{"Custom: the AMI's own volumes", "amiSelectorTerms: [{id: ami-1}]\namiFamily: Custom", "enabled disabled 1 required", "", "Custom"},
		{"partial metadata filled field by field", "amiSelectorTerms: [{alias: al2@latest}]\nmetadataOptions: {httpPutResponseHopLimit: 2}", "enabled disabled 2 required", "/dev/xvda 20Gi gp3 true", "AL2"},
		{"explicit family overrides the alias' volumes", "amiSelectorTerms: [{alias: al2023@latest}]\namiFamily: Custom", "enabled disabled 1 required", "", "Custom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := buildOne(t, ec2NodeClassHead+indent(tc.extra, "  "))
			nc := spec.NodeClasses["nc"]
			if got := metadataString(nc.MetadataOptions); got != tc.metadata {
				t.Errorf("metadata = %q, want %q", got, tc.metadata)
			}
			if got := devicesString(nc.BlockDeviceMappings); got != tc.devices {
				t.Errorf("devices = %q, want %q", got, tc.devices)
			}
			if nc.AMIFamily != tc.family {
				t.Errorf("family = %q, want %q", nc.AMIFamily, tc.family)
			}
		})
	}
}

func TestNodePoolDefaultsAndMapping(t *testing.T) {
	tests := []struct {
		name           string
		spec, tmpl     string
		policy         string
		after, expire  *time.Duration
		tgp            *time.Duration
		budgets        string
		kubeletMaxPods int32
	}{
		{name: "defaults: 720h, 0s, WhenEmptyOrUnderutilized, 10%", policy: "WhenEmptyOrUnderutilized", after: ptrTo(time.Duration(0)), expire: ptrTo(720 * time.Hour), budgets: "10%"},
		{name: "Never is nil", spec: "disruption: {consolidateAfter: Never}", tmpl: "expireAfter: Never", policy: "WhenEmptyOrUnderutilized", budgets: "10%"},
		{name: "explicit empty budgets stay empty", spec: "disruption: {budgets: []}", policy: "WhenEmptyOrUnderutilized", after: ptrTo(time.Duration(0)), expire: ptrTo(720 * time.Hour), budgets: ""},
		{name: "budget nodes default to 10%", spec: "disruption: {budgets: [{reasons: [Empty]}, {nodes: '0', schedule: '@daily', duration: 1h30m}]}", policy: "WhenEmptyOrUnderutilized",
			after: ptrTo(time.Duration(0)), expire: ptrTo(720 * time.Hour), budgets: "10% Empty; 0 @daily 1h30m0s"},
		{name: "given values", spec: "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 1h5m}", tmpl: "expireAfter: 24h\nterminationGracePeriod: 30m",
			policy: "WhenEmpty", after: ptrTo(65 * time.Minute), expire: ptrTo(24 * time.Hour), tgp: ptrTo(30 * time.Minute), budgets: "10%"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := nodePool(tc.tmpl, tc.spec) + "---\n" + ec2NodeClassHead + "  amiSelectorTerms: [{alias: al2023@latest}]\n  kubelet: {maxPods: 58, serializeImagePulls: false}\n"
			spec := buildOne(t, doc)
			d := spec.Pools[0].Disruption
			if d.ConsolidationPolicy != tc.policy || !sameDuration(d.ConsolidateAfter, tc.after) || !sameDuration(d.ExpireAfter, tc.expire) || !sameDuration(d.TerminationGracePeriod, tc.tgp) {
				t.Errorf("disruption = %s %v %v %v", d.ConsolidationPolicy, d.ConsolidateAfter, d.ExpireAfter, d.TerminationGracePeriod)
			}
			var bs []string
			for _, b := range d.Budgets {
				s := b.Nodes
				if b.Schedule != "" {
					s += " " + b.Schedule + " " + b.Duration.String()
				}
				if len(b.Reasons) > 0 {
					s += " " + strings.Join(b.Reasons, ",")
				}
				bs = append(bs, s)
			}
			if got := strings.Join(bs, "; "); got != tc.budgets {
				t.Errorf("budgets = %q, want %q", got, tc.budgets)
			}
			// The node class kubelet is copied onto the pool for sizing.
			p, nc := spec.Pools[0], spec.NodeClasses["nc"]
			if p.Kubelet == nil || *p.Kubelet.MaxPods != 58 || nc.Kubelet == nil || nc.Kubelet.Extra["serializeImagePulls"] != false {
				t.Errorf("pool kubelet = %+v, class kubelet = %+v", p.Kubelet, nc.Kubelet)
			}
			if p.API != model.APIV1 || p.NodeClass != "nc" {
				t.Errorf("pool = %+v", p)
			}
		})
	}
}

func TestNodePoolTemplateMapsOntoThePool(t *testing.T) {
	doc := strings.Replace(nodePool("requirements: [{key: beta.kubernetes.io/arch, operator: In, values: [arm64]}, {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5], minValues: 2}]", "limits: {cpu: '10', nodes: '3'}\nweight: 9"),
		"    spec:\n", "    metadata: {labels: {team: a}, annotations: {note: b}}\n    spec:\n", 1) +
		"---\n" + ec2NodeClassHead + "  amiSelectorTerms: [{alias: al2023@latest}]\n  kubelet: {maxPods: 'vcpus * 8'}\n"
	spec := buildOne(t, doc)
	p := spec.Pools[0]
	if got, want := reqStrings(p.Requirements), "kubernetes.io/arch In arm64; karpenter.k8s.aws/instance-family In m5,c5 min=2"; got != want {
		t.Errorf("requirements = %q, want %q", got, want)
	}
	if p.Weight != 9 || p.Labels["team"] != "a" || p.Annotations["note"] != "b" || p.Limits.Name("nodes", "").String() != "3" {
		t.Errorf("pool = %+v", p)
	}
	if p.Kubelet == nil || p.Kubelet.MaxPods != nil || p.Kubelet.MaxPodsExpression != "vcpus * 8" {
		t.Errorf("kubelet = %+v, want the maxPods expression kept", p.Kubelet)
	}
}
