package crds

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite config/crds from the Go definitions")

const crdDir = "../../../config/crds"

// TestCRDFilesAreUpToDate keeps config/crds in step with the Go types
// and rule tables; run with -update after changing either.
func TestCRDFilesAreUpToDate(t *testing.T) {
	for _, c := range All() {
		want, err := Render(c)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(crdDir, FileName(c))
		if *update {
			if err := os.MkdirAll(crdDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./pkg/apis/crds -run TestCRDFiles -update)", err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run go test ./pkg/apis/crds -run TestCRDFiles -update", path)
		}
	}
}

func TestEveryCRDIsClusterScopedWithAStatusSubresource(t *testing.T) {
	names := map[string]bool{}
	for _, c := range All() {
		names[c.Name] = true
		v := c.Spec.Versions[0]
		if c.Spec.Scope != "Cluster" || v.Subresources == nil || v.Subresources.Status == nil || !v.Storage || !v.Served {
			t.Errorf("%s: scope %s, version %+v", c.Name, c.Spec.Scope, v)
		}
	}
	for _, n := range []string{"provisioners.karpenter.sh", "awsnodetemplates.karpenter.k8s.aws", "nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"} {
		if !names[n] {
			t.Errorf("missing CRD %s", n)
		}
	}
}
