package specs

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/joist-dev/joist/pkg/model"
)

func readSeed(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustDecode(t *testing.T, s string) []Object {
	t.Helper()
	objs, err := Decode([]byte(s), "test.yaml")
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return objs
}

func TestBuildReadsTheSeedManifestsClean(t *testing.T) {
	objs, err := Decode(readSeed(t), "seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, errs := Build(objs)
	if len(errs) != 0 {
		t.Fatalf("Build errors: %v", errs)
	}
	if len(spec.Pools) != 2 || spec.Pools[0].Name != "management" || spec.Pools[1].Name != "service" {
		t.Fatalf("pools = %+v", spec.Pools)
	}
	svc := spec.Pools[1]
	if svc.API != model.APIV1Alpha5 || svc.Label() != model.LabelProvisionerName {
		t.Errorf("service pool API = %q", svc.API)
	}
	if svc.NodeClass != "service-lt" || spec.NodeClasses["service-lt"] == nil {
		t.Errorf("service node class = %q, classes = %v", svc.NodeClass, spec.NodeClasses)
	}
	if svc.Labels["nodeType"] != "service-2023" || len(svc.Taints) != 1 || svc.Taints[0].Key != "service" {
		t.Errorf("service labels/taints = %v %v", svc.Labels, svc.Taints)
	}
	d := svc.Disruption
	if d.ConsolidationPolicy != "WhenEmpty" || d.ConsolidateAfter == nil || *d.ConsolidateAfter != 30*time.Second {
		t.Errorf("emptiness = %q %v", d.ConsolidationPolicy, d.ConsolidateAfter)
	}
	if d.ExpireAfter == nil || *d.ExpireAfter != 1209600*time.Second {
		t.Errorf("expireAfter = %v", d.ExpireAfter)
	}
	// The seed names instance types, so only os, arch are defaulted
	// (capacity-type is given).
	var keys []string
	for _, r := range svc.Requirements {
		keys = append(keys, r.Key+" "+r.Operator+" "+strings.Join(r.Values, ","))
	}
	want := []string{
		"node.kubernetes.io/instance-type In t3.large,t3.xlarge",
		"topology.kubernetes.io/zone In ap-northeast-2a,ap-northeast-2c",
		"karpenter.sh/capacity-type In on-demand",
		"kubernetes.io/os In linux",
		"kubernetes.io/arch In amd64",
	}
	if strings.Join(keys, "\n") != strings.Join(want, "\n") {
		t.Errorf("requirements:\n%s\nwant:\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
	}
	nc := spec.NodeClasses["service-lt"]
	if nc.AMIFamily != "AL2" || nc.MetadataOptions == nil || nc.MetadataOptions.HTTPPutResponseHopLimit != 2 || nc.MetadataOptions.HTTPTokens != "required" {
		t.Errorf("node class defaults = %+v %+v", nc, nc.MetadataOptions)
	}
	if len(nc.SubnetSelector) != 1 || nc.SubnetSelector[0].Tags["karpenter.sh/discovery/hoon-cluster"] != "*" {
		t.Errorf("subnet selector = %+v", nc.SubnetSelector)
	}
	if len(nc.BlockDeviceMappings) != 1 || nc.BlockDeviceMappings[0].DeviceName != "/dev/xvda" || nc.BlockDeviceMappings[0].EBS.VolumeSize != "20Gi" {
		t.Errorf("block devices = %+v", nc.BlockDeviceMappings)
	}
}

func TestBuildSkipsABadObjectAndServesTheRest(t *testing.T) {
	in := string(readSeed(t)) + `
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: broken
spec:
  providerRef: {name: service-lt}
  requirements:
    - key: kubernetes.io/arch
      operator: In
      values: [amd64]
    - key: karpenter.sh/capacity-type
      operator: Inn
      values: [spot]
  weight: 0
`
	spec, errs := Build(mustDecode(t, in))
	if len(spec.Pools) != 2 {
		t.Errorf("got %d pools, want the 2 valid ones", len(spec.Pools))
	}
	if len(errs) != 1 {
		t.Fatalf("errs = %v, want one object error", errs)
	}
	want := `Provisioner "broken": spec.weight: invalid value 0: must be between 1 and 100
Provisioner "broken": spec.requirements[1].operator: unsupported value "Inn": supported values: In, NotIn, Exists, DoesNotExist, Gt, Lt`
	if errs[0].Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", errs[0], want)
	}
}

func TestBuildReportsPoolsWhoseNodeClassIsMissingOrInvalid(t *testing.T) {
	in := `
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: lost}
spec:
  providerRef: {name: nowhere}
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: badref}
spec:
  providerRef: {name: broken-lt}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: broken-lt}
spec:
  securityGroupSelector: {a: b}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: crossed}
spec:
  template:
    spec:
      requirements: []
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: broken-lt}
`
	spec, errs := Build(mustDecode(t, in))
	if len(spec.Pools) != 0 {
		t.Errorf("pools = %v, want none", spec.Pools)
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`Provisioner "lost": spec.providerRef.name: AWSNodeTemplate "nowhere" not found`,
		`Provisioner "badref": spec.providerRef.name: AWSNodeTemplate "broken-lt" is invalid`,
		`AWSNodeTemplate "broken-lt": spec.subnetSelector: required value`,
		`NodePool "crossed": spec.template.spec.nodeClassRef.name: EC2NodeClass "broken-lt" not found`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBuildRejectsDuplicateNames(t *testing.T) {
	in := `
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: same}
spec:
  provider: {subnetSelector: {a: b}, securityGroupSelector: {a: b}}
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: same}
spec:
  provider: {subnetSelector: {a: b}, securityGroupSelector: {a: b}}
`
	spec, errs := Build(mustDecode(t, in))
	if len(spec.Pools) != 0 || len(errs) != 2 {
		t.Fatalf("pools = %v, errs = %v", spec.Pools, errs)
	}
	if !strings.Contains(errs[0].Error(), `Provisioner "same": metadata.name: pool name "same" is defined 2 times`) {
		t.Errorf("err = %v", errs[0])
	}
}

func TestBuildGivesAnInlineProviderItsOwnNodeClass(t *testing.T) {
	in := `
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: legacy}
spec:
  provider:
    subnetSelector: {karpenter.sh/discovery: c}
    securityGroupSelector: {karpenter.sh/discovery: c}
    amiFamily: Bottlerocket
`
	spec, errs := Build(mustDecode(t, in))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	p := spec.Pools[0]
	nc := spec.NodeClasses[p.NodeClass]
	if p.NodeClass != "provisioner:legacy" || nc == nil || nc.AMIFamily != "Bottlerocket" || len(nc.BlockDeviceMappings) != 2 {
		t.Fatalf("pool node class %q = %+v", p.NodeClass, nc)
	}
}

// TestBuildPoolsThatRequireAReservationLaunchOnlyReserved: a NodePool
// that requires a capacity reservation's id or type can only launch into
// a reservation (no bought node carries those labels), so its model
// requires the reserved capacity type too; a pool that only excludes
// one is unchanged.
func TestBuildPoolsThatRequireAReservationLaunchOnlyReserved(t *testing.T) {
	const class = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: nc}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {k: v}}]
  securityGroupSelectorTerms: [{tags: {k: v}}]
  capacityReservationSelectorTerms: [{tags: {team: ml}}]
`
	pool := func(req string) string {
		return class + `---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: p}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: nc}
      requirements:
      - ` + req + "\n"
	}
	for _, tc := range []struct {
		name, req string
		reserved  bool
	}{
		{"a reservation id", `{key: karpenter.k8s.aws/capacity-reservation-id, operator: In, values: [cr-0123456789abcdef0]}`, true},
		{"a reservation type", `{key: karpenter.k8s.aws/capacity-reservation-type, operator: Exists}`, true},
		{"no reservation", `{key: karpenter.k8s.aws/capacity-reservation-id, operator: DoesNotExist}`, false},
		{"a zone", `{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := Build(mustDecode(t, pool(tc.req)))
			if len(errs) > 0 || len(spec.Pools) != 1 {
				t.Fatalf("errs %v, %d pools", errs, len(spec.Pools))
			}
			got := false
			for _, r := range spec.Pools[0].Requirements {
				got = got || r.Key == model.LabelCapacityType && r.Operator == "In" && len(r.Values) == 1 && r.Values[0] == model.CapacityTypeReserved
			}
			if got != tc.reserved {
				t.Fatalf("requirements %+v: capacity type reserved only = %v, want %v", spec.Pools[0].Requirements, got, tc.reserved)
			}
		})
	}
}
