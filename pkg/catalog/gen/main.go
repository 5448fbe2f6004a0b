// Command gen turns the shared EC2 instance-type data file into the compact
// gzip'd file that package catalog embeds, so Joist never reads the shared
// data at run time.
//
// It is run from pkg/catalog by `go generate`:
//
//	go run ./gen -in <data file> -out instance-types.json.gz
//
// With no -in it looks for shared/data/ec2-instance-types.json beside the
// repository clone (the layout of CI and of the developers' machines).
//
// With -refresh-regions us-east-1,eu-west-1,... (and AWS credentials from
// the default chain) it also asks AWS, per region, for the instance types
// (DescribeInstanceTypes, DescribeInstanceTypeOfferings) and prices (the
// Pricing API's GetProducts, DescribeSpotPriceHistory): the region's prices
// are replaced by AWS's, types the data file lacks are added, nothing is
// removed (see refresh.go). Without it, the default, the command is
// offline and its output depends on the data file only.
//
// The input is decoded strictly (unknown fields are an error) and checked:
// no duplicate names, vCPU and memory above zero, a known architecture, every
// price above zero. The output is deterministic (sorted types, sorted map
// keys from encoding/json, a gzip header without time or name) so a rerun on
// the same input yields the same bytes.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/utils/clock"

	"github.com/joist-dev/joist/pkg/catalog/internal/record"
)

// source is the data file's top level, decoded strictly.
type source struct {
	Source              string            `json:"source"`
	Generated           string            `json:"generated"`
	OnDemandPriceAsOf   map[string]string `json:"onDemandPriceAsOf"`
	SpotPriceAsOf       string            `json:"spotPriceAsOf"`
	PriceUnit           string            `json:"priceUnit"`
	SpotPriceBasis      string            `json:"spotPriceBasis"`
	StaleRegionalPrices []string          `json:"staleRegionalPrices"`
	InstanceTypes       []sourceType      `json:"instanceTypes"`
}

// sourceType is one instance type of the data file. Pointers mark the
// fields the file leaves out when no source knows them.
type sourceType struct {
	Name                    string             `json:"name"`
	Family                  string             `json:"family"`
	Category                string             `json:"category"`
	Generation              int                `json:"generation"`
	Size                    string             `json:"size"`
	Arch                    string             `json:"arch"`
	VCPU                    int64              `json:"vcpu"`
	MemoryMiB               int64              `json:"memoryMiB"`
	CPUManufacturer         string             `json:"cpuManufacturer"`
	GPUCount                int64              `json:"gpuCount"`
	GPUName                 string             `json:"gpuName"`
	GPUManufacturer         string             `json:"gpuManufacturer"`
	GPUMemoryMiB            int64              `json:"gpuMemoryMiB"`
	AcceleratorName         string             `json:"acceleratorName"`
	AcceleratorManufacturer string             `json:"acceleratorManufacturer"`
	AcceleratorCount        int64              `json:"acceleratorCount"`
	LocalNVMeGiB            int64              `json:"localNvmeGiB"`
	NetworkBandwidthMbps    *int64             `json:"networkBandwidthMbps"`
	EBSBandwidthMbps        *int64             `json:"ebsBandwidthMbps"`
	MaxENIs                 *int64             `json:"maxENIs"`
	MaxENIsDefaultCard      *int64             `json:"maxENIsDefaultCard"`
	IPv4PerENI              *int64             `json:"ipv4PerENI"`
	BranchENIs              *int64             `json:"branchENIs"`
	MaxPods                 *int64             `json:"maxPods"`
	MaxPodsEKSCapped        *int64             `json:"maxPodsEksCapped"`
	EFACount                int64              `json:"efaCount"`
	Hypervisor              *string            `json:"hypervisor"`
	BareMetal               bool               `json:"bareMetal"`
	Burstable               bool               `json:"burstable"`
	SpotSupported           *bool              `json:"spotSupported"`
	CurrentGeneration       bool               `json:"currentGeneration"`
	OnDemandPrice           map[string]float64 `json:"onDemandPrice"`
	SpotPrice               map[string]float64 `json:"spotPrice"`
}

