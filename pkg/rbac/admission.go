package rbac

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// AnnotationPrefix is the prefix of the pod annotations Joist owns (the
// plan: joist.sh/instance-id, joist.sh/nominated-at).
const AnnotationPrefix = "joist.sh/"

// PodPolicyName names the admission policy and its binding.
const PodPolicyName = "joist-pod-annotations"

// Pod writes are limited by a ValidatingAdmissionPolicy (CEL in the API
// server; no webhook pod to run). RBAC cannot say "patch only these
// annotations", so:
//   - only Joist's identities may set, change or remove joist.sh/ annotations
//     on a pod: a user who could otherwise write joist.sh/instance-id would
//     have the binder bind the pod to any node, past the scheduler;
//   - Joist's identities may change nothing else on a pod.
//
// The expressions treat a pod without annotations as an empty map.
const (
	celIsJoist = "request.userInfo.groups.exists(g, g in %s)"
	celOld     = "request.operation == 'UPDATE' && has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}"
	celNew     = "has(object.metadata.annotations) ? object.metadata.annotations : {}"
	// joist.sh/ annotations of the pod are the same before and after.
	celJoistUnchanged = "variables.new.all(k, !k.startsWith('" + AnnotationPrefix + "') || (k in variables.old && variables.old[k] == variables.new[k])) && " +
		"variables.old.all(k, !k.startsWith('" + AnnotationPrefix + "') || k in variables.new)"
	// Everything but joist.sh/ annotations is the same before and after.
	celOthersUnchanged = "request.operation != 'UPDATE' || (" +
		"object.spec == oldObject.spec && " +
		"(has(object.metadata.labels) ? object.metadata.labels : {}) == (has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}) && " +
		"variables.new.all(k, k.startsWith('" + AnnotationPrefix + "') || (k in variables.old && variables.old[k] == variables.new[k])) && " +
		"variables.old.all(k, k.startsWith('" + AnnotationPrefix + "') || k in variables.new))"
)

// AdmissionObjects are the policy and its binding (cluster-wide, denying).
func AdmissionObjects() []runtime.Object {
	groups := make([]string, len(Functions))
	for i, fn := range Functions {
		groups[i] = "'" + Group(fn) + "'"
	}
	isJoist := fmt.Sprintf(celIsJoist, "["+strings.Join(groups, ", ")+"]")
	fail := admissionv1.Fail
	forbidden := metav1StatusReasonForbidden
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   typeMetaOf(admissionv1.SchemeGroupVersion.String(), "ValidatingAdmissionPolicy"),
		ObjectMeta: meta(PodPolicyName, "", "admission"),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
						Rule: admissionv1.Rule{
							APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
						},
					},
				}},
			},
			Variables: []admissionv1.Variable{
				{Name: "joist", Expression: isJoist},
				{Name: "old", Expression: celOld},
				{Name: "new", Expression: celNew},
			},
			Validations: []admissionv1.Validation{
				{
					Expression: "variables.joist || (" + celJoistUnchanged + ")",
					Message:    "only Joist may set, change or remove " + AnnotationPrefix + " annotations on a pod",
					Reason:     &forbidden,
				},
				{
					Expression: "!variables.joist || " + celOthersUnchanged,
					Message:    "Joist may change only " + AnnotationPrefix + " annotations on a pod",
					Reason:     &forbidden,
				},
			},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   typeMetaOf(admissionv1.SchemeGroupVersion.String(), "ValidatingAdmissionPolicyBinding"),
		ObjectMeta: meta(PodPolicyName, "", "admission"),
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        PodPolicyName,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return []runtime.Object{policy, binding}
}
