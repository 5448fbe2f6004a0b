package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodType = `{"name": "m5.large", "family": "m5", "category": "m", "generation": 5, "size": "large", "arch": "amd64", "vcpu": 2, "memoryMiB": 8192, "cpuManufacturer": "intel", "gpuCount": 0, "gpuName": "", "gpuManufacturer": "", "gpuMemoryMiB": 0, "localNvmeGiB": 0, "maxENIsDefaultCard": 3, "ipv4PerENI": 10, "maxPods": 29, "maxPodsEksCapped": 29, "hypervisor": "nitro", "bareMetal": false, "burstable": false, "currentGeneration": true, "onDemandPrice": {"us-east-1": 0.096}}`

func file(types ...string) []byte {
	return []byte(`{"source": "s", "generated": "2026-11-29", "onDemandPriceAsOf": {"us-east-1": "2026-07-20"}, "spotPriceAsOf": "2025-04-24", "priceUnit": "USD", "spotPriceBasis": "min", "staleRegionalPrices": ["p5.48xlarge"], "instanceTypes": [` + strings.Join(types, ",") + `]}`)
}

func TestConvertChecksTheDataFile(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{"a good file converts", file(goodType), ""},
		{"unknown fields are rejected", file(strings.Replace(goodType, `"vcpu"`, `"cores": 1, "vcpu"`, 1)), "unknown field"},
		{"duplicate names are rejected", file(goodType, goodType), "duplicate"},
		{"zero vcpu is rejected", file(strings.Replace(goodType, `"vcpu": 2`, `"vcpu": 0`, 1)), "above zero"},
		{"unknown arch is rejected", file(strings.Replace(goodType, `"amd64"`, `"riscv64"`, 1)), "unknown arch"},
		{"a zero price is rejected", file(strings.Replace(goodType, `0.096`, `0`, 1)), "not above zero"},
		{"a name that is not family.size is rejected", file(strings.Replace(goodType, `"size": "large"`, `"size": "xlarge"`, 1)), "do not make the name"},
		{"an unknown Neuron device is rejected", file(strings.Replace(goodType, `"localNvmeGiB"`, `"acceleratorName": "trainium9", "acceleratorManufacturer": "aws", "acceleratorCount": 1, "localNvmeGiB"`, 1)), "NeuronCore"},
		{"no types is rejected", file(), "no instance types"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convert(tc.in)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestConvertDerivesNeuronCoresAndKeepsUnknownsApart(t *testing.T) {
	inf2 := strings.NewReplacer(`"m5.large"`, `"inf2.large"`, `"m5"`, `"inf2"`, `"localNvmeGiB"`, `"acceleratorName": "inferentia2", "acceleratorManufacturer": "aws", "acceleratorCount": 6, "localNvmeGiB"`, `"hypervisor": "nitro", `, ``).Replace(goodType)
	f, err := convert(file(inf2, goodType))
	if err != nil {
		t.Fatal(err)
	}
	if f.Types[0].Name != "inf2.large" || f.Types[1].Name != "m5.large" {
		t.Fatalf("not sorted by name: %s, %s", f.Types[0].Name, f.Types[1].Name)
	}
	if got := f.Types[0].NeuronCoreCount; got != 12 {
		t.Errorf("NeuronCoreCount %d, want 6 devices × 2", got)
	}
	if f.Types[0].Hypervisor != nil {
		t.Errorf("absent hypervisor became %q", *f.Types[0].Hypervisor)
	}
	if f.Types[1].Hypervisor == nil || *f.Types[1].Hypervisor != "nitro" {
		t.Errorf("hypervisor lost")
	}
	if f.Types[1].SpotPrice != nil {
		t.Errorf("absent spot prices became %v", f.Types[1].SpotPrice)
	}
}

func TestEncodeIsDeterministic(t *testing.T) {
	f, err := convert(file(goodType))
	if err != nil {
		t.Fatal(err)
	}
	a, err := encode(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encode(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two encodings of the same input differ")
	}
}

// The embedded file must be what the generator makes from the shared data,
// so nobody edits it by hand or forgets to regenerate. Every clone checks
// that it is the generator's encoding of what it holds (a hand edit that
// changes its bytes fails). The comparison with the shared data needs
// shared/ beside the repository (developers' machines, and CI when it lays
// it there): without it, it is logged as not made, and fails only with
// JOIST_REQUIRE_SHARED=1 — `make test` sets JOIST_REQUIRE_TOOLS for the
// programs it builds itself, but cannot make shared/ appear in a bare clone.
func TestEmbeddedFileIsUpToDateWithTheSharedData(t *testing.T) {
	got, err := os.ReadFile(filepath.Join("..", "instance-types.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	embedded := readOutput(t, filepath.Join("..", "instance-types.json.gz"))
	again, err := encode(embedded)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, again) {
		t.Errorf("pkg/catalog/instance-types.json.gz is not the generator's encoding of its own content (edited by hand?): run `go generate ./pkg/catalog`")
	}
	in, err := defaultInput()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(in)
	if errors.Is(err, fs.ErrNotExist) && os.Getenv("JOIST_REQUIRE_SHARED") != "1" {
		t.Logf("not compared with the shared data: %v (lay shared/ beside the repository or set JOIST_SHARED; JOIST_REQUIRE_SHARED=1 makes this fail)", err)
		return
	}
	if err != nil {
		t.Fatalf("the shared data file should be beside the repository: %v", err)
	}
	f, err := convert(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, err := encode(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("pkg/catalog/instance-types.json.gz is stale: run `go generate ./pkg/catalog`")
	}
}
