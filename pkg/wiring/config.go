package wiring

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joist-dev/joist/pkg/featuregates"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Setting is one environment variable a function reads: its name, under
// the JOIST_ prefix, and the name it had before the prefix (still read,
// so stacks deployed with the old names keep working). When both are set
// they must agree.
type Setting struct {
	Name string
	Old  string // "" when the name never changed
	Doc  string
}

// The functions' settings. docs/deploy.md lists them.
var (
	SettingCluster          = Setting{"JOIST_CLUSTER_NAME", "CLUSTER_NAME", "the EKS cluster's name (required)"}
	SettingEndpoint         = Setting{"JOIST_CLUSTER_ENDPOINT", "CLUSTER_ENDPOINT", "the API server's URL (default: eks:DescribeCluster)"}
	SettingCA               = Setting{"JOIST_CLUSTER_CA", "CLUSTER_CA", "the cluster CA, base64 PEM (default: eks:DescribeCluster)"}
	SettingVersion          = Setting{"JOIST_KUBERNETES_VERSION", "KUBERNETES_VERSION", "the cluster's Kubernetes version (default: eks:DescribeCluster)"}
	SettingServiceCIDR      = Setting{"JOIST_CLUSTER_SERVICE_CIDR", "CLUSTER_SERVICE_CIDR", "the Service range (default: eks:DescribeCluster)"}
	SettingDNSClusterIP     = Setting{"JOIST_CLUSTER_DNS_IP", "CLUSTER_DNS_IP", "the cluster DNS address (default: from the Service range)"}
	SettingInstanceProfile  = Setting{"JOIST_DEFAULT_INSTANCE_PROFILE", "DEFAULT_INSTANCE_PROFILE", "the node instance profile when a node class names none"}
	SettingSpecSource       = Setting{"JOIST_SPEC_SOURCE", "SPEC_SOURCE", "where the specs live: ssm (default) or crd"}
	SettingLeaseNamespace   = Setting{"JOIST_LEASE_NAMESPACE", "LEASE_NAMESPACE", "the decider Lease's namespace (default kube-system)"}
	SettingLogLevel         = Setting{"JOIST_LOG_LEVEL", "LOG_LEVEL", "debug for debug logs (default info)"}
	SettingZones            = Setting{"JOIST_ZONES", "", "the zones to plan in, comma-separated (default: the region's)"}
	SettingCatalog          = Setting{"JOIST_CATALOG", "", "live (EC2 and Pricing) or embedded (default)"}
	SettingCacheTTL         = Setting{"JOIST_CACHE_TTL", "", "how long a warm function trusts what it read from EC2 and SSM"}
	SettingRegistration     = Setting{"JOIST_REGISTRATION_TIMEOUT", "", "how long an instance may take to register its node"}
	SettingTemplateMinAge   = Setting{"JOIST_TEMPLATE_MIN_AGE", "", "how old an unused launch template must be to be deleted"}
	SettingReaperLoop       = Setting{"JOIST_REAPER_LOOP", "", "how long one reaper invocation keeps looping"}
	SettingReaperInterval   = Setting{"JOIST_REAPER_INTERVAL", "", "the pause between the reaper's passes"}
	SettingReplacementLimit = Setting{"JOIST_REPLACEMENT_TIMEOUT", "", "how long a retiring node waits for its replacement"}
	SettingPreferencePolicy = Setting{"JOIST_PREFERENCE_POLICY", "", "Respect (default) or Ignore: Karpenter's --preference-policy for preferred affinities and ScheduleAnyway spreads"}
	SettingMinValuesPolicy  = Setting{"JOIST_MIN_VALUES_POLICY", "", "Strict (default) or BestEffort: Karpenter's --min-values-policy"}
	SettingSchedulerConfig  = Setting{"JOIST_SCHEDULER_CONFIG", "", "Karpenter's --scheduler-config: a YAML or JSON document whose podTopologySpread.defaultConstraints go to pods that declare no spread (default none)"}
	SettingReservedENIs     = Setting{"JOIST_RESERVED_ENIS", "RESERVED_ENIS", "Karpenter's RESERVED_ENIS: ENIs per node the VPC CNI may not give pods (custom networking), left out of max pods (default 0)"}
	SettingFeatureGates     = Setting{"JOIST_FEATURE_GATES", "FEATURE_GATES", "Karpenter's FEATURE_GATES, Name=true|false comma-separated: NodeRepair=true turns node repair on (default off), SpotToSpotConsolidation=false stops spot-to-spot consolidation (default on), NodeClassCEL=true evaluates kubelet settings given as CEL expressions per instance type (default off: a node class using them launches nothing)"}
)