// neuronCoresPerDevice is the NeuronCore count of one Neuron device, which
// the data file does not carry but Karpenter's aws.amazon.com/neuroncore
// resource needs (EC2 reports it as NeuronInfo.NeuronDevices[].CoreInfo.Count).
var neuronCoresPerDevice = map[string]int64{
	"inferentia":  4,
	"inferentia2": 2,
	"trainium":    2,
	"trainium2":   8,
}

// habanaGaudis fills a gap the data file documents: it has no record of
// dl1.24xlarge's eight Habana Gaudi accelerators (EC2 reports them as GPUs
// made by Habana), and Karpenter advertises them as habana.ai/gaudi.
var habanaGaudis = map[string]int64{
	"dl1.24xlarge": 8,
}

func main() {
	in := flag.String("in", "", "instance-type data file (default: shared/data/ec2-instance-types.json beside the repository)")
	out := flag.String("out", "instance-types.json.gz", "file to write")
	regions := flag.String("refresh-regions", "", "comma-separated regions whose types and prices to refresh from live AWS APIs (needs AWS credentials; default: none, offline)")
	flag.Parse()
	rs, err := parseRegions(*regions)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), *in, *out, rs, awsClients, clock.RealClock{}); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// run converts in and writes out. With regions it refreshes them from AWS
// through clients before writing.
func run(ctx context.Context, in, out string, regions []string, clients clientsFunc, c clock.PassiveClock) error {
	if in == "" {
		p, err := defaultInput()
		if err != nil {
			return err
		}
		in = p
	}
	raw, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("read instance-type data: %w", err)
	}
	f, err := convert(raw)
	if err != nil {
		return fmt.Errorf("convert %s: %w", in, err)
	}
	if len(regions) > 0 {
		refreshed, stats, err := refresh(ctx, f, regions, clients, c.Now())
		if err != nil {
			return err
		}
		f = refreshed
		for _, r := range regions {
			st := stats[r]
			fmt.Printf("gen: %s: on-demand prices for %d types (%d dropped), spot for %d (%d dropped), %d types added\n",
				r, st.OnDemandSet, st.OnDemandDropped, st.SpotSet, st.SpotDropped, len(st.Added))
		}
	}
	b, err := encode(f)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Printf("gen: %d instance types from %s -> %s (%d bytes)\n", len(f.Types), in, out, len(b))
	return nil
}

// defaultInput is $JOIST_SHARED/data/ec2-instance-types.json when
// JOIST_SHARED is set; otherwise it finds the repository root (the folder
// holding go.mod) above
// the working folder and returns ../shared/data/ec2-instance-types.json
// from there.
func defaultInput() (string, error) {
	if d := os.Getenv("JOIST_SHARED"); d != "" {
		return filepath.Join(d, "data", "ec2-instance-types.json"), nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the working folder: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "data", "ec2-instance-types.json"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working folder; pass -in")
		}
		dir = parent
	}
}

