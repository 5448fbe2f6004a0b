package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/test/testenv"
)

// TestE2E_NodeClassCELSizesAndBootsEachType: with Karpenter's NodeClassCEL
// gate on (JOIST_FEATURE_GATES), a node class whose maxPods is a CEL
// expression ("vcpus * 2": 4 pods on an m5.large, where its ENIs would
// give 29) is planned, launched and bound with it: six small pods need two
// nodes, each registered (from the user data the launch wrote) with room
// for 4 pods.
func TestE2E_NodeClassCELSizesAndBootsEachType(t *testing.T) {
	specs := strings.Replace(plainPool("cel-cluster"), "      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n",
		"      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}\n", 1) +
		"  kubelet: {maxPods: \"vcpus * 2\"}\n"
	env := map[string]string{"JOIST_FEATURE_GATES": "NodeClassCEL=true"}
	for k, v := range al2023Env {
		env[k] = v
	}
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "cel-cluster", Namespace: "cel", Specs: []byte(specs), ReadyDelay: 300 * time.Millisecond, ExtraEnv: env,
	})
	var pods []*corev1.Pod
	for i := range 6 {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("small-%d", i), Namespace: "cel"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
		})
	}
	pending := createPending(t, g, pods)
	nodes := allBound(t, g, pending, 120*time.Second)
	perNode := map[string]int{}
	for _, n := range nodes {
		perNode[n.Name]++
		if got := n.Status.Allocatable.Pods().Value(); got != 4 || n.Labels[corev1.LabelInstanceTypeStable] != "m5.large" {
			t.Errorf("node %s (%s) registered with room for %d pods, want an m5.large with 4", n.Name, n.Labels[corev1.LabelInstanceTypeStable], got)
		}
	}
	for name, n := range perNode {
		if n > 4 {
			t.Errorf("%d pods on node %s, want at most 4", n, name)
		}
	}
	if len(perNode) != 2 {
		t.Errorf("pods on %d nodes (%v), want 2", len(perNode), perNode)
	}
}
