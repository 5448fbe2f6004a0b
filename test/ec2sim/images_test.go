package ec2sim

import (
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestDescribeImages(t *testing.T) {
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	f := newFixture(t, Options{Clock: clocktesting.NewFakeClock(start)})
	const amazon = "602401143452"
	x86New := f.sim.AddImage(ImageSpec{Name: "amazon-eks-node-al2023-x86_64-standard-1.34-v20261101", Architecture: "x86_64",
		OwnerID: amazon, OwnerAlias: "amazon", CreationDate: start.Add(-24 * time.Hour), Public: true,
		Tags: map[string]string{"os": "al2023"}})
	armNew := f.sim.AddImage(ImageSpec{Name: "amazon-eks-node-al2023-arm64-standard-1.34-v20261101", Architecture: "arm64",
		OwnerID: amazon, OwnerAlias: "amazon", CreationDate: start.Add(-24 * time.Hour), Public: true,
		Tags: map[string]string{"os": "al2023"}})
	x86Old := f.sim.AddImage(ImageSpec{Name: "amazon-eks-node-al2023-x86_64-standard-1.34-v20260101", Architecture: "x86_64",
		OwnerID: amazon, OwnerAlias: "amazon", CreationDate: start.Add(-300 * 24 * time.Hour), DeprecationTime: start.Add(-time.Hour), Public: true})
	mine := f.sim.AddImage(ImageSpec{ID: "ami-0aaaaaaaaaaaaaaaa", Name: "custom-node", Architecture: "amd64",
		DeprecationTime: start.Add(-time.Hour), Tags: map[string]string{"team": "platform"}})
	soon := f.sim.AddImage(ImageSpec{Name: "amazon-eks-node-al2023-x86_64-nvidia-1.34-v20261101", Architecture: "x86_64",
		OwnerID: amazon, OwnerAlias: "amazon", DeprecationTime: start.Add(time.Hour), Public: true})

	cases := []struct {
		name string
		in   *ec2.DescribeImagesInput
		want []string
		code string
	}{
		{"everything but deprecated AMIs of others", &ec2.DescribeImagesInput{}, []string{x86New, armNew, mine, soon}, ""},
		{"include deprecated", &ec2.DescribeImagesInput{IncludeDeprecated: aws.Bool(true)}, []string{x86New, armNew, x86Old, mine, soon}, ""},
		{"by name with wildcards", &ec2.DescribeImagesInput{Filters: filtersOf(map[string][]string{"name": {"amazon-eks-node-al2023-*-standard-1.34-*"}})}, []string{x86New, armNew}, ""},
		{"by name, deprecated included", &ec2.DescribeImagesInput{IncludeDeprecated: aws.Bool(true), Filters: filtersOf(map[string][]string{"name": {"amazon-eks-node-al2023-x86_64-standard-*"}})}, []string{x86New, x86Old}, ""},
		{"architecture", &ec2.DescribeImagesInput{Filters: filtersOf(map[string][]string{"architecture": {"arm64"}})}, []string{armNew}, ""},
		{"tag", &ec2.DescribeImagesInput{Filters: filtersOf(map[string][]string{"tag:os": {"al2023"}})}, []string{x86New, armNew}, ""},
		{"owner amazon", &ec2.DescribeImagesInput{Owners: []string{"amazon"}}, []string{x86New, armNew, soon}, ""},
		{"owner self sees its deprecated AMIs", &ec2.DescribeImagesInput{Owners: []string{"self"}}, []string{mine}, ""},
		{"owner by account", &ec2.DescribeImagesInput{Owners: []string{amazon}, Filters: filtersOf(map[string][]string{"image-id": {x86New}})}, []string{x86New}, ""},
		{"a deprecated AMI asked for by ID", &ec2.DescribeImagesInput{ImageIds: []string{x86Old}}, []string{x86Old}, ""},
		{"unknown ID", &ec2.DescribeImagesInput{ImageIds: []string{"ami-0000000000000dead"}}, nil, "InvalidAMIID.NotFound"},
		{"malformed ID", &ec2.DescribeImagesInput{ImageIds: []string{"image-1"}}, nil, "InvalidAMIID.Malformed"},
		{"unknown filter", &ec2.DescribeImagesInput{Filters: filtersOf(map[string][]string{"flavour": {"x"}})}, nil, "InvalidParameterValue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribeImages(f.ctx, tc.in)
			wantCode(t, err, tc.code)
			if err != nil {
				return
			}
			var got []string
			for _, im := range out.Images {
				got = append(got, aws.ToString(im.ImageId))
			}
			want := append([]string(nil), tc.want...)
			sort.Strings(got)
			sort.Strings(want)
			if !equalStrings(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}

	out, err := f.ec2.DescribeImages(f.ctx, &ec2.DescribeImagesInput{ImageIds: []string{x86Old, mine}})
	mustNil(t, err)
	byID := map[string]int{}
	for i, im := range out.Images {
		byID[aws.ToString(im.ImageId)] = i
	}
	old := out.Images[byID[x86Old]]
	if aws.ToString(old.CreationDate) != "2026-02-03T09:00:00.000Z" || aws.ToString(old.DeprecationTime) != "2026-11-30T08:00:00.000Z" ||
		aws.ToString(old.ImageOwnerAlias) != "amazon" || aws.ToString(old.OwnerId) != amazon || old.Architecture != "x86_64" ||
		old.State != "available" || !aws.ToBool(old.Public) {
		t.Errorf("image %+v", old)
	}
	if own := out.Images[byID[mine]]; own.Architecture != "x86_64" || aws.ToString(own.OwnerId) != DefaultAccountID || tagMapOf(own.Tags)["team"] != "platform" {
		t.Errorf("own image %+v", own)
	}
}
