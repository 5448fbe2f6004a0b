package kube

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// Apply server-side applies objects (typed, with their TypeMeta set) as
// fieldManager: created when missing, brought to this content when not,
// so it is safe to repeat. The mapper turns each kind into its resource
// (restmapper.NewDeferredDiscoveryRESTMapper, or a static one).
func Apply(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, fieldManager string, objs ...runtime.Object) error {
	for _, obj := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return fmt.Errorf("apply %T: %w", obj, err)
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		gvk := u.GroupVersionKind()
		what := fmt.Sprintf("%s %s", gvk.Kind, u.GetName())
		if ns := u.GetNamespace(); ns != "" {
			what = fmt.Sprintf("%s %s/%s", gvk.Kind, ns, u.GetName())
		}
		if gvk.Kind == "" {
			return fmt.Errorf("apply %s: object has no kind", what)
		}
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("apply %s: %w", what, err)
		}
		body, err := u.MarshalJSON()
		if err != nil {
			return fmt.Errorf("apply %s: %w", what, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
		}
		force := true
		if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
			return fmt.Errorf("apply %s: %w", what, err)
		}
	}
	return nil
}
