package specs

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/joist-dev/joist/pkg/model"
)

// comparable strips what legitimately differs between the two API
// generations of the same pools: the API field (it picks the node label),
// and the node class kubelet (v1 keeps it there, v1alpha5 on the pool).
func comparable(t *testing.T, s *model.Spec) string {
	t.Helper()
	for _, p := range s.Pools {
		p.API = ""
	}
	for _, nc := range s.NodeClasses {
		nc.API = ""
		nc.Kubelet = nil
		nc.InstanceProfile = ""
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func convertAndRebuild(t *testing.T, in []Object, opts ConvertOptions) (before, after *model.Spec, conv *Converted) {
	t.Helper()
	before, errs := Build(in)
	if len(errs) != 0 {
		t.Fatalf("input does not build: %v", errs)
	}
	conv, errs = ConvertToV1(in, opts)
	if len(errs) != 0 {
		t.Fatalf("ConvertToV1: %v", errs)
	}
	out, err := conv.YAML()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(out, "converted.yaml")
	if err != nil {
		t.Fatalf("converted YAML does not decode: %v\n%s", err, out)
	}
	after, errs = Build(objs)
	if len(errs) != 0 {
		t.Fatalf("converted objects do not validate: %v\n%s", errs, out)
	}
	return before, after, conv
}

func TestConvertedSeedMapsToTheSameModel(t *testing.T) {
	in, err := Decode(readSeed(t), "seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	before, after, conv := convertAndRebuild(t, in, ConvertOptions{InstanceProfile: "KarpenterNodeInstanceProfile-hoon-cluster"})
	for _, p := range after.Pools {
		if p.API != model.APIV1 || p.Label() != model.LabelNodePool {
			t.Errorf("pool %s API = %q", p.Name, p.API)
		}
	}
	if a, b := comparable(t, before), comparable(t, after); a != b {
		t.Errorf("models differ:\nv1alpha5: %s\nv1: %s", a, b)
	}
	if len(conv.NodePools) != 2 || len(conv.EC2NodeClasses) != 2 {
		t.Errorf("converted %d NodePools and %d EC2NodeClasses, want 2 and 2", len(conv.NodePools), len(conv.EC2NodeClasses))
	}
}

func TestConvertedRichSpecsMapToTheSameModel(t *testing.T) {
	in := mustDecodeFile(t, "testdata/v1alpha5-rich.yaml")
	before, after, conv := convertAndRebuild(t, in, ConvertOptions{InstanceProfile: "fallback-profile"})
	// Bottlerocket's data volume list is given explicitly, so it is kept
	// as is; v1 moves the per-pool kubelet onto split node classes, so
	// node classes are compared pool by pool below.
	samePools(t, before, after, []string{"general", "batch", "legacy", "custom"}, func(bc, _ *model.NodeClass) {
		if bc.InstanceProfile == "" {
			bc.InstanceProfile = "fallback-profile"
		}
	})
	wantWarnings := []string{
		`Provisioner "general": kubelet settings differ between the Provisioners sharing AWSNodeTemplate "shared"; v1 keeps them on the node class, so this pool gets its own EC2NodeClass "shared-general"`,
		`Provisioner "batch": kubelet settings differ between the Provisioners sharing AWSNodeTemplate "shared"; v1 keeps them on the node class, so this pool gets its own EC2NodeClass "shared-batch"`,
		`AWSNodeTemplate "legacy": AL2 maps to alias al2@latest, which EKS 1.33 and later refuse; plan a move to al2023@latest`,
	}
	for _, w := range wantWarnings {
		if !containsString(conv.Warnings, w) {
			t.Errorf("missing warning %q in %q", w, conv.Warnings)
		}
	}
}

// samePools checks that each named pool, and its node class, came out of
// a conversion as it went in (node class names aside); align evens out
// what the conversion legitimately changes in a pool's class.
func samePools(t *testing.T, before, after *model.Spec, names []string, align func(before, after *model.NodeClass)) {
	t.Helper()
	for _, name := range names {
		b, a := findPool(before, name), findPool(after, name)
		if b == nil || a == nil {
			t.Fatalf("pool %s missing: before %v, after %v", name, b != nil, a != nil)
		}
		bc, ac := before.NodeClasses[b.NodeClass], after.NodeClasses[a.NodeClass]
		b.NodeClass, a.NodeClass = "", ""
		if x, y := jsonOf(t, b), jsonOf(t, a); x != y {
			t.Errorf("pool %s differs:\nbefore: %s\nv1:     %s", name, x, y)
		}
		bc.Name, ac.Name = "", ""
		if align != nil {
			align(bc, ac)
		}
		if x, y := jsonOf(t, bc), jsonOf(t, ac); x != y {
			t.Errorf("node class of %s differs:\nbefore: %s\nv1:     %s", name, x, y)
		}
	}
}

func TestConvertWarnsAboutWhatV1CannotSay(t *testing.T) {
	in := mustDecode(t, `apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: old}
spec:
  amiFamily: Ubuntu
  subnetSelector: {aws-ids: subnet-1, tier: private}
  launchTemplate: my-lt
  tags: {kubernetes.io/cluster/prod: owned}
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: p}
spec:
  providerRef: {name: old}
  labels: {karpenter.k8s.aws/instance-pods: "29"}
  requirements: [{key: karpenter.k8s.aws/instance-pods, operator: Gt, values: ["20"]}]
  kubeletConfiguration: {containerRuntime: dockerd}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
`)
	conv, errs := ConvertToV1(in, ConvertOptions{})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	want := []string{
		`test.yaml (object 3) Deployment "web": not a spec kind, skipped`,
		`AWSNodeTemplate "old": launchTemplate "my-lt" has no v1 equivalent; set securityGroupSelectorTerms, amiSelectorTerms, userData and role or instanceProfile from it`,
		`AWSNodeTemplate "old": subnetSelector combines aws-ids with tags; v1 selects by id alone, the tags were dropped`,
		`AWSNodeTemplate "old": v1 has no Ubuntu family; converted to amiFamily Custom selecting Canonical's EKS images by name; check the name pattern and user data`,
		`AWSNodeTemplate "old": v1 needs role or instanceProfile; pass --instance-profile (the cluster's default instance profile) or --role`,
		`AWSNodeTemplate "old": tag "kubernetes.io/cluster/prod" dropped, v1 reserves it`,
		`Provisioner "p": label "karpenter.k8s.aws/instance-pods" dropped, v1 refuses it (label domain "karpenter.k8s.aws" is restricted)`,
		`Provisioner "p": requirement on "karpenter.k8s.aws/instance-pods" dropped, v1 refuses it (label domain "karpenter.k8s.aws" is restricted)`,
		`Provisioner "p": kubeletConfiguration.containerRuntime "dockerd" dropped, v1 always uses containerd`,
	}
	if strings.Join(conv.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(conv.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

func TestConvertRefusesInvalidInput(t *testing.T) {
	in := mustDecode(t, provisioner("weight: 0"))
	conv, errs := ConvertToV1(in, ConvertOptions{})
	if len(errs) != 1 || len(conv.Order) != 0 {
		t.Fatalf("errs = %v, converted = %d", errs, len(conv.Order))
	}
}

func TestConvertPassesV1ObjectsThrough(t *testing.T) {
	in := mustDecode(t, nodePool("", ""))
	conv, errs := ConvertToV1(in, ConvertOptions{})
	if len(errs) != 0 || len(conv.NodePools) != 1 || conv.NodePools[0].Name != "np" {
		t.Fatalf("errs = %v, pools = %v", errs, conv.NodePools)
	}
}

func mustDecodeFile(t *testing.T, path string) []Object {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(b, path)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func findPool(s *model.Spec, name string) *model.Pool {
	for _, p := range s.Pools {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// jsonOf renders a pool or node class without its API generation.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	switch x := v.(type) {
	case *model.Pool:
		c := *x
		c.API = ""
		v = c
	case *model.NodeClass:
		c := *x
		c.API = ""
		c.Kubelet = nil
		v = c
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
