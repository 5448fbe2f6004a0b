package crds_test

import (
	"context"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/pkg/specs"
	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var gvrs = map[string]schema.GroupVersionResource{
	"Provisioner":     {Group: "karpenter.sh", Version: "v1alpha5", Resource: "provisioners"},
	"AWSNodeTemplate": {Group: "karpenter.k8s.aws", Version: "v1alpha1", Resource: "awsnodetemplates"},
	"NodePool":        {Group: "karpenter.sh", Version: "v1", Resource: "nodepools"},
	"EC2NodeClass":    {Group: "karpenter.k8s.aws", Version: "v1", Resource: "ec2nodeclasses"},
	"NodeOverlay":     {Group: "karpenter.sh", Version: "v1alpha1", Resource: "nodeoverlays"},
}

func apply(t *testing.T, dyn dynamic.Interface, doc string) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	gvr := gvrs[u.GetKind()]
	out, err := dyn.Resource(gvr).Create(context.Background(), u, metav1.CreateOptions{})
	if err == nil {
		t.Cleanup(func() { _ = dyn.Resource(gvr).Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}
	return out, err
}

// TestCRDsInstallAndAcceptValidObjects runs on a real API server: testenv
// installs config/crds, so a CRD the server refuses (a CEL rule that does
// not compile or costs too much) fails here first.
func TestCRDsInstallAndAcceptValidObjects(t *testing.T) {
	env := testenv.Kube(t)
	dyn := dynamic.NewForConfigOrDie(env.Config)
	for _, doc := range []string{
		"apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: service}\nspec:\n  providerRef: {name: service-lt}\n  ttlSecondsAfterEmpty: 30\n  ttlSecondsUntilExpired: 1209600\n  labels: {nodeType: service-2023}\n  taints: [{key: service, value: 'true', effect: NoSchedule}]\n  requirements:\n  - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.large, t3.xlarge]}\n  - {key: beta.kubernetes.io/arch, operator: In, values: [amd64]}\n  - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ['3']}\n  kubeletConfiguration: {maxPods: 20, evictionSoft: {memory.available: 5%}, evictionSoftGracePeriod: {memory.available: 1m}, kubeReserved: {cpu: 100m}}\n",
		"apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata: {name: service-lt}\nspec:\n  subnetSelector: {karpenter.sh/discovery/hoon-cluster: '*'}\n  securityGroupSelector: {aws-ids: 'sg-1, sg-2'}\n  tags: {karpenter.sh/discovery: hoon-cluster}\n  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, volumeType: gp3}}]\n",
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n  template:\n    metadata: {labels: {team: a, karpenter.sh/capacity-type: spot}}\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n      requirements:\n      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5], minValues: 2}\n      - {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['4']}\n  disruption: {budgets: [{nodes: '0', schedule: '@daily', duration: 1h}]}\n",
		"apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: default}\nspec:\n  role: KarpenterNodeRole\n  amiSelectorTerms: [{alias: al2023@latest}]\n  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n  kubelet: {maxPods: 110, serializeImagePulls: false}\n  blockDeviceMappings: [{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 100Gi}}]\n",
		"apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: spot-discount}\nspec:\n  weight: 10\n  priceAdjustment: '-10%'\n  requirements:\n  - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}\n  - {key: karpenter.sh/nodepool, operator: In, values: [default]}\n",
		"apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: hugepages}\nspec:\n  capacity: {hugepages-2Mi: 100Mi}\n  requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['8']}]\n",
	} {
		if _, err := apply(t, dyn, doc); err != nil {
			t.Errorf("valid object refused: %v\n%s", err, doc)
		}
	}
}

// TestCRDsAcceptWhatTheSpecReaderAccepts applies the seed, the rich
// v1alpha5 fixture and their v1 conversions: anything pkg/specs reads
// clean must also be admitted by the API server.
func TestCRDsAcceptWhatTheSpecReaderAccepts(t *testing.T) {
	env := testenv.Kube(t)
	dyn := dynamic.NewForConfigOrDie(env.Config)
	for _, path := range []string{"../../../examples/seed/seed.yaml", "../../specs/testdata/v1alpha5-rich.yaml"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := specs.Decode(data, path)
		if err != nil {
			t.Fatal(err)
		}
		conv, errs := specs.ConvertToV1(objs, specs.ConvertOptions{InstanceProfile: "profile"})
		if len(errs) != 0 {
			t.Fatal(errs)
		}
		out, err := conv.YAML()
		if err != nil {
			t.Fatal(err)
		}
		converted, err := specs.Decode(out, path+" (v1)")
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range append(objs, converted...) {
			if o.Ignored {
				continue
			}
			if _, err := apply(t, dyn, string(o.Raw)); err != nil {
				t.Errorf("%s %s refused: %v", o.Where(), o, err)
			}
		}
	}
}

