package scheduling_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/verify"
)

// Karpenter's VolumeUsage cases (scheduling/suite_test.go, Describe
// "VolumeUsage" and Context "InstanceType VolumeAttachmentLimits"): a node
// attaches at most its limit of volumes per CSI driver — the CSINode's
// count for a registered node, the instance type's before that or for a
// new node — and a claim shared by several pods on a node is attached
// once.

const ebsDriver = "ebs.csi.aws.com"

// volInput is an input whose storage classes are a WaitForFirstConsumer
// class "ebs" of the EBS driver and "local" of driver local.csi, both in
// test-1a, and whose claims are claims[i] (of class "ebs" unless named
// "local-…").
func volInput(ps []*corev1.Pod, claims ...string) scheduling.Input {
	in := input(ps)
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	zone := []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"test-1a"}}}}}
	in.StorageClasses = []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "ebs"}, Provisioner: ebsDriver, VolumeBindingMode: &wffc, AllowedTopologies: zone},
		{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "local.csi", VolumeBindingMode: &wffc, AllowedTopologies: zone},
	}
	for _, c := range claims {
		class := "ebs"
		if strings.HasPrefix(c, "local-") {
			class = "local"
		}
		in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: "default"},
			Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: &class},
		})
	}
	return in
}

// claims makes one pod option per claim name.
func usesClaims(names ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for _, n := range names {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: n, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: n}}})
		}
	}
}

// ownClaims gives pods[i] the claims <prefix>-<i>-<j> for j < k, and
// returns every claim name.
func ownClaims(ps []*corev1.Pod, k int, prefixes ...string) []string {
	var all []string
	for i, p := range ps {
		for _, pre := range prefixes {
			for j := 0; j < k; j++ {
				n := fmt.Sprintf("%s-%d-%d", pre, i, j)
				usesClaims(n)(p)
				all = append(all, n)
			}
		}
	}
	return all
}

// withVolumeLimits sets every type's limits (by type name, "*" for the
// others).
func withVolumeLimits(in *scheduling.Input, limits map[string]map[string]int64) {
	for _, it := range in.InstanceTypes {
		l, ok := limits[it.Name]
		if !ok {
			l = limits["*"]
		}
		it.VolumeLimits = l
	}
}

// attachedPerNode counts the distinct claims of each node's placed pods.
func attachedPerNode(plan scheduling.Plan) map[string]int {
	out := map[string]int{}
	seen := map[string]bool{}
	for node, ps := range podsByNode(plan) {
		for _, p := range ps {
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim != nil && !seen[node+"/"+v.PersistentVolumeClaim.ClaimName] {
					seen[node+"/"+v.PersistentVolumeClaim.ClaimName] = true
					out[node]++
				}
			}
		}
	}
	return out
}

func podsByNode(plan scheduling.Plan) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, pl := range plan.Existing {
		out[pl.Node] = append(out[pl.Node], pl.Pods...)
	}
	for i, n := range plan.NewNodes {
		out[fmt.Sprintf("new-%d", i)] = append(out[fmt.Sprintf("new-%d", i)], n.Pods...)
	}
	return out
}

