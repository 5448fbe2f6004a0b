package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
)

// A dumped case reads back into the same Input: the same pods, pools,
// DaemonSets, volumes and instance types (compared as JSON, so quantities
// compare by value), and it solves to the same plan. The NodePool carries
// the pool's requirements, taints, limits and weight.
func TestDumpRoundTrip(t *testing.T) {
	sh, ok := workloadgen.ShapeByName("mix")
	if !ok {
		t.Fatal("no mix shape")
	}
	in, err := workloadgen.Input(sh, 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "mix-200")
	if err := writeCase(dir, in); err != nil {
		t.Fatal(err)
	}
	back, err := readCase(dir)
	if err != nil {
		t.Fatal(err)
	}
	asJSON := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for name, pair := range map[string][2]any{
		"pods":          {in.Pods, back.Pods},
		"daemonSets":    {in.DaemonSets, back.DaemonSets},
		"pools":         {in.Pools, back.Pools},
		"instanceTypes": {in.InstanceTypes, back.InstanceTypes},
		"poolTypes":     {in.PoolInstanceTypes, back.PoolInstanceTypes},
		"claims":        {in.PersistentVolumeClaims, back.PersistentVolumeClaims},
		"volumes":       {in.PersistentVolumes, back.PersistentVolumes},
		"region":        {in.Region, back.Region},
	} {
		if a, b := asJSON(pair[0]), asJSON(pair[1]); a != b {
			t.Errorf("%s differ after the round trip", name)
		}
	}
	if len(in.DaemonSets) == 0 || len(in.PersistentVolumes) == 0 || len(in.Pools) < 3 {
		t.Fatalf("the case should carry DaemonSets, volumes and three pools: %d, %d, %d", len(in.DaemonSets), len(in.PersistentVolumes), len(in.Pools))
	}
	want, got := scheduling.Solve(in), scheduling.Solve(back)
	if len(want.NewNodes) != len(got.NewNodes) || want.TotalPricePerHour != got.TotalPricePerHour || len(want.Unschedulable) != len(got.Unschedulable) {
		t.Errorf("plans differ: %d nodes $%.4f/h vs %d nodes $%.4f/h", len(want.NewNodes), want.TotalPricePerHour, len(got.NewNodes), got.TotalPricePerHour)
	}

	raw, err := os.ReadFile(filepath.Join(dir, "nodepools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(strings.TrimPrefix(string(raw), "---\n"), "\n---\n")
	if len(docs) != len(in.Pools) {
		t.Fatalf("%d NodePools for %d pools", len(docs), len(in.Pools))
	}
	for i, doc := range docs {
		var np karpenterNodePool
		if err := yaml.UnmarshalStrict([]byte(doc), &np); err != nil {
			t.Fatalf("NodePool %d: %v", i, err)
		}
		p := in.Pools[i]
		if np.APIVersion != "karpenter.sh/v1" || np.Kind != "NodePool" || np.Metadata.Name != p.Name {
			t.Errorf("NodePool %d: %s %s %s", i, np.APIVersion, np.Kind, np.Metadata.Name)
		}
		if len(np.Spec.Template.Spec.Requirements) != len(p.Requirements) || !reflect.DeepEqual(np.Spec.Template.Spec.Taints, p.Taints) {
			t.Errorf("NodePool %s: requirements %v taints %v, pool %v %v", p.Name, np.Spec.Template.Spec.Requirements, np.Spec.Template.Spec.Taints, p.Requirements, p.Taints)
		}
		if (np.Spec.Weight == nil) != (p.Weight == 0) || (np.Spec.Weight != nil && *np.Spec.Weight != p.Weight) {
			t.Errorf("NodePool %s: weight %v, pool %d", p.Name, np.Spec.Weight, p.Weight)
		}
		if asJSON(np.Spec.Limits) != asJSON(p.Limits) {
			t.Errorf("NodePool %s: limits %v, pool %v", p.Name, np.Spec.Limits, p.Limits)
		}
	}
}
