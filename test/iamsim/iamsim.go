// Package iamsim evaluates AWS IAM identity policies as AWS does, for the
// test ground: the EC2 simulator and the AWS front ask it whether a
// function's call would be allowed by that function's statements
// (pkg/iampolicy), and refuse what AWS would refuse.
//
// It implements the parts of AWS's policy evaluation logic that identity
// policies use: an explicit Deny wins over any Allow; without a matching
// Allow the request is implicitly denied; a statement matches when its
// action, its resource and every one of its conditions match; within a
// condition, operators and keys are all-of and a key's values any-of
// (none-of for negated operators); a key missing from the request makes a
// condition false, except for negated operators (true), ...IfExists (true)
// and Null; ForAnyValue/ForAllValues qualify multi-valued keys such as
// aws:TagKeys. Condition key names are case-insensitive, actions too;
// resource ARNs and string values are case-sensitive.
package iamsim

import (
	"sort"
	"strings"

	"github.com/joist-dev/joist/pkg/iampolicy"
)

// Request is one authorization question: may the principal do Action on
// Resource, given the request context Keys (condition key → values; a key
// absent from the map is absent from the request).
type Request struct {
	Action   string
	Resource string
	Keys     map[string][]string
}

// Decision is the answer and why.
type Decision struct {
	Allowed bool
	// ExplicitDeny is set when a Deny statement matched.
	ExplicitDeny bool
	// AllowedBy are the Sids of the Allow statements that matched.
	AllowedBy []string
}

// Evaluate decides r against the policy's statements.
func Evaluate(p iampolicy.Policy, r Request) Decision {
	keys := make(map[string][]string, len(r.Keys))
	for k, v := range r.Keys {
		keys[strings.ToLower(k)] = v
	}
	var d Decision
	for _, s := range p.Statements {
		if !matchAny(s.Actions, r.Action, true) || !resourceMatches(s.Resources, r.Resource) || !conditionsHold(s.Condition, keys) {
			continue
		}
		if s.Effect == iampolicy.Deny {
			d.ExplicitDeny = true
			continue
		}
		d.AllowedBy = append(d.AllowedBy, s.Sid)
	}
	sort.Strings(d.AllowedBy)
	d.Allowed = !d.ExplicitDeny && len(d.AllowedBy) > 0
	return d
}

func matchAny(patterns []string, v string, fold bool) bool {
	for _, p := range patterns {
		if fold {
			if Glob(strings.ToLower(p), strings.ToLower(v)) {
				return true
			}
		} else if Glob(p, v) {
			return true
		}
	}
	return false
}

// resourceMatches compares ARNs segment by segment (partition, service,
// region, account, resource), each with IAM's wildcards, as IAM does; a
// bare "*" matches everything.
func resourceMatches(patterns []string, arn string) bool {
	for _, p := range patterns {
		if p == "*" {
			return true
		}
		ps, as := strings.SplitN(p, ":", 6), strings.SplitN(arn, ":", 6)
		if len(ps) != 6 || len(as) != 6 {
			if Glob(p, arn) {
				return true
			}
			continue
		}
		ok := true
		for i := range ps {
			if !Glob(ps[i], as[i]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func conditionsHold(c iampolicy.Condition, keys map[string][]string) bool {
	for op, kv := range c {
		for key, want := range kv {
			got, present := keys[strings.ToLower(key)]
			if present && len(got) == 0 {
				present = false
			}
			if !operatorHolds(op, want, got, present) {
				return false
			}
		}
	}
	return true
}

// operatorHolds evaluates one operator for one key. Unknown operators
// never hold, so a policy using one fails closed.
func operatorHolds(op string, want, got []string, present bool) bool {
	set := ""
	switch {
	case strings.HasPrefix(op, "ForAnyValue:"):
		set, op = "any", strings.TrimPrefix(op, "ForAnyValue:")
	case strings.HasPrefix(op, "ForAllValues:"):
		set, op = "all", strings.TrimPrefix(op, "ForAllValues:")
	}
	ifExists := strings.HasSuffix(op, "IfExists")
	op = strings.TrimSuffix(op, "IfExists")
	if op == "Null" {
		wantAbsent := len(want) > 0 && strings.EqualFold(want[0], "true")
		return wantAbsent == !present
	}
	match, negated, known := matcher(op)
	if !known {
		return false
	}
	if !present {
		switch {
		case ifExists:
			return true
		case set == "all":
			return true
		case set == "any":
			return false
		default:
			return negated
		}
	}
	// valueMatches: does one request value match any of the policy's
	// values (for a negated operator: match none of them)?
	valueMatches := func(v string) bool {
		for _, w := range want {
			if match(w, v) {
				return !negated
			}
		}
		return negated
	}
	switch set {
	case "all":
		for _, v := range got {
			if !valueMatches(v) {
				return false
			}
		}
		return true
	case "any":
		for _, v := range got {
			if valueMatches(v) {
				return true
			}
		}
		return false
	}
	// A single-valued key (or a multi-valued one used without a set
	// operator): positive operators need some value to match, negated ones
	// need no value to match.
	if negated {
		for _, v := range got {
			if !valueMatches(v) {
				return false
			}
		}
		return true
	}
	for _, v := range got {
		if valueMatches(v) {
			return true
		}
	}
	return false
}

// matcher returns the comparison of an operator (policy value, request
// value), whether the operator is negated, and whether it is known.
func matcher(op string) (func(w, v string) bool, bool, bool) {
	switch op {
	case "StringEquals", "ArnEquals":
		return func(w, v string) bool { return w == v }, false, true
	case "StringNotEquals", "ArnNotEquals":
		return func(w, v string) bool { return w == v }, true, true
	case "StringEqualsIgnoreCase":
		return strings.EqualFold, false, true
	case "StringNotEqualsIgnoreCase":
		return strings.EqualFold, true, true
	case "StringLike":
		return Glob, false, true
	case "StringNotLike":
		return Glob, true, true
	case "ArnLike":
		return func(w, v string) bool { return resourceMatches([]string{w}, v) }, false, true
	case "ArnNotLike":
		return func(w, v string) bool { return resourceMatches([]string{w}, v) }, true, true
	case "Bool":
		return strings.EqualFold, false, true
	}
	return nil, false, false
}

// Glob matches s against an IAM pattern: * is any run of characters, ? is
// exactly one.
func Glob(pattern, s string) bool {
	// Iterative wildcard matching with backtracking to the last *.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
