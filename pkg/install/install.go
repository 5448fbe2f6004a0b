// Package install puts Joist's in-cluster objects into a cluster and takes
// them out again: the functions' RBAC, the decider Lease's Role, the
// admission policy guarding joist.sh/ pod annotations, and the forwarder
// (namespace, service account, RBAC, Deployment). The stack's installer
// function runs it as a CloudFormation custom resource, so `cdk deploy`
// is the only deploy step; everything is server-side applied, so a retry
// after a crash, or an update, converges on the same objects.
package install

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/joist-dev/joist/pkg/apis/crds"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/rbac"
)

// FieldManager owns every field the installer applies.
const FieldManager = "joist-installer"

// Params say what to install.
type Params struct {
	Cluster string
	Region  string
	// LeaseNamespace holds the decider Lease (default kube-system).
	LeaseNamespace string
	// ForwarderImage is the forwarder's image; "" installs no forwarder
	// Deployment (its RBAC still goes in).
	ForwarderImage string
	// EventBus is the bus the forwarder puts events on (default
	// joist-<cluster>, the stack's name for it).
	EventBus string
	// CRDs makes the install create the Karpenter CRDs Joist reads
	// (spec source crd) where the cluster lacks them; see EnsureCRDs.
	CRDs bool
	// DefaultSpread grants the planning functions the reads of default
	// topology spread constraints (rbac.Features.DefaultSpread): set when
	// the stack's scheduler config has any.
	DefaultSpread bool
}

// Validate names the first missing or bad parameter.
func (p Params) Validate() error {
	switch {
	case p.Cluster == "":
		return errors.New("install: Cluster is empty")
	case p.ForwarderImage != "" && p.Region == "":
		return errors.New("install: Region is empty (the forwarder needs it)")
	}
	return nil
}

// Objects are everything Params install, in apply order (namespaces and
// roles before what refers to them).
func Objects(p Params) ([]runtime.Object, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.LeaseNamespace == "" {
		p.LeaseNamespace = rbac.DefaultLeaseNamespace
	}
	if p.EventBus == "" {
		p.EventBus = "joist-" + p.Cluster
	}
	objs := []runtime.Object{forwarderNamespace(), forwarderServiceAccount()}
	fn, err := rbac.ObjectsWith(p.Cluster, p.LeaseNamespace, rbac.Features{DefaultSpread: p.DefaultSpread})
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	objs = append(objs, fn...)
	objs = append(objs, rbac.ForwarderObjects()...)
	objs = append(objs, rbac.AdmissionObjects()...)
	if p.ForwarderImage != "" {
		objs = append(objs, forwarderDeployment(p))
	}
	return objs, nil
}

// Apply server-side applies objs.
func Apply(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, objs []runtime.Object) error {
	return kube.Apply(ctx, dyn, mapper, FieldManager, objs...)
}

// EnsureCRDs creates each of the CRDs Joist reads (Provisioner,
// AWSNodeTemplate, NodePool, EC2NodeClass: pkg/apis/crds) that the cluster
// does not have, and returns the names of those it created. A CRD that
// exists is left exactly as it is: a cluster migrating from Karpenter has
// Karpenter's own, with its versions and conversion webhook, and taking
// them over would break the controller still running beside Joist. CRDs
// are never in Objects, so neither Remove nor Prune deletes them: deleting
// a CRD deletes every NodePool and Provisioner of it, the user's specs.
func EnsureCRDs(ctx context.Context, dyn dynamic.Interface) ([]string, error) {
	ri := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	var created []string
	for _, c := range crds.All() {
		if _, err := ri.Get(ctx, c.Name, metav1.GetOptions{}); err == nil {
			continue
		} else if !apierrors.IsNotFound(err) {
			return created, fmt.Errorf("get CustomResourceDefinition %s: %w", c.Name, err)
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
		if err != nil {
			return created, fmt.Errorf("create CustomResourceDefinition %s: %w", c.Name, err)
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return created, fmt.Errorf("create CustomResourceDefinition %s: %w", c.Name, err)
		}
		created = append(created, c.Name)
	}
	return created, nil
}

// Key names an object: group/kind, namespace and name.
type Key struct {
	GroupKind       schema.GroupKind
	Namespace, Name string
}

func (k Key) String() string {
	if k.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", k.GroupKind, k.Namespace, k.Name)
	}
	return fmt.Sprintf("%s %s", k.GroupKind, k.Name)
}

