package launch

import (
	"strings"
	"testing"
	"time"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/test/ec2sim"
)

func TestAMIParameterNamesWhatAWSPublishes(t *testing.T) {
	amd, arm := "amd64", "arm64"
	tests := []struct {
		name, family, k8s, version string
		key                        ImageKey
		want, wantErr              string
	}{
		{"AL2023 latest x86", FamilyAL2023, "1.32", "latest", ImageKey{amd, VariantStandard},
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/standard/recommended/image_id", ""},
		{"AL2023 latest arm nvidia", FamilyAL2023, "1.33", "latest", ImageKey{arm, VariantNvidia},
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/nvidia/recommended/image_id", ""},
		{"AL2023 neuron", FamilyAL2023, "1.32", "latest", ImageKey{amd, VariantNeuron},
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/neuron/recommended/image_id", ""},
		{"AL2023 pinned", FamilyAL2023, "1.32", "v20240625", ImageKey{amd, VariantStandard},
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.32-v20240625/image_id", ""},
		{"AL2023 empty variant is standard", FamilyAL2023, "1.32", "", ImageKey{arm, ""},
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/arm64/standard/recommended/image_id", ""},
		{"AL2023 has no arm neuron", FamilyAL2023, "1.32", "latest", ImageKey{arm, VariantNeuron}, "", "no arm64 neuron"},
		{"AL2 x86", FamilyAL2, "1.32", "latest", ImageKey{amd, VariantStandard},
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id", ""},
		{"AL2 arm", FamilyAL2, "1.29", "latest", ImageKey{arm, VariantStandard},
			"/aws/service/eks/optimized-ami/1.29/amazon-linux-2-arm64/recommended/image_id", ""},
		{"AL2 gpu", FamilyAL2, "1.32", "latest", ImageKey{amd, VariantNvidia},
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id", ""},
		{"AL2 neuron uses the gpu image", FamilyAL2, "1.32", "latest", ImageKey{amd, VariantNeuron},
			"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id", ""},
		{"AL2 pinned", FamilyAL2, "1.30", "v20240625", ImageKey{amd, VariantStandard},
			"/aws/service/eks/optimized-ami/1.30/amazon-linux-2/amazon-eks-node-1.30-v20240625/image_id", ""},
		{"AL2 pinned arm", FamilyAL2, "1.30", "v20240625", ImageKey{arm, VariantStandard},
			"/aws/service/eks/optimized-ami/1.30/amazon-linux-2-arm64/amazon-eks-arm64-node-1.30-v20240625/image_id", ""},
		{"AL2 pinned gpu", FamilyAL2, "1.30", "v20240625", ImageKey{amd, VariantNvidia},
			"/aws/service/eks/optimized-ami/1.30/amazon-linux-2-gpu/amazon-eks-gpu-node-1.30-v20240625/image_id", ""},
		{"AL2 has no arm gpu", FamilyAL2, "1.32", "latest", ImageKey{arm, VariantNvidia}, "", "no arm64 nvidia"},
		{"AL2 is not published for 1.33", FamilyAL2, "1.33", "latest", ImageKey{amd, VariantStandard}, "", "AL2 is not published for Kubernetes 1.33"},
		{"AL2 is not published for 1.35", FamilyAL2, "1.35", "latest", ImageKey{amd, VariantStandard}, "", "use AL2023 or Bottlerocket"},
		{"Bottlerocket x86", FamilyBottlerocket, "1.32", "latest", ImageKey{amd, VariantStandard},
			"/aws/service/bottlerocket/aws-k8s-1.32/x86_64/latest/image_id", ""},
		{"Bottlerocket nvidia arm", FamilyBottlerocket, "1.32", "latest", ImageKey{arm, VariantNvidia},
			"/aws/service/bottlerocket/aws-k8s-1.32-nvidia/arm64/latest/image_id", ""},
		{"Bottlerocket neuron uses the standard image", FamilyBottlerocket, "1.32", "latest", ImageKey{amd, VariantNeuron},
			"/aws/service/bottlerocket/aws-k8s-1.32/x86_64/latest/image_id", ""},
		{"Bottlerocket pinned drops the v", FamilyBottlerocket, "1.32", "v1.20.3", ImageKey{amd, VariantStandard},
			"/aws/service/bottlerocket/aws-k8s-1.32/x86_64/1.20.3/image_id", ""},
		{"Windows 2019", "Windows2019", "1.32", "latest", ImageKey{amd, VariantStandard},
			"/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.32/image_id", ""},
		{"Windows 2022, any accelerator", "Windows2022", "1.33", "latest", ImageKey{amd, VariantNvidia},
			"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.33/image_id", ""},
		{"Windows 2025", "Windows2025", "1.35", "latest", ImageKey{amd, VariantStandard},
			"/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.35/image_id", ""},
		{"Windows by its alias family", "windows2022", "1.32", "", ImageKey{amd, VariantStandard},
			"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.32/image_id", ""},
		{"Windows has no arm64 AMI", "Windows2022", "1.32", "latest", ImageKey{arm, VariantStandard}, "", "Windows2022 has no arm64 AMI: the EKS optimized Windows AMIs are x86_64 only"},
		{"Windows is published as latest only", "Windows2019", "1.32", "v20240625", ImageKey{amd, VariantStandard}, "", "only the latest"},
		{"Windows 2025 needs Kubernetes 1.35", "Windows2025", "1.34", "latest", ImageKey{amd, VariantStandard}, "", "Windows2025 needs Kubernetes 1.35 or later"},
		{"Custom has no parameter", FamilyCustom, "1.32", "latest", ImageKey{amd, VariantStandard}, "", "give an AMI selector"},
		{"unknown architecture", FamilyAL2023, "1.32", "latest", ImageKey{"s390x", VariantStandard}, "", "unsupported architecture"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AMIParameter(tc.family, tc.k8s, tc.version, tc.key)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("AMIParameter = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseAliasReadsFamilyAndVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    Alias
		wantErr string
	}{
		{"al2023@latest", Alias{FamilyAL2023, "latest"}, ""},
		{"AL2@v20240625", Alias{FamilyAL2, "v20240625"}, ""},
		{"bottlerocket@1.20.3", Alias{FamilyBottlerocket, "1.20.3"}, ""},
		{"windows2022@latest", Alias{"Windows2022", "latest"}, ""},
		{"Windows2019@latest", Alias{"Windows2019", "latest"}, ""},
		{"windows2025@latest", Alias{"Windows2025", "latest"}, ""},
		{"windows2030@latest", Alias{}, "not one Joist bootstraps"},
		{"al2023", Alias{}, "want family@version"},
		{"al2023@", Alias{}, "want family@version"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAlias(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseAlias = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestResolveAMIsByAliasPerArchitectureAndVariant(t *testing.T) {
	e := newEnv(t, "1.32")
	nc := &model.NodeClass{Name: "default", API: model.APIV1, AMIFamily: FamilyAL2023, AMISelector: []model.SelectorTerm{{Alias: "al2023@latest"}}}
	keys := []ImageKey{{"amd64", VariantStandard}, {"arm64", VariantStandard}, {"amd64", VariantNvidia}, {"amd64", VariantNeuron}, {"arm64", VariantNeuron}}
	got, err := e.l.ResolveAMIs(e.ctx, nc, "1.32", keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys[:4] {
		param, _ := AMIParameter(FamilyAL2023, "1.32", "latest", k)
		if got[k].ID != e.images[param] {
			t.Errorf("%s: AMI %s, want %s from %s", k, got[k].ID, e.images[param], param)
		}
	}
	if _, ok := got[ImageKey{"arm64", VariantNeuron}]; ok {
		t.Error("arm64 neuron got an AMI; AL2023 publishes none")
	}
	reads := e.ssm.reads
	if _, err := e.l.ResolveAMIs(e.ctx, nc, "1.32", keys); err != nil {
		t.Fatal(err)
	}
	if e.ssm.reads != reads {
		t.Errorf("a second resolution read SSM %d more times; the parameters are cached", e.ssm.reads-reads)
	}
	e.clock.Step(2 * time.Minute)
	if _, err := e.l.ResolveAMIs(e.ctx, nc, "1.32", keys[:1]); err != nil {
		t.Fatal(err)
	}
	if e.ssm.reads != reads+1 {
		t.Errorf("after the cache TTL, reads = %d, want %d (latest parameters are read again)", e.ssm.reads, reads+1)
	}
}

func TestResolveAMIsForV1Alpha1FamiliesWithoutSelector(t *testing.T) {
	e := newEnv(t, "1.32")
	s := spec(t, `
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: br}
spec:
  amiFamily: Bottlerocket
  subnetSelector: {karpenter.sh/discovery: hoon-cluster}
  securityGroupSelector: {karpenter.sh/discovery: hoon-cluster}
`)
	nc := s.NodeClasses["br"]
	got, err := e.l.ResolveAMIs(e.ctx, nc, "1.32", []ImageKey{{"arm64", VariantStandard}})
	if err != nil {
		t.Fatal(err)
	}
	if want := e.images["/aws/service/bottlerocket/aws-k8s-1.32/arm64/latest/image_id"]; got[ImageKey{"arm64", VariantStandard}].ID != want {
		t.Errorf("AMI = %v, want %s", got, want)
	}
}

func TestResolveAMIsPinnedAliasReadsTheVersionedParameter(t *testing.T) {
	e := newEnv(t, "1.32")
	param := "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.32-v20240625/image_id"
	id := e.sim.AddImage(ec2sim.ImageSpec{Name: "amazon-eks-node-al2023-x86_64-standard-1.32-v20240625", Architecture: "x86_64", OwnerAlias: "amazon"})
	e.ssm.set(param, id)
	nc := &model.NodeClass{Name: "pinned", API: model.APIV1, AMIFamily: FamilyAL2023, AMISelector: []model.SelectorTerm{{Alias: "al2023@v20240625"}}}
	got, err := e.l.ResolveAMIs(e.ctx, nc, "1.32", []ImageKey{{"amd64", VariantStandard}, {"arm64", VariantStandard}})
	if err != nil {
		t.Fatal(err)
	}
	if got[ImageKey{"amd64", VariantStandard}].ID != id {
		t.Errorf("amd64 AMI = %v, want %s", got, id)
	}
	if _, ok := got[ImageKey{"arm64", VariantStandard}]; ok {
		t.Error("arm64 got an AMI although its pinned parameter does not exist")
	}
}

func TestResolveAMIsFailsClearly(t *testing.T) {
	e := newEnv(t, "1.33")
	tests := []struct {
		name    string
		nc      *model.NodeClass
		wantErr string
	}{
		{"AL2 on Kubernetes 1.33", &model.NodeClass{Name: "old", API: model.APIV1Alpha5, AMIFamily: FamilyAL2, AMISelector: []model.SelectorTerm{{Alias: "al2@latest"}}},
			"AL2 is not published for Kubernetes 1.33"},
		{"Custom without a selector", &model.NodeClass{Name: "mine", API: model.APIV1, AMIFamily: FamilyCustom},
			"amiFamily Custom needs spec.amiSelectorTerms"},
		{"a selector matching nothing", &model.NodeClass{Name: "none", API: model.APIV1, AMIFamily: FamilyAL2023, AMISelector: []model.SelectorTerm{{Tags: map[string]string{"team": "nobody"}}}},
			`no image matches spec.amiSelectorTerms {tag team=nobody}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.l.ResolveAMIs(e.ctx, tc.nc, "1.33", []ImageKey{{"amd64", VariantStandard}})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.nc.Name) {
				t.Errorf("err = %v does not name the node class", err)
			}
		})
	}
}

// TestResolveAMIsBySelectorPrefersNewestNotDeprecated: selector terms go
// to DescribeImages (deprecated images included); per architecture the
// newest image that is not deprecated wins, a deprecated one only when
// nothing else matches.
func TestResolveAMIsBySelectorPrefersNewestNotDeprecated(t *testing.T) {
	e := newEnv(t, "1.32")
	day := func(d int) time.Time { return time.Date(2026, 10, d, 0, 0, 0, 0, time.UTC) }
	past := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	team := map[string]string{"team": "web"}
	old := e.sim.AddImage(ec2sim.ImageSpec{Name: "web-1", Architecture: "x86_64", CreationDate: day(1), Tags: team})
	newest := e.sim.AddImage(ec2sim.ImageSpec{Name: "web-3", Architecture: "x86_64", CreationDate: day(20), Tags: team})
	_ = e.sim.AddImage(ec2sim.ImageSpec{Name: "web-4-deprecated", Architecture: "x86_64", CreationDate: day(25), DeprecationTime: past, Tags: team})
	armDeprecated := e.sim.AddImage(ec2sim.ImageSpec{Name: "web-arm", Architecture: "arm64", CreationDate: day(25), DeprecationTime: past, Tags: team})
	_ = e.sim.AddImage(ec2sim.ImageSpec{Name: "other", Architecture: "x86_64", CreationDate: day(30), Tags: map[string]string{"team": "db"}})
	nc := &model.NodeClass{Name: "web", API: model.APIV1, AMIFamily: FamilyAL2023, AMISelector: []model.SelectorTerm{{Tags: map[string]string{"team": "web"}}}}
	got, err := e.l.ResolveAMIs(e.ctx, nc, "1.32", []ImageKey{{"amd64", VariantStandard}, {"amd64", VariantNvidia}, {"arm64", VariantStandard}})
	if err != nil {
		t.Fatal(err)
	}
	if got[ImageKey{"amd64", VariantStandard}].ID != newest || got[ImageKey{"amd64", VariantNvidia}].ID != newest {
		t.Errorf("amd64 AMIs = %v, want the newest non-deprecated %s (not %s)", got, newest, old)
	}
	if a := got[ImageKey{"arm64", VariantStandard}]; a.ID != armDeprecated || !a.Deprecated {
		t.Errorf("arm64 AMI = %+v, want the only (deprecated) arm64 image %s", a, armDeprecated)
	}
}

func TestResolveAMIsBySelectorTerms(t *testing.T) {
	e := newEnv(t, "1.32")
	mine := e.sim.AddImage(ec2sim.ImageSpec{Name: "my-eks-node-2026", Architecture: "x86_64"})
	theirs := e.sim.AddImage(ec2sim.ImageSpec{Name: "my-eks-node-2026b", Architecture: "x86_64", OwnerID: "123456789012", Public: true})
	byParam := e.sim.AddImage(ec2sim.ImageSpec{Name: "param-node", Architecture: "arm64"})
	e.ssm.set("/my/ami", byParam)
	tests := []struct {
		name string
		term model.SelectorTerm
		key  ImageKey
		want string
	}{
		{"a name alone finds this account's and Amazon's images only", model.SelectorTerm{Name: "my-eks-node-*"}, ImageKey{"amd64", VariantStandard}, mine},
		{"an owner opens another account's images", model.SelectorTerm{Name: "my-eks-node-2026b", Owner: "123456789012"}, ImageKey{"amd64", VariantStandard}, theirs},
		{"an id", model.SelectorTerm{ID: theirs}, ImageKey{"amd64", VariantStandard}, theirs},
		{"an SSM parameter", model.SelectorTerm{SSMParameter: "/my/ami"}, ImageKey{"arm64", VariantStandard}, byParam},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc := &model.NodeClass{Name: "sel", API: model.APIV1, AMIFamily: FamilyCustom, AMISelector: []model.SelectorTerm{tc.term}}
			got, err := e.l.ResolveAMIs(e.ctx, nc, "1.32", []ImageKey{tc.key})
			if err != nil {
				t.Fatal(err)
			}
			if got[tc.key].ID != tc.want {
				t.Errorf("AMI = %v, want %s", got, tc.want)
			}
		})
	}
}

// TestResolveAMIsForWindows: a windows2022@latest alias (amiFamily
// unset, as a test may build it) and a v1alpha1 AWSNodeTemplate's
// Windows2019 without amiSelector read the EKS Windows AMI parameter; an
// arm64 key gets no image, and with nothing else the error says why.
func TestResolveAMIsForWindows(t *testing.T) {
	e := newEnv(t, "1.32")
	discovery := []model.SelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": testCluster}}}
	alias := &model.NodeClass{Name: "win", API: model.APIV1, AMISelector: []model.SelectorTerm{{Alias: "windows2022@latest"}}, SubnetSelector: discovery, SecurityGroupSelector: discovery}
	got, err := e.l.ResolveAMIs(e.ctx, alias, "1.32", []ImageKey{{"amd64", VariantStandard}, {"arm64", VariantStandard}})
	if err != nil {
		t.Fatal(err)
	}
	if want := e.images["/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.32/image_id"]; got[ImageKey{"amd64", VariantStandard}].ID != want || len(got) != 1 {
		t.Errorf("AMIs %v, want only amd64's %s", got, want)
	}
	s := spec(t, `
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: win2019}
spec:
  amiFamily: Windows2019
  subnetSelector: {karpenter.sh/discovery: hoon-cluster}
  securityGroupSelector: {karpenter.sh/discovery: hoon-cluster}
`)
	got, err = e.l.ResolveAMIs(e.ctx, s.NodeClasses["win2019"], "1.32", []ImageKey{{"amd64", VariantNvidia}})
	if err != nil {
		t.Fatal(err)
	}
	if want := e.images["/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.32/image_id"]; got[ImageKey{"amd64", VariantNvidia}].ID != want {
		t.Errorf("AMIs %v, want %s", got, want)
	}
	_, err = e.l.ResolveAMIs(e.ctx, alias, "1.32", []ImageKey{{"arm64", VariantStandard}})
	if err == nil || !strings.Contains(err.Error(), "x86_64 only") || !strings.Contains(err.Error(), `"win"`) {
		t.Errorf("arm64 only: err = %v, want the node class and why", err)
	}
	// Drift reads the class's images for every key: a Windows class's
	// node is current on the one Windows image.
	d, err := e.l.Desired(e.ctx, alias)
	if err != nil {
		t.Fatal(err)
	}
	if want := e.images["/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.32/image_id"]; len(d.ImageIDs) != 1 || !d.ImageIDs[want] {
		t.Errorf("desired images %v, want only %s", d.ImageIDs, want)
	}
}
