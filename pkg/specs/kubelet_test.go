package specs

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"

	v1 "github.com/joist-dev/joist/pkg/apis/v1"
	"github.com/joist-dev/joist/pkg/apis/v1alpha5"
)

// TestKubeletKnownKeysAreKarpentersParsedFields: the spec.kubelet keys
// Joist reads are derived from model.Kubelet, which owns the field list;
// this pins them to the twelve Karpenter v1.15 parses, so a field added
// to the model for another reason is not silently taken off the
// pass-through (and validated as Joist's).
func TestKubeletKnownKeysAreKarpentersParsedFields(t *testing.T) {
	want := []string{"clusterDNS", "cpuCFSQuota", "evictionHard", "evictionMaxPodGracePeriod", "evictionSoft", "evictionSoftGracePeriod",
		"imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "kubeReserved", "maxPods", "podsPerCore", "systemReserved"}
	if got := slices.Sorted(maps.Keys(kubeletKnownKeys)); !slices.Equal(got, want) {
		t.Fatalf("known kubelet keys %v, want %v", got, want)
	}
}

// TestKubeletV1Alpha5WrittenAsV1ReadsBack: a v1alpha5 kubelet
// configuration converted to the open v1 map (setKubelet) reads back
// (kubeletV1ToModel) as the model reads it directly, but for the
// containerRuntime v1 has no key for.
func TestKubeletV1Alpha5WrittenAsV1ReadsBack(t *testing.T) {
	var kc v1alpha5.KubeletConfiguration
	if err := json.Unmarshal([]byte(`{"clusterDNS":["10.0.0.10"],"containerRuntime":"containerd","maxPods":58,"podsPerCore":4,
		"systemReserved":{"cpu":"100m"},"kubeReserved":{"memory":"200Mi"},"evictionHard":{"memory.available":"5%"},
		"evictionSoft":{"nodefs.available":"10%"},"evictionSoftGracePeriod":{"nodefs.available":"1m30s"},"evictionMaxPodGracePeriod":60,
		"imageGCHighThresholdPercent":85,"imageGCLowThresholdPercent":80,"cpuCFSQuota":true}`), &kc); err != nil {
		t.Fatal(err)
	}
	var c Converted
	var nc v1.EC2NodeClass
	c.setKubelet(&nc, &kc)
	got := kubeletV1ToModel(nc.Spec.Kubelet)
	want := kubeletV1Alpha5ToModel(&kc)
	want.ContainerRuntime = ""
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Fatalf("read back %s\nwant      %s", gj, wj)
	}
	if len(nc.Spec.Kubelet) != 12 {
		t.Errorf("v1 kubelet keys %d, want the 12 set", len(nc.Spec.Kubelet))
	}
}
