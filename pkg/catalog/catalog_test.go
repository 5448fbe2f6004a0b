package catalog

import (
	"reflect"
	"testing"
)

func TestAllIsSortedAndLookupFindsEveryType(t *testing.T) {
	all := All()
	if len(all) != 1398 {
		t.Errorf("%d types, want the data file's 1398", len(all))
	}
	for i, it := range all {
		if i > 0 && all[i-1].Name >= it.Name {
			t.Fatalf("not sorted at %s", it.Name)
		}
		got, ok := Lookup(it.Name)
		if !ok || got != it {
			t.Fatalf("Lookup(%s) = %v, %v", it.Name, got, ok)
		}
	}
	if _, ok := Lookup("m5.huge"); ok {
		t.Error("found a type that does not exist")
	}
}

func TestEmbeddedTypesCarryTheDataFileFields(t *testing.T) {
	m5 := mustLookup(t, "m5.large")
	want := InstanceType{
		Name: "m5.large", Family: "m5", Category: "m", Generation: 5, Size: "large", Arch: "amd64",
		VCPU: 2, MemoryMiB: 8192, CPUManufacturer: "intel",
		NetworkBandwidthMbps: 750, EBSBandwidthMbps: 4750,
		MaxENIs: 3, MaxENIsDefaultCard: 3, IPv4PerENI: 10, BranchENIs: 9,
		PublishedMaxPods: 29, EKSCappedMaxPods: 29,
		Hypervisor: "nitro", HypervisorKnown: true, SpotSupported: true, CurrentGeneration: true,
	}
	got := *m5
	got.OnDemandPrice, got.SpotPrice = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if m5.OnDemandPrice["us-east-1"] != 0.096 || m5.SpotPrice["us-east-1"] != 0.0315 {
		t.Errorf("prices %v %v", m5.OnDemandPrice["us-east-1"], m5.SpotPrice["us-east-1"])
	}
	p5 := mustLookup(t, "p5.48xlarge")
	if !p5.StaleRegionalPrices || p5.GPUCount != 8 || p5.EFACount != 32 || p5.MaxENIsDefaultCard != 2 {
		t.Errorf("p5.48xlarge: %+v", p5)
	}
	if trn := mustLookup(t, "trn2.48xlarge"); trn.NeuronCoreCount != 128 {
		t.Errorf("trn2.48xlarge NeuronCores %d, want 128", trn.NeuronCoreCount)
	}
}

func TestDataInfoTellsThePriceDates(t *testing.T) {
	info := DataInfo()
	if info.Generated == "" || info.SpotPriceAsOf == "" || info.OnDemandPriceAsOf["us-east-1"] == "" {
		t.Errorf("missing dates: %+v", info)
	}
	if info.Types != len(All()) {
		t.Errorf("Types %d, All %d", info.Types, len(All()))
	}
}

func TestCloneIsDeep(t *testing.T) {
	m5 := mustLookup(t, "m5.large")
	c := m5.Clone()
	c.OnDemandPrice["us-east-1"] = 1
	c.VCPU = 99
	if m5.OnDemandPrice["us-east-1"] != 0.096 || m5.VCPU != 2 {
		t.Error("changing a clone changed the shared type")
	}
}

func TestParseRejectsBrokenEmbeddedData(t *testing.T) {
	if _, err := parse([]byte("not gzip")); err == nil {
		t.Error("no error for a file that is not gzip")
	}
}

func TestEmbeddedFileStaysSmall(t *testing.T) {
	if len(embedded) > 400<<10 {
		t.Errorf("embedded catalog is %d bytes; keep it under 400 KiB", len(embedded))
	}
}
