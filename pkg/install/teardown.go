package install

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/rbac"
	"github.com/joist-dev/joist/pkg/termination"
)

// TeardownResourceType is the CloudFormation type Teardown serves.
const TeardownResourceType = "Custom::JoistTeardown"

// Teardown is the stack's opt-in teardown (Custom::JoistTeardown, -c
// teardown=true): on Delete, before CloudFormation removes the functions,
// it puts the teardown marker (rbac.TeardownName) in the Lease's namespace,
// under which every function reads the specs as withdrawn, so the reaper
// retires every Joist node (drained, PDBs respected, instance terminated)
// and nothing launches; it answers once no Joist node (termination.Owned:
// its instance tagged for the cluster) and no running Joist instance is
// left. Create and
// Update remove a marker a failed teardown left, so a stack deployed again
// serves its pools again. Properties: Cluster, LeaseNamespace.
type Teardown struct {
	Kube kubernetes.Interface
	// Instances lists the cluster's tagged instances in every state
	// (*launch.Launcher): which nodes are Joist's, and what still runs.
	Instances interface {
		Tagged(ctx context.Context) ([]launch.Instance, error)
	}
	Log *slog.Logger
	// Poll is how often the nodes are looked at (default 10 s).
	Poll time.Duration
	// Margin is the time kept before the invocation's deadline to answer
	// CloudFormation (default 30 s): a function that times out answers
	// nothing, and the stack's delete would hang for an hour.
	Margin time.Duration
}

// Handle answers one request.
func (t *Teardown) Handle(ctx context.Context, ev cfn.Event) (string, map[string]any, error) {
	cluster, _ := ev.ResourceProperties["Cluster"].(string)
	ns, _ := ev.ResourceProperties["LeaseNamespace"].(string)
	if ns == "" {
		ns = rbac.DefaultLeaseNamespace
	}
	id := ev.PhysicalResourceID
	if cluster == "" {
		if ev.RequestType == cfn.RequestDelete {
			return id, nil, nil // a create that failed on its properties made nothing
		}
		return id, nil, errors.New("teardown: property Cluster is empty")
	}
	id = "joist-teardown-" + cluster
	log := t.Log.With("requestType", string(ev.RequestType), "physicalId", id)
	name := rbac.TeardownName(cluster)
	cms := t.Kube.CoreV1().ConfigMaps(ns)
	switch ev.RequestType {
	case cfn.RequestCreate, cfn.RequestUpdate:
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return id, nil, fmt.Errorf("teardown: remove marker %s/%s: %w", ns, name, err)
		}
		return id, nil, nil
	case cfn.RequestDelete:
		marker := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels("teardown")},
			Data:       map[string]string{"reason": "the stack joist-" + cluster + " is being deleted with teardown on: every Joist node is retired"},
		}
		if _, err := cms.Create(ctx, marker, metav1.CreateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return id, nil, fmt.Errorf("teardown: create marker %s/%s: %w", ns, name, err)
		}
		log.Info("teardown marker set; waiting for every Joist node to be retired", "marker", ns+"/"+name)
		left, err := t.wait(ctx, cluster)
		if err != nil {
			return id, nil, err
		}
		if len(left) > 0 {
			return id, nil, fmt.Errorf("teardown: %d Joist nodes or instances still retiring (%s); the reaper goes on with them: delete the stack again to wait longer, or find what blocks their drain (a PDB, a do-not-disrupt pod)", len(left), strings.Join(left, ", "))
		}
		log.Info("teardown done: no Joist node left")
		return id, nil, nil
	}
	return id, nil, fmt.Errorf("teardown: unknown request type %q", ev.RequestType)
}

// wait polls until no Joist node and no running Joist instance is left,
// or until the margin before ctx's deadline; it returns what is still
// there.
func (t *Teardown) wait(ctx context.Context, cluster string) ([]string, error) {
	poll, margin := t.Poll, t.Margin
	if poll <= 0 {
		poll = 10 * time.Second
	}
	if margin <= 0 {
		margin = 30 * time.Second
	}
	wctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, dl.Add(-margin))
		defer cancel()
	}
	left := []string{"unknown (no look at the nodes and instances finished in time)"}
	last := ""
	err := wait.PollUntilContextCancel(wctx, poll, true, func(ctx context.Context) (bool, error) {
		// A look that fails leaves what is left unknown, and says so if
		// the deadline comes before a look succeeds.
		tagged, err := t.Instances.Tagged(ctx)
		if ctx.Err() != nil {
			return false, nil // the deadline cut this look short: the last one stands
		}
		if err != nil {
			t.Log.Warn("teardown: list the cluster's instances", "error", err.Error())
			left = []string{"unknown (list the cluster's instances: " + err.Error() + ")"}
			return false, nil
		}
		nodes, err := t.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if ctx.Err() != nil {
			return false, nil
		}
		if err != nil {
			t.Log.Warn("teardown: list nodes", "error", err.Error())
			left = []string{"unknown (list nodes: " + err.Error() + ")"}
			return false, nil
		}
		owned := termination.Owned(cluster, tagged)
		left = nil
		onNode := map[string]bool{}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			onNode[pods.InstanceID(n.Spec.ProviderID)] = true
			if owned.Node(n) {
				left = append(left, "node "+n.Name)
			}
		}
		for _, i := range tagged {
			if i.Live() && !onNode[i.ID] && i.Tags[launch.TagCluster] == cluster {
				left = append(left, "instance "+i.ID)
			}
		}
		sort.Strings(left)
		if now := strings.Join(left, ", "); now != last {
			t.Log.Info("teardown: waiting for Joist's nodes and instances", "left", now)
			last = now
		}
		return len(left) == 0, nil
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("teardown: %w", ctx.Err())
	}
	return left, nil
}