func TestKarpenterVolumeLimits(t *testing.T) {
	ebs10 := map[string]map[string]int64{"*": {ebsDriver: 10}}
	// nodes checks the number of new nodes, the pods placed on existing
	// node "n1", and that no node attaches more than max claims.
	nodes := func(newNodes, onExisting, max int) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
		return func(t *testing.T, _ scheduling.Input, plan scheduling.Plan) {
			t.Helper()
			if len(plan.NewNodes) != newNodes {
				t.Errorf("%d new nodes, want %d", len(plan.NewNodes), newNodes)
			}
			got := 0
			for _, pl := range plan.Existing {
				got += len(pl.Pods)
			}
			if got != onExisting {
				t.Errorf("%d pods on the existing node, want %d", got, onExisting)
			}
			for n, k := range attachedPerNode(plan) {
				if k > max {
					t.Errorf("node %s attaches %d claims, limit %d", n, k, max)
				}
			}
		}
	}
	// cheapestHolds checks the new node's options all allow k claims of
	// each driver and the cheapest is want.
	cheapestIs := func(want string) func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
		return func(t *testing.T, in scheduling.Input, plan scheduling.Plan) {
			t.Helper()
			if len(plan.NewNodes) != 1 {
				t.Fatalf("%d new nodes, want 1", len(plan.NewNodes))
			}
			if got := plan.NewNodes[0].Cheapest.InstanceType; got != want {
				t.Errorf("cheapest option %s, want %s", got, want)
			}
			for r := range plan.NewNodes[0].Requests {
				if strings.Contains(string(r), "attachable") {
					t.Errorf("new node requests carry the internal resource %s", r)
				}
			}
		}
	}
	// existing is node n1 in test-1a (an in-flight one when inFlight),
	// with the CSINode limits given (nil: not published yet).
	existing := func(in *scheduling.Input, inFlight bool, limits map[string]int64, held ...*corev1.Pod) {
		n := existingNode("n1", "test-1a", held...)
		n.InFlight, n.VolumeLimits = inFlight, limits
		in.Nodes = append(in.Nodes, n)
	}
	runK(t, []kcase{
		{name: "should launch multiple nodes if required due to volume limits", in: func() scheduling.Input {
			// The in-flight node's CSINode allows 10 attachments: five of
			// the six two-claim pods fit there, the sixth needs a new node
			// (the types declare no limit).
			ps := pods("a", 6, "10m", "10Mi")
			in := volInput(ps, ownClaims(ps, 1, "a", "b")...)
			existing(&in, true, map[string]int64{ebsDriver: 10})
			return in
		}, check: nodes(1, 5, 10)},
		{name: "should launch a single node if all pods use the same PVC", in: func() scheduling.Input {
			// 100 pods of one class share one bound claim: one attachment.
			ps := pods("a", 100, "10m", "10Mi", usesClaims("shared"))
			in := volInput(ps)
			in.PersistentVolumes = []*corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: ebsDriver, VolumeHandle: "vol-1"}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-1a")}}}}}}}}
			class := "ebs"
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "default",
				Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: "pv"}}}
			existing(&in, true, map[string]int64{ebsDriver: 10})
			return in
		}, check: nodes(0, 100, 1)},
		{name: "should launch enough nodes for all pods in a single scheduling loop", in: func() scheduling.Input {
			// 100 pods with a claim each, 10 attachments per node: 10 nodes.
			ps := pods("a", 100, "10m", "10Mi")
			in := volInput(ps, ownClaims(ps, 1, "a")...)
			withVolumeLimits(&in, ebs10)
			return in
		}, check: nodes(10, 0, 10)},
		{name: "should use instance type limits until the CSINode driver is published (before node registration)", in: func() scheduling.Input {
			// The in-flight node has no CSINode yet: its type's limit (10)
			// holds ten of the eleven one-claim pods.
			ps := pods("a", 11, "10m", "10Mi")
			in := volInput(ps, ownClaims(ps, 1, "a")...)
			withVolumeLimits(&in, ebs10)
			existing(&in, true, nil)
			return in
		}, check: nodes(1, 10, 10)},
		{name: "should use instance type limits until the CSINode driver is published (after node registration)", in: func() scheduling.Input {
			ps := pods("a", 11, "10m", "10Mi")
			in := volInput(ps, ownClaims(ps, 1, "a")...)
			withVolumeLimits(&in, ebs10)
			existing(&in, false, nil)
			return in
		}, check: nodes(1, 10, 10)},
		{name: "should account for pods with multiple volumes", in: func() scheduling.Input {
			ps := pods("a", 6, "10m", "10Mi")
			in := volInput(ps, ownClaims(ps, 1, "a", "b")...)
			withVolumeLimits(&in, ebs10)
			return in
		}, check: nodes(2, 0, 10)},
		{name: "should count each PVC once when shared by multiple pods", in: func() scheduling.Input {
			// (50 pods, which one c.xlarge holds: Karpenter's 100 pods go
			// to its one 1024-pod type; ours would take two nodes anyway.)
			ps := pods("a", 50, "10m", "10Mi", usesClaims("shared"))
			in := volInput(ps, "shared")
			withVolumeLimits(&in, ebs10)
			return in
		}, check: nodes(1, 0, 10)},
		{name: "should not limit volumes for drivers without a declared limit", in: func() scheduling.Input {
			ps := pods("a", 20, "10m", "10Mi")
			in := volInput(ps, ownClaims(ps, 1, "a")...)
			withVolumeLimits(&in, map[string]map[string]int64{"*": {"other.csi": 1}})
			return in
		}, check: nodes(1, 0, 20)},
		{name: "should not schedule pods which exceed the volume limits of every instance type", in: func() scheduling.Input {
			ps := pods("a", 1, "10m", "10Mi")
			in := volInput(ps, ownClaims(ps, 11, "a")...)
			withVolumeLimits(&in, ebs10)
			return in
		}, unschedulable: 1, reason: "attachable-volumes-csi-" + ebsDriver},
		{name: "should filter out instance types which cannot support the pod's volumes", in: func() scheduling.Input {
			// Every type attaches 2 volumes but m.xlarge (dearer than
			// c.large and c.xlarge) attaches 20.
			ps := pods("a", 1, "10m", "10Mi")
			in := volInput(ps, ownClaims(ps, 5, "a")...)
			withVolumeLimits(&in, map[string]map[string]int64{"*": {ebsDriver: 2}, "m.xlarge": {ebsDriver: 20}})
			return in
		}, check: cheapestIs("m.xlarge")},
		{name: "should filter out instance types which cannot support all of the pod's volumes across multiple CSI drivers", in: func() scheduling.Input {
			ps := pods("a", 1, "10m", "10Mi")
			in := volInput(ps, ownClaims(ps, 2, "ebs", "local")...)
			withVolumeLimits(&in, map[string]map[string]int64{"*": {ebsDriver: 10, "local.csi": 1}, "m.xlarge": {ebsDriver: 10, "local.csi": 10}})
			return in
		}, check: cheapestIs("m.xlarge")},
		// Joist's own cases.
		{name: "an existing node's attached claims count against its CSINode limit", in: func() scheduling.Input {
			// n1 already attaches 8 of its 10 (two running pods, four
			// claims each); two more one-claim pods fit, the third does
			// not.
			ps := pods("a", 3, "10m", "10Mi")
			held := pods("old", 2, "10m", "10Mi")
			claims := append(ownClaims(ps, 1, "a"), ownClaims(held, 4, "old")...)
			in := volInput(ps, claims...)
			for _, p := range held {
				p.Status.Phase = corev1.PodRunning
			}
			existing(&in, false, map[string]int64{ebsDriver: 10}, held...)
			return in
		}, check: nodes(1, 2, 10)},
		{name: "a compact bound pod's claims count against its node's limit", in: func() scheduling.Input {
			ps := pods("a", 3, "10m", "10Mi")
			held := pods("old", 2, "10m", "10Mi")
			claims := append(ownClaims(ps, 1, "a"), ownClaims(held, 4, "old")...)
			in := volInput(ps, claims...)
			existing(&in, false, map[string]int64{ebsDriver: 10})
			for _, p := range held {
				bp, _ := scheduling.NewBoundPod(p, nil)
				in.Nodes[0].Bound = append(in.Nodes[0].Bound, bp)
			}
			return in
		}, check: nodes(1, 2, 10)},
		{name: "a node already over its limit still takes pods without volumes", in: func() scheduling.Input {
			ps := pods("a", 2, "10m", "10Mi")
			held := pods("old", 1, "10m", "10Mi")
			in := volInput(ps, ownClaims(held, 12, "old")...)
			existing(&in, false, map[string]int64{ebsDriver: 10}, held...)
			return in
		}, check: nodes(0, 2, 12)},
		{name: "a shared claim is reserved on every node, so one-claim pods leave it room", in: func() scheduling.Input {
			// Ten pods sharing "shared" and 18 pods with a claim each, 10
			// attachments per node: the one-claim pods are packed nine a
			// node (one slot kept for the shared claim), never ten plus
			// the shared one.
			shared := pods("s", 10, "10m", "10Mi", usesClaims("shared"))
			own := pods("a", 18, "10m", "10Mi")
			in := volInput(append(shared, own...), append(ownClaims(own, 1, "a"), "shared")...)
			withVolumeLimits(&in, ebs10)
			return in
		}, check: nodes(2, 0, 10)},
		{name: "pods sharing a claim skip a node whose limit cannot hold it", in: func() scheduling.Input {
			// n1 can attach nothing more: the two pods sharing "shared"
			// go to a new node (found by TestPropertyVolumeLimitsHold:
			// they asked for nothing per pod and the reserve did not fit).
			ps := pods("s", 2, "10m", "10Mi", usesClaims("shared"))
			in := volInput(ps, "shared")
			existing(&in, false, map[string]int64{ebsDriver: 0})
			return in
		}, check: nodes(1, 0, 1)},
		{name: "an in-tree EBS volume counts against the EBS CSI driver's limit", in: func() scheduling.Input {
			ps := pods("a", 3, "10m", "10Mi", usesClaims("intree"))
			in := volInput(ps[:1])
			class := ""
			in.Pods = ps[:1]
			in.PersistentVolumes = []*corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
				PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}}}}
			in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "intree", Namespace: "default",
				Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: "pv"}}}
			withVolumeLimits(&in, map[string]map[string]int64{"*": {ebsDriver: 0}})
			return in
		}, unschedulable: 1, reason: "attachable-volumes-csi-" + ebsDriver},
	})
}

