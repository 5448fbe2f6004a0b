package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/scheduling"
)

// Karpenter's minValues cases on keys the offerings decide (suite_test.go,
// "with zone requirements"): a pool's minValues on the zone (or capacity
// type) counts the zones (capacity types) a new node may still be
// launched in, not instance type labels.

// zonalTypes are one type per name, 4 cpu, offered spot in the zones.
func zonalTypes(zones []string, names ...string) []*scheduling.InstanceType {
	var out []*scheduling.InstanceType
	for _, n := range names {
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("10")}
		it := &scheduling.InstanceType{Name: n, Capacity: capacity, Allocatable: capacity,
			Labels: map[string]string{corev1.LabelInstanceTypeStable: n, corev1.LabelArchStable: "arm64", corev1.LabelOSStable: "linux"}}
		for _, z := range zones {
			it.Offerings = append(it.Offerings, scheduling.Offering{Zone: z, CapacityType: model.CapacityTypeSpot, Price: 0.52})
		}
		out = append(out, it)
	}
	return out
}

// zoneMinValuesInput is one 900m pod, a pool allowing zones a, b and c
// with minValues n on the zone, and instance-type-1 offered in zones.
func zoneMinValuesInput(n int, zones ...string) scheduling.Input {
	p := pool("p", withReq(model.LabelCapacityType, "In", model.CapacityTypeSpot),
		withMinValues(corev1.LabelTopologyZone, "In", n, "test-1a", "test-1b", "test-1c"))
	return scheduling.Input{Pods: pods("a", 1, "900m", "900Mi"), Pools: []*model.Pool{p},
		InstanceTypes: zonalTypes(zones, "instance-type-1"), Region: "test-1"}
}

// withZonalClaim gives the pods a WaitForFirstConsumer claim whose class
// allows test-1a only.
func withZonalClaim(in scheduling.Input) scheduling.Input {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	in.StorageClasses = []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, Provisioner: ebsDriver, VolumeBindingMode: &wffc,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"test-1a"}}}}}}}
	class := "zonal"
	in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class}}}
	for _, p := range in.Pods {
		usesClaims("data")(p)
	}
	return in
}

// zonesAtLeast checks the one new node may be launched in n zones.
func zonesAtLeast(n int) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
	return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
		t.Helper()
		if len(plan.NewNodes) != 1 || len(plan.NewNodes[0].Zones) < n {
			t.Errorf("new nodes %+v, want one with at least %d zones", plan.NewNodes, n)
		}
	}
}

func TestKarpenterZoneMinValues(t *testing.T) {
	runK(t, []kcase{
		{name: "should not schedule when zone minValues requirement is not met", in: func() scheduling.Input {
			return zoneMinValuesInput(3, "test-1a", "test-1b")
		}, unschedulable: 1, reason: "needs 3 distinct topology.kubernetes.io/zone values"},
		{name: "should not schedule when pod volume topology narrows zones below minValues", in: func() scheduling.Input {
			return withZonalClaim(zoneMinValuesInput(3, "test-1a", "test-1b", "test-1c"))
		}, unschedulable: 1, reason: "needs 3 distinct topology.kubernetes.io/zone values"},
		// Joist's own: what the two cases above imply.
		{name: "zone minValues met by offerings in three zones", in: func() scheduling.Input {
			return zoneMinValuesInput(3, "test-1a", "test-1b", "test-1c")
		}, check: zonesAtLeast(3)},
		{name: "capacity-type minValues met by on-demand and spot offerings", in: func() scheduling.Input {
			two := 2
			p := pool("p", withReq(model.LabelCapacityType, "In", model.CapacityTypeOnDemand, model.CapacityTypeSpot))
			p.Requirements[len(p.Requirements)-1].MinValues = &two
			return input(pods("a", 1, "900m", "900Mi"), p)
		}, check: func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			if len(plan.NewNodes) != 1 || len(plan.NewNodes[0].CapacityTypes) != 2 {
				t.Errorf("new nodes %+v, want one with both capacity types", plan.NewNodes)
			}
		}},
	})
}
