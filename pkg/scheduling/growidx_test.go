package scheduling_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/internal/workloadgen"
)

// planShape is a plan as the packer decides it: each new node's pool,
// type and zone with the names of its pods, in a canonical order.
func planShape(p scheduling.Plan) string {
	var lines []string
	for _, n := range p.NewNodes {
		var pods []string
		for _, pd := range n.Pods {
			pods = append(pods, pd.Namespace+"/"+pd.Name)
		}
		sort.Strings(pods)
		lines = append(lines, fmt.Sprintf("%s %s %s: %s", n.Pool, n.Cheapest.InstanceType, n.Cheapest.Zone, strings.Join(pods, ",")))
	}
	sort.Strings(lines)
	return fmt.Sprintf("%d unschedulable\n%s", len(p.Unschedulable), strings.Join(lines, "\n"))
}

// TestGrowIndexSamePlans: the growth index only saves the packer from
// looking at nodes that cannot win a growth step, so every plan is the
// one the scan over every open node makes. Every generated shape, at
// sizes where steps tie between many equal nodes.
func TestGrowIndexSamePlans(t *testing.T) {
	samePlans(t, "the growth index", scheduling.SetGrowIndex)
}

// TestTopoGrowIndexSamePlans: the growth index serves classes with
// topology too (spreads, pod affinity and anti-affinity), asking the nodes
// fillPaid left with room and each group's first node topology accepts,
// so every plan is the one the scan over every open node makes.
func TestTopoGrowIndexSamePlans(t *testing.T) {
	samePlans(t, "the growth index for classes with topology", scheduling.SetTopoGrowIndex)
}

// TestOwnTypesSamePlans: a node cut by labels (a class's node selector,
// required or preferred node affinity on type labels) is searched over
// its own types instead of every type of its pool, and every plan is the
// one the walk over every type makes. The generated shapes select no
// type labels, so each Deployment of many-shapes here gets one.
func TestOwnTypesSamePlans(t *testing.T) {
	defer scheduling.SetOwnTypes(true)
	for _, n := range []int{300, 1200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			in := withTypeSelectors(generated(t, "many-shapes", n, 2))
			scheduling.SetOwnTypes(false)
			want := solve(t, in)
			scheduling.SetOwnTypes(true)
			got := solve(t, in)
			if a, b := planShape(got), planShape(want); a != b {
				t.Errorf("plan walking the nodes' own types differs from walking every type:\n%s\n--- every type:\n%s", a, b)
			}
			if len(got.NewNodes) == 0 {
				t.Fatal("no new nodes: the case does not exercise growth")
			}
		})
	}
}

// TestFillCoversSamePlans: the balanced fill leaves a level out of the
// running while a bigger level before it is in (filldom.go), and every
// plan is the one scoring every level makes.
func TestFillCoversSamePlans(t *testing.T) {
	samePlans(t, "covered levels left out of the balanced fills", scheduling.SetFillCovers)
}

// TestTwinsAgreeSamePlans: for a class whose topology is keyed by zone
// or capacity type only, a twin group whose first node topology refuses
// is refused whole, and every plan is the one walking each group for a
// node topology accepts makes.
func TestTwinsAgreeSamePlans(t *testing.T) {
	samePlans(t, "a twin group answered by its first node", scheduling.SetTwinsAgree)
}

// TestTwinsAgreeRefusalsHold: every twin group refused by its first node
// for such a class is refused by each of its nodes (a walk of the group
// finds none topology accepts), on the shapes with topology at sizes
// where the groups are long (mix at 10,000 pods walked 3.7 million nodes
// for them), and on twins that hostname anti-affinity tells apart (one
// holds a web pod, the other not), which must not be taken for a class
// that reads hostnames.
func TestTwinsAgreeRefusalsHold(t *testing.T) {
	c := tallyChecks(scheduling.SetTwinsAgreeCheck)
	defer scheduling.SetTwinsAgreeCheck(nil)
	for _, w := range []struct {
		shape string
		n     int
	}{{"mix", 10000}, {"mix", 2000}, {"pod-affinity", 2000}, {"zone-spread", 2000}, {"zonal-volumes", 2000}} {
		scheduling.Solve(generated(t, w.shape, w.n, 1))
	}
	web := func(p *corev1.Pod) { p.Labels["app"] = "web" }
	solve(t, input(slices.Concat(
		pods("a", 1, "1500m", "1Gi", web),
		pods("b", 1, "1500m", "1Gi", antiAffinity(corev1.LabelHostname, "web")),
		pods("c", 1, "1500m", "1Gi", antiAffinity(corev1.LabelHostname, "web")),
		pods("z", 30, "250m", "256Mi"))))
	if c.asked == 0 || c.wrong > 0 {
		t.Fatalf("%d of %d twin groups refused by their first node have a node topology accepts", c.wrong, c.asked)
	}
	t.Logf("%d twin groups refused by their first node, each by all its nodes", c.asked)
}

