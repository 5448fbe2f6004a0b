package ec2sim

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// params reads an EC2 Query request. EC2 flattens everything into form
// keys: lists are "Name.N" (1-based), list members that are structures are
// "Name.N.Field", and the list's key is not always the API member name
// (TagSpecifications is sent as "TagSpecification.N", InstanceIds as
// "InstanceId.N", but LaunchTemplateConfigs keeps its plural).
//
// Every key a handler reads is remembered, so keys nobody read can be
// rejected with UnknownParameter, as EC2 does. That keeps the simulator
// honest: a parameter it does not simulate fails loudly instead of being
// silently ignored.
type params struct {
	v    url.Values
	read map[string]bool
	// caller is the access key id that signed the request, action its
	// Action (for authorization).
	caller, action string
	// invocation is the SDK's id for the operation the request is an
	// attempt of (amz-sdk-invocation-id; "" from other clients).
	invocation string
}

func newParams(v url.Values) *params {
	return &params{v: v, read: map[string]bool{"Action": true, "Version": true}}
}

// get returns the value of key and whether it was sent.
func (p *params) get(key string) (string, bool) {
	vals, ok := p.v[key]
	if !ok {
		return "", false
	}
	p.read[key] = true
	if len(vals) == 0 {
		return "", true
	}
	return vals[0], true
}

func (p *params) str(key string) string {
	v, _ := p.get(key)
	return v
}

// ignore marks keys as understood even though the simulator does not act on
// them (they change nothing it models).
func (p *params) ignore(keys ...string) {
	for _, k := range keys {
		p.get(k)
	}
}

// ignorePrefix marks every key under prefix as understood.
func (p *params) ignorePrefix(prefix string) {
	for k := range p.v {
		if strings.HasPrefix(k, prefix) {
			p.read[k] = true
		}
	}
}

func (p *params) boolean(key string) (bool, error) {
	v, ok := p.get(key)
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalidParam("Value (%s) for parameter %s is invalid. Expected a boolean.", v, key)
	}
	return b, nil
}

// optInt returns nil when key was not sent.
func (p *params) optInt(key string) (*int, error) {
	v, ok := p.get(key)
	if !ok {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil, invalidParam("Value (%s) for parameter %s is invalid. Expected an integer.", v, key)
	}
	return &n, nil
}

// optFloat returns nil when key was not sent.
func (p *params) optFloat(key string) (*float64, error) {
	v, ok := p.get(key)
	if !ok {
		return nil, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return nil, invalidParam("Value (%s) for parameter %s is invalid. Expected a number.", v, key)
	}
	return &f, nil
}

// indices lists the N of every "prefix.N" and "prefix.N.*" key, ascending.
func (p *params) indices(prefix string) []int {
	seen := map[int]bool{}
	pre := prefix + "."
	for k := range p.v {
		if !strings.HasPrefix(k, pre) {
			continue
		}
		rest := k[len(pre):]
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			rest = rest[:i]
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 {
			continue
		}
		seen[n] = true
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// strList returns the values of prefix.1, prefix.2, ... in index order.
func (p *params) strList(prefix string) []string {
	var out []string
	for _, n := range p.indices(prefix) {
		out = append(out, p.str(prefix+"."+strconv.Itoa(n)))
	}
	return out
}

func key(prefix string, n int, field string) string {
	if field == "" {
		return prefix + "." + strconv.Itoa(n)
	}
	return prefix + "." + strconv.Itoa(n) + "." + field
}

// filter is one Filter.N of a describe call.
type filter struct {
	Name   string
	Values []string
}

// Limits EC2 documents for filters.
const (
	maxFilters         = 50
	maxValuesPerFilter = 200
)

// filters reads Filter.N.Name / Filter.N.Value.M.
func (p *params) filters() ([]filter, error) {
	idx := p.indices("Filter")
	if len(idx) > maxFilters {
		return nil, invalidParam("The maximum number of filters is %d; %d were given.", maxFilters, len(idx))
	}
	var out []filter
	for _, n := range idx {
		name, ok := p.get(key("Filter", n, "Name"))
		if !ok || name == "" {
			return nil, missingParam(key("Filter", n, "Name"))
		}
		values := p.strList(key("Filter", n, "Value"))
		if len(values) == 0 {
			return nil, missingParam(key("Filter", n, "Value") + ".1")
		}
		if len(values) > maxValuesPerFilter {
			return nil, invalidParam("The filter '%s' has %d values; the maximum is %d.", name, len(values), maxValuesPerFilter)
		}
		out = append(out, filter{Name: name, Values: values})
	}
	return out, nil
}

// Tag is one EC2 tag. HasValue distinguishes an absent Value from an empty
// one, which matters to DeleteTags.
type tag struct {
	Key      string
	Value    string
	HasValue bool
}

// tags reads prefix.N.Key / prefix.N.Value.
func (p *params) tags(prefix string) ([]tag, error) {
	var out []tag
	for _, n := range p.indices(prefix) {
		k, ok := p.get(key(prefix, n, "Key"))
		if !ok {
			return nil, missingParam(key(prefix, n, "Key"))
		}
		v, hasValue := p.get(key(prefix, n, "Value"))
		out = append(out, tag{Key: k, Value: v, HasValue: hasValue})
	}
	return out, nil
}

// TagSpecification is tags to apply to one kind of resource created by a
// call ("instance", "volume", "fleet", "launch-template", ...).
type TagSpecification struct {
	ResourceType string
	Tags         map[string]string
}

// tagSpecs reads prefix.N.ResourceType / prefix.N.Tag.M.{Key,Value}.
func (p *params) tagSpecs(prefix string) ([]TagSpecification, error) {
	var out []TagSpecification
	for _, n := range p.indices(prefix) {
		rt, ok := p.get(key(prefix, n, "ResourceType"))
		if !ok || rt == "" {
			return nil, missingParam(key(prefix, n, "ResourceType"))
		}
		ts, err := p.tags(key(prefix, n, "Tag"))
		if err != nil {
			return nil, err
		}
		m, err := tagMap(ts)
		if err != nil {
			return nil, err
		}
		out = append(out, TagSpecification{ResourceType: rt, Tags: m})
	}
	return out, nil
}

// unknown reports the first key no handler read, as EC2's UnknownParameter.
func (p *params) unknown() error {
	var keys []string
	for k := range p.v {
		if !p.read[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	return clientErr("UnknownParameter", "The parameter %s is not recognized (ec2sim does not simulate it)", keys[0])
}

// canonical renders the request's parameters in a fixed order, for
// client-token idempotency: the same parameters in any order compare equal.
func (p *params) canonical() string {
	keys := make([]string, 0, len(p.v))
	for k := range p.v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strings.Join(p.v[k], ","))
		b.WriteByte('&')
	}
	return b.String()
}
