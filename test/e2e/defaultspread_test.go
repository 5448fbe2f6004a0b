package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/test/testenv"
)

// defaultSpreadSpecs is a v1 NodePool in two zones on t3.large.
const defaultSpreadSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: general}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.large]}
      - {key: topology.kubernetes.io/zone, operator: In, values: [ap-northeast-2a, ap-northeast-2c]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: general}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-spread
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
`

// TestE2E_DefaultSpreadConstraints: with a scheduler config whose default
// constraint spreads over zones (JOIST_SCHEDULER_CONFIG, maxSkew 1), the
// two pods of each of a ReplicaSet, a StatefulSet and a
// ReplicationController — small enough to share one node — land in both
// zones: each pod's selector is deduced from its controller, which the
// provisioner reads as its own identity with the RBAC the installer
// grants for it (and nothing is refused).
func TestE2E_DefaultSpreadConstraints(t *testing.T) {
	env := map[string]string{"JOIST_SCHEDULER_CONFIG": "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]}"}
	for k, v := range al2023Env {
		env[k] = v
	}
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "spread", Namespace: "spread", Specs: []byte(defaultSpreadSpecs), ReadyDelay: 300 * time.Millisecond, ExtraEnv: env,
	})
	ctx := context.Background()
	ns, c := g.Opts.Namespace, g.Kube.Client
	template := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	zero := int32(0)
	// The controllers exist (no controller manager runs here, so they
	// make no pods: the test makes them, as theirs).
	rs, err := c.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: template("web")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := c.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: template("db")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	legacy := template("legacy")
	rc, err := c.CoreV1().ReplicationControllers(ns).Create(ctx, &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "legacy"},
		Spec: corev1.ReplicationControllerSpec{Replicas: &zero, Selector: map[string]string{"app": "legacy"}, Template: &legacy}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	owned := func(app, apiVersion, kind, name string, uid types.UID) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range 2 {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, i), Labels: map[string]string{"app": app},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes}}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
			out = append(out, p)
		}
		return out
	}
	var all []*corev1.Pod
	all = append(all, owned("web", "apps/v1", "ReplicaSet", rs.Name, rs.UID)...)
	all = append(all, owned("db", "apps/v1", "StatefulSet", ss.Name, ss.UID)...)
	all = append(all, owned("legacy", "v1", "ReplicationController", rc.Name, rc.UID)...)
	pending := createPending(t, g, all)
	nodes := allBound(t, g, pending, 120*time.Second)
	for _, app := range []string{"web", "db", "legacy"} {
		z0, z1 := nodes[app+"-0"].Labels[corev1.LabelTopologyZone], nodes[app+"-1"].Labels[corev1.LabelTopologyZone]
		if z0 == "" || z0 == z1 {
			t.Errorf("%s's pods in zones %q and %q, want one in each", app, z0, z1)
		}
	}
}
