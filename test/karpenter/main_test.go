package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/scheduling"
)

// A dumped type becomes a Karpenter instance type whose allocatable is
// Joist's, whose offerings keep their prices and availability, and whose
// requirements carry its labels, its offerings' zones and DoesNotExist for
// an AWS label it lacks.
func TestInstanceTypeKeepsJoistsAllocatableAndPrices(t *testing.T) {
	q := resource.MustParse
	dt := dumpType{
		Name:        "m5.large",
		Labels:      map[string]string{corev1.LabelInstanceTypeStable: "m5.large", "karpenter.k8s.aws/instance-category": "m"},
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("7577Mi"), corev1.ResourcePods: q("29")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("1930m"), corev1.ResourceMemory: q("6903Mi"), corev1.ResourcePods: q("29")},
	}
	for _, o := range []struct {
		zone, ct    string
		price       float64
		unavailable bool
	}{{"us-east-1a", "on-demand", 0.096, false}, {"us-east-1b", "spot", 0.0315, true}} {
		dt.Offerings = append(dt.Offerings, struct {
			Zone         string  `json:"Zone"`
			CapacityType string  `json:"CapacityType"`
			Price        float64 `json:"Price"`
			Unavailable  bool    `json:"Unavailable"`
		}{o.zone, o.ct, o.price, o.unavailable})
	}
	it, err := instanceType(dt, "us-east-1", []string{"karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-gpu-count"})
	if err != nil {
		t.Fatal(err)
	}
	alloc := it.Allocatable()
	for name, want := range dt.Allocatable {
		if got := alloc[name]; got.Cmp(want) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, got.String(), want.String())
		}
	}
	avail := it.Offerings.Available()
	if len(avail) != 1 || avail[0].Price != 0.096 {
		t.Errorf("available offerings %v, want one at $0.096", avail)
	}
	spot := it.Offerings.Compatible(scheduling.NewLabelRequirements(map[string]string{v1.CapacityTypeLabelKey: "spot"}))
	if len(spot) != 1 || spot[0].Price != 0.0315 || spot[0].Available {
		t.Errorf("spot offerings %v, want one unavailable at $0.0315", spot)
	}
	if z := it.Requirements.Get(corev1.LabelTopologyZone); !z.Has("us-east-1a") || !z.Has("us-east-1b") || z.Has("us-east-1c") {
		t.Errorf("zones %s", z)
	}
	if r := it.Requirements.Get("karpenter.k8s.aws/instance-gpu-count"); r.Operator() != corev1.NodeSelectorOpDoesNotExist {
		t.Errorf("gpu-count requirement %s, want DoesNotExist", r)
	}
	if r := it.Requirements.Get("karpenter.k8s.aws/instance-category"); !r.Has("m") || r.Has("c") {
		t.Errorf("category requirement %s", r)
	}
}
