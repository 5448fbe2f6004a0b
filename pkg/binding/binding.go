// Package binding binds the pods Joist planned onto a new instance once
// that instance's node is Ready. It reconciles from the API server: the
// node's state and the pods' plan annotations, never the event that woke
// it.
package binding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/events"
	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/metrics"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/termination"
)

// Binder binds planned pods to their nodes.
type Binder struct {
	Kube *kube.Client
	Log  *slog.Logger
	// Metrics, when set, counts the pods bound.
	Metrics *metrics.Recorder
	// Instances, when set, tells whether Joist launched a node (its
	// instance tagged for Cluster: termination.Owned); only such a node
	// gets the termination finalizer as it turns Ready. Unset, the
	// reaper puts it on at its next pass.
	Instances Instances
	Cluster   string
}

// Instances reads EC2 instances by id (*launch.Launcher).
type Instances interface {
	Describe(ctx context.Context, ids ...string) ([]launch.Instance, error)
}

// Result counts what one pass did.
type Result struct {
	Bound        int // bound by this pass
	AlreadyBound int // bound by someone else first
	Unplanned    int // no longer fit; handed back to the provisioner
}

func (r *Result) add(o Result) {
	r.Bound += o.Bound
	r.AlreadyBound += o.AlreadyBound
	r.Unplanned += o.Unplanned
}

// BindNode binds the pods planned for the instance behind the named node.
// A node that is gone, not Ready, or not an EC2 instance is a no-op.
func (b *Binder) BindNode(ctx context.Context, name string) (Result, error) {
	node, err := b.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		b.Log.Info("node gone; nothing to bind", "node", name)
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("get node %s: %w", name, err)
	}
	// A node Joist launched carries the termination finalizer from the
	// moment it is Ready, so kubectl delete node drains it and ends its
	// instance (the reaper adds it too, to any node that lacks it).
	b.ensureFinalizer(ctx, node)
	unbound, err := b.Kube.UnboundPods(ctx)
	if err != nil {
		return Result{}, err
	}
	return b.bind(ctx, node, unbound)
}

// ensureFinalizer puts the termination finalizer on a node Joist launched
// (and only on one: a Karpenter node of the same labels is not Joist's to
// hold). Failing to is logged: the reaper puts it on at its next pass.
func (b *Binder) ensureFinalizer(ctx context.Context, node *corev1.Node) {
	id := pods.InstanceID(node.Spec.ProviderID)
	if b.Instances == nil || id == "" || node.DeletionTimestamp != nil || slices.Contains(node.Finalizers, termination.Finalizer) {
		return
	}
	insts, err := b.Instances.Describe(ctx, id)
	if err != nil {
		b.Log.Warn("read the node's instance; the reaper adds the termination finalizer", "node", node.Name, "error", err.Error())
		return
	}
	if !termination.Owned(b.Cluster, insts).Node(node) {
		return
	}
	if err := termination.EnsureFinalizer(ctx, b.Kube, node); err != nil {
		b.Log.Warn("add termination finalizer", "node", node.Name, "error", err.Error())
	}
}

// BindAll binds planned pods on every Ready node: the safety net for node
// Ready events that never arrived.
func (b *Binder) BindAll(ctx context.Context) (Result, error) {
	unbound, err := b.Kube.UnboundPods(ctx)
	if err != nil {
		return Result{}, err
	}
	planned := map[string]bool{}
	for _, p := range unbound {
		if id := pods.PlannedInstance(p); id != "" {
			planned[id] = true
		}
	}
	var total Result
	if len(planned) == 0 {
		return total, nil
	}
	nodes, err := b.Kube.Nodes(ctx)
	if err != nil {
		return total, err
	}
	var errs []error
	for _, n := range nodes {
		if !planned[pods.InstanceID(n.Spec.ProviderID)] {
			continue
		}
		r, err := b.bind(ctx, n, unbound)
		total.add(r)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return total, fmt.Errorf("bind planned pods: %w", errors.Join(errs...))
	}
	return total, nil
}

