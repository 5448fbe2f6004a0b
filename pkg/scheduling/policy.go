package scheduling

import "fmt"

// Karpenter's two scheduling policies, under the names and values of its
// settings (--preference-policy, --min-values-policy), so an operator
// coming from Karpenter sets them the same way.
const (
	// PreferencePolicyRespect treats preferred affinities and
	// ScheduleAnyway spreads as preferences (relaxed one by one when a pod
	// does not fit); the default.
	PreferencePolicyRespect = "Respect"
	// PreferencePolicyIgnore drops them up front.
	PreferencePolicyIgnore = "Ignore"
	// MinValuesPolicyStrict leaves a pod unschedulable rather than launch
	// a node whose options offer fewer values than a pool's minValues;
	// the default.
	MinValuesPolicyStrict = "Strict"
	// MinValuesPolicyBestEffort launches it with the minValues lowered to
	// what its options offer (NewNode.MinValuesRelaxed).
	MinValuesPolicyBestEffort = "BestEffort"
)

// PolicyOptions gives the Options for Karpenter's preference and
// minValues policies; "" is each one's default. An unknown value is an
// error naming the policy and the values it takes.
func PolicyOptions(preference, minValues string) (Options, error) {
	var o Options
	switch preference {
	case "", PreferencePolicyRespect:
	case PreferencePolicyIgnore:
		o.IgnorePreferences = true
	default:
		return Options{}, fmt.Errorf("preference policy %q: want %s or %s", preference, PreferencePolicyRespect, PreferencePolicyIgnore)
	}
	switch minValues {
	case "", MinValuesPolicyStrict:
	case MinValuesPolicyBestEffort:
		o.MinValuesBestEffort = true
	default:
		return Options{}, fmt.Errorf("minValues policy %q: want %s or %s", minValues, MinValuesPolicyStrict, MinValuesPolicyBestEffort)
	}
	return o, nil
}