// TestTopoGrowIndexSamePlansHandmade: the two cases of classes with
// topology the generated shapes do not reach, each against the full scan.
func TestTopoGrowIndexSamePlansHandmade(t *testing.T) {
	web := func(p *corev1.Pod) { p.Labels["app"] = "web" }
	cases := []struct {
		name string
		pods [][]*corev1.Pod
		// zoneA prices offerings in test-1a at this share of the others
		// (0: as they are).
		zoneA float64
	}{{
		// a's node and b's are twins (same type and resources), a's
		// first; c may not join web pods, so a's node is refused and
		// b's must stand for the group.
		name: "group's first node refused by anti-affinity, its twin not",
		pods: [][]*corev1.Pod{
			pods("a", 1, "1500m", "1Gi", web),
			pods("b", 1, "1500m", "1Gi", antiAffinity(corev1.LabelHostname, "web")),
			pods("c", 1, "1500m", "1Gi", antiAffinity(corev1.LabelHostname, "web")),
			pods("z", 30, "250m", "256Mi"),
		},
	}, {
		// q's node (c.large only: no upgrade, so not in the index's
		// heap) is open in every zone at test-1a's price; the spread of
		// s picks test-1b (p's spread pinned p to test-1a), dearer, so
		// fillPaid leaves the node's room, and the scan then grows it to
		// its own type at no added price (pinned to test-1b).
		name: "paid room left by a zone pin that raises the price",
		pods: [][]*corev1.Pod{
			pods("p", 1, "1800m", "1Gi", spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "p")),
			pods("q", 1, "750m", "1Gi", antiAffinity(corev1.LabelHostname, "p"), nodeSelector(corev1.LabelInstanceTypeStable, "c.large")),
			pods("s", 1, "500m", "512Mi", spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "s")),
			pods("z", 30, "100m", "128Mi"),
		},
		zoneA: 0.8,
	}}
	defer scheduling.SetTopoGrowIndex(true)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var all []*corev1.Pod
			for _, ps := range c.pods {
				all = append(all, ps...)
			}
			in := input(all)
			if c.zoneA > 0 {
				for _, it := range in.InstanceTypes {
					for i := range it.Offerings {
						if it.Offerings[i].Zone == "test-1a" {
							it.Offerings[i].Price *= c.zoneA
						}
					}
				}
			}
			scheduling.SetTopoGrowIndex(false)
			want := solve(t, in)
			scheduling.SetTopoGrowIndex(true)
			got := solve(t, in)
			if a, b := planShape(got), planShape(want); a != b {
				t.Errorf("plan with the index differs from the full scan's:\n%s\n--- full scan:\n%s", a, b)
			}
		})
	}
}

// TestSkipPaidSamePlans: placeAt does not look for paid room after a
// growth step for classes without topology (packing.go); every plan is
// the one looking after every step makes.
func TestSkipPaidSamePlans(t *testing.T) {
	samePlans(t, "paid room skipped after growth", func(on bool) { scheduling.SetPaidScan(!on) })
}

// TestPaidIndexSamePlans: fillPaid's list of nodes with paid room
// (paidroom.go) holds every node that can take a pending pod, so every
// plan is the one the scan over every open node makes.
func TestPaidIndexSamePlans(t *testing.T) {
	samePlans(t, "the paid room list", scheduling.SetPaidIndex)
}

// TestDrainIndexSamePlans: the drains' tree of listed nodes' free CPU
// (roomy.go) skips only nodes the CPU check would reject, so every plan is
// the one the walk over every listed node makes.
func TestDrainIndexSamePlans(t *testing.T) {
	samePlans(t, "the drain index", scheduling.SetDrainIndex)
}

// TestDrainExtIndexSamePlans: a drain of pods requesting an extended
// resource walks the nodes with room in it (roomy.go) instead of those
// with CPU room, which skips only nodes allowance would refuse, so every
// plan is the one the walk by CPU makes.
func TestDrainExtIndexSamePlans(t *testing.T) {
	samePlans(t, "the drain index by extended resource", scheduling.SetDrainExtIndex)
}