// TestCRDsRejectCELBreakingObjects checks the API server refuses an
// object breaking each kind's CEL rules, with the rule's message.
func TestCRDsRejectCELBreakingObjects(t *testing.T) {
	env := testenv.Kube(t)
	dyn := dynamic.NewForConfigOrDie(env.Config)
	tests := []struct {
		name, doc, want string
	}{
		{"provider and providerRef", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: aa}\nspec: {providerRef: {name: t}, provider: {subnetSelector: {a: b}}}\n", "provider and providerRef are mutually exclusive"},
		{"ttlSecondsAfterEmpty with consolidation", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: bb}\nspec: {providerRef: {name: t}, ttlSecondsAfterEmpty: 30, consolidation: {enabled: true}}\n", "ttlSecondsAfterEmpty and consolidation.enabled are mutually exclusive"},
		{"v1alpha5 restricted label", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: cc}\nspec: {providerRef: {name: t}, labels: {example.kubernetes.io/x: y1}}\n", "label domain is restricted"},
		{"v1alpha5 Gt needs an integer", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: dd}\nspec: {providerRef: {name: t}, requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [four]}]}\n", "must have a single positive integer value"},
		{"v1alpha5 evictionSoft pairs", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: ee}\nspec: {providerRef: {name: t}, kubeletConfiguration: {evictionSoft: {memory.available: 5%}}}\n", "each evictionSoft signal needs an evictionSoftGracePeriod"},
		{"v1alpha1 launchTemplate exclusions", "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata: {name: ff}\nspec: {subnetSelector: {a: b}, launchTemplate: lt, userData: x}\n", "launchTemplate and userData are mutually exclusive"},
		{"v1alpha1 aws-ids", "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata: {name: gg}\nspec: {subnetSelector: {aws-ids: 'subnet-1,sg-2'}, securityGroupSelector: {a: b}}\n", "aws-ids must be subnet ids"},
		{"v1 In needs values", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: ii}\nspec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: x}, requirements: [{key: a, operator: In}]}}}\n", "requirements with operator 'In' must have a value defined"},
		{"v1 restricted requirement", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: jj}\nspec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: x}, requirements: [{key: kubernetes.io/hostname, operator: Exists}]}}}\n", `label "kubernetes.io/hostname" is restricted`},
		{"v1 budget schedule", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: kk}\nspec: {disruption: {budgets: [{nodes: '1', schedule: '@daily'}]}, template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: x}, requirements: []}}}\n", "'schedule' must be set with 'duration'"},
		{"v1 node class kind", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: ll}\nspec: {template: {spec: {nodeClassRef: {group: example.com, kind: Other, name: x}, requirements: []}}}\n", "Joist launches with karpenter.k8s.aws EC2NodeClasses only"},
		{"v1 role or instance profile", "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: mm}\nspec: {role: r, instanceProfile: p, amiSelectorTerms: [{alias: al2023@latest}], subnetSelectorTerms: [{id: subnet-1}], securityGroupSelectorTerms: [{id: sg-1}]}\n", "must specify exactly one of ['role', 'instanceProfile']"},
		{"v1 alias alone", "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: nn}\nspec: {role: r, amiSelectorTerms: [{alias: al2023@latest}, {id: ami-1}], subnetSelectorTerms: [{id: subnet-1}], securityGroupSelectorTerms: [{id: sg-1}]}\n", "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"},
		{"v1 subnet id excludes tags", "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: oo}\nspec: {role: r, amiSelectorTerms: [{alias: al2023@latest}], subnetSelectorTerms: [{tags: {a: b}}, {id: subnet-1, tags: {a: b}}], securityGroupSelectorTerms: [{id: sg-1}]}\n", "'id' is mutually exclusive"},
		{"overlay price and adjustment", "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: qq}\nspec: {price: '1.5', priceAdjustment: '+1'}\n", "cannot set both 'price' and 'priceAdjustment'"},
		{"overlay capacity restricted", "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: rr}\nspec: {capacity: {cpu: '4'}}\n", "invalid resource restricted"},
		{"overlay NotIn needs values", "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: ss}\nspec: {price: '1', requirements: [{key: a, operator: NotIn}]}\n", "requirements with operator 'NotIn' must have a value defined"},
		{"v1 reserved tag", "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: pp}\nspec: {role: r, tags: {karpenter.sh/nodepool: x}, amiSelectorTerms: [{alias: al2023@latest}], subnetSelectorTerms: [{id: subnet-1}], securityGroupSelectorTerms: [{id: sg-1}]}\n", "tag contains a restricted tag matching karpenter.sh/nodepool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := apply(t, dyn, tc.doc)
			if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want Invalid with %q", err, tc.want)
			}
		})
	}
}

// TestCRDDefaultsMatchTheSpecReader checks the server fills the same
// defaults pkg/specs does, so both stores serve the same pools.
func TestCRDDefaultsMatchTheSpecReader(t *testing.T) {
	env := testenv.Kube(t)
	dyn := dynamic.NewForConfigOrDie(env.Config)
	np, err := apply(t, dyn, "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: defaults}\nspec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: x}, requirements: []}}}\n")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"spec.template.spec.expireAfter":      "720h",
		"spec.disruption.consolidateAfter":    "0s",
		"spec.disruption.consolidationPolicy": "WhenEmptyOrUnderutilized",
	} {
		got, _, _ := unstructured.NestedFieldNoCopy(np.Object, strings.Split(path, ".")...)
		if got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	budgets, _, _ := unstructured.NestedSlice(np.Object, "spec", "disruption", "budgets")
	if len(budgets) != 1 || budgets[0].(map[string]any)["nodes"] != "10%" {
		t.Errorf("budgets = %v", budgets)
	}
	nc, err := apply(t, dyn, "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: defaults}\nspec: {role: r, amiSelectorTerms: [{alias: al2023@latest}], subnetSelectorTerms: [{id: subnet-1}], securityGroupSelectorTerms: [{id: sg-1}]}\n")
	if err != nil {
		t.Fatal(err)
	}
	hop, _, _ := unstructured.NestedInt64(nc.Object, "spec", "metadataOptions", "httpPutResponseHopLimit")
	tokens, _, _ := unstructured.NestedString(nc.Object, "spec", "metadataOptions", "httpTokens")
	if hop != 1 || tokens != "required" {
		t.Errorf("metadataOptions = %v %v", hop, tokens)
	}
}
