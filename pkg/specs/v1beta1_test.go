package specs

import (
	"strings"
	"testing"

	"github.com/joist-dev/joist/pkg/model"
)

// TestBuildV1Beta1_SameAsKarpentersV1Conversion builds v1beta1 manifests
// and the v1 objects Karpenter v1.0's conversion webhook made of them
// (written by hand): every pool and node class must come out the same,
// the v1beta1 pool's kubelet settings (on the pool) the same as the v1
// node class's.
func TestBuildV1Beta1_SameAsKarpentersV1Conversion(t *testing.T) {
	beta, errs := Build(mustDecodeFile(t, "testdata/v1beta1-rich.yaml"))
	if len(errs) != 0 {
		t.Fatalf("v1beta1 does not build: %v", errs)
	}
	v1, errs := Build(mustDecodeFile(t, "testdata/v1beta1-rich-v1.yaml"))
	if len(errs) != 0 {
		t.Fatalf("v1 does not build: %v", errs)
	}
	if len(beta.Pools) != 3 || len(v1.Pools) != 3 {
		t.Fatalf("pools: %d and %d, want 3", len(beta.Pools), len(v1.Pools))
	}
	for _, p := range v1.Pools {
		b := findPool(beta, p.Name)
		if b == nil {
			t.Fatalf("v1beta1 has no pool %s", p.Name)
		}
		if x, y := jsonOf(t, b), jsonOf(t, p); x != y {
			t.Errorf("pool %s differs:\nv1beta1: %s\nv1:      %s", p.Name, x, y)
		}
	}
	if beta.Pools[0].Kubelet == nil || beta.Pools[0].Kubelet.MaxPods == nil || *beta.Pools[0].Kubelet.MaxPods != 58 {
		t.Errorf("batch pool kubelet = %+v, want maxPods 58", beta.Pools[0].Kubelet)
	}
	for name, nc := range v1.NodeClasses {
		b := beta.NodeClasses[name]
		if b == nil {
			t.Fatalf("v1beta1 has no node class %s", name)
		}
		nc.Kubelet = nil // on the batch pool in v1beta1 (compared above)
		if x, y := jsonOf(t, b), jsonOf(t, nc); x != y {
			t.Errorf("node class %s differs:\nv1beta1: %s\nv1:      %s", name, x, y)
		}
	}
}

// TestBuildV1Beta1_PoolKubeletReplacesTheNodeClasses: as in Karpenter
// v1.0, a v1beta1 pool's kubelet settings are used instead of its (v1)
// node class's, and a pool without any takes the class's.
func TestBuildV1Beta1_PoolKubeletReplacesTheNodeClasses(t *testing.T) {
	objs := mustDecode(t, `apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: own}
spec:
  template:
    spec:
      requirements: []
      kubelet: {maxPods: 20}
      nodeClassRef: {name: nc}
---
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: inherits}
spec:
  template:
    spec:
      requirements: []
      nodeClassRef: {name: nc}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: nc}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: r
  subnetSelectorTerms: [{id: subnet-1}]
  securityGroupSelectorTerms: [{id: sg-1}]
  kubelet: {maxPods: 110, podsPerCore: 4}
`)
	spec, errs := Build(objs)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	own, inh := findPool(spec, "own"), findPool(spec, "inherits")
	if k := own.Kubelet; k == nil || k.MaxPods == nil || *k.MaxPods != 20 || k.PodsPerCore != nil {
		t.Errorf("own kubelet = %+v, want maxPods 20 only", own.Kubelet)
	}
	if k := inh.Kubelet; k == nil || k.MaxPods == nil || *k.MaxPods != 110 || k.PodsPerCore == nil {
		t.Errorf("inherited kubelet = %+v, want the class's", inh.Kubelet)
	}
}

func nodePoolV1Beta1(spec string) string {
	return "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: np\nspec:\n" + indent(spec, "  ")
}

func nodeClassV1Beta1(spec string) string {
	return "apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata:\n  name: nc\nspec:\n" + indent(spec, "  ")
}

const betaTemplate = "template:\n  spec:\n    requirements: []\n    nodeClassRef: {name: nc}\n"

const betaClass = "role: r\nsubnetSelectorTerms: [{id: subnet-1}]\nsecurityGroupSelectorTerms: [{id: sg-1}]\n"

