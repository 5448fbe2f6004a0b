package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// syncBuffer lets the test read what the server goroutine prints.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const catalogDoc = `{"generated": "2026-11-29", "instanceTypes": [
{"name":"t3.large","family":"t3","arch":"amd64","vcpu":2,"memoryMiB":8192,"gpuCount":0,"gpuName":"","gpuManufacturer":"","gpuMemoryMiB":0,"maxENIs":3,"ipv4PerENI":12,"hypervisor":"nitro","bareMetal":false,"spotSupported":true,"onDemandPrice":{"ap-northeast-2":0.104,"us-east-1":0.0832},"spotPrice":{"ap-northeast-2":0.031}},
{"name":"t3.xlarge","family":"t3","arch":"amd64","vcpu":4,"memoryMiB":16384,"maxENIs":4,"ipv4PerENI":15,"hypervisor":"nitro","spotSupported":true,"onDemandPrice":{"ap-northeast-2":0.208},"spotPrice":{"us-east-1":0.05}}
]}`

const imagesDoc = `[{"Name":"amazon-eks-node-al2023-x86_64-standard-1.34-v20261101","Architecture":"x86_64","OwnerAlias":"amazon","CreationDate":"2026-11-01T00:00:00Z"}]`

func TestRunServesSeededSimulator(t *testing.T) {
	dir := t.TempDir()
	typesPath := filepath.Join(dir, "catalog.json")
	imagesPath := filepath.Join(dir, "images.json")
	if err := os.WriteFile(typesPath, []byte(catalogDoc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(imagesPath, []byte(imagesDoc), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--cluster", "hoon-cluster", "--zones", "ap-northeast-2a,ap-northeast-2c",
			"--instance-types", typesPath, "--images", imagesPath, "--boot-delay", "1h"}, &out, ready)
	}()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("run exited early: %v\n%s", err, out.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("server did not start\n%s", out.String())
	}

	c := ec2.New(ec2.Options{Region: "ap-northeast-2", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")})
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{
		{Name: aws.String("tag:karpenter.sh/discovery/hoon-cluster"), Values: []string{"*"}}}})
	if err != nil || len(subnets.Subnets) != 2 {
		t.Fatalf("DescribeSubnets: %v %+v", err, subnets)
	}
	its, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{})
	if err != nil || len(its.InstanceTypes) != 2 || len(its.InstanceTypes[0].SupportedUsageClasses) != 2 || len(its.InstanceTypes[1].SupportedUsageClasses) != 1 {
		t.Fatalf("DescribeInstanceTypes (t3.xlarge has no spot price in the region): %v %+v", err, its)
	}
	images, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}})
	if err != nil || len(images.Images) != 1 {
		t.Fatalf("DescribeImages: %v %+v", err, images)
	}
	if !strings.HasPrefix(out.String(), "ec2sim: seeded cluster hoon-cluster") || !strings.Contains(out.String(), "ec2sim listening on "+url) {
		t.Errorf("output:\n%s", out.String())
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"instanceTypes": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--colour", "red"}, "flag provided but not defined"},
		{"missing file", []string{"--instance-types", filepath.Join(dir, "none.json")}, "reading instance types"},
		{"empty catalog", []string{"--instance-types", bad}, "has no instanceTypes"},
		{"stray argument", []string{"serve"}, "unexpected arguments"},
		{"address in use or bad", []string{"--addr", "256.0.0.1:1"}, "listening on"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out syncBuffer
			err := run(context.Background(), tc.args, &out, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
