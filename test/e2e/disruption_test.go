package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/aws/aws-lambda-go/cfn"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/pkg/iampolicy"
	"github.com/joist-dev/joist/pkg/install"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/rbac"
	"github.com/joist-dev/joist/pkg/specs"
	"github.com/joist-dev/joist/pkg/specstore"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

// instanceState is the EC2 simulator's state of an instance ("" if unknown).
func instanceState(g *testenv.Ground, id string) string {
	for _, i := range g.EC2.Instances() {
		if i.ID == id {
			return i.State
		}
	}
	return ""
}

func terminated(state string) bool { return state == "shutting-down" || state == "terminated" }

func nodeGone(t testing.TB, g *testenv.Ground, name string) bool {
	_, err := g.Kube.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return apierrors.IsNotFound(err)
}

// deletePods deletes pods as a scaled-down ReplicaSet does.
func deletePods(t *testing.T, g *testenv.Ground, ps []*corev1.Pod) {
	t.Helper()
	for _, p := range ps {
		if err := g.Kube.Client.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

// TestE2E_EmptyNodeRetiredAfterTTL is the guide's second half: the seed's
// nginx Deployment scaled to zero empties its service node, and about
// ttlSecondsAfterEmpty (30 s) later the reaper retires it: the instance is
// terminated and the Node is gone. Never before the TTL.
func TestE2E_EmptyNodeRetiredAfterTTL(t *testing.T) {
	const every = 20 * time.Second // the reaper's schedule here (production: 1 min)
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "ttl-empty", Namespace: "ttl-empty", Specs: seed(t), ReadyDelay: 300 * time.Millisecond, ReaperEvery: every,
	})
	ctx := context.Background()
	ps := createPending(t, g, deploymentPods(t, seed(t)))
	nodeName := waitBound(t, g, ps, 90*time.Second)[ps[0].Name]
	node, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := pods.InstanceID(node.Spec.ProviderID)

	// Scale to zero.
	deletePods(t, g, ps)
	eventually(t, 30*time.Second, "the nginx pods gone", func() (bool, error) {
		list, err := g.Kube.Client.CoreV1().Pods("ttl-empty").List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, err
	})
	emptied := time.Now()

	var retired time.Duration
	eventually(t, 30*time.Second+every+60*time.Second, "the empty node's instance terminated", func() (bool, error) {
		if terminated(instanceState(g, id)) {
			retired = time.Since(emptied)
			return true, nil
		}
		return false, nil
	})
	if retired < 30*time.Second {
		t.Fatalf("instance terminated %s after the node emptied: before ttlSecondsAfterEmpty (30 s)", retired)
	}
	eventually(t, 15*time.Second, "the node deleted", func() (bool, error) { return nodeGone(t, g, nodeName), nil })
	t.Logf("empty node → instance terminated in %s (ttl 30 s, reaper every %s)", retired.Round(100*time.Millisecond), every)
	evs, err := g.Kube.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + nodeName + ",reason=" + termination.ReasonTerminating})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) == 0 {
		t.Errorf("no Terminating event on node %s", nodeName)
	}
}

