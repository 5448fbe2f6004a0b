package launch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/specs"
	"github.com/joist-dev/joist/test/ec2sim"
)

const (
	testCluster = "hoon-cluster"
	testRegion  = "ap-northeast-2"
	zoneA       = "ap-northeast-2a"
	zoneB       = "ap-northeast-2b"
	zoneC       = "ap-northeast-2c"
)

// simTypes gives the simulator the catalog's view of a few instance
// types, with their prices in the test region, so the simulator and the
// launcher agree about them.
func simTypes(t *testing.T, names ...string) []ec2sim.InstanceTypeInfo {
	t.Helper()
	var out []ec2sim.InstanceTypeInfo
	for _, n := range names {
		it, ok := catalog.Lookup(n)
		if !ok {
			t.Fatalf("instance type %s is not in the catalog", n)
		}
		spot, hasSpot := it.SpotPrice[testRegion]
		out = append(out, ec2sim.InstanceTypeInfo{
			Name: it.Name, Arch: it.Arch, VCPU: it.VCPU, MemoryMiB: it.MemoryMiB,
			GPUCount: it.GPUCount, GPUName: it.GPUName, GPUManufacturer: it.GPUManufacturer, GPUMemoryMiB: it.GPUMemoryMiB,
			MaxENIs: it.MaxENIs, IPv4PerENI: it.IPv4PerENI, Hypervisor: it.Hypervisor, BareMetal: it.BareMetal,
			OnDemandPrice: it.OnDemandPrice[testRegion], SpotPrice: spot, SpotSupported: hasSpot,
		})
	}
	return out
}

// fakeSSM serves parameters from a map, counting reads.
type fakeSSM struct {
	mu     sync.Mutex
	params map[string]string
	reads  int
}

func (f *fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	v, ok := f.params[aws.ToString(in.Name)]
	if !ok {
		return nil, &ssmtypes.ParameterNotFound{Message: aws.String("parameter " + aws.ToString(in.Name) + " not found")}
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: aws.String(v)}}, nil
}

func (f *fakeSSM) set(name, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.params[name] = value
}

// fakeEKS answers DescribeCluster for one cluster.
type fakeEKS struct {
	calls   int
	cluster ekstypes.Cluster
	err     error
}

func (f *fakeEKS) DescribeCluster(_ context.Context, in *eks.DescribeClusterInput, _ ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	if aws.ToString(in.Name) != aws.ToString(f.cluster.Name) {
		return nil, errors.New("ResourceNotFoundException: no cluster " + aws.ToString(in.Name))
	}
	c := f.cluster
	return &eks.DescribeClusterOutput{Cluster: &c}, nil
}

// env is a launcher wired to a seeded simulator (over HTTP, through the
// real SDK) and a fake SSM holding the ground's AMI parameters.
type env struct {
	t      *testing.T
	sim    *ec2sim.Sim
	seeded ec2sim.Seeded
	ssm    *fakeSSM
	ec2    *ec2.Client
	l      *Launcher
	clock  *clocktesting.FakeClock
	// images maps an SSM parameter to the image it names.
	images map[string]string
	ctx    context.Context
}

var testTypeNames = []string{"t3.large", "t3.xlarge", "m5.large", "c6g.large", "m6g.large", "g5.xlarge", "inf2.xlarge"}

func newEnv(t *testing.T, version string, opts ...func(*ec2sim.Options)) *env {
	t.Helper()
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC))
	o := ec2sim.Options{Region: testRegion, Zones: []string{zoneA, zoneB, zoneC}, InstanceTypes: simTypes(t, testTypeNames...), Clock: clock, RequireKnownImages: true}
	for _, f := range opts {
		f(&o)
	}
	sim := ec2sim.New(o)
	e := &env{t: t, sim: sim, seeded: sim.SeedDefault(testCluster), ssm: &fakeSSM{params: map[string]string{}}, clock: clock, images: map[string]string{}, ctx: context.Background()}
	e.seedAMIs(version)
	client := ec2.New(ec2.Options{
		Region: testRegion, BaseEndpoint: aws.String(sim.Start(t)),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		Retryer:     newRetryer(5*time.Millisecond, retry.NewExponentialJitterBackoff(5*time.Millisecond)),
	})
	e.ec2 = client
	e.l = &Launcher{
		EC2: client, SSM: e.ssm, Clock: clock, Log: testLogger(),
		Cluster: Cluster{
			Name: testCluster, Endpoint: "https://ABCD.gr7.ap-northeast-2.eks.amazonaws.com", CA: "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
			Version: version, ServiceCIDR: "10.100.0.0/16", InstanceProfile: "KarpenterNodeInstanceProfile-" + testCluster,
		},
	}
	return e
}

