package live

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/catalog/internal/awsdata"
	"github.com/joist-dev/joist/pkg/catalog/internal/awsfake"
)

// fromEC2 converts one DescribeInstanceTypes answer the way the live
// catalog does.
func fromEC2(info *ec2types.InstanceTypeInfo) (*catalog.InstanceType, bool) {
	a, ok := awsdata.FromEC2(info)
	if !ok {
		return nil, false
	}
	return fromAWS(&a)
}

func info(name string, arch ec2types.ArchitectureType, vcpu int32, mib int64) ec2types.InstanceTypeInfo {
	return ec2types.InstanceTypeInfo{
		InstanceType:  ec2types.InstanceType(name),
		ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{arch}, Manufacturer: aws.String("Intel")},
		VCpuInfo:      &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(vcpu)},
		MemoryInfo:    &ec2types.MemoryInfo{SizeInMiB: aws.Int64(mib)},
	}
}

func TestFromEC2ReadsAcceleratorsLikeKarpenter(t *testing.T) {
	gaudi := info("dl1.24xlarge", ec2types.ArchitectureTypeX8664, 96, 786432)
	gaudi.GpuInfo = &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{Name: aws.String("Gaudi HL-205"), Manufacturer: aws.String("Habana"), Count: aws.Int32(8), MemoryInfo: &ec2types.GpuDeviceMemoryInfo{SizeInMiB: aws.Int32(32768)}}}}

	twoKinds := info("g9.mixed", ec2types.ArchitectureTypeX8664, 8, 32768)
	twoKinds.GpuInfo = &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{
		{Name: aws.String("A"), Manufacturer: aws.String("NVIDIA"), Count: aws.Int32(1)},
		{Name: aws.String("B"), Manufacturer: aws.String("NVIDIA"), Count: aws.Int32(1)},
	}}

	neuron := info("trn1.2xlarge", ec2types.ArchitectureTypeX8664, 8, 32768)
	neuron.NeuronInfo = &ec2types.NeuronInfo{NeuronDevices: []ec2types.NeuronDeviceInfo{{Name: aws.String("Trainium"), Count: aws.Int32(1), CoreInfo: &ec2types.NeuronDeviceCoreInfo{Count: aws.Int32(2)}}}}

	qualcomm := info("dl2q.24xlarge", ec2types.ArchitectureTypeX8664, 96, 786432)
	qualcomm.InferenceAcceleratorInfo = &ec2types.InferenceAcceleratorInfo{Accelerators: []ec2types.InferenceDeviceInfo{{Name: aws.String("Qualcomm AI100"), Manufacturer: aws.String("Qualcomm"), Count: aws.Int32(8)}}}

	tests := []struct {
		name  string
		info  ec2types.InstanceTypeInfo
		check func(t *testing.T, it *catalog.InstanceType)
	}{
		{"Habana GPUs become gaudi, with GPU labels", gaudi, func(t *testing.T, it *catalog.InstanceType) {
			if it.HabanaGaudiCount != 8 || it.GPUName != "gaudi-hl-205" || it.GPUManufacturer != "habana" || it.GPUMemoryMiB != 32768 {
				t.Errorf("%+v", it)
			}
			if _, ok := it.Capacity(nil)[catalog.ResourceNVIDIAGPU]; ok {
				t.Error("Habana GPUs advertised as nvidia.com/gpu")
			}
			if q := it.Capacity(nil)[catalog.ResourceHabanaGaudi]; q.Value() != 8 {
				t.Errorf("habana.ai/gaudi %v", q.Value())
			}
		}},
		{"two GPU kinds give no GPU labels", twoKinds, func(t *testing.T, it *catalog.InstanceType) {
			if it.GPUName != "" || it.GPUCount != 0 {
				t.Errorf("%+v", it)
			}
		}},
		{"Neuron devices and cores", neuron, func(t *testing.T, it *catalog.InstanceType) {
			if it.AcceleratorName != "trainium" || it.AcceleratorManufacturer != "aws" || it.AcceleratorCount != 1 || it.NeuronCoreCount != 2 {
				t.Errorf("%+v", it)
			}
		}},
		{"other inference accelerators", qualcomm, func(t *testing.T, it *catalog.InstanceType) {
			if it.AcceleratorName != "qualcomm-ai100" || it.AcceleratorManufacturer != "qualcomm" || it.AcceleratorCount != 8 || it.NeuronCoreCount != 0 {
				t.Errorf("%+v", it)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it, ok := fromEC2(&tc.info)
			if !ok {
				t.Fatal("type skipped")
			}
			tc.check(t, it)
		})
	}
}