// TestPropertyVolumeLimitsHold: on random clusters (genInput) whose pods
// get claims of their own or shared by their app, and whose instance
// types and nodes get random EBS attachment limits, no node of the plan
// attaches more than its limit (verify.Plan counts the distinct claims per
// node on its own) and every other hard constraint still holds.
func TestPropertyVolumeLimitsHold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		wffc := storagev1.VolumeBindingWaitForFirstConsumer
		class := "ebs"
		in.StorageClasses = []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: ebsDriver, VolumeBindingMode: &wffc}}
		for _, it := range in.InstanceTypes {
			if rapid.Bool().Draw(t, "typeLimited") {
				it.VolumeLimits = map[string]int64{ebsDriver: int64(rapid.IntRange(1, 8).Draw(t, "typeLimit"))}
			}
		}
		claims := map[string]bool{}
		addClaims := func(p *corev1.Pod, names ...string) {
			usesClaims(names...)(p)
			for _, n := range names {
				claims[n] = true
			}
		}
		mode := map[string]int{}
		for _, p := range in.Pods {
			app := p.Labels["app"]
			if _, ok := mode[app]; !ok {
				mode[app] = rapid.IntRange(0, 2).Draw(t, "volumes")
			}
			switch mode[app] {
			case 1:
				for j := 0; j < 1+len(p.Name)%3; j++ {
					addClaims(p, fmt.Sprintf("%s-data-%d", p.Name, j))
				}
			case 2:
				addClaims(p, "shared-"+app)
			}
		}
		for _, n := range in.Nodes {
			if rapid.Bool().Draw(t, "nodeLimited") {
				n.VolumeLimits = map[string]int64{ebsDriver: int64(rapid.IntRange(0, 6).Draw(t, "nodeLimit"))}
			}
			for _, p := range n.Pods {
				if rapid.Bool().Draw(t, "heldClaim") {
					addClaims(p, p.Name+"-data")
				}
			}
		}
		for _, n := range sortedKeys(claims) {
			in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class}})
		}
		plan := scheduling.Solve(in)
		for _, err := range verify.Plan(in, plan) {
			t.Fatal(err)
		}
	})
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