// Settings are all of them, for documentation and checks.
var Settings = []Setting{
	SettingCluster, SettingEndpoint, SettingCA, SettingVersion, SettingServiceCIDR, SettingDNSClusterIP,
	SettingInstanceProfile, SettingSpecSource, SettingLeaseNamespace, SettingLogLevel, SettingZones,
	SettingCatalog, SettingCacheTTL, SettingRegistration, SettingTemplateMinAge, SettingReaperLoop,
	SettingReaperInterval, SettingReplacementLimit, SettingPreferencePolicy, SettingMinValuesPolicy,
	SettingSchedulerConfig, SettingReservedENIs, SettingFeatureGates,
}

// Lookup is os.LookupEnv, or a map's lookup in tests.
type Lookup func(string) (string, bool)

// Get reads the setting: its name, else its old name. Both set to
// different values is an error naming both.
func (s Setting) Get(env Lookup) (string, error) {
	v, ok := env(s.Name)
	if s.Old == "" {
		return v, nil
	}
	old, oldOK := env(s.Old)
	switch {
	case ok && oldOK && v != old:
		return "", fmt.Errorf("read setting %s: %s=%q and its old name %s=%q differ; set one", s.Name, s.Name, v, s.Old, old)
	case ok:
		return v, nil
	default:
		return old, nil
	}
}

// Duration reads a duration setting (Go syntax: 90s, 5m), def when unset.
func (s Setting) Duration(env Lookup, def time.Duration) (time.Duration, error) {
	v, err := s.Get(env)
	if err != nil || v == "" {
		return def, err
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("read setting %s=%q: %w", s.Name, v, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("read setting %s=%q: want a duration of zero or more", s.Name, v)
	}
	return d, nil
}

// oneOf reads a setting that takes one of a few values (def when unset).
func (s Setting) oneOf(env Lookup, def string, allowed ...string) (string, error) {
	v, err := s.Get(env)
	if err != nil {
		return "", err
	}
	if v == "" {
		return def, nil
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	sorted := append([]string(nil), allowed...)
	sort.Strings(sorted)
	return "", fmt.Errorf("read setting %s=%q: want one of %s", s.Name, v, strings.Join(sorted, ", "))
}

// Policies reads Karpenter's preference and minValues policies as the
// simulator's options; a bad value is an error naming its setting.
func Policies(env Lookup) (scheduling.Options, error) {
	pref, err := SettingPreferencePolicy.Get(env)
	if err != nil {
		return scheduling.Options{}, err
	}
	mv, err := SettingMinValuesPolicy.Get(env)
	if err != nil {
		return scheduling.Options{}, err
	}
	if _, err := scheduling.PolicyOptions(pref, ""); err != nil {
		return scheduling.Options{}, fmt.Errorf("read setting %s: %w", SettingPreferencePolicy.Name, err)
	}
	o, err := scheduling.PolicyOptions(pref, mv)
	if err != nil {
		return scheduling.Options{}, fmt.Errorf("read setting %s: %w", SettingMinValuesPolicy.Name, err)
	}
	return o, nil
}

// SchedulerConfig reads Karpenter's --scheduler-config
// (JOIST_SCHEDULER_CONFIG): nil when unset; a bad document is an error
// naming the setting and the field.
func SchedulerConfig(env Lookup) (*scheduling.SchedulerConfig, error) {
	raw, err := SettingSchedulerConfig.Get(env)
	if err != nil {
		return nil, err
	}
	c, err := scheduling.ParseSchedulerConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("read setting %s: %w", SettingSchedulerConfig.Name, err)
	}
	return c, nil
}

// ReservedENIs reads Karpenter's RESERVED_ENIS (JOIST_RESERVED_ENIS): 0
// when unset; anything but a whole number of 0 or more is an error naming
// the setting, as Karpenter refuses a negative one.
func ReservedENIs(env Lookup) (int64, error) {
	raw, err := SettingReservedENIs.Get(env)
	if err != nil || raw == "" {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("read setting %s: %q is not a whole number of 0 or more", SettingReservedENIs.Name, raw)
	}
	return n, nil
}

// ReadFeatureGates reads Karpenter's FEATURE_GATES (JOIST_FEATURE_GATES,
// featuregates.Parse); a bad one is an error naming the setting.
func ReadFeatureGates(env Lookup) (featuregates.Gates, error) {
	raw, err := SettingFeatureGates.Get(env)
	if err != nil {
		return featuregates.Gates{}, err
	}
	g, err := featuregates.Parse(raw)
	if err != nil {
		return featuregates.Gates{}, fmt.Errorf("read setting %s: %w", SettingFeatureGates.Name, err)
	}
	return g, nil
}