// TestLoadV1Beta1_Rules: v1beta1's own rules are applied, and every error
// names the field where the v1beta1 object has it, once.
func TestLoadV1Beta1_Rules(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"valid pool", nodePoolV1Beta1(betaTemplate), nil},
		{"valid class", nodeClassV1Beta1("amiFamily: AL2\n" + betaClass), nil},
		{"consolidateAfter with WhenUnderutilized", nodePoolV1Beta1(betaTemplate + "disruption: {consolidationPolicy: WhenUnderutilized, consolidateAfter: 30s}\n"),
			[]string{"spec.disruption: consolidateAfter cannot be combined with consolidationPolicy=WhenUnderutilized"}},
		{"WhenEmpty without consolidateAfter", nodePoolV1Beta1(betaTemplate + "disruption: {consolidationPolicy: WhenEmpty}\n"),
			[]string{"spec.disruption: consolidateAfter must be specified with consolidationPolicy=WhenEmpty"}},
		{"v1 policy name", nodePoolV1Beta1(betaTemplate + "disruption: {consolidationPolicy: WhenEmptyOrUnderutilized}\n"),
			[]string{`spec.disruption.consolidationPolicy: unsupported value "WhenEmptyOrUnderutilized": supported values: WhenEmpty, WhenUnderutilized`}},
		{"expireAfter in days", nodePoolV1Beta1(betaTemplate + "disruption: {expireAfter: 30d}\n"),
			[]string{`spec.disruption.expireAfter: invalid value "30d": must match ^(([0-9]+(s|m|h))+|Never)$`}},
		{"bad consolidateAfter", nodePoolV1Beta1(betaTemplate + "disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: soon}\n"),
			[]string{`spec.disruption.consolidateAfter: invalid value "soon": must match ^(([0-9]+(s|m|h))+|Never)$`}},
		{"Gte is v1's", nodePoolV1Beta1("template:\n  spec:\n    requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['4']}]\n    nodeClassRef: {name: nc}\n"),
			[]string{`spec.template.spec.requirements[0].operator: unsupported value "Gte": supported values: In, NotIn, Exists, DoesNotExist, Gt, Lt`}},
		{"v1 rules still apply", nodePoolV1Beta1("template:\n  spec:\n    requirements: [{key: karpenter.sh/capacity-type, operator: In, values: []}]\n    nodeClassRef: {name: nc}\n"),
			[]string{"spec.template.spec.requirements[0].values: requirements with operator 'In' must have a value defined"}},
		{"no nodeClassRef", nodePoolV1Beta1("template:\n  spec:\n    requirements: []\n"),
			[]string{"spec.template.spec.nodeClassRef: required value"}},
		{"nodeClassRef without name", nodePoolV1Beta1("template:\n  spec:\n    requirements: []\n    nodeClassRef: {kind: EC2NodeClass}\n"),
			[]string{"spec.template.spec.nodeClassRef.name: required value"}},
		{"nodeClassRef of another group", nodePoolV1Beta1("template:\n  spec:\n    requirements: []\n    nodeClassRef: {name: nc, kind: Other, apiVersion: example.com/v1}\n"),
			[]string{
				`spec.template.spec.nodeClassRef.kind: unsupported value "Other": supported values: EC2NodeClass`,
				`spec.template.spec.nodeClassRef.apiVersion: invalid value "example.com/v1": must be of group karpenter.k8s.aws`,
			}},
		{"v1 budget reasons", nodePoolV1Beta1(betaTemplate + "disruption: {budgets: [{nodes: '1', reasons: [Empty]}]}\n"),
			[]string{"spec.disruption.budgets[0].reasons: unknown field"}},
		{"v1 terminationGracePeriod", nodePoolV1Beta1("template:\n  spec:\n    requirements: []\n    terminationGracePeriod: 1h\n    nodeClassRef: {name: nc}\n"),
			[]string{"spec.template.spec.terminationGracePeriod: unknown field"}},
		{"bad budget", nodePoolV1Beta1(betaTemplate + "disruption: {budgets: [{nodes: '1', schedule: '@daily'}]}\n"),
			[]string{"spec.disruption.budgets[0]: 'schedule' must be set with 'duration'"}},
		{"kubelet typo", nodePoolV1Beta1("template:\n  spec:\n    requirements: []\n    kubelet: {maxPod: 10}\n    nodeClassRef: {name: nc}\n"),
			[]string{"spec.template.spec.kubelet.maxPod: unknown field"}},
		{"kubelet image GC thresholds", nodePoolV1Beta1("template:\n  spec:\n    requirements: []\n    kubelet: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}\n    nodeClassRef: {name: nc}\n"),
			[]string{"spec.template.spec.kubelet: imageGCHighThresholdPercent (50) must be greater than imageGCLowThresholdPercent (60)"}},
		{"kubelet reserved key", nodePoolV1Beta1("template:\n  spec:\n    requirements: []\n    kubelet: {kubeReserved: {gpu: '1'}}\n    nodeClassRef: {name: nc}\n"),
			[]string{`spec.template.spec.kubelet.kubeReserved[gpu]: unsupported value "gpu": supported values: cpu, memory, ephemeral-storage, pid`}},
		{"no amiFamily", nodeClassV1Beta1(betaClass), []string{"spec.amiFamily: required value"}},
		{"unknown amiFamily", nodeClassV1Beta1("amiFamily: Windows2025\n" + betaClass),
			[]string{`spec.amiFamily: unsupported value "Windows2025": supported values: AL2, AL2023, Bottlerocket, Ubuntu, Custom, Windows2019, Windows2022`}},
		{"Ubuntu without AMI terms", nodeClassV1Beta1("amiFamily: Ubuntu\n" + betaClass),
			[]string{"spec.amiFamily: Ubuntu needs amiSelectorTerms: Karpenter v1 no longer finds Ubuntu AMIs (select them by id, name and owner, or tags)"}},
		{"Custom without AMI terms", nodeClassV1Beta1("amiFamily: Custom\n" + betaClass),
			[]string{"spec.amiSelectorTerms: amiSelectorTerms is required when amiFamily == 'Custom'"}},
		{"alias is v1's", nodeClassV1Beta1("amiFamily: AL2\namiSelectorTerms: [{alias: al2@latest}]\n" + betaClass),
			[]string{"spec.amiSelectorTerms[0].alias: unknown field"}},
		{"v1 rules still apply to classes", nodeClassV1Beta1("amiFamily: AL2\nrole: r\nsecurityGroupSelectorTerms: [{id: sg-1}]\n"),
			[]string{"spec.subnetSelectorTerms: required value"}},
		{"role and instance profile", nodeClassV1Beta1("amiFamily: AL2\ninstanceProfile: p\n" + betaClass),
			[]string{"spec: must specify exactly one of ['role', 'instanceProfile']"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := mustDecode(t, c.in)
			_, err := Load(objs[0])
			var got []string
			if err != nil {
				oe, ok := err.(*ObjectError)
				if !ok {
					t.Fatalf("error %v is not an ObjectError", err)
				}
				for _, fe := range oe.Errors {
					got = append(got, fe.Error())
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestConvertV1Beta1_MapsToTheSameModel: `joist convert` writes v1beta1
// objects as v1 ones that build into the same pools and node classes,
// the pools' kubelet settings moved onto their node class, or onto a copy
// of it when the pools sharing it disagree.
func TestConvertV1Beta1_MapsToTheSameModel(t *testing.T) {
	in := mustDecodeFile(t, "testdata/v1beta1-rich.yaml")
	in = append(in, mustDecode(t, `apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: batch-small}
spec:
  template:
    spec:
      requirements: []
      kubelet: {maxPods: 20}
      nodeClassRef: {name: default}
---
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: web}
spec:
  template:
    spec:
      requirements: []
      nodeClassRef: {name: default}
`)...)
	before, after, conv := convertAndRebuild(t, in, ConvertOptions{})
	// The kubelet is on the v1beta1 pool, on (a copy of) its class in v1:
	// the pools, compared whole, carry it alike.
	samePools(t, before, after, []string{"default", "batch", "steady", "batch-small", "web"}, func(bc, ac *model.NodeClass) {
		bc.Kubelet, ac.Kubelet = nil, nil
	})
	classes := map[string]bool{}
	for _, nc := range conv.EC2NodeClasses {
		classes[nc.Name] = nc.Spec.Kubelet != nil
	}
	want := map[string]bool{"default": false, "default-batch-small": true, "bottlerocket": true, "ubuntu": false}
	if jsonOf(t, classes) != jsonOf(t, want) {
		t.Errorf("node classes (with a kubelet) = %v, want %v", classes, want)
	}
	for _, w := range []string{
		`EC2NodeClass "ubuntu": amiFamily Ubuntu becomes AL2 (the same bootstrap) with its amiSelectorTerms, as Karpenter v1.0 converted it: v1 has no Ubuntu family`,
		`NodePool "steady": WhenUnderutilized with consolidateAfter Never (consolidation off) stays off: consolidateAfter Never (Karpenter v1.0's conversion made it 0s, turning consolidation on)`,
	} {
		if !containsString(conv.Warnings, w) {
			t.Errorf("missing warning %q in %q", w, conv.Warnings)
		}
	}
	w := `NodePool "batch-small": kubelet settings differ between the NodePools sharing EC2NodeClass "default"; v1 keeps them on the node class, so this pool gets its own EC2NodeClass "default-batch-small"`
	if !containsString(conv.Warnings, w) {
		t.Errorf("missing warning %q in %q", w, conv.Warnings)
	}
}

// TestConvertV1Beta1_WarnsOfAKubeletWithoutItsClass: a v1beta1 pool's
// kubelet settings go onto its node class; when that class is not among
// the objects converted, the output cannot carry them, and says so.
func TestConvertV1Beta1_WarnsOfAKubeletWithoutItsClass(t *testing.T) {
	conv, errs := ConvertToV1(mustDecode(t, nodePoolV1Beta1("template:\n  spec:\n    requirements: []\n    kubelet: {maxPods: 20}\n    nodeClassRef: {name: elsewhere}\n")), ConvertOptions{})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	w := `NodePool "np": EC2NodeClass "elsewhere" is not among the converted objects; v1 keeps the pool's kubelet settings on it, so add them there`
	if !containsString(conv.Warnings, w) {
		t.Errorf("missing warning %q in %q", w, conv.Warnings)
	}
}