// labelNode gives a node the well-known labels of its instance type that
// the kubelet cannot set (karpenter.k8s.aws/instance-family, -cpu, -gpu-*,
// ...), as Karpenter does at registration: the simulator planned pods that
// select on them, so the node must carry them before those pods are bound.
// The labels the planned pods select on come with their plan
// (pods.AnnotationInstanceLabels, from the catalog they were planned
// with, which may know types the embedded one does not); the embedded
// catalog adds the type's other labels when it knows the type. Only
// instance-type label keys (catalog.TypeLabelKeys) are taken from a pod:
// whoever may create a pod must not label nodes at will.
func (b *Binder) labelNode(ctx context.Context, node *corev1.Node, planned []*corev1.Pod) (*corev1.Node, error) {
	want := map[string]string{}
	if it, ok := catalog.Lookup(node.Labels[corev1.LabelInstanceTypeStable]); ok {
		want = it.Labels()
	}
	for _, p := range planned {
		for k, v := range pods.InstanceLabels(p) {
			if slices.Contains(catalog.TypeLabelKeys, k) {
				want[k] = v
			}
		}
	}
	missing := map[string]string{}
	for k, v := range want {
		if _, has := node.Labels[k]; !has {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		return node, nil
	}
	labeled, err := b.Kube.LabelNode(ctx, node.Name, missing)
	if err != nil {
		return nil, err
	}
	return labeled, nil
}

func (b *Binder) bind(ctx context.Context, node *corev1.Node, unbound []*corev1.Pod) (Result, error) {
	var res Result
	id := pods.InstanceID(node.Spec.ProviderID)
	if id == "" {
		return res, nil
	}
	var mine []*corev1.Pod
	for _, p := range unbound {
		if pods.PlannedInstance(p) == id && pods.ForDefaultScheduler(p) {
			mine = append(mine, p)
		}
	}
	if len(mine) == 0 {
		return res, nil
	}
	log := b.Log.With("node", node.Name, "instance", id)
	if !pods.NodeReady(node) {
		log.Info("node not Ready yet; binding later", "planned", len(mine))
		return res, nil
	}
	node, err := b.labelNode(ctx, node, mine)
	if err != nil {
		return res, err
	}
	onNode, err := b.Kube.PodsOnNode(ctx, node.Name)
	if err != nil {
		return res, err
	}
	// Which pods to bind is decided in the plan's order, each counted on
	// the node as if its bind succeeds; the binds then go out
	// bindConcurrency at a time (a node's pods, each a Binding and an
	// Event, waited for one another's writes). A pod that did not fit
	// only because a pod decided before it was, in the end, bound by
	// someone else gets a second look once the binds are done.
	var toBind, noFit []*corev1.Pod
	counted := slices.Clone(onNode)
	for _, p := range mine {
		if err := pods.Fits(p, node, counted); err != nil {
			if taintOnly(node, p, counted) {
				// A startup taint is still on the node: wait for it to go
				// rather than give the pod up.
				log.Info("node still has a taint the pod does not tolerate; binding later", "pod", pods.Key(p), "reason", err.Error())
				continue
			}
			noFit = append(noFit, p)
			continue
		}
		toBind = append(toBind, p)
		counted = append(counted, boundTo(p, node))
	}
	bound, err := b.bindAll(ctx, node, id, toBind, &res, log)
	if err != nil {
		return res, err
	}
	onNode = append(onNode, bound...)
	for _, p := range noFit {
		// It fits now only if some pod decided before it did not bind
		// here (the pods counted then are all on the node now, if bound).
		err := pods.Fits(p, node, onNode)
		if err == nil {
			ok, berr := b.bindAll(ctx, node, id, []*corev1.Pod{p}, &res, log)
			if berr != nil {
				return res, berr
			}
			onNode = append(onNode, ok...)
			continue
		}
		log.Info("planned pod no longer fits; handing it back to the provisioner", "pod", pods.Key(p), "reason", err.Error())
		if err := b.Kube.Unplan(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			return res, err
		}
		res.Unplanned++
	}
	return res, nil
}

// bindConcurrency is how many of a node's pods are bound at once.
const bindConcurrency = 8

// bindAll binds the pods to node, bindConcurrency at a time, counting
// them in res; it returns those this call bound (as bound to node), in
// list's order. A bind that fails does not keep the others from being
// sent; the failures are returned together.
func (b *Binder) bindAll(ctx context.Context, node *corev1.Node, id string, list []*corev1.Pod, res *Result, log *slog.Logger) ([]*corev1.Pod, error) {
	outcome := make([]kube.BindResult, len(list))
	done := make([]bool, len(list))
	errs := make([]error, len(list))
	var g errgroup.Group
	g.SetLimit(bindConcurrency)
	for i, p := range list {
		g.Go(func() error {
			r, err := b.Kube.Bind(ctx, p, node.Name)
			if err != nil {
				errs[i] = err
				return nil
			}
			outcome[i], done[i] = r, true
			if r != kube.Bound {
				return nil
			}
			log.Info("bound", "pod", pods.Key(p))
			if b.Metrics != nil {
				b.Metrics.Count(metrics.PodsBound, 1, nil)
			}
			if err := b.Kube.Event(ctx, kube.PodTarget(p), corev1.EventTypeNormal, kube.ReasonBound,
				fmt.Sprintf("Bound to node %s (instance %s)", node.Name, id)); err != nil {
				log.Warn("record event", "pod", pods.Key(p), "error", err.Error())
			}
			return nil
		})
	}
	_ = g.Wait()
	var bound []*corev1.Pod
	for i, p := range list {
		if !done[i] {
			continue
		}
		switch outcome[i] {
		case kube.Bound:
			res.Bound++
			bound = append(bound, boundTo(p, node))
		case kube.AlreadyBound:
			res.AlreadyBound++
			log.Info("already bound by someone else", "pod", pods.Key(p))
		}
	}
	return bound, errors.Join(errs...)
}

// boundTo is p as bound to node, for the fit of the pods after it.
func boundTo(p *corev1.Pod, node *corev1.Node) *corev1.Pod {
	q := p.DeepCopy()
	q.Spec.NodeName = node.Name
	return q
}

// taintOnly reports whether the only thing keeping p off node is a
// NoSchedule/NoExecute taint that a pod of this plan did not expect: the
// pool's startup taints and node-lifecycle taints such as not-ready.
func taintOnly(node *corev1.Node, p *corev1.Pod, onNode []*corev1.Pod) bool {
	if len(node.Spec.Taints) == 0 {
		return false
	}
	n := node.DeepCopy()
	n.Spec.Taints = nil
	return pods.Fits(p, n, onNode) == nil
}

// HandleReady binds for each distinct node a batch of node-ready events
// names (events of other clusters and other kinds are ignored). The events
// only say which nodes to look at; BindNode reads the truth.
func (b *Binder) HandleReady(ctx context.Context, cluster string, evs []events.Event) error {
	nodes := map[string]bool{}
	for _, e := range evs {
		if nr, ok := e.(*events.NodeReady); ok && nr.Cluster == cluster {
			nodes[nr.Node] = true
		}
	}
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	// One node's failure does not keep the others from binding; the batch
	// is retried (every step is idempotent) when any failed.
	var errs []error
	for _, n := range names {
		res, err := b.BindNode(ctx, n)
		if err != nil {
			b.Log.Error("bind onto node failed", "node", n, "error", err.Error())
			errs = append(errs, err)
			continue
		}
		b.Log.Info("node reconciled", "node", n, "bound", res.Bound, "alreadyBound", res.AlreadyBound, "unplanned", res.Unplanned)
	}
	return errors.Join(errs...)
}
