package specs

import (
	"regexp"
	"strconv"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/joist-dev/joist/pkg/apis/v1"
	"github.com/joist-dev/joist/pkg/model"
)

var (
	operatorsV1           = []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"}
	consolidationPolicies = []string{v1.ConsolidationPolicyWhenEmpty, v1.ConsolidationPolicyWhenEmptyOrUnderutilized, v1.ConsolidationPolicyBalanced}
	disruptionReasons     = []string{"Underutilized", "Empty", "Drifted", "Unhealthy"}

	// Patterns of the v1 NodePool CRD.
	nillableDurationRe = regexp.MustCompile(`^(([0-9]+(s|m|h))+|Never)$`)
	durationRe         = regexp.MustCompile(`^([0-9]+(s|m|h))+$`)
	budgetNodesRe      = regexp.MustCompile(`^((100|[0-9]{1,2})%|[0-9]+)$`)
	budgetScheduleRe   = regexp.MustCompile(`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`)
	budgetDurationRe   = regexp.MustCompile(`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`)
	groupRe            = regexp.MustCompile(`^[^/]*$`)
)

// defaultNodePool applies the v1 NodePool CRD's defaults: expireAfter
// 720h, consolidateAfter 0s, WhenEmptyOrUnderutilized, and one budget of
// 10% when budgets are absent (an explicit empty list stays empty, and so
// unlimited, as on the API server).
func defaultNodePool(np *v1.NodePool) {
	t := &np.Spec.Template.Spec
	if t.ExpireAfter == nil {
		t.ExpireAfter = ptrTo(v1.DefaultExpireAfter)
	}
	d := &np.Spec.Disruption
	if d.ConsolidateAfter == nil {
		d.ConsolidateAfter = ptrTo("0s")
	}
	if d.ConsolidationPolicy == "" {
		d.ConsolidationPolicy = v1.DefaultConsolidation
	}
	if d.Budgets == nil {
		d.Budgets = []v1.Budget{{Nodes: "10%"}}
	}
	for i := range d.Budgets {
		if d.Budgets[i].Nodes == "" {
			d.Budgets[i].Nodes = "10%"
		}
	}
}

// validateNodePool applies the v1 NodePool CRD schema (patterns, enums,
// bounds and CEL rules) and the checks Karpenter's controller makes before
// it marks a pool ready, so that a pool stored in SSM is held to what the
// API server and Karpenter would have held it to.
func validateNodePool(np *v1.NodePool) errs {
	var l errs
	validateName(&l, np.Name)
	spec := field.NewPath("spec")
	tp := spec.Child("template")
	ts := &np.Spec.Template.Spec
	tsp := tp.Child("spec")

	validateLabelsV1(&l, np.Spec.Template.ObjectMeta.Labels, tp.Child("metadata", "labels"))
	validateTaints(&l, ts.Taints, ts.StartupTaints, tsp)

	rp := tsp.Child("requirements")
	if ts.Requirements == nil {
		l.required(rp)
	}
	if len(ts.Requirements) > 100 {
		l.add(rp, "must have at most 100 items (got %d)", len(ts.Requirements))
	}
	for i, r := range ts.Requirements {
		validateRequirementV1(&l, r, rp.Index(i))
	}

	ref := ts.NodeClassRef
	refp := tsp.Child("nodeClassRef")
	if ref == nil {
		l.required(refp)
	} else {
		if ref.Group == "" {
			l.add(refp.Child("group"), "group may not be empty")
		} else if !groupRe.MatchString(ref.Group) {
			l.invalid(refp.Child("group"), ref.Group, "must not contain '/'")
		} else if ref.Group != v1.GroupAWS {
			l.unsupported(refp.Child("group"), ref.Group, []string{v1.GroupAWS})
		}
		if ref.Kind == "" {
			l.add(refp.Child("kind"), "kind may not be empty")
		} else if ref.Kind != v1.KindEC2NodeClass {
			l.unsupported(refp.Child("kind"), ref.Kind, []string{v1.KindEC2NodeClass})
		}
		if ref.Name == "" {
			l.add(refp.Child("name"), "name may not be empty")
		}
	}
	validateDurationField(&l, ts.ExpireAfter, tsp.Child("expireAfter"), nillableDurationRe)
	validateDurationField(&l, ts.TerminationGracePeriod, tsp.Child("terminationGracePeriod"), durationRe)

	dp := spec.Child("disruption")
	d := &np.Spec.Disruption
	validateDurationField(&l, d.ConsolidateAfter, dp.Child("consolidateAfter"), nillableDurationRe)
	if !contains(consolidationPolicies, d.ConsolidationPolicy) {
		l.unsupported(dp.Child("consolidationPolicy"), d.ConsolidationPolicy, consolidationPolicies)
	}
	bp := dp.Child("budgets")
	if len(d.Budgets) > 50 {
		l.add(bp, "must have at most 50 items (got %d)", len(d.Budgets))
	}
	for i, b := range d.Budgets {
		validateBudget(&l, b, bp.Index(i))
	}

	if w := np.Spec.Weight; w != nil && (*w < 1 || *w > 100) {
		l.invalid(spec.Child("weight"), *w, "must be between 1 and 100")
	}
	if r := np.Spec.Replicas; r != nil {
		if *r < 0 {
			l.invalid(spec.Child("replicas"), *r, "must not be negative")
		}
		for _, k := range sortedKeys(np.Spec.Limits) {
			if k != "nodes" {
				l.add(spec.Child("limits").Key(k), "only 'limits.nodes' is supported on static NodePools")
			}
		}
		if np.Spec.Weight != nil {
			l.add(spec.Child("weight"), "'weight' is not supported on static NodePools")
		}
	}
	return l
}

