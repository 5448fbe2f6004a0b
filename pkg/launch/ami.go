package launch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/joist-dev/joist/pkg/model"
)

// AMI families Joist knows how to bootstrap. Ubuntu takes AL2's
// bootstrap.sh user data (the EKS Ubuntu images ship the same script), as
// in Karpenter.
const (
	FamilyAL2          = "AL2"
	FamilyAL2023       = "AL2023"
	FamilyBottlerocket = "Bottlerocket"
	FamilyUbuntu       = "Ubuntu"
	FamilyCustom       = "Custom"
)

// AMI variants: what accelerator an instance type needs its image built
// for.
const (
	VariantStandard = "standard"
	VariantNvidia   = "nvidia"
	VariantNeuron   = "neuron"
)

// AliasLatest is the alias version that follows AWS's recommended AMI.
const AliasLatest = "latest"

// pinnedParamTTL is how long a pinned alias's parameter is reused: the
// parameters of a published AMI version never change.
const pinnedParamTTL = 24 * time.Hour

// ImageKey is what an instance type needs of an AMI: its architecture
// (Kubernetes names: amd64, arm64) and accelerator variant.
type ImageKey struct {
	Arch    string
	Variant string
}

func (k ImageKey) String() string { return k.Arch + "/" + k.Variant }

// AMI is an image a node may boot.
type AMI struct {
	ID   string
	Name string
	// Arch is amd64 or arm64.
	Arch string
	// Variant is the accelerator variant the image is published for, or
	// "" when it is not known (images found by selector): such an image
	// serves every variant of its architecture, as in Karpenter.
	Variant    string
	Created    time.Time
	Deprecated bool
	// Source says where the image came from (an SSM parameter, a selector
	// term), for logs and errors.
	Source string
}

// Alias is a v1 amiSelectorTerms alias: family@version.
type Alias struct {
	Family  string
	Version string
}

// ParseAlias reads "al2023@latest", "al2@v20240625", "bottlerocket@1.20.3",
// "windows2022@latest".
func ParseAlias(s string) (Alias, error) {
	fam, ver, ok := strings.Cut(s, "@")
	if !ok || ver == "" {
		return Alias{}, fmt.Errorf("alias %q: want family@version, e.g. al2023@latest", s)
	}
	family := map[string]string{"al2": FamilyAL2, "al2023": FamilyAL2023, "bottlerocket": FamilyBottlerocket}[strings.ToLower(fam)]
	if w, ok := model.WindowsServerOf(fam); ok {
		family = w.Family
	}
	if family == "" {
		return Alias{}, fmt.Errorf("alias %q: family %q is not one Joist bootstraps (al2, al2023, bottlerocket, windows2019, windows2022, windows2025)", s, fam)
	}
	return Alias{Family: family, Version: ver}, nil
}

// awsArch maps a Kubernetes architecture to EC2's.
func awsArch(arch string) string {
	return map[string]string{"amd64": "x86_64", "x86_64": "x86_64", "arm64": "arm64"}[arch]
}

// kubeArch maps EC2's architecture to Kubernetes'.
func kubeArch(arch string) string {
	return map[string]string{"x86_64": "amd64", "amd64": "amd64", "arm64": "arm64"}[arch]
}

// AMIParameter is the public SSM parameter that names the EKS AMI of a
// family for a Kubernetes version, AMI version ("latest" or a pinned
// release such as v20240625) and instance requirement, as Karpenter reads
// them. It fails for combinations AWS does not publish, saying which.
func AMIParameter(family, k8sVersion, amiVersion string, key ImageKey) (string, error) {
	arch := awsArch(key.Arch)
	if arch == "" {
		return "", fmt.Errorf("unsupported architecture %q", key.Arch)
	}
	variant := key.Variant
	if variant == "" {
		variant = VariantStandard
	}
	if amiVersion == "" {
		amiVersion = AliasLatest
	}
	latest := amiVersion == AliasLatest
	if w, ok := model.WindowsServerOf(family); ok {
		return windowsParameter(w, k8sVersion, amiVersion, arch)
	}
	switch family {
	case FamilyAL2:
		if minorAtLeast(k8sVersion, 33) {
			return "", fmt.Errorf("amiFamily AL2 is not published for Kubernetes %s (AWS's last AL2 EKS AMIs are for 1.32): use AL2023 or Bottlerocket", k8sVersion)
		}
		path, name := "amazon-linux-2", "amazon-eks-node-"
		switch {
		case variant == VariantNvidia || variant == VariantNeuron:
			if arch == "arm64" {
				return "", fmt.Errorf("amiFamily AL2 has no arm64 %s AMI", variant)
			}
			path, name = "amazon-linux-2-gpu", "amazon-eks-gpu-node-"
		case arch == "arm64":
			path, name = "amazon-linux-2-arm64", "amazon-eks-arm64-node-"
		}
		leaf := "recommended"
		if !latest {
			leaf = name + k8sVersion + "-" + amiVersion
		}
		return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/%s/image_id", k8sVersion, path, leaf), nil
	case FamilyAL2023:
		if arch == "arm64" && variant == VariantNeuron {
			return "", fmt.Errorf("amiFamily AL2023 has no arm64 neuron AMI")
		}
		leaf := "recommended"
		if !latest {
			leaf = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", arch, variant, k8sVersion, amiVersion)
		}
		return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", k8sVersion, arch, variant, leaf), nil
	case FamilyBottlerocket:
		flavor := ""
		switch variant {
		case VariantNvidia:
			flavor = "-nvidia"
		case VariantNeuron:
			if arch == "arm64" {
				return "", fmt.Errorf("amiFamily Bottlerocket has no arm64 neuron AMI")
			}
		}
		// Bottlerocket versions are v-prefixed on GitHub but not in SSM.
		return fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8sVersion, flavor, arch, strings.TrimPrefix(amiVersion, "v")), nil
	default:
		return "", fmt.Errorf("amiFamily %s has no public AMI parameter: give an AMI selector", family)
	}
}

