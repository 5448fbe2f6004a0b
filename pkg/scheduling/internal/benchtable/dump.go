package main

// The dump: every benchmark case written to files another scheduler can
// read (test/karpenter drives Karpenter's with them), and read back here so
// Joist solves exactly the same input.
//
//	go run ./pkg/scheduling/internal/benchtable -dump DIR [-sizes ...] [-shape ...]
//	go run ./pkg/scheduling/internal/benchtable -case DIR/web-six-500 -runs 1
//
// A case is a folder:
//
//	workload.json       pods to place, DaemonSets, volumes, namespaces, region
//	pools.json          the pools as Joist reads them (after the AWS defaults)
//	nodepools.yaml      the same pools as Karpenter v1 NodePools
//	instancetypes.json  the instance types every pool may use, and the lists
//	                    of pools whose kubelet settings give other allocatable:
//	                    capacity, allocatable and offerings (zone, capacity
//	                    type, $/h) as Joist sees them
//
// and DIR/cases.txt lists the cases in table order: folder, shape, pods.

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/pkg/internal/benchdata"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
)

var (
	dumpDir = flag.String("dump", "", "write every case (the shared workloads, then each generated shape at each -sizes) to this folder for test/karpenter, and exit")
	caseDir = flag.String("case", "", "solve one dumped case -runs times (after one untimed warm-up) and print one JSON line with the fastest times, and exit")
)

// dumpFlags handles -dump and -case; it reports whether one was given.
func dumpFlags(runs int, sizeList, only string, shared bool) bool {
	switch {
	case *dumpDir != "":
		var sizes []int
		for _, f := range strings.Split(sizeList, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchtable: -sizes:", err)
				os.Exit(2)
			}
			sizes = append(sizes, n)
		}
		if err := dumpAll(*dumpDir, sizes, only, shared); err != nil {
			fmt.Fprintln(os.Stderr, "benchtable: -dump:", err)
			os.Exit(1)
		}
		return true
	case *caseDir != "":
		line, err := solveCase(*caseDir, runs)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable: -case:", err)
			os.Exit(1)
		}
		fmt.Println(line)
		return true
	}
	return false
}

// dumpWorkload is workload.json.
type dumpWorkload struct {
	Region                 string                          `json:"region"`
	Pods                   []*corev1.Pod                   `json:"pods"`
	DaemonSets             []*appsv1.DaemonSet             `json:"daemonSets,omitempty"`
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim `json:"persistentVolumeClaims,omitempty"`
	PersistentVolumes      []*corev1.PersistentVolume      `json:"persistentVolumes,omitempty"`
	StorageClasses         []*storagev1.StorageClass       `json:"storageClasses,omitempty"`
	Namespaces             []*corev1.Namespace             `json:"namespaces,omitempty"`
}

// dumpTypes is instancetypes.json: Default for every pool, Pools for the
// pools named there instead.
type dumpTypes struct {
	Default []*scheduling.InstanceType            `json:"default"`
	Pools   map[string][]*scheduling.InstanceType `json:"pools,omitempty"`
}

// dumpAll writes the shared workloads and the generated ones.
func dumpAll(dir string, sizes []int, only string, shared bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var index strings.Builder
	add := func(name, shape string, in scheduling.Input) error {
		if err := writeCase(filepath.Join(dir, name), in); err != nil {
			return fmt.Errorf("case %s: %w", name, err)
		}
		fmt.Fprintf(&index, "%s %s %d\n", name, shape, len(in.Pods))
		return nil
	}
	if shared && only == "" {
		for _, name := range benchdata.Names {
			in, err := benchdata.Load(name)
			if err != nil {
				return fmt.Errorf("workload %s: %w", name, err)
			}
			if err := add(name, name, in); err != nil {
				return err
			}
		}
	}
	for _, sh := range workloadgen.Shapes {
		if only != "" && sh.Name != only {
			continue
		}
		for _, n := range sizes {
			in, err := workloadgen.Input(sh, n, 1)
			if err != nil {
				return err
			}
			if err := add(fmt.Sprintf("%s-%d", sh.Name, n), sh.Name, in); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(filepath.Join(dir, "cases.txt"), []byte(index.String()), 0o644)
}

// writeCase writes one Input as a case folder.
func writeCase(dir string, in scheduling.Input) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	wl := dumpWorkload{
		Region: in.Region, Pods: in.Pods, DaemonSets: in.DaemonSets,
		PersistentVolumeClaims: in.PersistentVolumeClaims, PersistentVolumes: in.PersistentVolumes,
		StorageClasses: in.StorageClasses, Namespaces: in.Namespaces,
	}
	types := dumpTypes{Default: in.InstanceTypes, Pools: in.PoolInstanceTypes}
	for file, v := range map[string]any{"workload.json": wl, "pools.json": in.Pools, "instancetypes.json": types} {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			return err
		}
	}
	var np strings.Builder
	for _, p := range in.Pools {
		b, err := yaml.Marshal(nodePool(p))
		if err != nil {
			return fmt.Errorf("nodepools.yaml: pool %s: %w", p.Name, err)
		}
		np.WriteString("---\n")
		np.Write(b)
	}
	return os.WriteFile(filepath.Join(dir, "nodepools.yaml"), []byte(np.String()), 0o644)
}