// KeyOf is an object's Key.
func KeyOf(o runtime.Object) (Key, error) {
	m, err := meta.Accessor(o)
	if err != nil {
		return Key{}, err
	}
	return Key{GroupKind: o.GetObjectKind().GroupVersionKind().GroupKind(), Namespace: m.GetNamespace(), Name: m.GetName()}, nil
}

// Remove deletes objs, last first; objects already gone are fine.
// Namespaces Joist did not create are never in objs (the Lease's
// kube-system is only referred to).
func Remove(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, objs []runtime.Object) error {
	var errs []error
	for i := len(objs) - 1; i >= 0; i-- {
		if err := remove(ctx, dyn, mapper, objs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Prune deletes the objects of old that are not in next (an update that
// dropped something, such as the forwarder's Deployment).
func Prune(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, old, next []runtime.Object) error {
	keep := map[Key]bool{}
	for _, o := range next {
		k, err := KeyOf(o)
		if err != nil {
			return err
		}
		keep[k] = true
	}
	var gone []runtime.Object
	for _, o := range old {
		k, err := KeyOf(o)
		if err != nil {
			return err
		}
		if !keep[k] {
			gone = append(gone, o)
		}
	}
	return Remove(ctx, dyn, mapper, gone)
}

func remove(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, o runtime.Object) error {
	k, err := KeyOf(o)
	if err != nil {
		return err
	}
	mapping, err := mapper.RESTMapping(k.GroupKind, o.GetObjectKind().GroupVersionKind().Version)
	if err != nil {
		return fmt.Errorf("remove %s: %w", k, err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dyn.Resource(mapping.Resource).Namespace(k.Namespace)
	}
	policy := metav1.DeletePropagationBackground
	if err := ri.Delete(ctx, k.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove %s: %w", k, err)
	}
	return nil
}

func labels(component string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "joist", "app.kubernetes.io/component": component, "app.kubernetes.io/managed-by": FieldManager}
}

func forwarderNamespace() *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: rbac.ForwarderNamespace, Labels: map[string]string{"app.kubernetes.io/name": "joist", "app.kubernetes.io/managed-by": FieldManager}},
	}
}

func forwarderServiceAccount() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: rbac.ForwarderServiceAccount, Namespace: rbac.ForwarderNamespace, Labels: labels("forwarder")},
	}
}

// forwarderDeployment runs one forwarder: events are hints, a second
// replica would only send each twice. It prefers nodes Joist does not
// manage, so consolidating a Joist node does not also stop it, and runs
// system-cluster-critical: it is needed most when the cluster is short.
func forwarderDeployment(p Params) *appsv1.Deployment {
	one := int32(1)
	nonRoot, no, yes := true, false, true
	uid := int64(65532)
	sel := map[string]string{"app.kubernetes.io/name": "joist", "app.kubernetes.io/component": "forwarder"}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "joist-forwarder", Namespace: rbac.ForwarderNamespace, Labels: labels("forwarder")},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{
					ServiceAccountName: rbac.ForwarderServiceAccount,
					PriorityClassName:  "system-cluster-critical",
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
							Weight: 100,
							Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
								{Key: "karpenter.sh/nodepool", Operator: corev1.NodeSelectorOpDoesNotExist},
								{Key: "karpenter.sh/provisioner-name", Operator: corev1.NodeSelectorOpDoesNotExist},
							}},
						}},
					}},
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: &nonRoot, RunAsUser: &uid, RunAsGroup: &uid,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "forwarder",
						Image: p.ForwarderImage,
						Env: []corev1.EnvVar{
							{Name: "CLUSTER_NAME", Value: p.Cluster},
							{Name: "EVENT_BUS_NAME", Value: p.EventBus},
							{Name: "AWS_REGION", Value: p.Region},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}
