package scheduling

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/model"
)

// Operators beyond the core ones: Karpenter v1 NodePools may use Gte and
// Lte (integers, inclusive).
const (
	opGte = "Gte"
	opLte = "Lte"
)

// aliasesOf lists, for a normalized key, the keys that normalize to it,
// in a fixed order.
var aliasesOf = func() map[string][]string {
	m := map[string][]string{}
	for alias, norm := range model.NormalizedLabelKeys {
		m[norm] = append(m[norm], alias)
	}
	for _, v := range m {
		sort.Strings(v)
	}
	return m
}()

// valueSet is what one label key may be on a node: either absent (when
// allowAbsent) or present with a value from the set. The set is a finite
// list (In), or everything but a list (complement: NotIn, Exists), further
// narrowed by integer bounds (Gt/Lt/Gte/Lte, kept exclusive).
//
// In [a b]      → present, one of a b
// NotIn [a]     → absent, or present and not a
// Exists        → present, anything
// DoesNotExist  → absent
// Gt 3          → present, an integer > 3
type valueSet struct {
	allowAbsent bool
	complement  bool
	values      []string // sorted, unique
	hasGt       bool
	gt          int64 // value must be > gt
	hasLt       bool
	lt          int64 // value must be < lt
}

// newValueSet converts one selector requirement. ok is false for an
// operator or value the API would reject; such a requirement matches
// nothing.
func newValueSet(op string, values []string) (valueSet, bool) {
	switch op {
	case string(corev1.NodeSelectorOpIn):
		return valueSet{values: sortedUnique(values)}, true
	case string(corev1.NodeSelectorOpNotIn):
		return valueSet{allowAbsent: true, complement: true, values: sortedUnique(values)}, true
	case string(corev1.NodeSelectorOpExists):
		return valueSet{complement: true}, true
	case string(corev1.NodeSelectorOpDoesNotExist):
		return valueSet{allowAbsent: true}, true
	case string(corev1.NodeSelectorOpGt), string(corev1.NodeSelectorOpLt), opGte, opLte:
		if len(values) != 1 {
			return valueSet{}, false
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return valueSet{}, false
		}
		s := valueSet{complement: true}
		switch op {
		case string(corev1.NodeSelectorOpGt):
			s.hasGt, s.gt = true, n
		case opGte:
			s.hasGt, s.gt = true, n-1
		case string(corev1.NodeSelectorOpLt):
			s.hasLt, s.lt = true, n
		case opLte:
			s.hasLt, s.lt = true, n+1
		}
		return s, true
	}
	return valueSet{}, false
}

func sortedUnique(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	j := 0
	for i := range out {
		if i == 0 || out[i] != out[j-1] {
			out[j] = out[i]
			j++
		}
	}
	return out[:j]
}

