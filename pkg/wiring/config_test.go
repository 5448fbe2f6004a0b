package wiring

import (
	"strings"
	"testing"
	"time"

	"github.com/joist-dev/joist/pkg/featuregates"
	"github.com/joist-dev/joist/pkg/scheduling"
)

func env(m map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestSettingsReadTheNewNameOrTheOld(t *testing.T) {
	for _, c := range []struct {
		name    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{"new name", map[string]string{"JOIST_CLUSTER_NAME": "a"}, "a", ""},
		{"old name still works", map[string]string{"CLUSTER_NAME": "b"}, "b", ""},
		{"both, agreeing", map[string]string{"JOIST_CLUSTER_NAME": "c", "CLUSTER_NAME": "c"}, "c", ""},
		{"both, differing", map[string]string{"JOIST_CLUSTER_NAME": "c", "CLUSTER_NAME": "d"}, "", "JOIST_CLUSTER_NAME=\"c\" and its old name CLUSTER_NAME=\"d\" differ"},
		{"neither", map[string]string{}, "", ""},
	} {
		got, err := SettingCluster.Get(env(c.env))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err = %v, want it to say %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestEverySettingIsUnderTheJoistPrefix(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Settings {
		if !strings.HasPrefix(s.Name, "JOIST_") {
			t.Errorf("setting %s is not under JOIST_", s.Name)
		}
		if s.Old != "" && s.Old != strings.TrimPrefix(s.Name, "JOIST_") {
			t.Errorf("setting %s: old name %s is not the name less its prefix", s.Name, s.Old)
		}
		for _, n := range []string{s.Name, s.Old} {
			if n != "" && seen[n] {
				t.Errorf("name %s used twice", n)
			}
			seen[n] = true
		}
		if s.Doc == "" {
			t.Errorf("setting %s has no description", s.Name)
		}
	}
}

func TestDurationSettings(t *testing.T) {
	for _, c := range []struct {
		v       string
		want    time.Duration
		wantErr string
	}{
		{"", 7 * time.Minute, ""},
		{"90s", 90 * time.Second, ""},
		{"0s", 0, ""},
		{"-1s", 0, "zero or more"},
		{"soon", 0, `JOIST_REAPER_LOOP="soon"`},
	} {
		m := map[string]string{}
		if c.v != "" {
			m["JOIST_REAPER_LOOP"] = c.v
		}
		got, err := SettingReaperLoop.Duration(env(m), 7*time.Minute)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: err = %v, want it to say %q", c.v, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %s, %v; want %s", c.v, got, err, c.want)
		}
	}
}

func TestPolicies_ReadKarpentersSettings(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want scheduling.Options
		err  string
	}{
		{map[string]string{}, scheduling.Options{}, ""},
		{map[string]string{"JOIST_PREFERENCE_POLICY": "Ignore"}, scheduling.Options{IgnorePreferences: true}, ""},
		{map[string]string{"JOIST_MIN_VALUES_POLICY": "BestEffort"}, scheduling.Options{MinValuesBestEffort: true}, ""},
		{map[string]string{"JOIST_PREFERENCE_POLICY": "Respect", "JOIST_MIN_VALUES_POLICY": "Strict"}, scheduling.Options{}, ""},
		{map[string]string{"JOIST_PREFERENCE_POLICY": "respect"}, scheduling.Options{}, "JOIST_PREFERENCE_POLICY"},
		{map[string]string{"JOIST_MIN_VALUES_POLICY": "Loose"}, scheduling.Options{}, "JOIST_MIN_VALUES_POLICY"},
	} {
		got, err := Policies(env(c.env))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: got %+v, %v; want an error naming %s", c.env, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: got %+v, %v; want %+v", c.env, got, err, c.want)
		}
	}
}

func TestSchedulerConfig_ReadsKarpentersSetting(t *testing.T) {
	for _, c := range []struct {
		env      map[string]string
		defaults int
		err      string
	}{
		{map[string]string{}, 0, ""},
		{map[string]string{"JOIST_SCHEDULER_CONFIG": "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]}"}, 1, ""},
		{map[string]string{"JOIST_SCHEDULER_CONFIG": "podTopologySpread: {defaultConstraints: [{maxSkew: 0, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]}"}, 0, "JOIST_SCHEDULER_CONFIG: scheduler config: podTopologySpread.defaultConstraints[0].maxSkew"},
		{map[string]string{"JOIST_SCHEDULER_CONFIG": "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {}}]}"}, 0, "defaultConstraints[0].labelSelector"},
	} {
		got, err := SchedulerConfig(env(c.env))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: %v, want an error containing %q", c.env, err, c.err)
			}
			continue
		}
		if err != nil || len(got.Defaults()) != c.defaults {
			t.Errorf("%v: %d defaults, %v; want %d", c.env, len(got.Defaults()), err, c.defaults)
		}
	}
}

func TestReservedENIs_ReadsKarpentersSetting(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want int64
		err  string
	}{
		{map[string]string{}, 0, ""},
		{map[string]string{"JOIST_RESERVED_ENIS": "1"}, 1, ""},
		{map[string]string{"RESERVED_ENIS": "2"}, 2, ""},
		{map[string]string{"JOIST_RESERVED_ENIS": "-1"}, 0, "JOIST_RESERVED_ENIS"},
		{map[string]string{"JOIST_RESERVED_ENIS": "one"}, 0, "JOIST_RESERVED_ENIS"},
	} {
		got, err := ReservedENIs(env(c.env))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: got %d, %v; want an error naming %s", c.env, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: got %d, %v; want %d", c.env, got, err, c.want)
		}
	}
}

// TestReadFeatureGates: Karpenter's FEATURE_GATES is read under either
// name (featuregates.Parse's own cases are in its package); a bad one is
// an error naming the setting.
func TestReadFeatureGates(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want featuregates.Gates
		err  string
	}{
		{map[string]string{}, featuregates.Gates{}, ""},
		{map[string]string{"JOIST_FEATURE_GATES": "NodeRepair=true"}, featuregates.Gates{NodeRepair: true}, ""},
		{map[string]string{"FEATURE_GATES": "ReservedCapacity=true,NodeRepair=true"}, featuregates.Gates{NodeRepair: true}, ""},
		{map[string]string{"JOIST_FEATURE_GATES": "NodeRepare=true"}, featuregates.Gates{}, `JOIST_FEATURE_GATES: unknown feature gate "NodeRepare"`},
		{map[string]string{"JOIST_FEATURE_GATES": "NodeRepair=true", "FEATURE_GATES": "NodeRepair=false"}, featuregates.Gates{}, "differ"},
	} {
		got, err := ReadFeatureGates(env(c.env))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: got %+v, %v; want an error saying %s", c.env, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: got %+v, %v; want %+v", c.env, got, err, c.want)
		}
	}
}
