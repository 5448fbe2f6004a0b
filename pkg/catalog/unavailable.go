package catalog

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DefaultUnavailableTTL is how long an offering stays unavailable after a
// capacity error, as in Karpenter: long enough for the next plan to avoid
// it, short enough that a recovered pool is soon tried again.
const DefaultUnavailableTTL = 3 * time.Minute

// OfferingKey names one offering: instance type, zone and capacity type.
type OfferingKey struct {
	InstanceType string
	Zone         string
	CapacityType string
}

// Unavailable is the set of offerings that recently failed to launch for
// lack of capacity, each with an expiry. The clock is always passed in.
//
// It outlives a Lambda invocation only through Encode/DecodeUnavailable
// (the encoded form is kept on the cluster's Joist Lease as an annotation).
// It is not safe for concurrent use; the decider holds the Lease anyway.
type Unavailable struct {
	ttl     time.Duration
	expires map[OfferingKey]time.Time
}

// NewUnavailable makes an empty set whose marks last ttl (0 or less means
// DefaultUnavailableTTL).
func NewUnavailable(ttl time.Duration) *Unavailable {
	if ttl <= 0 {
		ttl = DefaultUnavailableTTL
	}
	return &Unavailable{ttl: ttl, expires: map[OfferingKey]time.Time{}}
}

// TTL is how long a Mark lasts.
func (u *Unavailable) TTL() time.Duration { return u.ttl }

// Mark makes an offering unavailable until now + TTL. A later existing
// expiry is kept.
func (u *Unavailable) Mark(now time.Time, instanceType, zone, capacityType string) {
	u.MarkUntil(now.Add(u.ttl), instanceType, zone, capacityType)
}

// MarkUntil makes an offering unavailable until the given time (for
// example a spot interruption's own horizon). A later existing expiry is
// kept.
func (u *Unavailable) MarkUntil(until time.Time, instanceType, zone, capacityType string) {
	// Whole seconds, rounded up, so a mark never ends early after Encode.
	exp := until.Truncate(time.Second)
	if exp.Before(until) {
		exp = exp.Add(time.Second)
	}
	k := OfferingKey{instanceType, zone, capacityType}
	if cur, ok := u.expires[k]; !ok || exp.After(cur) {
		u.expires[k] = exp
	}
}

// IsUnavailable tells whether an offering is marked and the mark has not
// expired at now. A nil set marks nothing.
func (u *Unavailable) IsUnavailable(now time.Time, instanceType, zone, capacityType string) bool {
	if u == nil {
		return false
	}
	exp, ok := u.expires[OfferingKey{instanceType, zone, capacityType}]
	return ok && now.Before(exp)
}

// Prune drops the marks that have expired at now and returns how many.
func (u *Unavailable) Prune(now time.Time) int {
	n := 0
	for k, exp := range u.expires {
		if !now.Before(exp) {
			delete(u.expires, k)
			n++
		}
	}
	return n
}

// Len is the number of marks, expired or not.
func (u *Unavailable) Len() int { return len(u.expires) }

// Keys lists the marks that hold at now, sorted.
func (u *Unavailable) Keys(now time.Time) []OfferingKey {
	var out []OfferingKey
	for k, exp := range u.expires {
		if now.Before(exp) {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return keyLess(out[i], out[j]) })
	return out
}

// Merge adds another set's marks, keeping the later expiry of each.
func (u *Unavailable) Merge(other *Unavailable) {
	if other == nil {
		return
	}
	for k, exp := range other.expires {
		u.MarkUntil(exp, k.InstanceType, k.Zone, k.CapacityType)
	}
}

func keyLess(a, b OfferingKey) bool {
	if a.InstanceType != b.InstanceType {
		return a.InstanceType < b.InstanceType
	}
	if a.Zone != b.Zone {
		return a.Zone < b.Zone
	}
	return a.CapacityType < b.CapacityType
}

// encodingVersion starts the encoded form so it can change later.
const encodingVersion = "v1"

// Capacity types are written short in the encoding; an unknown one is
// written as is.
var (
	capacityTypeCodes = map[string]string{"on-demand": "od", "spot": "sp", "reserved": "rs"}
	capacityTypeNames = map[string]string{"od": "on-demand", "sp": "spot", "rs": "reserved"}
)

// Encode writes the set as a compact string for an annotation value:
//
//	v1 <ttl seconds> <type>/<zone>/<capacity>/<expiry unix seconds> ...
//
// with capacity as od, sp or rs, entries sorted. Prune first to keep it
// short; expired entries are kept otherwise (they are harmless).
func (u *Unavailable) Encode() string {
	keys := make([]OfferingKey, 0, len(u.expires))
	for k := range u.expires {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
	var b strings.Builder
	b.WriteString(encodingVersion)
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(int64(u.ttl/time.Second), 10))
	for _, k := range keys {
		ct := k.CapacityType
		if code, ok := capacityTypeCodes[ct]; ok {
			ct = code
		}
		b.WriteByte(' ')
		b.WriteString(k.InstanceType)
		b.WriteByte('/')
		b.WriteString(k.Zone)
		b.WriteByte('/')
		b.WriteString(ct)
		b.WriteByte('/')
		b.WriteString(strconv.FormatInt(u.expires[k].Unix(), 10))
	}
	return b.String()
}

// DecodeUnavailable reads what Encode wrote. The empty string is an empty
// set with the default TTL (a Lease that never held one).
func DecodeUnavailable(s string) (*Unavailable, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return NewUnavailable(0), nil
	}
	if fields[0] != encodingVersion {
		return nil, fmt.Errorf("unavailable offerings: unknown encoding %q", fields[0])
	}
	if len(fields) < 2 {
		return nil, fmt.Errorf("unavailable offerings: missing TTL")
	}
	ttl, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil || ttl < 0 {
		return nil, fmt.Errorf("unavailable offerings: bad TTL %q", fields[1])
	}
	u := NewUnavailable(time.Duration(ttl) * time.Second)
	for _, f := range fields[2:] {
		parts := strings.Split(f, "/")
		if len(parts) != 4 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("unavailable offerings: bad entry %q", f)
		}
		exp, err := strconv.ParseInt(parts[3], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("unavailable offerings: bad expiry in %q: %w", f, err)
		}
		ct := parts[2]
		if name, ok := capacityTypeNames[ct]; ok {
			ct = name
		}
		u.MarkUntil(time.Unix(exp, 0), parts[0], parts[1], ct)
	}
	return u, nil
}
