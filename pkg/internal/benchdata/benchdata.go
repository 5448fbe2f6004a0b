// Package benchdata loads the shared benchmark workloads into simulator
// inputs, for the benchmarks and the `make bench` table printer.
//
// The workloads live in shared/workloads beside the repository (CI lays
// shared/ next to the clone); JOIST_WORKLOADS overrides the folder.
package benchdata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/fromcatalog"
	"github.com/joist-dev/joist/pkg/specs"
	"github.com/joist-dev/joist/pkg/workload"
)

// Region is where the benchmarks price nodes: us-east-1 has the freshest
// prices in the catalog, with its default zones a, b and c.
const Region = "us-east-1"

// Names are the benchmark workloads, smallest first.
var Names = []string{"diverse-1k", "diverse-5k", "diverse-10k"}

// Karpenter is what Karpenter v1.15's scheduler planned for each workload
// on the same 2-core machine (nodes, $/h, seconds).
var Karpenter = map[string]struct {
	Nodes   int
	Price   float64
	Seconds float64
}{
	"diverse-1k":  {27, 34.73, 3.4},
	"diverse-5k":  {27, 161.78, 7.9},
	"diverse-10k": {29, 497.78, 13.0},
}

// ErrNoWorkloads means the shared workloads are not where they should be.
var ErrNoWorkloads = errors.New("benchmark workloads not found")

// Dir finds the workloads folder: $JOIST_WORKLOADS, else
// <repo>/../shared/workloads found from this source file.
func Dir() (string, error) {
	if d := os.Getenv("JOIST_WORKLOADS"); d != "" {
		return d, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", ErrNoWorkloads
	}
	// file is <repo>/pkg/internal/benchdata/benchdata.go
	repo := filepath.Join(filepath.Dir(file), "..", "..", "..")
	d := filepath.Join(repo, "..", "shared", "workloads")
	if _, err := os.Stat(d); err != nil {
		return "", fmt.Errorf("%w: %s (set JOIST_WORKLOADS)", ErrNoWorkloads, d)
	}
	return d, nil
}

// Load reads one workload file into an Input: its pools (through
// pkg/specs, so the AWS webhook defaults apply, as they did for Karpenter)
// and pods (through pkg/workload), with the catalog's types for Region.
func Load(name string) (scheduling.Input, error) {
	dir, err := Dir()
	if err != nil {
		return scheduling.Input{}, err
	}
	path := filepath.Join(dir, name+".yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return scheduling.Input{}, fmt.Errorf("%w: %v", ErrNoWorkloads, err)
	}
	return FromManifest(data, path)
}

// FromManifest builds an Input from manifest bytes (pools and workloads).
func FromManifest(data []byte, source string) (scheduling.Input, error) {
	objs, err := specs.Decode(data, source)
	if err != nil {
		return scheduling.Input{}, err
	}
	spec, errs := specs.Build(objs)
	if len(errs) > 0 {
		return scheduling.Input{}, errors.Join(errs...)
	}
	wl, err := workload.Read(data, source)
	if err != nil {
		return scheduling.Input{}, err
	}
	cat, err := catalog.Offline(Region, nil)
	if err != nil {
		return scheduling.Input{}, err
	}
	pools := spec.Pools
	if len(pools) == 0 {
		pools = []*model.Pool{specs.DefaultPool()}
	}
	shared, per := fromcatalog.ForPools(cat, pools)
	return scheduling.Input{
		Pods: wl.Pods, DaemonSets: wl.DaemonSets, Pools: pools,
		InstanceTypes: shared, PoolInstanceTypes: per, Region: Region,
		PersistentVolumeClaims: wl.PersistentVolumeClaims, PersistentVolumes: wl.PersistentVolumes,
		StorageClasses: wl.StorageClasses, Namespaces: wl.Namespaces,
	}, nil
}
