package ec2sim

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestLaunchTemplateLifecycle(t *testing.T) {
	f := newFixture(t, Options{})
	data := &types.RequestLaunchTemplateData{
		ImageId:          aws.String(testAMI),
		UserData:         aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\n/etc/eks/bootstrap.sh hoon-cluster\n"))),
		SecurityGroupIds: []string{f.seeded.SecurityGroupID},
		IamInstanceProfile: &types.LaunchTemplateIamInstanceProfileSpecificationRequest{
			Name: aws.String("KarpenterNodeInstanceProfile-hoon-cluster"),
		},
		MetadataOptions: &types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpTokens: types.LaunchTemplateHttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(2),
			HttpEndpoint: types.LaunchTemplateInstanceMetadataEndpointStateEnabled, HttpProtocolIpv6: types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled,
		},
		BlockDeviceMappings: []types.LaunchTemplateBlockDeviceMappingRequest{{
			DeviceName: aws.String("/dev/xvda"),
			Ebs: &types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(20), VolumeType: types.VolumeTypeGp3,
				Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true), Iops: aws.Int32(3000), Throughput: aws.Int32(125)},
		}},
		NetworkInterfaces: []types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), Groups: []string{f.seeded.SecurityGroupID}, AssociatePublicIpAddress: aws.Bool(false),
		}},
		TagSpecifications: []types.LaunchTemplateTagSpecificationRequest{{
			ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{{Key: aws.String("karpenter.sh/discovery"), Value: aws.String(testCluster)}},
		}},
		Monitoring: &types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(false)},
	}
	create := &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("karpenter.k8s.aws/12345678901234567890"),
		LaunchTemplateData: data,
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeLaunchTemplate,
			Tags: []types.Tag{{Key: aws.String("karpenter.k8s.aws/cluster"), Value: aws.String(testCluster)}}}},
	}
	created, err := f.ec2.CreateLaunchTemplate(f.ctx, create)
	if err != nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	lt := created.LaunchTemplate
	id := aws.ToString(lt.LaunchTemplateId)
	if !strings.HasPrefix(id, "lt-") || aws.ToInt64(lt.LatestVersionNumber) != 1 || aws.ToInt64(lt.DefaultVersionNumber) != 1 || lt.CreateTime == nil {
		t.Errorf("created %+v", lt)
	}

	// The SDK wrote the client token it generated into create, so sending
	// create again would be an idempotent replay; a new request has none.
	dup := *create
	dup.ClientToken = nil
	_, err = f.ec2.CreateLaunchTemplate(f.ctx, &dup)
	wantCode(t, err, "InvalidLaunchTemplateName.AlreadyExistsException")

	describeCases := []struct {
		name string
		in   *ec2.DescribeLaunchTemplatesInput
		want int
		code string
	}{
		{"by name", &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"karpenter.k8s.aws/12345678901234567890"}}, 1, ""},
		{"by id", &ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{id}}, 1, ""},
		{"by tag", &ec2.DescribeLaunchTemplatesInput{Filters: filtersOf(map[string][]string{"tag:karpenter.k8s.aws/cluster": {testCluster}})}, 1, ""},
		{"by name filter with *", &ec2.DescribeLaunchTemplatesInput{Filters: filtersOf(map[string][]string{"launch-template-name": {"karpenter.k8s.aws/*"}})}, 1, ""},
		{"filter matching nothing", &ec2.DescribeLaunchTemplatesInput{Filters: filtersOf(map[string][]string{"tag:karpenter.k8s.aws/cluster": {"other"}})}, 0, ""},
		{"unknown name", &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"nope-nope"}}, 0, "InvalidLaunchTemplateName.NotFoundException"},
		{"unknown id", &ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{"lt-0000000000000dead"}}, 0, "InvalidLaunchTemplateId.NotFound"},
	}
	for _, tc := range describeCases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribeLaunchTemplates(f.ctx, tc.in)
			wantCode(t, err, tc.code)
			if err == nil && len(out.LaunchTemplates) != tc.want {
				t.Errorf("%d templates, want %d", len(out.LaunchTemplates), tc.want)
			}
		})
	}

	vers, err := f.ec2.DescribeLaunchTemplateVersions(f.ctx, &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateName: aws.String("karpenter.k8s.aws/12345678901234567890"), Versions: []string{"$Latest"}})
	if err != nil {
		t.Fatalf("DescribeLaunchTemplateVersions: %v", err)
	}
	if len(vers.LaunchTemplateVersions) != 1 {
		t.Fatalf("versions %+v", vers.LaunchTemplateVersions)
	}
	v := vers.LaunchTemplateVersions[0]
	d := v.LaunchTemplateData
	if aws.ToString(v.LaunchTemplateId) != id || aws.ToInt64(v.VersionNumber) != 1 || !aws.ToBool(v.DefaultVersion) {
		t.Errorf("version %+v", v)
	}
	checks := []struct{ name, got, want string }{
		{"image", aws.ToString(d.ImageId), testAMI},
		{"user data", aws.ToString(d.UserData), aws.ToString(data.UserData)},
		{"security group", strings.Join(d.SecurityGroupIds, ","), f.seeded.SecurityGroupID},
		{"instance profile", aws.ToString(d.IamInstanceProfile.Name), "KarpenterNodeInstanceProfile-hoon-cluster"},
		{"http tokens", string(d.MetadataOptions.HttpTokens), "required"},
		{"hop limit", itoa(int(aws.ToInt32(d.MetadataOptions.HttpPutResponseHopLimit))), "2"},
		{"device", aws.ToString(d.BlockDeviceMappings[0].DeviceName), "/dev/xvda"},
		{"volume size", itoa(int(aws.ToInt32(d.BlockDeviceMappings[0].Ebs.VolumeSize))), "20"},
		{"volume type", string(d.BlockDeviceMappings[0].Ebs.VolumeType), "gp3"},
		{"encrypted", boolStr(aws.ToBool(d.BlockDeviceMappings[0].Ebs.Encrypted))[0], "true"},
		{"interface groups", strings.Join(d.NetworkInterfaces[0].Groups, ","), f.seeded.SecurityGroupID},
		{"public ip", boolStr(aws.ToBool(d.NetworkInterfaces[0].AssociatePublicIpAddress))[0], "false"},
		{"tag spec", string(d.TagSpecifications[0].ResourceType) + ":" + tagMapOf(d.TagSpecifications[0].Tags)["karpenter.sh/discovery"], "instance:" + testCluster},
		{"monitoring", boolStr(aws.ToBool(d.Monitoring.Enabled))[0], "false"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}

	// Instances launched from the template carry its settings.
	out, err := f.ec2.CreateFleet(f.ctx, fleetInput("karpenter.k8s.aws/12345678901234567890", OnDemand,
		[]types.FleetLaunchTemplateOverridesRequest{{InstanceType: "t3.large", SubnetId: aws.String(f.seeded.SubnetIDs[zoneA])}}))
	mustNil(t, err)
	desc, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: launched(out)})
	mustNil(t, err)
	inst := desc.Reservations[0].Instances[0]
	if !strings.HasSuffix(aws.ToString(inst.IamInstanceProfile.Arn), ":instance-profile/KarpenterNodeInstanceProfile-hoon-cluster") ||
		inst.MetadataOptions.HttpTokens != types.HttpTokensStateRequired || aws.ToInt32(inst.MetadataOptions.HttpPutResponseHopLimit) != 2 ||
		tagMapOf(inst.Tags)["karpenter.sh/discovery"] != testCluster || aws.ToString(inst.ImageId) != testAMI {
		t.Errorf("instance from template: %+v", inst)
	}

	_, err = f.ec2.DescribeLaunchTemplateVersions(f.ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(id), Versions: []string{"2"}})
	wantCode(t, err, "InvalidLaunchTemplateId.VersionNotFound")

	deleted, err := f.ec2.DeleteLaunchTemplate(f.ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/12345678901234567890")})
	if err != nil || aws.ToString(deleted.LaunchTemplate.LaunchTemplateId) != id {
		t.Fatalf("DeleteLaunchTemplate: %v %+v", err, deleted)
	}
	_, err = f.ec2.DescribeLaunchTemplates(f.ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{id}})
	wantCode(t, err, "InvalidLaunchTemplateId.NotFound")
	_, err = f.ec2.DeleteLaunchTemplate(f.ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(id)})
	wantCode(t, err, "InvalidLaunchTemplateId.NotFound")
	_, err = f.ec2.DeleteLaunchTemplate(f.ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/12345678901234567890")})
	wantCode(t, err, "InvalidLaunchTemplateName.NotFoundException")
	_, err = f.ec2.DescribeLaunchTemplateVersions(f.ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/12345678901234567890")})
	wantCode(t, err, "InvalidLaunchTemplateName.NotFoundException")
	// The name is free again.
	f.createTemplate(t, "karpenter.k8s.aws/12345678901234567890", testAMI, nil)
}

func TestCreateLaunchTemplateValidation(t *testing.T) {
	cases := []struct {
		name string
		in   func(f *fixture) *ec2.CreateLaunchTemplateInput
		code string
	}{
		{"name too short", func(*fixture) *ec2.CreateLaunchTemplateInput {
			return &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("ab"), LaunchTemplateData: &types.RequestLaunchTemplateData{ImageId: aws.String(testAMI)}}
		}, "InvalidLaunchTemplateName.MalformedException"},
		{"name with a space", func(*fixture) *ec2.CreateLaunchTemplateInput {
			return &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("my template"), LaunchTemplateData: &types.RequestLaunchTemplateData{ImageId: aws.String(testAMI)}}
		}, "InvalidLaunchTemplateName.MalformedException"},
		{"user data not base64", func(*fixture) *ec2.CreateLaunchTemplateInput {
			return &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("joist-lt"), LaunchTemplateData: &types.RequestLaunchTemplateData{UserData: aws.String("#!/bin/bash")}}
		}, "InvalidUserData.Malformed"},
		{"user data over 16 KiB", func(*fixture) *ec2.CreateLaunchTemplateInput {
			big := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 16*1024+1)))
			return &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("joist-lt"), LaunchTemplateData: &types.RequestLaunchTemplateData{UserData: aws.String(big)}}
		}, "InvalidParameterValue"},
		{"a template field the simulator does not keep", func(*fixture) *ec2.CreateLaunchTemplateInput {
			return &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("joist-lt"), LaunchTemplateData: &types.RequestLaunchTemplateData{
				CpuOptions: &types.LaunchTemplateCpuOptionsRequest{CoreCount: aws.Int32(1)}}}
		}, "UnknownParameter"},
		{"tags for the wrong resource", func(*fixture) *ec2.CreateLaunchTemplateInput {
			return &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("joist-lt"), LaunchTemplateData: &types.RequestLaunchTemplateData{ImageId: aws.String(testAMI)},
				TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}}}
		}, "InvalidParameterValue"},
		{"dry run", func(*fixture) *ec2.CreateLaunchTemplateInput {
			return &ec2.CreateLaunchTemplateInput{DryRun: aws.Bool(true), LaunchTemplateName: aws.String("joist-lt"), LaunchTemplateData: &types.RequestLaunchTemplateData{ImageId: aws.String(testAMI)}}
		}, "DryRunOperation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			_, err := f.ec2.CreateLaunchTemplate(f.ctx, tc.in(f))
			wantCode(t, err, tc.code)
			if names := f.sim.LaunchTemplateNames(); len(names) != 0 {
				t.Errorf("templates %v created by a failed call", names)
			}
		})
	}
}

func TestCreateLaunchTemplateClientToken(t *testing.T) {
	f := newFixture(t, Options{})
	in := &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("joist-lt"), ClientToken: aws.String("tok-1"),
		LaunchTemplateData: &types.RequestLaunchTemplateData{ImageId: aws.String(testAMI)}}
	first, err := f.ec2.CreateLaunchTemplate(f.ctx, in)
	mustNil(t, err)
	again, err := f.ec2.CreateLaunchTemplate(f.ctx, in)
	mustNil(t, err)
	if aws.ToString(first.LaunchTemplate.LaunchTemplateId) != aws.ToString(again.LaunchTemplate.LaunchTemplateId) {
		t.Errorf("same token gave %s then %s", aws.ToString(first.LaunchTemplate.LaunchTemplateId), aws.ToString(again.LaunchTemplate.LaunchTemplateId))
	}
	in.LaunchTemplateData.ImageId = aws.String("ami-0fedcba9876543210")
	_, err = f.ec2.CreateLaunchTemplate(f.ctx, in)
	wantCode(t, err, "IdempotentParameterMismatch")
}