// TestDrainWalkByGPUMissesNoTarget: a drain of a GPU pod walks the
// nodes with a GPU free (roomy.go); every node a GPU pod may move to is
// on that walk, and so is every node a CPU pod may move to on its walk by
// CPU. The existing nodes have GPUs and CPU free in every combination
// (the generated workloads' drains never find a GPU free, so they do not
// tell).
func TestDrainWalkByGPUMissesNoTarget(t *testing.T) {
	gpuNode := func(name, cpu string, gpus int64, held ...*corev1.Pod) *scheduling.Node {
		n := existingNode(name, "test-1a", held...)
		n.Capacity, n.Allocatable = n.Capacity.DeepCopy(), n.Allocatable.DeepCopy()
		n.Capacity["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
		n.Allocatable["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
		n.Allocatable[corev1.ResourceCPU] = resource.MustParse(cpu)
		return n
	}
	in := input(append(append(pods("g", 3, "1", "1Gi", request("nvidia.com/gpu", "1")),
		pods("c", 2, "500m", "512Mi")...), pods("h", 1, "2", "1Gi", request("nvidia.com/gpu", "2"))...))
	in.Nodes = []*scheduling.Node{
		gpuNode("two-gpus", "16", 2),   // one GPU pod lands: one GPU free, CPU free
		gpuNode("no-gpu", "16", 0),     // CPU free, no GPU
		gpuNode("no-cpu", "1", 3),      // GPUs free, no CPU for a GPU pod
		gpuNode("three-gpus", "16", 3), // GPUs and CPU free after packing
		gpuNode("one-gpu", "16", 1, pods("held", 1, "1", "1Gi", request("nvidia.com/gpu", "1"))...), // full
	}
	walked, listed := scheduling.DrainTargets(in)
	found := 0
	for i := range walked {
		if !slices.Equal(walked[i], listed[i]) {
			t.Errorf("level %d: the walk finds targets %v, the list %v", i, walked[i], listed[i])
		}
		found += len(listed[i])
	}
	if found == 0 {
		t.Fatal("no drain target at all: the case tests nothing")
	}
}

// samePlans solves every generated shape with a shortcut of the packer
// off (set(false)) and on, and wants the same plans.
func samePlans(t *testing.T, what string, set func(on bool)) {
	bySwitch(t, set, func(t *testing.T, got, want scheduling.Plan) {
		if a, b := planShape(got), planShape(want); a != b {
			t.Errorf("plan with %s differs from the full scan's:\n%s\n--- full scan:\n%s", what, a, b)
		}
		if len(got.NewNodes) == 0 {
			t.Fatal("no new nodes: the case does not exercise growth")
		}
	})
}

// bySwitch solves every generated shape (seed 3, at a few sizes) with a
// switch off (set(false)) and on, and hands both plans to compare.
func bySwitch(t *testing.T, set func(on bool), compare func(t *testing.T, got, want scheduling.Plan)) {
	sizes := []int{60, 400, 1500}
	if testing.Short() {
		sizes = []int{400}
	}
	defer set(true)
	for _, sh := range workloadgen.Shapes {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(t *testing.T) {
				in, err := workloadgen.Input(sh, n, 3)
				if err != nil {
					t.Fatal(err)
				}
				set(false)
				want := scheduling.Solve(in)
				set(true)
				compare(t, scheduling.Solve(in), want)
			})
		}
	}
}

// TestScanTwinsSamePlans: where bestGrowth asks every open node (the
// local search's rebuilds), a node whose twin was asked before in the
// same scan takes the twin's answer, and every plan is the one asking
// each node makes.
func TestScanTwinsSamePlans(t *testing.T) {
	samePlans(t, "answers by node shape in the scan", scheduling.SetScanTwins)
}

// TestScanTwinsSkipShortScans: a scan of a few nodes numbers no node
// shape (numbering copies the shape, and a twin spares one node's
// search: many-shapes at 250 pods, 4 to 9 nodes, numbered 96 shapes a
// solve for no twin), while a plan of many nodes still uses the table
// (few-big at 500 pods: 36 nodes; mix at 250 pods, whose 37 nodes had
// thousands of twins, no longer scans them: its long scans were the
// GPU nodes' rebuilds, which pendingLost now cuts before they pack).
func TestScanTwinsSkipShortScans(t *testing.T) {
	numbered := 0
	scheduling.SetTwinNumbered(func() { numbered++ })
	defer scheduling.SetTwinNumbered(nil)
	scheduling.Solve(generated(t, "many-shapes", 250, 1))
	if numbered != 0 {
		t.Errorf("many-shapes/250: %d node shapes numbered, want none", numbered)
	}
	numbered = 0
	scheduling.Solve(generated(t, "few-big", 500, 1))
	if numbered == 0 {
		t.Error("few-big/500: no node shape numbered: the table is off on long scans too")
	}
}

// TestNewTypeMemoSamePlans: a new node's type for a level in a pool,
// remembered on the level where only the level, the pool and the price
// cap decide it, gives the plans the walk over the types gives.
func TestNewTypeMemoSamePlans(t *testing.T) {
	samePlans(t, "new-node types remembered", scheduling.SetNewTypeMemo)
}
