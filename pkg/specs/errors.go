package specs

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FieldError is one problem in one field of an object. Field is the JSON
// path (spec.requirements[1].operator); Detail says what is wrong.
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Detail
	}
	return e.Field + ": " + e.Detail
}

// ObjectError is every problem found in one object, reported together so
// that a user fixes a manifest in one pass. Each line of Error() reads
// `Kind "name": field: detail`.
type ObjectError struct {
	Kind   string
	Name   string
	Source string
	// Index is the object's position in Source (0-based).
	Index  int
	Errors []*FieldError
}

func (e *ObjectError) Error() string {
	lines := make([]string, 0, len(e.Errors))
	for _, fe := range e.Errors {
		lines = append(lines, fmt.Sprintf("%s %q: %s", e.Kind, e.Name, fe.Error()))
	}
	return strings.Join(lines, "\n")
}

// Lines returns one line per field error, each prefixed with where the
// object came from, for printing to a terminal.
func (e *ObjectError) Lines() []string {
	lines := make([]string, 0, len(e.Errors))
	for _, fe := range e.Errors {
		prefix := ""
		if e.Source != "" {
			prefix = fmt.Sprintf("%s: ", e.Source)
		}
		lines = append(lines, fmt.Sprintf("%s%s %q: %s", prefix, e.Kind, e.Name, fe.Error()))
	}
	return lines
}

// errs collects field errors while an object is validated.
type errs []*FieldError

func (l *errs) add(p *field.Path, format string, args ...any) {
	f := ""
	if p != nil {
		f = p.String()
	}
	*l = append(*l, &FieldError{Field: f, Detail: fmt.Sprintf(format, args...)})
}

func (l *errs) required(p *field.Path) { l.add(p, "required value") }

func (l *errs) unsupported(p *field.Path, value string, supported []string) {
	l.add(p, "unsupported value %q: supported values: %s", value, strings.Join(supported, ", "))
}

func (l *errs) invalid(p *field.Path, value any, format string, args ...any) {
	var v string
	switch t := value.(type) {
	case string:
		v = fmt.Sprintf("%q", t)
	default:
		v = fmt.Sprint(t)
	}
	l.add(p, "invalid value %s: %s", v, fmt.Sprintf(format, args...))
}

func (l *errs) exclusive(p *field.Path, a, b string) {
	l.add(p, "%s and %s are mutually exclusive", a, b)
}

// sortedKeys returns a map's keys in order, so that errors come out in a
// stable order run after run.
func sortedKeys[K ~string, V any](m map[K]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	return keys
}