// inBounds tells whether a present value satisfies the integer bounds.
func (s *valueSet) inBounds(v string) bool {
	if !s.hasGt && !s.hasLt {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	return (!s.hasGt || n > s.gt) && (!s.hasLt || n < s.lt)
}

// has tells whether a present value is allowed.
func (s *valueSet) has(v string) bool {
	i := sort.SearchStrings(s.values, v)
	found := i < len(s.values) && s.values[i] == v
	if found == s.complement {
		return false
	}
	return s.inBounds(v)
}

// matches tells whether a node label (value, present) is allowed.
func (s *valueSet) matches(v string, present bool) bool {
	if !present {
		return s.allowAbsent
	}
	return s.has(v)
}

// presentEmpty tells whether no present value is allowed.
func (s *valueSet) presentEmpty() bool {
	if !s.complement {
		return len(s.values) == 0
	}
	if s.hasGt && s.hasLt && s.lt-s.gt <= 1 {
		return true
	}
	return false
}

// empty tells whether nothing at all is allowed.
func (s *valueSet) empty() bool { return !s.allowAbsent && s.presentEmpty() }

// intersect returns the values allowed by both.
func (s valueSet) intersect(o valueSet) valueSet {
	r := valueSet{allowAbsent: s.allowAbsent && o.allowAbsent}
	r.hasGt, r.gt = s.hasGt || o.hasGt, maxBound(s.hasGt, s.gt, o.hasGt, o.gt, true)
	r.hasLt, r.lt = s.hasLt || o.hasLt, maxBound(s.hasLt, s.lt, o.hasLt, o.lt, false)
	switch {
	case !s.complement:
		for _, v := range s.values {
			if o.has(v) {
				r.values = append(r.values, v)
			}
		}
	case !o.complement:
		for _, v := range o.values {
			if s.has(v) {
				r.values = append(r.values, v)
			}
		}
	default:
		r.complement = true
		r.values = sortedUnique(append(append([]string(nil), s.values...), o.values...))
	}
	if !r.complement {
		kept := r.values[:0]
		for _, v := range r.values {
			if r.inBounds(v) {
				kept = append(kept, v)
			}
		}
		r.values = kept
	}
	return r
}

// maxBound combines two optional bounds: the larger lower bound, or the
// smaller upper bound.
func maxBound(ha bool, a int64, hb bool, b int64, lower bool) int64 {
	switch {
	case ha && hb:
		if lower {
			return max(a, b)
		}
		return min(a, b)
	case ha:
		return a
	case hb:
		return b
	}
	return 0
}

// pick returns one allowed present value, deterministically: the smallest
// listed value, or for a complement the smallest non-negative integer the
// set allows (what Karpenter does with a random one).
func (s *valueSet) pick() (string, bool) {
	if !s.complement {
		if len(s.values) == 0 {
			return "", false
		}
		return s.values[0], true
	}
	start := int64(0)
	if s.hasGt {
		start = s.gt + 1
	}
	for n := start; n < start+int64(len(s.values))+2; n++ {
		if s.hasLt && n >= s.lt {
			return "", false
		}
		v := strconv.FormatInt(n, 10)
		if s.has(v) {
			return v, true
		}
	}
	return "", false
}

// String renders the set as an operator and values for messages.
func (s valueSet) String() string {
	switch {
	case !s.complement && len(s.values) == 0 && s.allowAbsent:
		return "DoesNotExist"
	case !s.complement:
		return "In [" + strings.Join(s.values, " ") + "]"
	}
	var parts []string
	if len(s.values) > 0 {
		parts = append(parts, "NotIn ["+strings.Join(s.values, " ")+"]")
	}
	if s.hasGt {
		parts = append(parts, fmt.Sprintf("Gt %d", s.gt))
	}
	if s.hasLt {
		parts = append(parts, fmt.Sprintf("Lt %d", s.lt))
	}
	if len(parts) == 0 {
		return "Exists"
	}
	return strings.Join(parts, ", ")
}

// reqs is a conjunction of value sets by label key.
type reqs struct {
	keys []string // sorted
	sets map[string]valueSet
}

// newReqs is an empty conjunction; its map is made by the first add (most
// of a solve's are never added to: a level's pool with no requirement on
// the pod's labels).
func newReqs() *reqs { return &reqs{} }

// add narrows key by s.
func (r *reqs) add(key string, s valueSet) {
	if r.sets == nil {
		r.sets = map[string]valueSet{}
	}
	if cur, ok := r.sets[key]; ok {
		r.sets[key] = cur.intersect(s)
		return
	}
	r.sets[key] = s
	i := sort.SearchStrings(r.keys, key)
	r.keys = append(r.keys, "")
	copy(r.keys[i+1:], r.keys[i:])
	r.keys[i] = key
}

func (r *reqs) get(key string) (valueSet, bool) {
	s, ok := r.sets[key]
	return s, ok
}

func (r *reqs) clone() *reqs {
	c := &reqs{keys: append([]string(nil), r.keys...)}
	if len(r.sets) > 0 {
		c.sets = make(map[string]valueSet, len(r.sets))
	}
	for k, v := range r.sets {
		c.sets[k] = v
	}
	return c
}

// addNodeSelectorRequirements adds core selector requirements (keys
// normalized). It returns false when one is malformed.
func (r *reqs) addNodeSelectorRequirements(in []corev1.NodeSelectorRequirement) bool {
	ok := true
	for _, q := range in {
		s, good := newValueSet(string(q.Operator), q.Values)
		if !good {
			ok = false
			s = valueSet{} // matches nothing
		}
		r.add(model.NormalizeLabelKey(q.Key), s)
	}
	return ok
}

// addModel adds pool requirements.
func (r *reqs) addModel(in []model.Requirement) bool {
	ok := true
	for _, q := range in {
		s, good := newValueSet(q.Operator, q.Values)
		if !good {
			ok = false
			s = valueSet{}
		}
		r.add(model.NormalizeLabelKey(q.Key), s)
	}
	return ok
}

// addLabels adds nodeSelector-style equality requirements.
func (r *reqs) addLabels(labels map[string]string) {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.add(model.NormalizeLabelKey(k), valueSet{values: []string{labels[k]}})
	}
}

