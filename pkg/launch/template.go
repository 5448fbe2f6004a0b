package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/joist-dev/joist/pkg/model"
)

// TemplateContent is everything a launch template fixes. Its hash names
// the template, so equal content shares one template and changed content
// gets a new one (the old one is left for the reaper to delete once no
// instance uses it).
type TemplateContent struct {
	ImageID         string                     `json:"imageID"`
	UserData        string                     `json:"userData"`
	SecurityGroups  []string                   `json:"securityGroups"`
	InstanceProfile string                     `json:"instanceProfile,omitempty"`
	Metadata        model.MetadataOptions      `json:"metadata"`
	BlockDevices    []model.BlockDeviceMapping `json:"blockDevices,omitempty"`
	Tags            map[string]string          `json:"tags,omitempty"`
}

// TemplatePrefix starts the name of every launch template Joist makes for
// the cluster, so the reaper can list them.
func TemplatePrefix(cluster string) string { return "joist/" + cluster + "/" }

// Name is the template's content-addressed name.
func (c TemplateContent) Name(cluster string) string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return TemplatePrefix(cluster) + hex.EncodeToString(sum[:12])
}

// EnsureTemplate returns the id of the launch template for content,
// creating it when it does not exist yet. Safe to call concurrently and
// repeatedly: a lost creation race reads the winner's template.
func (l *Launcher) EnsureTemplate(ctx context.Context, c TemplateContent) (string, string, error) {
	name := c.Name(l.Cluster.Name)
	l.mu.Lock()
	if id, ok := l.templates[name]; ok {
		l.mu.Unlock()
		return name, id, nil
	}
	l.mu.Unlock()
	id, err := l.findTemplate(ctx, name)
	if err != nil {
		return "", "", err
	}
	if id == "" {
		id, err = l.createTemplate(ctx, name, c)
		if err != nil {
			return "", "", err
		}
	}
	l.mu.Lock()
	if l.templates == nil {
		l.templates = map[string]string{}
	}
	l.templates[name] = id
	l.mu.Unlock()
	return name, id, nil
}

func (l *Launcher) findTemplate(ctx context.Context, name string) (string, error) {
	out, err := l.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && (ae.ErrorCode() == "InvalidLaunchTemplateName.NotFoundException" || ae.ErrorCode() == "InvalidLaunchTemplateId.NotFound") {
			return "", nil
		}
		return "", fmt.Errorf("describe launch template %s: %w", name, err)
	}
	for _, t := range out.LaunchTemplates {
		return aws.ToString(t.LaunchTemplateId), nil
	}
	return "", nil
}

func (l *Launcher) createTemplate(ctx context.Context, name string, c TemplateContent) (string, error) {
	md := c.Metadata
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:          aws.String(c.ImageID),
		UserData:         aws.String(c.UserData),
		SecurityGroupIds: c.SecurityGroups,
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(orDefault(md.HTTPEndpoint, "enabled")),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(orDefault(md.HTTPProtocolIPv6, "disabled")),
			HttpPutResponseHopLimit: aws.Int32(max(md.HTTPPutResponseHopLimit, 1)),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(orDefault(md.HTTPTokens, "required")),
		},
	}
	if c.InstanceProfile != "" {
		data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(c.InstanceProfile)}
	}
	for _, bd := range c.BlockDevices {
		m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: aws.String(bd.DeviceName)}
		if e := bd.EBS; e != nil {
			m.Ebs = &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted,
				VolumeType: ec2types.VolumeType(e.VolumeType),
			}
			if e.IOPS != nil {
				m.Ebs.Iops = aws.Int32(int32(*e.IOPS))
			}
			if e.Throughput != nil {
				m.Ebs.Throughput = aws.Int32(int32(*e.Throughput))
			}
			if e.KMSKeyID != "" {
				m.Ebs.KmsKeyId = aws.String(e.KMSKeyID)
			}
			if e.SnapshotID != "" {
				m.Ebs.SnapshotId = aws.String(e.SnapshotID)
			}
			if gib, ok := volumeGiB(e.VolumeSize); ok {
				m.Ebs.VolumeSize = aws.Int32(gib)
			}
		}
		data.BlockDeviceMappings = append(data.BlockDeviceMappings, m)
	}
	out, err := l.EC2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags:         ec2Tags(c.Tags),
		}},
	})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "InvalidLaunchTemplateName.AlreadyExistsException" {
			return l.findTemplate(ctx, name)
		}
		return "", fmt.Errorf("create launch template %s: %w", name, err)
	}
	return aws.ToString(out.LaunchTemplate.LaunchTemplateId), nil
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func ec2Tags(m map[string]string) []ec2types.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tags := make([]ec2types.Tag, len(keys))
	for i, k := range keys {
		tags[i] = ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])}
	}
	return tags
}
