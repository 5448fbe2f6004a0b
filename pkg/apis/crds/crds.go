package crds

import (
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/pkg/apis/v1"
	"github.com/joist-dev/joist/pkg/apis/v1alpha1"
	"github.com/joist-dev/joist/pkg/apis/v1alpha5"
)

// kind describes one CRD.
type kind struct {
	group, version, kind, plural string
	shortNames                   []string
	goType                       reflect.Type
	edits                        map[string][]edit
	columns                      []apiextensionsv1.CustomResourceColumnDefinition
}

// All returns the CRDs, in the order of their file names.
func All() []*apiextensionsv1.CustomResourceDefinition {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, k := range []kind{
		{v1alpha1.Group, v1alpha1.Version, v1alpha1.Kind, "awsnodetemplates", nil, reflect.TypeOf(v1alpha1.AWSNodeTemplate{}), awsNodeTemplateEdits(),
			[]apiextensionsv1.CustomResourceColumnDefinition{{Name: "AMIFamily", Type: "string", JSONPath: ".spec.amiFamily"}}},
		{v1.GroupAWS, v1.Version, v1.KindEC2NodeClass, "ec2nodeclasses", []string{"ec2nc", "ec2ncs"}, reflect.TypeOf(v1.EC2NodeClass{}), ec2NodeClassEdits(),
			[]apiextensionsv1.CustomResourceColumnDefinition{{Name: "Role", Type: "string", JSONPath: ".spec.role"}}},
		{v1.GroupCore, v1.Version, v1.KindNodePool, "nodepools", nil, reflect.TypeOf(v1.NodePool{}), nodePoolEdits(),
			[]apiextensionsv1.CustomResourceColumnDefinition{
				{Name: "NodeClass", Type: "string", JSONPath: ".spec.template.spec.nodeClassRef.name"},
				{Name: "Weight", Type: "integer", JSONPath: ".spec.weight"},
			}},
		{v1alpha1.GroupCore, v1alpha1.Version, v1alpha1.KindNodeOverlay, "nodeoverlays", []string{"overlays"}, reflect.TypeOf(v1alpha1.NodeOverlay{}), nodeOverlayEdits(),
			[]apiextensionsv1.CustomResourceColumnDefinition{{Name: "Weight", Type: "integer", JSONPath: ".spec.weight"}}},
		{v1alpha5.Group, v1alpha5.Version, v1alpha5.Kind, "provisioners", nil, reflect.TypeOf(v1alpha5.Provisioner{}), provisionerEdits(),
			[]apiextensionsv1.CustomResourceColumnDefinition{
				{Name: "Template", Type: "string", JSONPath: ".spec.providerRef.name"},
				{Name: "Weight", Type: "integer", JSONPath: ".spec.weight"},
			}},
	} {
		out = append(out, k.crd())
	}
	return out
}

// FileName is the CRD's file name under config/crds.
func FileName(c *apiextensionsv1.CustomResourceDefinition) string {
	return c.Spec.Group + "_" + c.Spec.Names.Plural + ".yaml"
}

func (k kind) crd() *apiextensionsv1.CustomResourceDefinition {
	schema := build(k.goType, k.edits)
	schema.Description = k.kind + " (" + k.group + "/" + k.version + "), as Joist reads it; see docs/specs.md."
	cols := append([]apiextensionsv1.CustomResourceColumnDefinition{}, k.columns...)
	cols = append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"})
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        k.plural + "." + k.group,
			Annotations: map[string]string{"joist.sh/generated-by": "go test ./pkg/apis/crds -run TestCRDFiles -update"},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: k.group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind:       k.kind,
				ListKind:   k.kind + "List",
				Plural:     k.plural,
				Singular:   strings.ToLower(k.kind),
				ShortNames: k.shortNames,
				Categories: []string{"karpenter"},
			},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:                     k.version,
				Served:                   true,
				Storage:                  true,
				Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &schema},
				Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: cols,
			}},
		},
	}
}

// Lists shared by the rule tables.
var (
	taintEffects    = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
	evictionSignals = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}
	reservable      = []string{"cpu", "memory", "ephemeral-storage", "pid"}
	volumeTypes     = []string{"standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"}
)

// celList renders strings as a CEL list literal.
func celList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = "'" + v + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

const qualifiedNamePattern = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
const labelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`

// taintEdits are the schema rules of a taint list at path.
func taintEdits(e map[string][]edit, path string) {
	e[path] = append(e[path], maxItems(100))
	e[path+"[]"] = append(e[path+"[]"], required("key", "effect"))
	e[path+"[].key"] = append(e[path+"[].key"], minLength(1), maxLength(316), pattern(qualifiedNamePattern))
	e[path+"[].value"] = append(e[path+"[].value"], maxLength(316), pattern(`^(`+strings.Trim(qualifiedNamePattern, "^$")+`)?$`))
	e[path+"[].effect"] = append(e[path+"[].effect"], enum(taintEffects...))
}