func validateDurationField(l *errs, v *string, p *field.Path, re *regexp.Regexp) {
	if v == nil {
		return
	}
	if !re.MatchString(*v) {
		l.invalid(p, *v, "must match %s", re.String())
		return
	}
	if *v != v1.Never {
		if _, err := time.ParseDuration(*v); err != nil {
			l.invalid(p, *v, "%v", err)
		}
	}
}

func validateBudget(l *errs, b v1.Budget, p *field.Path) {
	if !budgetNodesRe.MatchString(b.Nodes) {
		l.invalid(p.Child("nodes"), b.Nodes, "must be a count (5) or a percentage from 0%% to 100%%")
	}
	if (b.Schedule == nil) != (b.Duration == nil) {
		l.add(p, "'schedule' must be set with 'duration'")
	}
	if b.Schedule != nil {
		if !budgetScheduleRe.MatchString(*b.Schedule) {
			l.invalid(p.Child("schedule"), *b.Schedule, "must be a cron schedule (five fields) or a macro such as @daily")
		} else if _, err := cron.ParseStandard("TZ=UTC " + *b.Schedule); err != nil {
			l.invalid(p.Child("schedule"), *b.Schedule, "%v", err)
		}
	}
	if b.Duration != nil {
		if !budgetDurationRe.MatchString(*b.Duration) {
			l.invalid(p.Child("duration"), *b.Duration, "must be hours and/or minutes, such as 1h, 30m or 1h30m")
		}
	}
	if len(b.Reasons) > 50 {
		l.add(p.Child("reasons"), "must have at most 50 items (got %d)", len(b.Reasons))
	}
	seen := map[string]bool{}
	for i, r := range b.Reasons {
		if !contains(disruptionReasons, r) {
			l.unsupported(p.Child("reasons").Index(i), r, disruptionReasons)
		}
		if seen[r] {
			l.add(p.Child("reasons").Index(i), "duplicate value %q", r)
		}
		seen[r] = true
	}
}

func validateLabelsV1(l *errs, labels map[string]string, p *field.Path) {
	if len(labels) > 100 {
		l.add(p, "must have at most 100 labels (got %d)", len(labels))
	}
	for _, k := range sortedKeys(labels) {
		kp := p.Key(k)
		for _, msg := range validation.IsQualifiedName(k) {
			l.add(kp, "invalid key: %s", msg)
		}
		for _, msg := range validation.IsValidLabelValue(labels[k]) {
			l.invalid(kp, labels[k], "%s", msg)
		}
		if why := restrictedV1(k); why != "" {
			l.add(kp, "%s", why)
		}
	}
}

func validateRequirementV1(l *errs, r v1.NodeSelectorRequirementWithMinValues, p *field.Path) {
	validateRequirementWith(l, r, p, restrictedV1)
}

