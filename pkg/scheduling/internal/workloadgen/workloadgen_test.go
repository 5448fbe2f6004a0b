package workloadgen

import (
	"bytes"
	"testing"
)

// Every shape generates a readable workload of exactly the size asked,
// the same bytes for the same seed.
func TestShapes(t *testing.T) {
	for _, sh := range Shapes {
		t.Run(sh.Name, func(t *testing.T) {
			for _, n := range []int{50, 500} {
				in, err := Input(sh, n, 1)
				if err != nil {
					t.Fatal(err)
				}
				if len(in.Pods) != n {
					t.Errorf("%d pods, want %d", len(in.Pods), n)
				}
				if !bytes.Equal(Manifest(sh, n, 1), Manifest(sh, n, 1)) {
					t.Error("not deterministic")
				}
			}
		})
	}
}
