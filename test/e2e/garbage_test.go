package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/pkg/iampolicy"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/termination"
	"github.com/joist-dev/joist/test/testenv"
)

// TestE2E_LeakedInstanceCollected: a Joist node deleted without draining
// (its termination finalizer removed by hand, as an impatient operator
// does) leaves its instance running with no node. Once the instance is
// past the registration window, the reaper's garbage collection
// terminates it; nothing drained it (no eviction), and only the reaper
// was authorized to end it.
func TestE2E_LeakedInstanceCollected(t *testing.T) {
	const window = 20 * time.Second // JOIST_REGISTRATION_TIMEOUT (production: 15 min)
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "leaked", Namespace: "leaked", Specs: seed(t), ReadyDelay: 300 * time.Millisecond, ReaperEvery: 2 * time.Second,
		ExtraEnv: map[string]string{"JOIST_REGISTRATION_TIMEOUT": window.String()},
	})
	ctx := context.Background()
	node, ps := seedNodeWithFinalizer(t, g)
	id := pods.InstanceID(node.Spec.ProviderID)

	// Remove the finalizer and delete the node in one go: the delete is
	// conditional on the version without the finalizer, so a reaper pass
	// that put it back in between (EnsureFinalizer) makes us try again
	// rather than start a drain.
	eventually(t, 30*time.Second, "the node deleted without its finalizer", func() (bool, error) {
		n, err := g.Kube.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var keep []string
		for _, f := range n.Finalizers {
			if f != termination.Finalizer {
				keep = append(keep, f)
			}
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": keep, "resourceVersion": n.ResourceVersion}})
		n, err = g.Kube.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return false, nil // changed under us: again
		}
		rv := n.ResourceVersion
		err = g.Kube.Client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		return err == nil || apierrors.IsNotFound(err), nil
	})
	eventually(t, 10*time.Second, "the node gone", func() (bool, error) { return nodeGone(t, g, node.Name), nil })
	if st := instanceState(g, id); st != "running" {
		t.Fatalf("instance %s is %q right after its node was deleted, want running (leaked)", id, st)
	}
	gone := time.Now()
	inst, _ := g.EC2.Instance(id)

	eventually(t, window+30*time.Second, "the leaked instance terminated", func() (bool, error) {
		return terminated(instanceState(g, id)), nil
	})
	if age := time.Since(inst.LaunchTime); age < window {
		t.Errorf("leaked instance terminated %s after its launch, inside the registration window (%s)", age, window)
	}
	t.Logf("leaked instance terminated %s after its node was deleted (%s after launch; window %s)",
		time.Since(gone).Round(100*time.Millisecond), time.Since(inst.LaunchTime).Round(100*time.Millisecond), window)

	terminatedBy := map[string]bool{}
	for _, gr := range testenv.Grants() {
		if gr.Action == "ec2:TerminateInstances" && strings.HasSuffix(gr.Resource, "/"+id) {
			terminatedBy[gr.Principal] = true
		}
	}
	if !terminatedBy[iampolicy.Reaper] || len(terminatedBy) != 1 {
		t.Errorf("terminate of %s authorized for %v, want the reaper alone", id, terminatedBy)
	}
	evs, err := g.Kube.Client.CoreV1().Events("leaked").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + termination.ReasonEvicted})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 0 {
		t.Errorf("%d Evicted events: the leaked instance was drained, not collected", len(evs.Items))
	}
	// Its pods were bound to the deleted node; a real cluster's pod
	// garbage collector deletes them, envtest has none.
	deletePods(t, g, ps)
}
