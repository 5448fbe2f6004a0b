package specs

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

// decodeFailures finds where raw fails to decode into a value of type t:
// each object member, map entry or list item that fails on its own and
// holds no part that does, with its own error. An Unmarshaler's error (a
// Quantity's, a duration's) names no field, and "cannot decode" alone
// would leave the user to guess which of a manifest's values is wrong.
// None when no part fails on its own.
func decodeFailures(raw []byte, t reflect.Type, path string, out *errs) {
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
		decodeFailures(raw, t, path, out)
		if len(*out) == n {
			*out = append(*out, &FieldError{Field: path, Detail: decodeDetail(raw, err)})
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

// decodeDetail says what is wrong with raw, a value that does not decode:
// its JSON type, or the value and why (an Unmarshaler's error).
func decodeDetail(raw []byte, err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("invalid type: got JSON %s, want %s", te.Value, typeName(te.Type.String()))
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