// windowsParameter is the EKS optimized Windows Server Core AMI's
// parameter, as Karpenter reads it: AWS publishes only the latest image of
// each Kubernetes version, for x86_64 (whatever the accelerator), and
// Windows Server 2025's from Kubernetes 1.35 on.
func windowsParameter(w model.WindowsServer, k8sVersion, amiVersion, arch string) (string, error) {
	if arch != "x86_64" {
		return "", fmt.Errorf("amiFamily %s has no %s AMI: the EKS optimized Windows AMIs are x86_64 only", w.Family, arch)
	}
	if amiVersion != AliasLatest {
		return "", fmt.Errorf("amiFamily %s: AWS publishes only the latest EKS optimized Windows AMI, not version %q (use %s@latest)", w.Family, amiVersion, strings.ToLower(w.Family))
	}
	// minorAtLeast(v, 0): v is a version Joist can read (as Karpenter,
	// an unreadable one is not refused).
	if w.Family == "Windows2025" && minorAtLeast(k8sVersion, 0) && !minorAtLeast(k8sVersion, 35) {
		return "", fmt.Errorf("amiFamily Windows2025 needs Kubernetes 1.35 or later (the cluster runs %s): use Windows2022", k8sVersion)
	}
	return fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", w.Version, k8sVersion), nil
}

// family is the node class's AMI family as Joist bootstraps it (AL2 when
// unset, as in v1alpha1; a Windows version as model.NodeClass.Windows
// reads it, alias included).
func family(nc *model.NodeClass) string {
	if w, ok := nc.Windows(); ok {
		return w.Family
	}
	if nc.AMIFamily == "" {
		return FamilyAL2
	}
	return nc.AMIFamily
}

// ResolveAMIs finds an image for each key the launch needs. Keys without
// an image (AL2 has no arm64 GPU image, say) are left out of the result
// and the caller drops the instance types that need them; an error means
// no key could be served, or the lookup itself failed.
func (l *Launcher) ResolveAMIs(ctx context.Context, nc *model.NodeClass, k8sVersion string, keys []ImageKey) (map[ImageKey]AMI, error) {
	field := selectorField(nc, "ami")
	var alias *Alias
	for _, t := range nc.AMISelector {
		if t.Alias != "" {
			a, err := ParseAlias(t.Alias)
			if err != nil {
				return nil, fmt.Errorf("node class %q: %s: %w", nc.Name, field, err)
			}
			alias = &a
		}
	}
	if alias == nil && len(nc.AMISelector) == 0 {
		_, windows := nc.Windows()
		switch f := family(nc); {
		case f == FamilyAL2, f == FamilyAL2023, f == FamilyBottlerocket, windows:
			alias = &Alias{Family: f, Version: AliasLatest}
		default:
			return nil, fmt.Errorf("node class %q: amiFamily %s needs %s (Joist knows no default %s AMI)", nc.Name, f, field, f)
		}
	}
	out := map[ImageKey]AMI{}
	var why []string
	if alias != nil {
		for _, k := range keys {
			name, err := AMIParameter(alias.Family, k8sVersion, alias.Version, k)
			if err != nil {
				why = append(why, k.String()+": "+err.Error())
				continue
			}
			id, err := l.parameter(ctx, name, alias.Version == AliasLatest)
			var nf *parameterNotFound
			if errors.As(err, &nf) {
				why = append(why, fmt.Sprintf("%s: SSM parameter %s does not exist", k, name))
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("node class %q: %s %s@%s: %w", nc.Name, field, strings.ToLower(alias.Family), alias.Version, err)
			}
			out[k] = AMI{ID: id, Arch: k.Arch, Variant: k.Variant, Source: name}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("node class %q: no AMI for %s@%s on Kubernetes %s: %s", nc.Name, strings.ToLower(alias.Family), alias.Version, k8sVersion, strings.Join(dedupe(why), "; "))
		}
		return out, nil
	}
	images, err := l.selectImages(ctx, nc)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		for _, im := range images {
			if im.Arch == k.Arch && (im.Variant == "" || im.Variant == k.Variant) {
				out[k] = im
				break
			}
		}
	}
	if len(out) == 0 {
		archs := map[string]bool{}
		for _, im := range images {
			archs[im.Arch] = true
		}
		have := make([]string, 0, len(archs))
		for a := range archs {
			have = append(have, a)
		}
		sort.Strings(have)
		want := make([]string, len(keys))
		for i, k := range keys {
			want[i] = k.Arch
		}
		return nil, fmt.Errorf("node class %q: %s %s found images for %v only, none for the instance types' architectures %v", nc.Name, field, termsString(nc.AMISelector), have, dedupe(want))
	}
	return out, nil
}

