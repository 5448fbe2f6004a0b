package launch

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// AMI families Joist knows how to bootstrap.
const (
	FamilyAL2          = "AL2"
	FamilyAL2023       = "AL2023"
	FamilyBottlerocket = "Bottlerocket"
	FamilyCustom       = "Custom"
)

// AMIParameter is the public SSM parameter that names the recommended EKS
// AMI of a family for a Kubernetes version, architecture and accelerator
// variant ("standard", "nvidia" or "neuron").
func AMIParameter(family, version, arch, variant string) (string, error) {
	awsArch := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[arch]
	if awsArch == "" {
		return "", fmt.Errorf("unsupported architecture %q", arch)
	}
	switch family {
	case FamilyAL2, "":
		if minorAtLeast(version, 33) {
			return "", fmt.Errorf("amiFamily AL2 is not published for Kubernetes %s (AWS stopped AL2 EKS AMIs at 1.32): use AL2023 or Bottlerocket", version)
		}
		suffix := ""
		switch {
		case variant == "nvidia" || variant == "neuron":
			suffix = "-gpu"
		case arch == "arm64":
			suffix = "-arm64"
		}
		return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/recommended/image_id", version, suffix), nil
	case FamilyAL2023:
		if variant == "" {
			variant = "standard"
		}
		return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/recommended/image_id", version, awsArch, variant), nil
	case FamilyBottlerocket:
		v := ""
		if variant == "nvidia" {
			v = "-nvidia"
		}
		return fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/latest/image_id", version, v, awsArch), nil
	default:
		return "", fmt.Errorf("amiFamily %s has no public AMI parameter; give spec.amiSelector", family)
	}
}

func minorAtLeast(version string, minor int) bool {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	m, err := strconv.Atoi(parts[1])
	return err == nil && parts[0] == "1" && m >= minor
}

// ResolveAMI reads the AMI id for a family's public parameter.
func (l *Launcher) ResolveAMI(ctx context.Context, family, arch, variant string) (string, error) {
	name, err := AMIParameter(family, l.Cluster.Version, arch, variant)
	if err != nil {
		return "", err
	}
	out, err := l.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("read AMI parameter %s: %w", name, err)
	}
	return aws.ToString(out.Parameter.Value), nil
}