// TestE2E_KubectlDeleteNodeDrainsAndTerminates: a Joist node carries the
// karpenter.sh/termination finalizer, so `kubectl delete node` evicts its
// pods through the Eviction API, then terminates its instance, then lets
// the Node go, as with Karpenter.
func TestE2E_KubectlDeleteNodeDrainsAndTerminates(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "kubectl-delete", Namespace: "kubectl-delete", Specs: seed(t), ReadyDelay: 300 * time.Millisecond, ReaperEvery: 10 * time.Second,
	})
	ctx := context.Background()
	node, ps := seedNodeWithFinalizer(t, g)
	nodeName := node.Name
	id := pods.InstanceID(node.Spec.ProviderID)

	// kubectl delete node
	if err := g.Kube.Client.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// The instance must outlive the pods: watch both until it ends.
	podsGoneFirst := false
	eventually(t, 60*time.Second, "the instance terminated", func() (bool, error) {
		list, err := g.Kube.Client.CoreV1().Pods("kubectl-delete").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if terminated(instanceState(g, id)) {
			return true, nil
		}
		podsGoneFirst = len(list.Items) == 0
		return false, nil
	})
	if !podsGoneFirst {
		t.Errorf("instance %s terminated while pods were still on its node", id)
	}
	eventually(t, 15*time.Second, "the node deleted", func() (bool, error) { return nodeGone(t, g, nodeName), nil })
	t.Logf("kubectl delete node → drained and instance terminated in %s", time.Since(start).Round(100*time.Millisecond))
	evs, err := g.Kube.Client.CoreV1().Events("kubectl-delete").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + termination.ReasonEvicted})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != len(ps) {
		t.Errorf("%d Evicted events, want one per pod (%d)", len(evs.Items), len(ps))
	}
}

// TestE2E_NodeWithoutInstanceDeleted: an instance terminated outside Joist
// leaves a Node held by the termination finalizer (the cloud's node
// lifecycle deletes it); Joist releases it without draining, so it does
// not linger.
func TestE2E_NodeWithoutInstanceDeleted(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "no-instance", Namespace: "no-instance", Specs: seed(t), ReadyDelay: 300 * time.Millisecond, ReaperEvery: 10 * time.Second,
	})
	node, _ := seedNodeWithFinalizer(t, g)
	nodeName := node.Name
	if err := g.EC2.TerminateExternally(pods.InstanceID(node.Spec.ProviderID)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	eventually(t, 20*time.Second, "the node deleted", func() (bool, error) { return nodeGone(t, g, nodeName), nil })
	t.Logf("node of an instance terminated outside Joist deleted in %s", time.Since(start).Round(100*time.Millisecond))
}

// seedNodeWithFinalizer scales the seed's Deployment up and returns its
// node, once it carries the termination finalizer, and its pods.
func seedNodeWithFinalizer(t *testing.T, g *testenv.Ground) (*corev1.Node, []*corev1.Pod) {
	t.Helper()
	ps := createPending(t, g, deploymentPods(t, seed(t)))
	nodeName := waitBound(t, g, ps, 90*time.Second)[ps[0].Name]
	var node *corev1.Node
	eventually(t, 30*time.Second, "the node carries the termination finalizer", func() (bool, error) {
		n, err := g.Kube.Client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		node = n
		return err == nil && slices.Contains(n.Finalizers, termination.Finalizer), err
	})
	return node, ps
}

// TestE2E_DeletedPoolsNodesRetired: deleting a pool's spec takes its nodes
// along, as deleting a Karpenter NodePool deletes its NodeClaims: the
// reaper drains the service node (its pods evicted through the Eviction
// API), terminates its instance and lets the Node go, and nothing is
// launched in its place. The default pool, still declared, keeps its node.
func TestE2E_DeletedPoolsNodesRetired(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "pool-deleted", Namespace: "pool-deleted", Specs: seed(t), ReadyDelay: 300 * time.Millisecond, ReaperEvery: 10 * time.Second,
	})
	ctx := context.Background()
	node, ps := seedNodeWithFinalizer(t, g)
	id := pods.InstanceID(node.Spec.ProviderID)
	if pool := node.Labels["karpenter.sh/provisioner-name"]; pool != "service" {
		t.Fatalf("the seed's nginx node is of pool %q, want service", pool)
	}
	launched := len(g.EC2.Instances())

	name := specstore.ParameterName(g.Opts.Cluster, specs.KindProvisioner, "service")
	if _, err := ssm.NewFromConfig(g.AWS).DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: &name}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	eventually(t, 90*time.Second, "the deleted pool's instance terminated", func() (bool, error) {
		return terminated(instanceState(g, id)), nil
	})
	eventually(t, 15*time.Second, "the node deleted", func() (bool, error) { return nodeGone(t, g, node.Name), nil })
	t.Logf("pool deleted → node drained and instance terminated in %s", time.Since(start).Round(100*time.Millisecond))
	evs, err := g.Kube.Client.CoreV1().Events("pool-deleted").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + termination.ReasonEvicted})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != len(ps) {
		t.Errorf("%d Evicted events, want one per pod (%d)", len(evs.Items), len(ps))
	}
	if n := len(g.EC2.Instances()); n != launched {
		t.Errorf("%d instances after the pool's deletion, want the %d there were (nothing launched in its place)", n, launched)
	}
}