// parameterNotFound is an SSM parameter that does not exist: for an AMI
// parameter it means AWS publishes no such image.
type parameterNotFound struct{ name string }

func (e *parameterNotFound) Error() string { return "SSM parameter " + e.name + " not found" }

// parameter reads an SSM parameter, cached: for CacheTTL when it can
// change (latest), a day when it names a fixed release.
func (l *Launcher) parameter(ctx context.Context, name string, mutable bool) (string, error) {
	now := l.now()
	if v, ok := l.params.get(name, now); ok {
		return v, nil
	}
	out, err := l.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "ParameterNotFound" {
			return "", &parameterNotFound{name: name}
		}
		return "", fmt.Errorf("read SSM parameter %s: %w", name, err)
	}
	if out.Parameter == nil || aws.ToString(out.Parameter.Value) == "" {
		return "", fmt.Errorf("SSM parameter %s is empty", name)
	}
	v := aws.ToString(out.Parameter.Value)
	ttl := l.ttl()
	if !mutable {
		ttl = pinnedParamTTL
	}
	l.params.put(name, v, now.Add(ttl))
	return v, nil
}

// selectImages finds the images a node class's selector terms name (terms
// OR'ed; ids, names, owners, tags and SSM parameters), deprecated ones
// included as Karpenter does, sorted best first: not deprecated before
// deprecated, then newest, then by name.
func (l *Launcher) selectImages(ctx context.Context, nc *model.NodeClass) ([]AMI, error) {
	field := selectorField(nc, "ami")
	key := cacheKey(nc, "images", nc.AMISelector)
	now := l.now()
	if got, ok := l.images.get(key, now); ok {
		return got, nil
	}
	type query struct {
		in     *ec2.DescribeImagesInput
		source string
	}
	var queries []query
	var ids []string
	for i, t := range nc.AMISelector {
		src := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case t.SSMParameter != "":
			id, err := l.parameter(ctx, t.SSMParameter, true)
			if err != nil {
				return nil, fmt.Errorf("node class %q: %s: %w", nc.Name, src, err)
			}
			ids = append(ids, id)
		case t.ID != "":
			ids = append(ids, t.ID)
		default:
			in := &ec2.DescribeImagesInput{IncludeDeprecated: aws.Bool(true), Filters: termFilters(nc, model.SelectorTerm{Tags: t.Tags, Name: t.Name}, "", "name")}
			switch {
			case t.Owner != "":
				in.Owners = splitList(t.Owner)
			case t.Name != "":
				// A name alone would match anyone's public images: only
				// this account's and Amazon's, as Karpenter.
				in.Owners = []string{"self", "amazon"}
			}
			if len(in.Filters) == 0 && len(in.Owners) == 0 {
				return nil, fmt.Errorf("node class %q: %s selects nothing", nc.Name, src)
			}
			queries = append(queries, query{in: in, source: src})
		}
	}
	if len(ids) > 0 {
		queries = append(queries, query{in: &ec2.DescribeImagesInput{IncludeDeprecated: aws.Bool(true), Filters: []ec2types.Filter{{Name: aws.String("image-id"), Values: dedupe(ids)}}}, source: field + " ids"})
	}
	seen := map[string]AMI{}
	for _, q := range queries {
		p := ec2.NewDescribeImagesPaginator(l.EC2, q.in)
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("node class %q: %s: describe images: %w", nc.Name, q.source, err)
			}
			for _, im := range out.Images {
				if im.State != "" && im.State != ec2types.ImageStateAvailable {
					continue
				}
				arch := kubeArch(string(im.Architecture))
				if arch == "" {
					continue
				}
				a := AMI{ID: aws.ToString(im.ImageId), Name: aws.ToString(im.Name), Arch: arch, Source: q.source}
				a.Created, _ = time.Parse(time.RFC3339, aws.ToString(im.CreationDate))
				if d := aws.ToString(im.DeprecationTime); d != "" {
					if t, err := time.Parse(time.RFC3339, d); err == nil && !now.Before(t) {
						a.Deprecated = true
					}
				}
				seen[a.ID] = a
			}
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("node class %q: no image matches %s %s", nc.Name, field, termsString(nc.AMISelector))
	}
	images := make([]AMI, 0, len(seen))
	for _, a := range seen {
		images = append(images, a)
	}
	sort.Slice(images, func(i, j int) bool {
		a, b := images[i], images[j]
		if a.Deprecated != b.Deprecated {
			return !a.Deprecated
		}
		if !a.Created.Equal(b.Created) {
			return a.Created.After(b.Created)
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.ID < b.ID
	})
	l.images.put(key, images, now.Add(l.ttl()))
	return images, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
