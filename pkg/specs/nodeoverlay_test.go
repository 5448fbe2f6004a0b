package specs

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/model"
)

// nodeOverlay is a NodeOverlay named name whose spec is spec.
func nodeOverlay(name, spec string) string {
	return "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata:\n  name: " + name + "\nspec:\n" + indent(spec, "  ")
}

func TestNodeOverlayRules(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{"valid price adjustment", nodeOverlay("o", `
weight: 10
priceAdjustment: "-10%"
requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [default]}
  - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
  - {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["8"]}
`), nil},
		{"valid price and capacity", nodeOverlay("o", "price: \"0.125\"\ncapacity: {hugepages-2Mi: 100Mi, example.com/device: '2'}\n"), nil},
		{"every adjustment form", nodeOverlay("o", "priceAdjustment: '+0.5'"), nil},
		{"a capacity that does not decode is named", nodeOverlay("o", "capacity: {example.com/device: many}"),
			[]string{`spec.capacity[example.com/device]: invalid value "many": quantities must match the regular expression...`}},
		{"both prices", nodeOverlay("o", "price: '1'\npriceAdjustment: '+1'"), []string{"spec: cannot set both 'price' and 'priceAdjustment'"}},
		{"adjustment pattern", nodeOverlay("o", "priceAdjustment: '10%'"),
			[]string{`spec.priceAdjustment: invalid value "10%": must be a signed amount (+0.5, -0.5) or percentage (+10%, -10%, at most -100%)`}},
		{"below -100%", nodeOverlay("o", "priceAdjustment: '-150%'"),
			[]string{`spec.priceAdjustment: invalid value "-150%": must be a signed amount (+0.5, -0.5) or percentage (+10%, -10%, at most -100%)`}},
		{"price pattern", nodeOverlay("o", "price: '-1'"), []string{`spec.price: invalid value "-1": must be a price in USD per hour (0.125)`}},
		{"capacity cpu", nodeOverlay("o", "capacity: {cpu: '4'}"),
			[]string{`spec.capacity[cpu]: invalid value "cpu": invalid resource restricted: the instance type decides cpu, memory, ephemeral-storage and pods`}},
		{"weight", nodeOverlay("o", "weight: 0\nprice: '1'"), []string{"spec.weight: invalid value 0: must be between 1 and 10000"}},
		{"NotIn needs values", nodeOverlay("o", "price: '1'\nrequirements: [{key: a, operator: NotIn}]"),
			[]string{"spec.requirements[0].values: requirements with operator 'NotIn' must have a value defined"}},
		{"restricted key", nodeOverlay("o", "price: '1'\nrequirements: [{key: kubernetes.io/hostname, operator: Exists}]"),
			[]string{`spec.requirements[0].key: label "kubernetes.io/hostname" is restricted`}},
		{"operator", nodeOverlay("o", "price: '1'\nrequirements: [{key: a, operator: Inn, values: [x]}]"),
			[]string{`spec.requirements[0].operator: unsupported value "Inn": supported values: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte`}},
		{"unknown field", nodeOverlay("o", "prices: '1'"), []string{`spec.prices: unknown field...`}},
	})
}

// TestBuildOrdersOverlaysAndLeavesOutBadOnes: the spec carries the valid
// overlays as the model, highest weight first (then by name,
// descending, as Karpenter orders them; unset weighs least); a bad or duplicated overlay is
// reported by name and left out without stopping the others or the
// pools.
func TestBuildOrdersOverlaysAndLeavesOutBadOnes(t *testing.T) {
	docs := strings.Join([]string{
		nodeOverlay("a-light", "weight: 1\nprice: '0.5'"),
		nodeOverlay("b-heavy", "weight: 50\npriceAdjustment: '-20%'\nrequirements: [{key: beta.kubernetes.io/arch, operator: In, values: [arm64]}]"),
		nodeOverlay("c-light", "weight: 1\ncapacity: {example.com/device: '2'}"),
		nodeOverlay("z-none", "price: '2'"),
		nodeOverlay("bad", "priceAdjustment: '5'"),
		nodeOverlay("twice", "price: '1'"),
		nodeOverlay("twice", "price: '2'"),
		nodePool("", ""),
		"apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: nc}\nspec:\n  role: r\n  amiSelectorTerms: [{alias: al2023@latest}]\n  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n",
	}, "---\n")
	objs, err := Decode([]byte(docs), "specs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, errs := Build(objs)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{`NodeOverlay "bad": spec.priceAdjustment: invalid value "5"`, `NodeOverlay "twice": metadata.name: NodeOverlay name "twice" is defined 2 times`} {
		if !strings.Contains(joined, want) {
			t.Errorf("errors:\n%s\nwant one with %q", joined, want)
		}
	}
	if len(spec.Pools) != 1 {
		t.Errorf("pools = %d, want the NodePool served", len(spec.Pools))
	}
	var names []string
	for _, o := range spec.Overlays {
		names = append(names, o.Name)
	}
	if want := []string{"b-heavy", "c-light", "a-light", "z-none"}; !reflect.DeepEqual(names, want) {
		t.Errorf("overlays %v, want %v", names, want)
	}
	heavy := spec.Overlays[0]
	want := &model.Overlay{Name: "b-heavy", Weight: 50, PriceAdjustment: "-20%",
		Requirements: []model.Requirement{{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"arm64"}}}}
	if !reflect.DeepEqual(heavy, want) {
		t.Errorf("b-heavy = %+v, want %+v (the beta arch key normalized)", heavy, want)
	}
	if q := spec.Overlays[1].Capacity["example.com/device"]; q.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("c-light capacity = %v", spec.Overlays[2].Capacity)
	}
}

// TestConvertKeepsNodeOverlays: joist convert writes a NodeOverlay (an
// API of v1 NodePools' era) back as it was, beside the converted pools.
func TestConvertKeepsNodeOverlays(t *testing.T) {
	objs, err := Decode([]byte(nodeOverlay("spot-discount", "weight: 3\npriceAdjustment: '-5%'\nrequirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]")), "o.yaml")
	if err != nil {
		t.Fatal(err)
	}
	conv, errs := ConvertToV1(objs, ConvertOptions{})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	out, err := conv.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(out, "converted")
	if err != nil {
		t.Fatal(err)
	}
	spec, errs := Build(back)
	if len(errs) != 0 || len(spec.Overlays) != 1 {
		t.Fatalf("converted %s: errors %v, %d overlays", out, errs, len(spec.Overlays))
	}
	if o := spec.Overlays[0]; o.Name != "spot-discount" || o.Weight != 3 || o.PriceAdjustment != "-5%" || len(o.Requirements) != 1 {
		t.Errorf("overlay after convert %+v", o)
	}
}
