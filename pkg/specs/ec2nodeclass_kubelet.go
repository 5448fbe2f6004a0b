package specs

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"

	"github.com/joist-dev/joist/pkg/decodeerr"
	"github.com/joist-dev/joist/pkg/model"
)

// kubeletKnownKeys are the spec.kubelet keys Joist reads (the ones
// Karpenter v1.15 parses): the JSON fields of model.Kubelet, which owns
// the list, less those that are no spec.kubelet key (maxPods' CEL form,
// v1alpha5's containerRuntime, the pass-through, and those never
// serialized: the operator's NodeClassCEL gate). Any other key is passed
// through in Extra.
var kubeletKnownKeys = kubeletWireKeys()

func kubeletWireKeys() map[string]bool {
	notWire := map[string]bool{"maxPodsExpression": true, "containerRuntime": true, "extra": true}
	keys := map[string]bool{}
	t := reflect.TypeFor[model.Kubelet]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && !notWire[name] {
			keys[name] = true
		}
	}
	return keys
}

// parseKubelet decodes the fields Joist reads into the model, field by
// field, so that each wrong type is reported at its own path. maxPods
// (a number or a CEL expression) is read by maxPods from kc itself.
func parseKubelet(l *errs, kc map[string]json.RawMessage, p *field.Path) model.Kubelet {
	var out model.Kubelet
	for _, k := range sortedKeys(kc) {
		if !kubeletKnownKeys[k] || k == "maxPods" {
			continue
		}
		one, _ := json.Marshal(map[string]json.RawMessage{k: kc[k]})
		var single model.Kubelet
		if err := json.Unmarshal(one, &single); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				l.add(p.Child(k), "%s", decodeerr.TypeMismatch(te))
			} else {
				l.add(p.Child(k), "invalid type: %s", strings.TrimPrefix(err.Error(), "json: "))
			}
			continue
		}
		merge, _ := json.Marshal(single)
		_ = json.Unmarshal(merge, &out)
	}
	return out
}

