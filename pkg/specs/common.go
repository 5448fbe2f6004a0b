package specs

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	"github.com/joist-dev/joist/pkg/decodeerr"
)

// decodeStrict decodes raw into out the way the API server's strict field
// validation (kubectl's default) does: field names are case-sensitive,
// unknown and duplicate fields are errors. Unknown fields under status are
// tolerated, since Joist never reads status and newer Karpenter releases
// add to it.
func decodeStrict(raw []byte, out any) errs {
	var l errs
	strict, err := sigsjson.UnmarshalStrict(raw, out)
	if err != nil {
		// Each value that does not decode, by its path.
		for _, f := range decodeerr.Find(raw, reflect.TypeOf(out)) {
			l = append(l, &FieldError{Field: f.Path, Detail: f.Detail})
		}
		if len(l) > 0 {
			return l
		}
		l.add(nil, "cannot decode: %s", strings.TrimPrefix(err.Error(), "json: "))
		return l
	}
	for _, se := range strict {
		path := ""
		if fp, ok := se.(interface{ FieldPath() string }); ok {
			path = fp.FieldPath()
		}
		if strings.HasPrefix(path, "status.") || path == "status" {
			continue
		}
		switch msg := se.Error(); {
		case strings.HasPrefix(msg, "unknown field"):
			l = append(l, &FieldError{Field: path, Detail: "unknown field"})
		case strings.HasPrefix(msg, "duplicate field"):
			l = append(l, &FieldError{Field: path, Detail: "duplicate field"})
		default:
			l.add(nil, "%s", msg)
		}
	}
	return l
}

// validateName checks metadata.name as the API server does for
// cluster-scoped custom resources (a DNS-1123 subdomain).
func validateName(l *errs, name string) {
	p := field.NewPath("metadata", "name")
	if name == "" {
		l.required(p)
		return
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		l.invalid(p, name, "%s", msg)
	}
}

var taintEffects = []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}

// validateTaints checks taints and startup taints the way Karpenter's
// webhooks (v1alpha5) and CRD plus controller (v1) did: keys and values
// are qualified names, effects are one of the three, and a key/effect
// pair appears once across both lists.
func validateTaints(l *errs, taints, startup []corev1.Taint, base *field.Path) {
	seen := map[string]bool{}
	check := func(list []corev1.Taint, p *field.Path) {
		for i, t := range list {
			ip := p.Index(i)
			if t.Key == "" {
				l.required(ip.Child("key"))
			} else {
				for _, msg := range validation.IsQualifiedName(t.Key) {
					l.invalid(ip.Child("key"), t.Key, "%s", msg)
				}
			}
			if t.Value != "" {
				for _, msg := range validation.IsQualifiedName(t.Value) {
					l.invalid(ip.Child("value"), t.Value, "%s", msg)
				}
			}
			switch t.Effect {
			case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			case "":
				l.required(ip.Child("effect"))
			default:
				l.unsupported(ip.Child("effect"), string(t.Effect), taintEffects)
			}
			k := t.Key + "=" + string(t.Effect)
			if seen[k] {
				l.add(ip, "duplicate taint key/effect pair %s:%s", t.Key, t.Effect)
			}
			seen[k] = true
		}
	}
	check(taints, base.Child("taints"))
	check(startup, base.Child("startupTaints"))
}

func isNonNegativeInt(s string) bool {
	v, err := strconv.Atoi(s)
	return err == nil && v >= 0
}

var evictionSignals = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}

var reservedResources = []string{"cpu", "memory", "ephemeral-storage", "pid"}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validateEvictionThresholds checks an eviction map: keys are eviction
// signals, values a percentage 0-100 or a non-negative quantity.
func validateEvictionThresholds(l *errs, m map[string]string, p *field.Path) {
	for _, k := range sortedKeys(m) {
		kp := p.Key(k)
		if !contains(evictionSignals, k) {
			l.unsupported(kp, k, evictionSignals)
		}
		v := m[k]
		if pct, ok := strings.CutSuffix(v, "%"); ok {
			f, err := strconv.ParseFloat(pct, 64)
			switch {
			case err != nil:
				l.invalid(kp, v, "not a percentage")
			case f < 0 || f > 100:
				l.invalid(kp, v, "percentage must be between 0 and 100")
			}
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			l.invalid(kp, v, "must be a percentage or a resource quantity")
			continue
		}
		if q.Sign() < 0 {
			l.invalid(kp, v, "must not be negative")
		}
	}
}

// validateSoftPairs checks that evictionSoft and evictionSoftGracePeriod
// name the same signals: a soft threshold without a grace period is
// ignored by the kubelet, and the reverse is refused by it.
func validateSoftPairs(l *errs, soft map[string]string, grace map[string]string, p *field.Path) {
	for _, k := range sortedKeys(soft) {
		if _, ok := grace[k]; !ok {
			l.add(p.Child("evictionSoft").Key(k), "has no matching evictionSoftGracePeriod")
		}
	}
	for _, k := range sortedKeys(grace) {
		if _, ok := soft[k]; !ok {
			l.add(p.Child("evictionSoftGracePeriod").Key(k), "has no matching evictionSoft")
		}
	}
}

func validateSelectorMap(l *errs, m map[string]string, p *field.Path, idKey func(string) bool, idRe *regexp.Regexp, what string) {
	for _, k := range sortedKeys(m) {
		v := m[k]
		kp := p.Key(k)
		if k == "" || v == "" {
			l.add(kp, "empty selector keys and values are not supported")
			continue
		}
		if idKey != nil && idKey(k) && idRe != nil {
			for _, id := range splitCommaList(v) {
				if !idRe.MatchString(id) {
					l.invalid(kp, id, "must be a valid %s (regex: %s)", what, idRe.String())
				}
			}
		}
	}
}

// splitCommaList splits "a, b,c" into [a b c], dropping empty entries.
func splitCommaList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if t := strings.TrimSpace(part); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func quote(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
