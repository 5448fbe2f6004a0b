package specs

import (
	"strings"
	"testing"
)

func TestDecodeSplitsYAMLAndReturnsOtherKindsAsIgnored(t *testing.T) {
	objs, err := Decode(readSeed(t), "seed.yaml")
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := []struct {
		kind, name string
		ignored    bool
	}{
		{"Provisioner", "management", false},
		{"AWSNodeTemplate", "management-lt", false},
		{"Provisioner", "service", false},
		{"AWSNodeTemplate", "service-lt", false},
		{"Deployment", "nginx-karpenter", true},
	}
	if len(objs) != len(want) {
		t.Fatalf("got %d objects, want %d", len(objs), len(want))
	}
	for i, w := range want {
		o := objs[i]
		if o.Kind != w.kind || o.Name != w.name || o.Ignored != w.ignored || o.Index != i || o.Source != "seed.yaml" {
			t.Errorf("object %d = %+v, want %+v", i, o, w)
		}
		if len(o.Raw) == 0 || o.Raw[0] != '{' {
			t.Errorf("object %d: Raw is not JSON: %q", i, o.Raw)
		}
	}
}

func TestDecodeReadsJSONForms(t *testing.T) {
	tests := []struct {
		name  string
		input string
		names []string
	}{
		{"one object", `{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"a"}}`, []string{"a"}},
		{"concatenated objects", `{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"a"}}
{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"b"}}`, []string{"a", "b"}},
		{"array", `[{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"a"}},{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}]`, []string{"a", "d"}},
		{"kubectl List", `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"a"}}]}`, []string{"a"}},
		{"typed list", "apiVersion: karpenter.sh/v1alpha5\nkind: ProvisionerList\nitems:\n- apiVersion: karpenter.sh/v1alpha5\n  kind: Provisioner\n  metadata: {name: p}\n", []string{"p"}},
		{"empty documents are skipped", "---\n# just a comment\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\n---\n", []string{"a"}},
		{"empty input", "  \n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode([]byte(tc.input), "in")
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			var names []string
			for _, o := range objs {
				names = append(names, o.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.names, ",") {
				t.Errorf("names = %v, want %v", names, tc.names)
			}
		})
	}
}

func TestDecodeReportsUnreadableDocumentsAndKeepsTheRest(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantErr string
		kept    int
	}{
		{
			name:    "unknown karpenter kind",
			input:   "apiVersion: karpenter.sh/v1alpha5\nkind: Provisoner\nmetadata: {name: typo}\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: ok}\n",
			wantErr: `f.yaml: object 1: karpenter.sh/v1alpha5 Provisoner "typo" is not supported: Joist reads karpenter.sh/v1alpha5 Provisioner, karpenter.k8s.aws/v1alpha1 AWSNodeTemplate, karpenter.sh/v1beta1 and v1 NodePool, karpenter.k8s.aws/v1beta1 and v1 EC2NodeClass, karpenter.sh/v1alpha1 NodeOverlay`,
			kept:    1,
		},
		{
			name:    "unsupported karpenter version",
			input:   "apiVersion: karpenter.k8s.aws/v1beta2\nkind: EC2NodeClass\nmetadata: {name: old}\n",
			wantErr: `f.yaml: object 1: karpenter.k8s.aws/v1beta2 EC2NodeClass "old" is not supported`,
		},
		{
			name:    "missing kind",
			input:   "apiVersion: karpenter.sh/v1\nmetadata: {name: x}\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: ok}\n",
			wantErr: "f.yaml: object 1: missing apiVersion or kind",
			kept:    1,
		},
		{
			name:    "not an object",
			input:   "- a\n- b\n",
			wantErr: "f.yaml: object 1: not a Kubernetes object",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode([]byte(tc.input), "f.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if len(objs) != tc.kept {
				t.Errorf("kept %d objects, want %d", len(objs), tc.kept)
			}
		})
	}
}

func TestDecodeReportsDuplicateYAMLKeysAgainstTheObject(t *testing.T) {
	objs, err := Decode([]byte("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\nspec: {}\nspec: {}\n"), "f.yaml")
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	_, errs := Build(objs)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `NodePool "a": invalid YAML`) {
		t.Fatalf("errs = %v, want a duplicate key error on NodePool a", errs)
	}
}
