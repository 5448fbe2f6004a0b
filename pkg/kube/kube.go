// Package kube is Joist's adapter to the Kubernetes API: the few reads and
// writes the functions make (pending pods, nodes, pods on a node, binding,
// the plan annotation), each tolerant of the races a cluster brings.
package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/joist-dev/joist/pkg/pods"
)

// Client is the Kubernetes side of a function.
type Client struct {
	kubernetes.Interface
}

// New wraps a clientset.
func New(c kubernetes.Interface) *Client { return &Client{Interface: c} }

// UnboundPods lists pods with no node that are not finished, oldest first.
func (c *Client) UnboundPods(ctx context.Context) ([]*corev1.Pod, error) {
	return c.listPods(ctx, unboundSelector(), false, nil)
}

func unboundSelector() string {
	return fields.AndSelectors(
		fields.OneTermEqualSelector("spec.nodeName", ""),
		fields.OneTermEqualSelector("status.phase", string(corev1.PodPending)),
	).String()
}

// PendingPods lists the pods Joist provisions for (pods.Provisionable),
// reduced (ReducePod), oldest first.
func (c *Client) PendingPods(ctx context.Context) ([]*corev1.Pod, error) {
	all, err := c.listPods(ctx, unboundSelector(), true, nil)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, p := range all {
		if pods.Provisionable(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// PodsOnNode lists the pods bound to a node.
func (c *Client) PodsOnNode(ctx context.Context, node string) ([]*corev1.Pod, error) {
	return c.listPods(ctx, fields.OneTermEqualSelector("spec.nodeName", node).String(), false, nil)
}

// listPods lists pods page by page, oldest first; reduce keeps only what
// Joist's decisions read (ReducePod), and then hands each pod to each
// (when not nil) before keeping it.
func (c *Client) listPods(ctx context.Context, fieldSelector string, reduce bool, each func(*corev1.Pod)) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	keep := func(p *corev1.Pod) {
		if each != nil {
			each(p)
		}
		out = append(out, p)
	}
	if reduce {
		if err := c.EachPod(ctx, fieldSelector, NewInterner(), keep); err != nil {
			return nil, err
		}
	} else if err := c.eachPodTyped(ctx, metav1.ListOptions{FieldSelector: fieldSelector, Limit: PageSize}, keep); err != nil {
		return nil, fmt.Errorf("list pods (%s): %w", fieldSelector, err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return pods.Key(a) < pods.Key(b)
	})
	return out, nil
}

// Nodes lists every node, page by page, each reduced (ReduceNode). A
// consistent read (see EachPod): a node that registered a moment ago must
// not be planned onto as in-flight capacity again. The pages are read as
// protobuf, one ahead, and what ReduceNode drops is dropped before it is
// decoded (nodewire.go).
func (c *Client) Nodes(ctx context.Context) ([]*corev1.Node, error) {
	var out []*corev1.Node
	in := NewInterner()
	keep := func(n *corev1.Node) { out = append(out, n) }
	opts := metav1.ListOptions{Limit: nodePageSize}
	if rc := c.restClient(); rc != nil {
		if err := eachNodeWire(ctx, rc, opts, in, keep); err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		return out, nil
	}
	for {
		list, err := c.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		for i := range list.Items {
			ReduceNode(&list.Items[i], in)
			keep(&list.Items[i])
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// Nominate records on the pod that it waits for instance, and the labels
// of the instance's type it needs on the node (pods.AnnotationInstanceLabels;
// none: the annotation is removed). The patch is conditional on the pod's
// resourceVersion, so a pod that changed since it was read (bound,
// deleted, re-planned) is left alone.
func (c *Client) Nominate(ctx context.Context, p *corev1.Pod, instance string, now time.Time, labels map[string]string) error {
	var enc any
	if len(labels) > 0 {
		b, _ := json.Marshal(labels)
		enc = string(b)
	}
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": p.ResourceVersion,
		"annotations": map[string]any{
			pods.AnnotationInstance:       instance,
			pods.AnnotationNominatedAt:    now.UTC().Format(time.RFC3339),
			pods.AnnotationInstanceLabels: enc,
		},
	}}
	return c.patchPod(ctx, p, patch)
}

// NominateReplacement records on a running pod of a node going away the
// instance launched to take it (pods.AnnotationReplacement), conditional
// on the pod's UID, not on its resourceVersion as Nominate is: the pod
// runs, and its kubelet writes its status at any time, none of which
// changes what the reservation says (this pod, bound where it is, moves
// there). Conditional on the resourceVersion, a status written between
// the pass's read and this call dropped the reservation, and the
// replacement's room went to the next pod that came (the e2e scenario
// TestE2E_InterruptedPodsKeepTheirRoomOnTheReplacement, about one run in
// three). A pod of the same name made again since the read is another
// pod: the API server refuses the changed UID, reported as a conflict.
func (c *Client) NominateReplacement(ctx context.Context, p *corev1.Pod, instance string) error {
	patch := map[string]any{"metadata": map[string]any{
		"uid":         string(p.UID),
		"annotations": map[string]any{pods.AnnotationReplacement: instance},
	}}
	err := c.patchPod(ctx, p, patch)
	if apierrors.IsInvalid(err) {
		return apierrors.NewConflict(corev1.Resource("pods"), p.Name, fmt.Errorf("pod %s is not the pod read (uid %s): %w", pods.Key(p), p.UID, err))
	}
	return err
}

// Unplan removes the plan from a pod so the provisioner considers it
// again.
func (c *Client) Unplan(ctx context.Context, p *corev1.Pod) error {
	patch := map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{pods.AnnotationInstance: nil, pods.AnnotationNominatedAt: nil, pods.AnnotationInstanceLabels: nil},
	}}
	return c.patchPod(ctx, p, patch)
}

func (c *Client) patchPod(ctx context.Context, p *corev1.Pod, patch map[string]any) error {
	b, _ := json.Marshal(patch)
	_, err := c.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, b, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch pod %s: %w", pods.Key(p), err)
	}
	return nil
}

// BindResult says what happened to a bind.
type BindResult int

// Bind outcomes.
const (
	Bound        BindResult = iota // this call bound the pod
	AlreadyBound                   // someone (kube-scheduler) bound it first
	Gone                           // the pod no longer exists
)

// Bind binds the pod to the node through pods/binding. A Conflict means
// another binder (kube-scheduler) won the race: that is success for Joist,
// since the pod runs either way.
func (c *Client) Bind(ctx context.Context, p *corev1.Pod, node string) (BindResult, error) {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	err := c.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	switch {
	case err == nil:
		return Bound, nil
	case apierrors.IsConflict(err):
		return AlreadyBound, nil
	case apierrors.IsNotFound(err):
		return Gone, nil
	default:
		return 0, fmt.Errorf("bind pod %s to %s: %w", pods.Key(p), node, err)
	}
}

// LabelNode adds labels to a node (a merge patch: labels it has are kept).
func (c *Client) LabelNode(ctx context.Context, name string, labels map[string]string) (*corev1.Node, error) {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	n, err := c.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("label node %s: %w", name, err)
	}
	return n, nil
}