// validateRequirementWith is validateRequirementV1 with the label keys
// restricted says why not (a NodeOverlay may name karpenter.sh/nodepool).
func validateRequirementWith(l *errs, r v1.NodeSelectorRequirementWithMinValues, p *field.Path, restricted func(string) string) {
	kp := p.Child("key")
	if r.Key == "" {
		l.required(kp)
	} else {
		for _, msg := range validation.IsQualifiedName(r.Key) {
			l.invalid(kp, r.Key, "%s", msg)
		}
	}
	if why := restricted(r.Key); why != "" {
		l.add(kp, "%s", why)
	}
	if !contains(operatorsV1, string(r.Operator)) {
		l.unsupported(p.Child("operator"), string(r.Operator), operatorsV1)
	}
	for i, v := range r.Values {
		for _, msg := range validation.IsValidLabelValue(v) {
			l.invalid(p.Child("values").Index(i), v, "%s", msg)
		}
	}
	if r.MinValues != nil && (*r.MinValues < 1 || *r.MinValues > 50) {
		l.invalid(p.Child("minValues"), *r.MinValues, "must be between 1 and 50")
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		if len(r.Values) == 0 {
			l.add(p.Child("values"), "requirements with operator 'In' must have a value defined")
		}
		if r.MinValues != nil && len(r.Values) < *r.MinValues {
			l.add(p.Child("values"), "requirements with 'minValues' must have at least that many values specified in the 'values' field")
		}
		if known, ok := wellKnownValuesV1[model.NormalizeLabelKey(r.Key)]; ok && len(r.Values) > 0 {
			valid := 0
			for _, v := range r.Values {
				if contains(known, v) {
					valid++
				}
			}
			switch {
			case valid == 0:
				l.add(p.Child("values"), "no valid values found in %v for %s, expected one of: %s", r.Values, r.Key, quote(known))
			case r.MinValues != nil && valid < *r.MinValues:
				l.add(p.Child("values"), "not enough valid values found in %v for %s, expected at least %d valid values from: %s", r.Values, r.Key, *r.MinValues, quote(known))
			}
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
		if len(r.Values) != 1 || !isNonNegativeInt(r.Values[0]) {
			l.add(p.Child("values"), "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value")
		}
	}
}

// nodePoolToPool maps a defaulted, valid NodePool onto a pool. The pool's
// kubelet comes from its EC2NodeClass and is filled in by Build.
func nodePoolToPool(np *v1.NodePool) *model.Pool {
	t := &np.Spec.Template
	pool := &model.Pool{
		Name:              np.Name,
		API:               model.APIV1,
		Labels:            copyMap(t.ObjectMeta.Labels),
		Annotations:       copyMap(t.ObjectMeta.Annotations),
		ObjectAnnotations: copyMap(np.Annotations),
		Taints:            t.Spec.Taints,
		StartupTaints:     t.Spec.StartupTaints,
		Weight:            deref(np.Spec.Weight),
		NodeClass:         t.Spec.NodeClassRef.Name,
		Replicas:          np.Spec.Replicas,
	}
	for _, r := range t.Spec.Requirements {
		pool.Requirements = append(pool.Requirements, model.Requirement{
			Key: model.NormalizeLabelKey(r.Key), Operator: string(r.Operator), Values: append([]string(nil), r.Values...), MinValues: r.MinValues,
		})
	}
	pool.Requirements = reservedOnly(pool.Requirements)
	if len(np.Spec.Limits) > 0 {
		pool.Limits = np.Spec.Limits.DeepCopy()
	}
	d := &pool.Disruption
	d.ConsolidationPolicy = np.Spec.Disruption.ConsolidationPolicy
	d.ConsolidateAfter = parseNillable(np.Spec.Disruption.ConsolidateAfter)
	d.ExpireAfter = parseNillable(t.Spec.ExpireAfter)
	d.TerminationGracePeriod = parseNillable(t.Spec.TerminationGracePeriod)
	d.Budgets = []model.Budget{}
	for _, b := range np.Spec.Disruption.Budgets {
		mb := model.Budget{Nodes: b.Nodes, Schedule: deref(b.Schedule), Reasons: append([]string(nil), b.Reasons...)}
		mb.Duration = parseNillable(b.Duration)
		d.Budgets = append(d.Budgets, mb)
	}
	return pool
}

// reservedOnly adds karpenter.sh/capacity-type In [reserved] to
// requirements that require a capacity reservation's id or type (In or
// Exists): only a node launched into a reservation carries those labels,
// so such a pool launches into its reservations and buys nothing (a node
// bought for it would claim a reservation it is not in). Requirements are
// AND'ed: with the pool's own capacity-type requirement, reserved must be
// among its values.
func reservedOnly(reqs []model.Requirement) []model.Requirement {
	for _, r := range reqs {
		if (r.Key == model.LabelReservationID || r.Key == model.LabelReservationType) &&
			(r.Operator == string(corev1.NodeSelectorOpIn) || r.Operator == string(corev1.NodeSelectorOpExists)) {
			return append(reqs, model.Requirement{Key: model.LabelCapacityType, Operator: string(corev1.NodeSelectorOpIn), Values: []string{model.CapacityTypeReserved}})
		}
	}
	return reqs
}

// parseNillable parses a validated duration string; nil and "Never" are
// nil.
func parseNillable(s *string) *time.Duration {
	if s == nil || *s == v1.Never {
		return nil
	}
	d, err := time.ParseDuration(*s)
	if err != nil {
		return nil
	}
	return &d
}

// formatDuration writes a duration the way the v1 CRD patterns accept
// (hours, minutes and seconds only, no fractions), e.g. 336h or 1h0m30s.
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	s := int64(d / time.Second)
	h, m, sec := s/3600, (s%3600)/60, s%60
	out := ""
	if h > 0 {
		out += strconv.FormatInt(h, 10) + "h"
	}
	if m > 0 {
		out += strconv.FormatInt(m, 10) + "m"
	}
	if sec > 0 {
		out += strconv.FormatInt(sec, 10) + "s"
	}
	return out
}