// matchesLabels tells whether a node with these labels satisfies every
// requirement. Keys are looked up as written and through their normalized
// alias, since a node may carry either.
func (r *reqs) matchesLabels(labels map[string]string) bool {
	for _, k := range r.keys {
		s := r.sets[k]
		v, present := labels[k]
		if !present {
			for _, alias := range aliasesOf[k] {
				if v, present = labels[alias]; present {
					break
				}
			}
		}
		if !s.matches(v, present) {
			return false
		}
	}
	return true
}

// toModel renders the requirements for a plan.
//
// Values are copied, except a list given as shared (read only, its
// capacity its length), used as it is where a set's values are that very
// list: a new node's instance type names, shared by nodes with the same
// options.
func (r *reqs) toModel(shared []string) []model.Requirement {
	if len(r.keys) == 0 {
		return nil
	}
	out := make([]model.Requirement, 0, len(r.keys))
	for _, k := range r.keys {
		s := r.sets[k]
		switch {
		case !s.complement && len(s.values) == 0 && s.allowAbsent:
			out = append(out, model.Requirement{Key: k, Operator: string(corev1.NodeSelectorOpDoesNotExist)})
		case !s.complement && len(s.values) > 0 && len(shared) > 0 && &s.values[0] == &shared[0] && len(s.values) == len(shared):
			out = append(out, model.Requirement{Key: k, Operator: string(corev1.NodeSelectorOpIn), Values: shared})
		case !s.complement:
			out = append(out, model.Requirement{Key: k, Operator: string(corev1.NodeSelectorOpIn), Values: append([]string(nil), s.values...)})
		default:
			if len(s.values) > 0 {
				out = append(out, model.Requirement{Key: k, Operator: string(corev1.NodeSelectorOpNotIn), Values: append([]string(nil), s.values...)})
			} else if !s.hasGt && !s.hasLt && !s.allowAbsent {
				out = append(out, model.Requirement{Key: k, Operator: string(corev1.NodeSelectorOpExists)})
			}
			if s.hasGt && s.gt > math.MinInt64 {
				out = append(out, model.Requirement{Key: k, Operator: string(corev1.NodeSelectorOpGt), Values: []string{strconv.FormatInt(s.gt, 10)}})
			}
			if s.hasLt {
				out = append(out, model.Requirement{Key: k, Operator: string(corev1.NodeSelectorOpLt), Values: []string{strconv.FormatInt(s.lt, 10)}})
			}
		}
	}
	return out
}

// signature is a canonical string of the requirements, for memoizing
// per-type compatibility.
func (r *reqs) signature() string {
	var b strings.Builder
	for _, k := range r.keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(r.sets[k].String())
		if r.sets[k].allowAbsent {
			b.WriteString("?")
		}
		b.WriteByte(';')
	}
	return b.String()
}

// LabelsStillSatisfy tells whether a node's labels still satisfy a pool's
// requirements, for drift: only requirements on keys the node carries
// (under their name or an alias) are checked, since a node does not carry
// every well-known label a requirement may name (Karpenter allows such
// undefined well-known labels the same way). A malformed requirement is
// not held against the node (the spec's validation reports it).
func LabelsStillSatisfy(in []model.Requirement, labels map[string]string) bool {
	r := newReqs()
	for _, q := range in {
		s, good := newValueSet(q.Operator, q.Values)
		if !good {
			continue
		}
		k := model.NormalizeLabelKey(q.Key)
		_, present := labels[k]
		for _, alias := range aliasesOf[k] {
			if _, ok := labels[alias]; ok {
				present = true
			}
		}
		if !present {
			continue
		}
		r.add(k, s)
	}
	return r.matchesLabels(labels)
}

// RequirementAllows tells whether a label (its value, and whether it is
// present) satisfies one requirement: In, NotIn, Exists, DoesNotExist,
// Gt, Lt, Gte or Lte, as a node selector reads them. A malformed
// requirement allows nothing.
func RequirementAllows(r model.Requirement, value string, present bool) bool {
	s, ok := newValueSet(r.Operator, r.Values)
	return ok && s.matches(value, present)
}
