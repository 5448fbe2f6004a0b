package specs

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// FuzzDecodeBuild feeds arbitrary bytes through the whole reader: decode,
// default, validate, map, and convert-and-rebuild. Whatever the input,
// it must not panic; every defect is an error.
func FuzzDecodeBuild(f *testing.F) {
	for _, path := range []string{"testdata/seed.yaml", "testdata/v1alpha5-rich.yaml"} {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(nodePool("requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['4'], minValues: 1}]", "disruption: {budgets: [{nodes: '1', schedule: '@daily', duration: 1h}]}")))
	f.Add([]byte(nodeClass("kubelet: {maxPods: 'vcpus * 8', evictionSoft: {memory.available: 5%}, evictionSoftGracePeriod: {memory.available: 1m}}\nblockDeviceMappings: [{deviceName: a, ebs: {volumeSize: 1Ti}}]")))
	f.Add([]byte(`[{"apiVersion":"karpenter.sh/v1alpha5","kind":"Provisioner","metadata":{"name":"p"},"spec":{"provider":{"subnetSelector":{"aws-ids":"subnet-1"}}}}]`))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: karpenter.sh/v1, kind: NodePool}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// A hang is a bug too; the fuzzer keeps the input of a crash.
		watchdog := time.AfterFunc(20*time.Second, func() { panic(fmt.Sprintf("input took over 20s: %q", data)) })
		defer watchdog.Stop()
		objs, _ := Decode(data, "fuzz")
		spec, _ := Build(objs)
		if spec == nil {
			t.Fatal("Build returned no spec")
		}
		conv, _ := ConvertToV1(objs, ConvertOptions{InstanceProfile: "p"})
		out, err := conv.YAML()
		if err != nil {
			return
		}
		again, _ := Decode(out, "converted")
		Build(again)
	})
}
