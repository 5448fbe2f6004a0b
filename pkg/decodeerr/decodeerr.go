// Package decodeerr says where a JSON document fails to decode into a Go
// type, field by field. encoding/json stops at the first error, and an
// Unmarshaler's error (a Quantity's, a duration's) names no field at all:
// "quantities must match the regular expression" leaves the user to guess
// which of a manifest's quantities is wrong.
package decodeerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// Failure is a value that does not decode: its path in the document
// (spec.limits[cpu], spec.blockDeviceMappings[1].ebs.iops) and what is
// wrong with it.
type Failure struct {
	Path   string
	Detail string
}

func (f Failure) Error() string { return f.Path + ": " + f.Detail }

// Find finds where raw fails to decode into a value of type t: each object
// member, map entry or list item that fails on its own and holds no part
// that does, with its own error, in the document's order of keys (sorted)
// and items. None when raw decodes, or no part fails on its own (the
// caller reports the whole document's error).
func Find(raw []byte, t reflect.Type) []Failure {
	var out []Failure
	find(raw, t, "", &out)
	return out
}

func find(raw []byte, t reflect.Type, path string, out *[]Failure) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return // decodes as a whole
	}
	part := func(raw json.RawMessage, t reflect.Type, path string) {
		err := json.Unmarshal(raw, reflect.New(t).Interface())
		if err == nil {
			return
		}
		n := len(*out)
		find(raw, t, path, out)
		if len(*out) == n {
			*out = append(*out, Failure{Path: path, Detail: Detail(raw, err)})
		}
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return
		}
		fields := map[string]reflect.Type{}
		if t.Kind() == reflect.Struct {
			jsonFields(t, fields)
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if t.Kind() == reflect.Map {
				part(obj[k], t.Elem(), path+"["+k+"]")
			} else if ft, ok := fields[k]; ok {
				part(obj[k], ft, joinPath(path, k))
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return
		}
		for i, it := range items {
			part(it, t.Elem(), path+"["+strconv.Itoa(i)+"]")
		}
	}
}

// Detail says what is wrong with raw, a value that failed to decode with
// err: its JSON type (TypeMismatch), or the value and why (an
// Unmarshaler's error).
func Detail(raw []byte, err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return TypeMismatch(te)
	}
	v := string(raw)
	if len(v) > 64 {
		v = v[:61] + "..."
	}
	return fmt.Sprintf("invalid value %s: %s", v, strings.TrimPrefix(err.Error(), "json: "))
}

// jsonFields are the JSON members of struct type t by name, as
// encoding/json sees them: embedded structs without a name and ",inline"
// members are flattened.
func jsonFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if name == "" && ft.Kind() == reflect.Struct && (f.Anonymous || strings.Contains(opts, "inline")) {
			jsonFields(ft, out)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// TypeMismatch says what a value of the wrong JSON type got and wanted,
// in the words of a manifest's author rather than Go's.
func TypeMismatch(te *json.UnmarshalTypeError) string {
	return fmt.Sprintf("invalid type: got JSON %s, want %s", te.Value, typeName(te.Type.String()))
}

func typeName(goType string) string {
	switch {
	case strings.Contains(goType, "int"):
		return "an integer"
	case strings.Contains(goType, "bool"):
		return "a boolean"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map"), strings.Contains(goType, "struct"), strings.Contains(goType, "."):
		return "an object"
	case strings.Contains(goType, "string"):
		return "a string"
	}
	return goType
}
