// Package benchdata loads the shared benchmark workloads into simulator
// inputs, for the benchmarks and the `make bench` table printer.
//
// The workloads are shared/workloads, copied into this package (embedded,
// gzipped) so that a bare clone needs nothing beside it; JOIST_WORKLOADS
// names another folder to read them from instead.
package benchdata

import (
	"bytes"
	"compress/gzip"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

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

// ErrNoWorkloads means the workloads are not where JOIST_WORKLOADS says.
var ErrNoWorkloads = errors.New("benchmark workloads not found")

// embedded holds copies of shared/workloads (gzip -9n of each file), so a
// clone runs the benchmarks and their tests without shared/ beside it.
// Refresh them after the shared workloads change:
//
//	for f in ../shared/workloads/*.yaml; do gzip -9n -c $f > pkg/internal/benchdata/workloads/$(basename $f).gz; done
//
//go:embed workloads/*.yaml.gz
var embedded embed.FS

// Read returns one workload's manifests: from $JOIST_WORKLOADS/<name>.yaml
// when JOIST_WORKLOADS is set, else the copy embedded in this package.
func Read(name string) ([]byte, string, error) {
	if d := os.Getenv("JOIST_WORKLOADS"); d != "" {
		path := filepath.Join(d, name+".yaml")
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, path, fmt.Errorf("%w: %v", ErrNoWorkloads, err)
		}
		return data, path, nil
	}
	path := "workloads/" + name + ".yaml.gz"
	gz, err := embedded.ReadFile(path)
	if err != nil {
		return nil, path, fmt.Errorf("read embedded workload %s: %w", name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, path, fmt.Errorf("read embedded workload %s: %w", name, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, path, fmt.Errorf("read embedded workload %s: %w", name, err)
	}
	return data, "benchdata/" + path, nil
}

// Load reads one workload into an Input: its pools (through pkg/specs, so
// the AWS webhook defaults apply, as they did for Karpenter) and pods
// (through pkg/workload), with the catalog's types for Region.
func Load(name string) (scheduling.Input, error) {
	data, source, err := Read(name)
	if err != nil {
		return scheduling.Input{}, err
	}
	return FromManifest(data, source)
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
	in := fromcatalog.Input(cat, fromcatalog.Cluster{
		Pools: pools, NodeClasses: spec.NodeClasses, DaemonSets: wl.DaemonSets,
		PersistentVolumeClaims: wl.PersistentVolumeClaims, PersistentVolumes: wl.PersistentVolumes,
		StorageClasses: wl.StorageClasses, Namespaces: wl.Namespaces,
	})
	in.Pods = wl.Pods
	return in, nil
}