func TestFromEC2MapsArchitecturesAndSkipsWhatKubernetesCannotRun(t *testing.T) {
	tests := []struct {
		arch   ec2types.ArchitectureType
		want   string
		wantOK bool
	}{
		{ec2types.ArchitectureTypeX8664, "amd64", true},
		{ec2types.ArchitectureTypeArm64, "arm64", true},
		{ec2types.ArchitectureTypeX8664Mac, "amd64", true},
		{ec2types.ArchitectureTypeArm64Mac, "arm64", true},
		{ec2types.ArchitectureTypeI386, "", false},
	}
	for _, tc := range tests {
		t.Run(string(tc.arch), func(t *testing.T) {
			in := info("zz1.large", tc.arch, 2, 4096)
			it, ok := fromEC2(&in)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if ok && it.Arch != tc.want {
				t.Errorf("arch %s, want %s", it.Arch, tc.want)
			}
		})
	}
	noSpecs := info("zz1.large", ec2types.ArchitectureTypeX8664, 0, 4096)
	if _, ok := fromEC2(&noSpecs); ok {
		t.Error("a type with no vCPUs was kept")
	}
	badName := info("nodot", ec2types.ArchitectureTypeX8664, 2, 4096)
	if _, ok := fromEC2(&badName); ok {
		t.Error("a name without a size was kept")
	}
}

func TestFromEC2TakesEC2SpecsOverTheEmbeddedOnes(t *testing.T) {
	in := info("m5d.large", ec2types.ArchitectureTypeX8664, 2, 8192)
	in.InstanceStorageInfo = &ec2types.InstanceStorageInfo{NvmeSupport: ec2types.EphemeralNvmeSupportUnsupported, TotalSizeInGB: aws.Int64(75)}
	in.EbsInfo = &ec2types.EbsInfo{EbsOptimizedSupport: ec2types.EbsOptimizedSupportSupported}
	in.BareMetal = aws.Bool(false)
	in.Hypervisor = ec2types.InstanceTypeHypervisorNitro
	in.SupportedUsageClasses = []ec2types.UsageClassType{ec2types.UsageClassTypeOnDemand}
	it, ok := fromEC2(&in)
	if !ok {
		t.Fatal("skipped")
	}
	if it.LocalNVMeGB != 0 {
		t.Errorf("non-NVMe instance store kept as NVMe: %d", it.LocalNVMeGB)
	}
	if it.EBSBandwidthMbps != 0 {
		t.Errorf("EBS bandwidth %d for a type that is not EBS-optimized by default", it.EBSBandwidthMbps)
	}
	if it.SpotSupported {
		t.Error("spot supported without the spot usage class")
	}
	if it.NetworkBandwidthMbps != 750 || it.BranchENIs != 9 {
		t.Errorf("embedded-only fields lost: bandwidth %d branch ENIs %d", it.NetworkBandwidthMbps, it.BranchENIs)
	}
	if embedded, _ := catalog.Lookup("m5d.large"); embedded.LocalNVMeGB != 75 {
		t.Error("the shared embedded type was changed")
	}

	metal := info("m5.metal", ec2types.ArchitectureTypeX8664, 96, 393216)
	metal.BareMetal = aws.Bool(true)
	it, _ = fromEC2(&metal)
	if v, ok := it.Labels()[catalog.LabelInstanceHypervisor]; !ok || v != "" {
		t.Errorf("bare metal hypervisor label %q present %v, want present and empty", v, ok)
	}
}

func TestParsePriceItem(t *testing.T) {
	tests := []struct {
		name      string
		item      string
		wantName  string
		wantPrice float64
		wantOK    bool
	}{
		{"hourly USD price", awsfake.PriceListItem("m5.large", "us-east-1", "Shared", 0.096, 0), "m5.large", 0.096, true},
		{"zero price is skipped", awsfake.PriceListItem("m5.large", "us-east-1", "Shared", 0, 0), "", 0, false},
		{"not JSON", "{", "", 0, false},
		{"no instance type", `{"product":{"attributes":{}},"terms":{"OnDemand":{}}}`, "", 0, false},
		{"not an hourly unit", `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"a":{"priceDimensions":{"b":{"unit":"Quantity","pricePerUnit":{"USD":"100"}}}}}}}`, "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name, price, ok := awsdata.ParsePriceItem(tc.item)
			if name != tc.wantName || price != tc.wantPrice || ok != tc.wantOK {
				t.Errorf("got %q %v %v, want %q %v %v", name, price, ok, tc.wantName, tc.wantPrice, tc.wantOK)
			}
		})
	}
}
