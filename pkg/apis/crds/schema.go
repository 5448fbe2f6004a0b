// Package crds builds the CustomResourceDefinitions of the four spec kinds
// (config/crds holds them as YAML, written from here by
// `go test ./pkg/apis/crds -run TestCRDFiles -update`). The OpenAPI
// schemas are derived from the Go types in pkg/apis by reflection; bounds,
// enums, patterns, defaults and the CEL x-kubernetes-validations are
// added by JSON path from the tables in rules_*.go. Rules CEL cannot
// express (or only at a cost the API server refuses) are left to
// pkg/specs, which every Joist function applies to what it reads anyway.
package crds

import (
	"encoding/json"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type props = apiextensionsv1.JSONSchemaProps

// quantityPattern is the pattern the API server uses for quantities.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

var (
	typeQuantity   = reflect.TypeOf(resource.Quantity{})
	typeObjectMeta = reflect.TypeOf(metav1.ObjectMeta{})
	typeTypeMeta   = reflect.TypeOf(metav1.TypeMeta{})
	typeTime       = reflect.TypeOf(metav1.Time{})
	typeDuration   = reflect.TypeOf(metav1.Duration{})
	typeRaw        = reflect.TypeOf(json.RawMessage{})
)

// node is a schema under construction: JSONSchemaProps holds children by
// value, so the tree is kept with pointers until it is finished.
type node struct {
	p      props
	fields map[string]*node
	items  *node
	values *node
}

func (n *node) props() props {
	p := n.p
	if n.fields != nil {
		p.Properties = map[string]props{}
		for k, c := range n.fields {
			p.Properties[k] = c.props()
		}
	}
	if n.items != nil {
		s := n.items.props()
		p.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &s}
	}
	if n.values != nil {
		s := n.values.props()
		p.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &s}
	}
	return p
}

// edit changes the schema at one path.
type edit func(*props)

// build derives the schema of t and applies edits by path. Paths name
// properties with dots; "[]" steps into list items and "{}" into map
// values, e.g. "spec.requirements[].operator" or "spec.limits{}".
func build(t reflect.Type, edits map[string][]edit) props {
	root := nodeOf(t)
	for path, es := range edits {
		n := root.find(path)
		if n == nil {
			panic("crds: no schema at path " + path)
		}
		for _, e := range es {
			e(&n.p)
		}
	}
	return root.props()
}

func nodeOf(t reflect.Type) *node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case typeQuantity:
		return &node{p: props{XIntOrString: true, AnyOf: []props{{Type: "integer"}, {Type: "string"}}, Pattern: quantityPattern}}
	case typeObjectMeta:
		return &node{p: props{Type: "object"}}
	case typeTime:
		return &node{p: props{Type: "string", Format: "date-time"}}
	case typeDuration:
		return &node{p: props{Type: "string"}}
	case typeRaw:
		return &node{p: props{Type: "object", XPreserveUnknownFields: ptr(true)}}
	}
	switch t.Kind() {
	case reflect.String:
		return &node{p: props{Type: "string"}}
	case reflect.Bool:
		return &node{p: props{Type: "boolean"}}
	case reflect.Int32:
		return &node{p: props{Type: "integer", Format: "int32"}}
	case reflect.Int64:
		return &node{p: props{Type: "integer", Format: "int64"}}
	case reflect.Int:
		return &node{p: props{Type: "integer"}}
	case reflect.Slice:
		return &node{p: props{Type: "array"}, items: nodeOf(t.Elem())}
	case reflect.Map:
		if t.Elem() == typeRaw {
			// An open map of arbitrary JSON (the v1 kubelet).
			return &node{p: props{Type: "object", XPreserveUnknownFields: ptr(true)}}
		}
		return &node{p: props{Type: "object"}, values: nodeOf(t.Elem())}
	case reflect.Struct:
		n := &node{p: props{Type: "object"}, fields: map[string]*node{}}
		n.addFields(t)
		return n
	}
	panic("crds: no schema for " + t.String())
}

func (n *node) addFields(t reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			switch f.Type {
			case typeTypeMeta:
				n.fields["apiVersion"] = &node{p: props{Type: "string"}}
				n.fields["kind"] = &node{p: props{Type: "string"}}
			case typeObjectMeta:
				n.fields["metadata"] = &node{p: props{Type: "object"}}
			default:
				n.addFields(f.Type)
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		n.fields[name] = nodeOf(f.Type)
	}
}

func (n *node) find(path string) *node {
	cur := n
	if path == "" {
		return cur
	}
	for _, seg := range strings.Split(path, ".") {
		var steps []string
		for strings.HasSuffix(seg, "[]") || strings.HasSuffix(seg, "{}") {
			steps = append([]string{seg[len(seg)-2:]}, steps...)
			seg = seg[:len(seg)-2]
		}
		if seg != "" {
			next, ok := cur.fields[seg]
			if !ok {
				return nil
			}
			cur = next
		}
		for _, s := range steps {
			if s == "[]" {
				cur = cur.items
			} else {
				cur = cur.values
			}
			if cur == nil {
				return nil
			}
		}
	}
	return cur
}

func ptr[T any](v T) *T { return &v }

// Edits used by the rule tables.

func required(fields ...string) edit {
	return func(p *props) { p.Required = append(p.Required, fields...) }
}

func enum(values ...string) edit {
	return func(p *props) {
		for _, v := range values {
			b, _ := json.Marshal(v)
			p.Enum = append(p.Enum, apiextensionsv1.JSON{Raw: b})
		}
	}
}

func pattern(re string) edit { return func(p *props) { p.Pattern = re } }

func minimum(v float64) edit { return func(p *props) { p.Minimum = &v } }

func maximum(v float64) edit { return func(p *props) { p.Maximum = &v } }

func minLength(v int64) edit { return func(p *props) { p.MinLength = &v } }

func maxLength(v int64) edit { return func(p *props) { p.MaxLength = &v } }

func maxItems(v int64) edit { return func(p *props) { p.MaxItems = &v } }

func minItems(v int64) edit { return func(p *props) { p.MinItems = &v } }

func maxProperties(v int64) edit { return func(p *props) { p.MaxProperties = &v } }

func listType(t string) edit { return func(p *props) { p.XListType = &t } }

func defaultJSON(v any) edit {
	return func(p *props) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		p.Default = &apiextensionsv1.JSON{Raw: b}
	}
}

// cel adds an x-kubernetes-validations rule.
func cel(rule, message string) edit {
	return func(p *props) {
		p.XValidations = append(p.XValidations, apiextensionsv1.ValidationRule{Rule: rule, Message: message})
	}
}
