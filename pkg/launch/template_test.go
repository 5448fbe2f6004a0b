package launch

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/joist-dev/joist/pkg/model"
)

// TestDeleteUnusedTemplatesKeepsWhatLiveInstancesUse: templates of
// terminated instances go, those of live instances and young ones stay,
// and other clusters' or users' templates are never touched.
func TestDeleteUnusedTemplatesKeepsWhatLiveInstancesUse(t *testing.T) {
	e := newEnv(t, "1.32")
	used, err := e.l.Launch(e.ctx, serviceRequest(t, "used"))
	if err != nil {
		t.Fatal(err)
	}
	gone, err := e.l.Launch(e.ctx, batchRequest(t, "gone", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.l.Terminate(e.ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	// Someone else's template, and another cluster's.
	for _, name := range []string{"my-own-template", "joist/other-cluster/abc"} {
		if _, err := e.ec2.CreateLaunchTemplate(e.ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-12345678")},
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{{Key: aws.String(TagCluster), Value: aws.String("other-cluster")}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	before := e.sim.LaunchTemplateNames()
	live, err := e.l.Instances(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0].ID != used.ID || live[0].LaunchTemplateID != used.LaunchTemplateID {
		t.Fatalf("live instances = %+v, want only %s with its template", live, used.ID)
	}

	deleted, err := e.l.DeleteUnusedTemplates(e.ctx, live, 5*time.Minute)
	if err != nil || len(deleted) != 0 {
		t.Fatalf("young templates: deleted %v, %v; want none", deleted, err)
	}
	e.clock.Step(10 * time.Minute)
	deleted, err = e.l.DeleteUnusedTemplates(e.ctx, live, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	after := e.sim.LaunchTemplateNames()
	if len(deleted) != len(before)-len(after) || len(deleted) < 2 {
		t.Errorf("deleted %v; templates before %v, after %v", deleted, before, after)
	}
	keep := map[string]bool{}
	for _, n := range after {
		keep[n] = true
	}
	for _, n := range []string{"my-own-template", "joist/other-cluster/abc"} {
		if !keep[n] {
			t.Errorf("%s was deleted; it is not this cluster's", n)
		}
	}
	usedName := ""
	for _, i := range e.sim.Instances() {
		if i.ID == used.ID {
			usedName = i.LaunchTemplateName
		}
	}
	if !keep[usedName] {
		t.Errorf("the live instance's template %s was deleted", usedName)
	}
	// The launcher forgot the deleted templates: launching the batch pool
	// again creates its template anew instead of naming a missing one.
	if _, err := e.l.Launch(e.ctx, batchRequest(t, "again", "m5.large")); err != nil {
		t.Fatal(err)
	}
}

func TestTemplateNamesAreContentAddressed(t *testing.T) {
	c := TemplateContent{ImageID: "ami-1", UserData: "x", SecurityGroups: []string{"sg-1"}}
	d := c
	d.ImageID = "ami-2"
	same := c
	same.SecurityGroups = []string{"sg-1"} // equal content, not the same slice
	if c.Name("hoon") == d.Name("hoon") || c.Name("hoon") != same.Name("hoon") {
		t.Error("names must follow content")
	}
	if !strings.HasPrefix(c.Name("hoon"), "joist/hoon/") {
		t.Errorf("name %s lacks the cluster prefix", c.Name("hoon"))
	}
	long := strings.Repeat("c", 100)
	if n := c.Name(long); len(n) > 128 {
		t.Errorf("name for a 100-character cluster is %d characters, over EC2's 128", len(n))
	}
}

func TestBlockDeviceSizesAreWholeGiB(t *testing.T) {
	tests := []struct {
		size string
		want int32
		ok   bool
	}{
		{"20Gi", 20, true},
		{"100G", 94, true},
		{"1Ti", 1024, true},
		{"1.5Gi", 2, true},
		{"lots", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.size, func(t *testing.T) {
			m, err := blockDevice(model.BlockDeviceMapping{DeviceName: "/dev/xvda", EBS: &model.EBS{VolumeSize: tc.size, VolumeType: "gp3"}})
			if !tc.ok {
				if err == nil {
					t.Fatal("want an error for an unparsable size")
				}
				return
			}
			if err != nil || aws.ToInt32(m.Ebs.VolumeSize) != tc.want {
				t.Errorf("size = %d, %v; want %d", aws.ToInt32(m.Ebs.VolumeSize), err, tc.want)
			}
		})
	}
}

// TestBottlerocketTemplateGetsTheSpecsDefaultVolumes: block devices come
// from the node class as pkg/specs defaulted them, not a second default.
func TestBottlerocketTemplateGetsTheSpecsDefaultVolumes(t *testing.T) {
	e := newEnv(t, "1.32")
	s := spec(t, `
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: br}
spec:
  providerRef: {name: br}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: br}
spec:
  amiFamily: Bottlerocket
  subnetSelector: {karpenter.sh/discovery: hoon-cluster}
  securityGroupSelector: {karpenter.sh/discovery: hoon-cluster}
`)
	pool, nc := poolOf(t, s, "br")
	inst, err := e.l.Launch(e.ctx, Request{Pool: pool, Class: nc, Token: "br", Options: options(t, []string{"m5.large"}, []string{zoneA}, []string{"on-demand"})})
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.ec2.DescribeLaunchTemplateVersions(e.ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(inst.LaunchTemplateID), Versions: []string{"$Latest"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, bd := range v.LaunchTemplateVersions[0].LaunchTemplateData.BlockDeviceMappings {
		got = append(got, fmt.Sprintf("%s=%d", aws.ToString(bd.DeviceName), aws.ToInt32(bd.Ebs.VolumeSize)))
	}
	if !reflect.DeepEqual(got, []string{"/dev/xvda=4", "/dev/xvdb=20"}) {
		t.Errorf("volumes = %v, want /dev/xvda 4 GiB and /dev/xvdb 20 GiB", got)
	}
}

func TestClusterInfoAsksEKSOnlyForWhatIsMissing(t *testing.T) {
	e := newEnv(t, "1.32")
	fake := &fakeEKS{cluster: ekstypes.Cluster{
		Name: aws.String(testCluster), Version: aws.String("1.33"), Endpoint: aws.String("https://from-eks"),
		CertificateAuthority:    &ekstypes.Certificate{Data: aws.String("Q0E=")},
		KubernetesNetworkConfig: &ekstypes.KubernetesNetworkConfigResponse{ServiceIpv4Cidr: aws.String("172.20.0.0/16")},
	}}
	e.l.EKS = fake
	got, err := e.l.ClusterInfo(e.ctx)
	if err != nil || got.Version != "1.32" || fake.calls != 0 {
		t.Fatalf("configured cluster: %+v, %v, EKS calls %d; want the configuration and no call", got, err, fake.calls)
	}
	e.l.Cluster.Version, e.l.Cluster.ServiceCIDR = "", ""
	got, err = e.l.ClusterInfo(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "1.33" || got.ServiceCIDR != "172.20.0.0/16" || got.Endpoint != e.l.Cluster.Endpoint {
		t.Errorf("cluster = %+v; want version and CIDR from EKS, the configured endpoint kept", got)
	}
	v, _ := e.l.KubernetesVersion(e.ctx)
	if v != "1.33" || fake.calls != 1 {
		t.Errorf("version %s after %d EKS calls; want 1.33 from the cache", v, fake.calls)
	}
	fake.err = errors.New("AccessDeniedException")
	partial := &Launcher{EKS: fake, Cluster: Cluster{Name: testCluster, Version: "1.32"}}
	for i := 0; i < 2; i++ {
		if got, err := partial.ClusterInfo(context.Background()); err != nil || got.Version != "1.32" {
			t.Fatalf("with the version configured and EKS failing: %+v, %v; want the configuration", got, err)
		}
	}
	if fake.calls != 2 {
		t.Errorf("EKS calls = %d, want 2: a failed answer is remembered too", fake.calls)
	}
	cold := &Launcher{EKS: fake, Cluster: Cluster{Name: testCluster}}
	if _, err := cold.KubernetesVersion(context.Background()); err == nil || !strings.Contains(err.Error(), "eks:DescribeCluster") {
		t.Errorf("err = %v, want the EKS failure named", err)
	}
	if _, err := (&Launcher{Cluster: Cluster{Name: testCluster}}).KubernetesVersion(context.Background()); err == nil || !strings.Contains(err.Error(), "KUBERNETES_VERSION") {
		t.Errorf("err = %v, want it to say the version is not configured", err)
	}
}

// TestTerminateRefusesOtherClustersInstances checks the termination
// helper against the simulator.
func TestTerminateRefusesOtherClustersInstances(t *testing.T) {
	e := newEnv(t, "1.32")
	ours, err := e.l.Launch(e.ctx, serviceRequest(t, "ours"))
	if err != nil {
		t.Fatal(err)
	}
	other := &Launcher{EC2: e.l.EC2, SSM: e.l.SSM, Cluster: e.l.Cluster, Clock: e.l.Clock}
	other.Cluster.Name = "other-cluster"
	theirs, err := other.Launch(e.ctx, serviceRequest(t, "theirs"))
	if err != nil {
		t.Fatal(err)
	}
	err = e.l.Terminate(e.ctx, ours.ID, theirs.ID)
	if err == nil || !strings.Contains(err.Error(), "refusing to terminate "+theirs.ID) {
		t.Fatalf("err = %v, want a refusal naming %s", err, theirs.ID)
	}
	for _, id := range []string{ours.ID, theirs.ID} {
		if i, _ := e.sim.Instance(id); i.State != "running" {
			t.Errorf("%s is %s after a refused termination, want running", id, i.State)
		}
	}
	if err := e.l.Terminate(e.ctx, ours.ID); err != nil {
		t.Fatal(err)
	}
	if i, _ := e.sim.Instance(ours.ID); i.State == "running" {
		t.Errorf("%s still running", ours.ID)
	}
	// Already gone, or never known: done.
	if err := e.l.Terminate(e.ctx, ours.ID, "i-0123456789abcdef0"); err != nil {
		t.Errorf("terminating a terminated and an unknown instance: %v", err)
	}
}