func testLogger() *slog.Logger {
	if os.Getenv("JOIST_TEST_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// seedAMIs publishes the EKS AMI parameters for a Kubernetes version, as
// AWS does, each naming a simulator image.
func (e *env) seedAMIs(v string) {
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	add := func(param, name, arch string) {
		id := e.sim.AddImage(ec2sim.ImageSpec{Name: name, Architecture: arch, OwnerAlias: "amazon", OwnerID: "602401143452", CreationDate: created})
		e.ssm.set(param, id)
		e.images[param] = id
	}
	for _, arch := range []string{"x86_64", "arm64"} {
		for _, variant := range []string{"standard", "nvidia", "neuron"} {
			if arch == "arm64" && variant == "neuron" {
				continue
			}
			add("/aws/service/eks/optimized-ami/"+v+"/amazon-linux-2023/"+arch+"/"+variant+"/recommended/image_id", "amazon-eks-node-al2023-"+arch+"-"+variant+"-"+v, arch)
		}
		add("/aws/service/bottlerocket/aws-k8s-"+v+"/"+arch+"/latest/image_id", "bottlerocket-aws-k8s-"+v+"-"+arch, arch)
		add("/aws/service/bottlerocket/aws-k8s-"+v+"-nvidia/"+arch+"/latest/image_id", "bottlerocket-aws-k8s-"+v+"-nvidia-"+arch, arch)
	}
	for _, w := range model.WindowsServers {
		name := "Windows_Server-" + w.Version + "-English-Core-EKS_Optimized-" + v
		add("/aws/service/ami-windows-latest/"+name+"/image_id", name, "x86_64")
	}
	if !minorAtLeast(v, 33) {
		add("/aws/service/eks/optimized-ami/"+v+"/amazon-linux-2/recommended/image_id", "amazon-eks-node-"+v, "x86_64")
		add("/aws/service/eks/optimized-ami/"+v+"/amazon-linux-2-arm64/recommended/image_id", "amazon-eks-arm64-node-"+v, "arm64")
		add("/aws/service/eks/optimized-ami/"+v+"/amazon-linux-2-gpu/recommended/image_id", "amazon-eks-gpu-node-"+v, "x86_64")
	}
}

// spec builds the node classes and pools of YAML manifests the way the
// functions read them, so tests feed the launcher exactly what arrives.
func spec(t *testing.T, manifests string) *model.Spec {
	t.Helper()
	objs, err := specs.Decode([]byte(manifests), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, errs := specs.Build(objs)
	for _, e := range errs {
		t.Errorf("spec: %v", e)
	}
	if t.Failed() {
		t.FailNow()
	}
	return s
}

func poolOf(t *testing.T, s *model.Spec, name string) (*model.Pool, *model.NodeClass) {
	t.Helper()
	for _, p := range s.Pools {
		if p.Name == name {
			nc, ok := s.NodeClasses[p.NodeClass]
			if !ok {
				t.Fatalf("pool %s: node class %s missing", name, p.NodeClass)
			}
			return p, nc
		}
	}
	t.Fatalf("no pool %s", name)
	return nil, nil
}

// options are every offering of the types in the zones with the capacity
// types, priced from the catalog, as a plan hands them over.
func options(t *testing.T, types, zones, capacityTypes []string) []Option {
	t.Helper()
	var out []Option
	for _, n := range types {
		it, ok := catalog.Lookup(n)
		if !ok {
			t.Fatalf("no type %s", n)
		}
		variant := VariantStandard
		if it.GPUCount > 0 && it.GPUManufacturer == "nvidia" {
			variant = VariantNvidia
		} else if it.AcceleratorManufacturer == "aws" {
			variant = VariantNeuron
		}
		for _, ct := range capacityTypes {
			price := it.OnDemandPrice[testRegion]
			if ct == model.CapacityTypeSpot {
				price = it.SpotPrice[testRegion]
			}
			for _, z := range zones {
				out = append(out, Option{InstanceType: n, Arch: it.Arch, Variant: variant, Zone: z, CapacityType: ct, Price: price})
			}
		}
	}
	return out
}

func taint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}