// readCase reads a case folder back into an Input.
func readCase(dir string) (scheduling.Input, error) {
	var wl dumpWorkload
	var pools []*model.Pool
	var types dumpTypes
	for file, v := range map[string]any{"workload.json": &wl, "pools.json": &pools, "instancetypes.json": &types} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return scheduling.Input{}, err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return scheduling.Input{}, fmt.Errorf("%s: %w", filepath.Join(dir, file), err)
		}
	}
	if len(types.Default) == 0 {
		return scheduling.Input{}, fmt.Errorf("%s: no instance types", filepath.Join(dir, "instancetypes.json"))
	}
	if types.Pools == nil {
		types.Pools = map[string][]*scheduling.InstanceType{} // as fromcatalog.ForPools gives it
	}
	// Prepared once, as fromcatalog.Input prepares a catalog for every
	// solve against it: the timed solves are the repeated ones.
	prepared := []*scheduling.PreparedTypes{scheduling.PrepareTypes(types.Default)}
	for _, l := range types.Pools {
		prepared = append(prepared, scheduling.PrepareTypes(l))
	}
	return scheduling.Input{
		Pods: wl.Pods, DaemonSets: wl.DaemonSets, Pools: pools,
		InstanceTypes: types.Default, PoolInstanceTypes: types.Pools, Prepared: prepared, Region: wl.Region,
		PersistentVolumeClaims: wl.PersistentVolumeClaims, PersistentVolumes: wl.PersistentVolumes,
		StorageClasses: wl.StorageClasses, Namespaces: wl.Namespaces,
	}, nil
}

// caseResult is the line -case prints (test/karpenter reads it).
type caseResult struct {
	Case   string  `json:"case"`
	Pods   int     `json:"pods"`
	Placed int     `json:"placed"`
	Nodes  int     `json:"nodes"`
	Price  float64 `json:"pricePerHour"`
	Bound  float64 `json:"boundPerHour"`
	Wall   float64 `json:"wallSeconds"`
	CPU    float64 `json:"cpuSeconds"`
}

// solveCase reads a case, solves it once untimed (warm-up: a fresh process
// pays page faults and lazy initialisation on its first solve) and then
// runs times, and returns the result line with the fastest times.
func solveCase(dir string, runs int) (string, error) {
	in, err := readCase(dir)
	if err != nil {
		return "", err
	}
	scheduling.Solve(in)
	plan, wall, cpu, _, _ := timeSolve(in, runs)
	r := caseResult{
		Case: filepath.Base(dir), Pods: len(in.Pods),
		Placed: len(in.Pods) - len(plan.Unschedulable) - len(plan.Skipped),
		Nodes:  len(plan.NewNodes), Price: plan.TotalPricePerHour, Bound: plan.LowerBoundPricePerHour,
		Wall: wall.Seconds(), CPU: cpu.Seconds(),
	}
	b, err := json.Marshal(r)
	return string(b), err
}

// karpenterNodePool is the part of a Karpenter v1 NodePool the dump fills
// (sigs.k8s.io/karpenter/pkg/apis/v1, written without importing it).
type karpenterNodePool struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Weight   *int32              `json:"weight,omitempty"`
		Limits   corev1.ResourceList `json:"limits,omitempty"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `json:"labels,omitempty"`
				Annotations map[string]string `json:"annotations,omitempty"`
			} `json:"metadata"`
			Spec struct {
				Requirements  []model.Requirement `json:"requirements"`
				Taints        []corev1.Taint      `json:"taints,omitempty"`
				StartupTaints []corev1.Taint      `json:"startupTaints,omitempty"`
				NodeClassRef  struct {
					Group string `json:"group"`
					Kind  string `json:"kind"`
					Name  string `json:"name"`
				} `json:"nodeClassRef"`
				ExpireAfter string `json:"expireAfter"`
			} `json:"spec"`
		} `json:"template"`
		Disruption struct {
			ConsolidateAfter string `json:"consolidateAfter"`
		} `json:"disruption"`
	} `json:"spec"`
}

// nodePool renders a pool as a Karpenter v1 NodePool: its requirements
// (with the AWS defaults Joist applied), labels, taints, limits and weight.
// Kubelet settings are not carried: they only change allocatable, which
// the pool's instance types already have.
func nodePool(p *model.Pool) karpenterNodePool {
	var np karpenterNodePool
	np.APIVersion, np.Kind = "karpenter.sh/v1", "NodePool"
	np.Metadata.Name = p.Name
	if p.Weight != 0 {
		w := p.Weight
		np.Spec.Weight = &w
	}
	np.Spec.Limits = p.Limits
	t := &np.Spec.Template
	t.Metadata.Labels, t.Metadata.Annotations = p.Labels, p.Annotations
	t.Spec.Requirements = append([]model.Requirement{}, p.Requirements...)
	sort.SliceStable(t.Spec.Requirements, func(i, j int) bool { return t.Spec.Requirements[i].Key < t.Spec.Requirements[j].Key })
	t.Spec.Taints, t.Spec.StartupTaints = p.Taints, p.StartupTaints
	t.Spec.NodeClassRef.Group, t.Spec.NodeClassRef.Kind = "karpenter.k8s.aws", "EC2NodeClass"
	t.Spec.NodeClassRef.Name = p.NodeClass
	if t.Spec.NodeClassRef.Name == "" {
		t.Spec.NodeClassRef.Name = "default"
	}
	t.Spec.ExpireAfter = "Never"
	np.Spec.Disruption.ConsolidateAfter = "Never"
	return np
}
