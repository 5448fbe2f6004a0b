package decodeerr

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type inner struct {
	Size  resource.Quantity `json:"size"`
	Count int               `json:"count"`
}

type doc struct {
	metav1.TypeMeta `json:",inline"`
	Limits          map[string]resource.Quantity `json:"limits"`
	Items           []inner                      `json:"items"`
	Nested          *inner                       `json:"nested"`
	Every           metav1.Duration              `json:"every"`
	Plain           string
}

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		name string
		json string
		want []Failure
	}{
		{"decodes", `{"limits": {"cpu": "1"}, "items": [{"size": "1Gi", "count": 2}]}`, nil},
		{"a map entry", `{"limits": {"cpu": "1", "memory": "lots"}}`,
			[]Failure{{"limits[memory]", `invalid value "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`}}},
		{"list items and a type, each", `{"items": [{"size": "1Gi"}, {"size": "big", "count": "two"}]}`, []Failure{
			{"items[1].count", "invalid type: got JSON string, want an integer"},
			{"items[1].size", `invalid value "big": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`}}},
		{"through a pointer", `{"nested": {"count": true}}`, []Failure{{"nested.count", "invalid type: got JSON bool, want an integer"}}},
		{"an Unmarshaler is one value", `{"every": "soon"}`, []Failure{{"every", `invalid value "soon": time: invalid duration "soon"`}}},
		{"inline members and Go names", `{"kind": 5, "Plain": 1}`, []Failure{
			{"Plain", "invalid type: got JSON number, want a string"},
			{"kind", "invalid type: got JSON number, want a string"}}},
		{"a long value is cut", `{"limits": {"cpu": {"a": "0123456789012345678901234567890123456789012345678901234567890123456789"}}}`, []Failure{
			{"limits[cpu]", `invalid value {"a": "012345678901234567890123456789012345678901234567890123...: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Find([]byte(tc.json), reflect.TypeFor[*doc]())
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Find:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