// convert decodes and checks the data file and maps it onto the record.
func convert(raw []byte) (*record.File, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var src source
	if err := dec.Decode(&src); err != nil {
		return nil, fmt.Errorf("decode instance-type data: %w", err)
	}
	if len(src.InstanceTypes) == 0 {
		return nil, errors.New("no instance types")
	}
	f := &record.File{
		Generated:           src.Generated,
		OnDemandPriceAsOf:   src.OnDemandPriceAsOf,
		SpotPriceAsOf:       src.SpotPriceAsOf,
		StaleRegionalPrices: append([]string(nil), src.StaleRegionalPrices...),
	}
	sort.Strings(f.StaleRegionalPrices)
	seen := map[string]bool{}
	var errs []error
	for _, s := range src.InstanceTypes {
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate name", s.Name))
			continue
		}
		seen[s.Name] = true
		if err := check(&s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		f.Types = append(f.Types, toRecord(&s))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.Slice(f.Types, func(i, j int) bool { return f.Types[i].Name < f.Types[j].Name })
	return f, nil
}

func check(s *sourceType) error {
	if s.Name == "" || s.Family == "" || s.Size == "" {
		return errors.New("name, family and size must be set")
	}
	if s.Family+"."+s.Size != s.Name {
		return fmt.Errorf("family %q and size %q do not make the name", s.Family, s.Size)
	}
	if s.VCPU <= 0 || s.MemoryMiB <= 0 {
		return fmt.Errorf("vcpu %d and memoryMiB %d must be above zero", s.VCPU, s.MemoryMiB)
	}
	if s.Arch != "amd64" && s.Arch != "arm64" {
		return fmt.Errorf("unknown arch %q", s.Arch)
	}
	for region, p := range s.OnDemandPrice {
		if !(p > 0) {
			return fmt.Errorf("on-demand price %v in %s is not above zero", p, region)
		}
	}
	for region, p := range s.SpotPrice {
		if !(p > 0) {
			return fmt.Errorf("spot price %v in %s is not above zero", p, region)
		}
	}
	if s.AcceleratorManufacturer == "aws" {
		if _, ok := neuronCoresPerDevice[s.AcceleratorName]; !ok {
			return fmt.Errorf("neuron device %q has no known NeuronCore count; add it to neuronCoresPerDevice", s.AcceleratorName)
		}
	}
	return nil
}

func toRecord(s *sourceType) record.Type {
	r := record.Type{
		Name:                    s.Name,
		Family:                  s.Family,
		Category:                s.Category,
		Generation:              s.Generation,
		Size:                    s.Size,
		Arch:                    s.Arch,
		VCPU:                    s.VCPU,
		MemoryMiB:               s.MemoryMiB,
		CPUManufacturer:         s.CPUManufacturer,
		GPUCount:                s.GPUCount,
		GPUName:                 s.GPUName,
		GPUManufacturer:         s.GPUManufacturer,
		GPUMemoryMiB:            s.GPUMemoryMiB,
		AcceleratorName:         s.AcceleratorName,
		AcceleratorManufacturer: s.AcceleratorManufacturer,
		AcceleratorCount:        s.AcceleratorCount,
		HabanaGaudiCount:        habanaGaudis[s.Name],
		LocalNVMeGB:             s.LocalNVMeGiB,
		NetworkBandwidthMbps:    deref(s.NetworkBandwidthMbps),
		EBSBandwidthMbps:        deref(s.EBSBandwidthMbps),
		MaxENIs:                 deref(s.MaxENIs),
		MaxENIsDefaultCard:      deref(s.MaxENIsDefaultCard),
		IPv4PerENI:              deref(s.IPv4PerENI),
		BranchENIs:              deref(s.BranchENIs),
		PublishedMaxPods:        deref(s.MaxPods),
		EKSCappedMaxPods:        deref(s.MaxPodsEKSCapped),
		EFACount:                s.EFACount,
		Hypervisor:              s.Hypervisor,
		BareMetal:               s.BareMetal,
		Burstable:               s.Burstable,
		SpotSupported:           s.SpotSupported != nil && *s.SpotSupported,
		CurrentGeneration:       s.CurrentGeneration,
		OnDemandPrice:           s.OnDemandPrice,
		SpotPrice:               s.SpotPrice,
	}
	if s.AcceleratorManufacturer == "aws" {
		r.NeuronCoreCount = s.AcceleratorCount * neuronCoresPerDevice[s.AcceleratorName]
	}
	if len(r.OnDemandPrice) == 0 {
		r.OnDemandPrice = nil
	}
	if len(r.SpotPrice) == 0 {
		r.SpotPrice = nil
	}
	return r
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// encode writes compact JSON through gzip with a zero header, so the bytes
// depend only on the input.
func encode(f *record.File) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("start gzip: %w", err)
	}
	if err := json.NewEncoder(zw).Encode(f); err != nil {
		return nil, fmt.Errorf("encode catalog: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("finish gzip: %w", err)
	}
	return buf.Bytes(), nil
}
