package ec2sim

import (
	"sort"
	"strings"
)

// pattern is a compiled EC2 filter value. EC2's rules: "*" matches zero or
// more characters, "?" matches zero or one character (not exactly one, as
// in shell globs: "prod?" matches "prod" and "prods"), a backslash escapes
// the next character, and matching is case-sensitive.
type pattern []patTok

type patTok struct {
	kind byte // 'l' literal, '*' star, '?' optional
	r    rune
}

func compilePattern(s string) pattern {
	var p pattern
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '\\':
			if i+1 < len(rs) {
				i++
			}
			p = append(p, patTok{kind: 'l', r: rs[i]})
		case '*':
			p = append(p, patTok{kind: '*'})
		case '?':
			p = append(p, patTok{kind: '?'})
		default:
			p = append(p, patTok{kind: 'l', r: rs[i]})
		}
	}
	return p
}

// match reports whether the whole of s matches, by dynamic programming over
// (pattern position, string position) so pathological patterns stay linear
// in their product.
func (p pattern) match(s string) bool {
	rs := []rune(s)
	// cur[j]: pattern[:i] matches rs[:j].
	cur := make([]bool, len(rs)+1)
	cur[0] = true
	for _, t := range p {
		next := make([]bool, len(rs)+1)
		for j := 0; j <= len(rs); j++ {
			switch t.kind {
			case '*':
				next[j] = cur[j] || (j > 0 && next[j-1])
			case '?':
				next[j] = cur[j] || (j > 0 && cur[j-1])
			default:
				next[j] = j > 0 && cur[j-1] && rs[j-1] == t.r
			}
		}
		cur = next
	}
	return cur[len(rs)]
}

// matchAny reports whether any value matches any of the patterns: the values
// of one filter are ORed, and a resource field with several values (a list
// of security groups, say) matches if any of them does.
func matchAny(patterns []pattern, values []string) bool {
	for _, v := range values {
		for _, p := range patterns {
			if p.match(v) {
				return true
			}
		}
	}
	return false
}

// filterSpec says how a describe call's filters read one kind of resource:
// fields maps each supported filter name to the resource's values for it,
// and tags (if set) enables tag:KEY, tag-key and tag-value.
type filterSpec[T any] struct {
	fields map[string]func(T) []string
	tags   func(T) map[string]string
}

// compile turns filters into a predicate; an unsupported filter name is
// EC2's InvalidParameterValue, so a typo (or a filter the simulator lacks)
// fails loudly instead of matching everything.
func (fs filterSpec[T]) compile(filters []filter) (func(T) bool, error) {
	var preds []func(T) bool
	for _, f := range filters {
		pats := make([]pattern, len(f.Values))
		for i, v := range f.Values {
			pats[i] = compilePattern(v)
		}
		switch {
		case fs.tags != nil && strings.HasPrefix(f.Name, "tag:"):
			k := strings.TrimPrefix(f.Name, "tag:")
			preds = append(preds, func(r T) bool {
				v, ok := fs.tags(r)[k]
				return ok && matchAny(pats, []string{v})
			})
		case fs.tags != nil && f.Name == "tag-key":
			preds = append(preds, func(r T) bool { return matchAny(pats, sortedKeys(fs.tags(r))) })
		case fs.tags != nil && f.Name == "tag-value":
			preds = append(preds, func(r T) bool {
				var vals []string
				for _, v := range fs.tags(r) {
					vals = append(vals, v)
				}
				return matchAny(pats, vals)
			})
		default:
			get, ok := fs.fields[f.Name]
			if !ok {
				return nil, invalidParam("The filter '%s' is invalid", f.Name)
			}
			preds = append(preds, func(r T) bool { return matchAny(pats, get(r)) })
		}
	}
	return func(r T) bool {
		for _, p := range preds {
			if !p(r) {
				return false
			}
		}
		return true
	}, nil
}

func one(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func boolStr(b bool) []string {
	if b {
		return []string{"true"}
	}
	return []string{"false"}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