// TestE2E_TeardownRetiresEveryNode: the stack's opt-in teardown
// (Custom::JoistTeardown's delete, as the installer runs it) withdraws every
// pool: the reaper drains the Joist node and terminates its instance, a pod
// that goes pending meanwhile is told no pool serves it and nothing is
// launched for it, and the delete answers once no Joist node is left.
// Deploying again serves the pools again.
func TestE2E_TeardownRetiresEveryNode(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "teardown", Namespace: "teardown", Specs: seed(t), ReadyDelay: 300 * time.Millisecond, ReaperEvery: 10 * time.Second,
	})
	node, _ := seedNodeWithFinalizer(t, g)
	id := pods.InstanceID(node.Spec.ProviderID)
	launched := len(g.EC2.Instances())

	// The installer's own EC2 rights (iampolicy.Installer) list the instances.
	asInstaller := &launch.Launcher{Cluster: launch.Cluster{Name: g.Opts.Cluster},
		EC2: ec2.NewFromConfig(g.As(iampolicy.Installer), func(o *ec2.Options) { o.BaseEndpoint = aws.String(g.EC2URL) })}
	td := &install.Teardown{Kube: g.Kube.Client, Instances: asInstaller, Log: g.Log, Poll: time.Second}
	props := map[string]any{"ServiceToken": "arn:aws:lambda:x", "Cluster": g.Opts.Cluster}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, _, err := td.Handle(ctx, cfn.Event{RequestType: cfn.RequestDelete, ResourceType: install.TeardownResourceType, ResourceProperties: props})
		done <- err
	}()
	eventually(t, 30*time.Second, "the teardown marker", func() (bool, error) {
		_, err := g.Kube.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, rbac.TeardownName(g.Opts.Cluster), metav1.GetOptions{})
		return err == nil, client.IgnoreNotFound(err)
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("teardown: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("teardown did not answer")
	}
	t.Logf("teardown answered in %s", time.Since(start).Round(100*time.Millisecond))
	if !terminated(instanceState(g, id)) || !nodeGone(t, g, node.Name) {
		t.Errorf("after teardown: instance %s %s, node %s gone %v", id, instanceState(g, id), node.Name, nodeGone(t, g, node.Name))
	}
	// Until the stack is deployed again, nothing is launched.
	late := deploymentPods(t, seed(t))[0]
	late.Name = "after-teardown"
	late.GenerateName = ""
	created := createPending(t, g, []*corev1.Pod{late})[0]
	eventually(t, 60*time.Second, "the late pod told no pool serves it", func() (bool, error) {
		evs, err := g.Kube.Client.CoreV1().Events("teardown").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + created.Name + ",reason=" + kube.ReasonFailedProvisioning})
		return err == nil && len(evs.Items) > 0, err
	})
	if n := len(g.EC2.Instances()); n != launched {
		t.Errorf("%d instances after teardown, want the %d there were: something was launched", n, launched)
	}
	if _, _, err := td.Handle(ctx, cfn.Event{RequestType: cfn.RequestCreate, ResourceType: install.TeardownResourceType, ResourceProperties: props}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "the late pod served once deployed again", func() (bool, error) {
		p, err := g.Kube.Client.CoreV1().Pods("teardown").Get(ctx, created.Name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", err
	})
}