// validateKubeletV1 is Karpenter v1.15's controller-side validation of the
// open spec.kubelet map (which the CRD cannot check): types of the fields
// it reads, eviction signals and values, soft/grace pairs, reservable
// resources, ranges, and the fields Karpenter owns.
func validateKubeletV1(l *errs, kc map[string]json.RawMessage, p *field.Path) {
	if len(kc) == 0 {
		return
	}
	if _, ok := kc["registerWithTaints"]; ok {
		l.add(p.Child("registerWithTaints"), "can't be set, Joist sets it from the pool's taints so the node registers unschedulable until it's ready")
	}
	validateKubeletUpstream(l, kc, p)
	k := parseKubelet(l, kc, p)
	validateEvictionThresholds(l, k.EvictionHard, p.Child("evictionHard"))
	validateEvictionThresholds(l, k.EvictionSoft, p.Child("evictionSoft"))
	if raw, ok := kc["evictionMinimumReclaim"]; ok {
		var m map[string]string
		if json.Unmarshal(raw, &m) == nil {
			validateEvictionThresholds(l, m, p.Child("evictionMinimumReclaim"))
		} else {
			l.add(p.Child("evictionMinimumReclaim"), "invalid type: want a map of strings")
		}
	}
	for _, key := range sortedKeys(k.EvictionSoftGracePeriod) {
		kp := p.Child("evictionSoftGracePeriod").Key(key)
		if !contains(evictionSignals, key) {
			l.unsupported(kp, key, evictionSignals)
		}
		d, err := time.ParseDuration(k.EvictionSoftGracePeriod[key])
		switch {
		case err != nil:
			l.invalid(kp, k.EvictionSoftGracePeriod[key], "must be a duration")
		case d < 0:
			l.invalid(kp, k.EvictionSoftGracePeriod[key], "must not be negative")
		}
	}
	validateSoftPairs(l, k.EvictionSoft, k.EvictionSoftGracePeriod, p)
	for _, f := range []struct {
		name string
		m    map[string]string
	}{{"kubeReserved", k.KubeReserved}, {"systemReserved", k.SystemReserved}} {
		for _, key := range sortedKeys(f.m) {
			kp := p.Child(f.name).Key(key)
			if !contains(reservedResources, key) {
				l.unsupported(kp, key, reservedResources)
			}
			if strings.HasPrefix(f.m[key], "-") {
				l.invalid(kp, f.m[key], "must not be negative")
			}
		}
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{{"imageGCHighThresholdPercent", k.ImageGCHighThresholdPercent}, {"imageGCLowThresholdPercent", k.ImageGCLowThresholdPercent}} {
		if f.v != nil && (*f.v < 0 || *f.v > 100) {
			l.invalid(p.Child(f.name), *f.v, "must be between 0 and 100")
		}
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{{"podsPerCore", k.PodsPerCore}, {"evictionMaxPodGracePeriod", k.EvictionMaxPodGracePeriod}} {
		if f.v != nil && *f.v < 0 {
			l.invalid(p.Child(f.name), *f.v, "must not be negative")
		}
	}
	if n, _, ok := maxPods(kc["maxPods"]); ok && n != nil && *n < 0 {
		l.invalid(p.Child("maxPods"), *n, "must not be negative")
	} else if !ok {
		l.add(p.Child("maxPods"), "invalid type: want an integer or a CEL expression string")
	}
	if h, lo := k.ImageGCHighThresholdPercent, k.ImageGCLowThresholdPercent; h != nil && lo != nil && *h <= *lo {
		l.add(p, "imageGCHighThresholdPercent (%d) must be greater than imageGCLowThresholdPercent (%d)", *h, *lo)
	}
}

// validateKubeletUpstream decodes spec.kubelet strictly into the upstream
// KubeletConfiguration (k8s.io/kubelet v0.37), as Karpenter v1.15 does:
// an unknown key (a typo such as maxPod) would otherwise be passed to the
// node and silently ignored. Wrong types of the fields Joist reads are
// reported by parseKubelet at their own path, so only unknown fields and
// the types of the other fields are reported here.
func validateKubeletUpstream(l *errs, kc map[string]json.RawMessage, p *field.Path) {
	probe := make(map[string]json.RawMessage, len(kc))
	for k, v := range kc {
		if kubeletKnownKeys[k] {
			continue // checked field by field by parseKubelet
		}
		probe[k] = v
	}
	if len(probe) == 0 {
		return
	}
	raw, err := json.Marshal(probe)
	if err != nil {
		l.add(p, "%v", err)
		return
	}
	strict, err := sigsjson.UnmarshalStrict(raw, &kubeletconfigv1beta1.KubeletConfiguration{})
	if err != nil {
		fs := decodeerr.Find(raw, reflect.TypeFor[kubeletconfigv1beta1.KubeletConfiguration]())
		for _, f := range fs {
			l.add(p.Child(f.Path), "%s", f.Detail)
		}
		if len(fs) == 0 {
			l.add(p, "invalid kubelet configuration: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return
	}
	for _, se := range strict {
		path := ""
		if fp, ok := se.(interface{ FieldPath() string }); ok {
			path = fp.FieldPath()
		}
		if strings.HasPrefix(se.Error(), "unknown field") {
			l.add(p.Child(path), "unknown field: not a KubeletConfiguration field")
		} else {
			l.add(p.Child(path), "%s", strings.Fields(se.Error())[0]+" field")
		}
	}
}

// maxPods reads maxPods: a number, or a CEL expression string.
func maxPods(raw json.RawMessage) (n *int32, expr string, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, "", true
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, "", false
		}
		if v, err := strconv.ParseInt(s, 10, 32); err == nil {
			return ptrTo(int32(v)), "", true
		}
		return nil, s, true
	}
	var v int32
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, "", false
	}
	return &v, "", true
}

// kubeletV1ToModel maps a validated spec.kubelet onto the model, keeping
// the keys Joist does not interpret in Extra.
func kubeletV1ToModel(kc map[string]json.RawMessage) *model.Kubelet {
	if len(kc) == 0 {
		return nil
	}
	var l errs
	out := parseKubelet(&l, kc, nil)
	out.MaxPods, out.MaxPodsExpression, _ = maxPods(kc["maxPods"])
	for _, key := range sortedKeys(kc) {
		if kubeletKnownKeys[key] {
			continue
		}
		var v any
		if err := json.Unmarshal(kc[key], &v); err != nil {
			continue
		}
		if out.Extra == nil {
			out.Extra = map[string]any{}
		}
		out.Extra[key] = v
	}
	return &out
}
