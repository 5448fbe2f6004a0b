// Package rbac is the one source of truth for what each Joist function
// and the forwarder may do in the cluster, as Kubernetes RBAC objects.
//
// Each function reaches the API server as its own identity (EKS maps its
// IAM role, through an access entry, to the user "joist:<function>" in the
// group Group(function)), and each group is bound to a ClusterRole holding
// only the verbs that function's code uses. The decider Lease is granted by
// name in its namespace. infra/k8s/rbac.yaml is rendered from here (a test
// keeps it so), the test ground installs these very objects and runs each
// function as its identity, and an audit of the ground's requests reports
// any rule no test needed.
package rbac

import (
	"fmt"

	"github.com/joist-dev/joist/pkg/iampolicy"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The functions with RBAC here; the names are iampolicy's principals.
var Functions = []string{iampolicy.Provisioner, iampolicy.Binder, iampolicy.Reaper, iampolicy.Interruption}

// Group is the Kubernetes group an EKS access entry puts the function's
// role in.
func Group(function string) string { return "joist-" + function }

// User is the Kubernetes user name an access entry gives the function's
// role.
func User(function string) string { return "joist:" + function }

// Forwarder's service account.
const (
	ForwarderNamespace      = "joist"
	ForwarderServiceAccount = "joist-forwarder"
)

// ForwarderUser is the forwarder's user name as the API server sees its
// service account token.
func ForwarderUser() string {
	return "system:serviceaccount:" + ForwarderNamespace + ":" + ForwarderServiceAccount
}

// DefaultLeaseNamespace is where the decider Lease lives unless
// LEASE_NAMESPACE says otherwise.
const DefaultLeaseNamespace = "kube-system"

// LeaseName is the decider Lease of a cluster.
func LeaseName(cluster string) string { return "joist-" + cluster }

// TeardownName is the ConfigMap, in the Lease's namespace, whose presence
// says Joist is being removed from the cluster: the functions read the
// specs as if every pool were deleted, so the reaper retires every Joist
// node and nothing launches (the stack's opt-in teardown, pkg/install).
func TeardownName(cluster string) string { return "joist-teardown-" + cluster }

func rule(groups, resources, verbs []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs}
}

var (
	core = []string{""}
	list = []string{"list"}
)

// planning are the reads and writes of a provisioning pass (the
// provisioner's, and the reaper's safety-net pass).
func planning() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Pending pods and what runs where; the plan is an annotation.
		rule(core, []string{"pods"}, []string{"list", "patch"}),
		// Capacity that exists.
		rule(core, []string{"nodes"}, list),
		// Daemonset overhead on every new node; zonal volumes.
		rule([]string{"apps"}, []string{"daemonsets"}, list),
		rule(core, []string{"persistentvolumeclaims", "persistentvolumes"}, list),
		rule([]string{"storage.k8s.io"}, []string{"storageclasses"}, list),
		// Volume attachment limits of the nodes (CSINode).
		rule([]string{"storage.k8s.io"}, []string{"csinodes"}, list),
		// Namespace labels, when a pod's affinity selects namespaces by
		// them (namespaceSelector); and the namespaces a large pod read
		// is split by (pkg/kube: without this a read stays one list).
		rule(core, []string{"namespaces"}, list),
		// The specs, when they live in the cluster (-c specSource=crd).
		rule([]string{"karpenter.sh"}, []string{"provisioners", "nodepools", "nodeoverlays"}, list),
		rule([]string{"karpenter.k8s.aws"}, []string{"awsnodetemplates", "ec2nodeclasses"}, list),
	}
}

// Features are options of a deployment that need more rules than the
// defaults; the zero value is none.
type Features struct {
	// DefaultSpread: the scheduler config has default topology spread
	// constraints (JOIST_SCHEDULER_CONFIG), so every planning pass reads
	// the Services of the namespaces of the pods it plans and the pods'
	// controllers, to deduce each pod's selector as kube-scheduler does.
	DefaultSpread bool
}

// defaultSpread are those reads: Services listed per namespace; the
// ReplicationController, ReplicaSet or StatefulSet controlling a pod got
// by name.
func defaultSpread() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(core, []string{"services"}, list),
		rule(core, []string{"replicationcontrollers"}, []string{"get"}),
		rule([]string{"apps"}, []string{"replicasets", "statefulsets"}, []string{"get"}),
	}
}

// binding are the calls that bind planned pods to Ready nodes (the binder,
// and a provisioning pass that finds a node Ready already).
func binding() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(core, []string{"pods"}, []string{"list", "patch"}),
		rule(core, []string{"pods/binding"}, []string{"create"}),
		// The node a ready event names; its missing well-known labels
		// (zone, instance type) are added before pods that select on them
		// are bound.
		rule(core, []string{"nodes"}, []string{"get", "patch"}),
	}
}

// retiring are the termination engine's calls (pkg/termination): the
// reaper drains and retires nodes.
func retiring() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// The disrupted taint and progress annotations; the finalizer
		// removed by an update conditional on the node's version; a
		// retired node deleted.
		rule(core, []string{"nodes"}, []string{"get", "patch", "update", "delete"}),
		// Evictions honour PodDisruptionBudgets; a pod still there at the
		// terminationGracePeriod deadline is deleted, as Karpenter does.
		rule(core, []string{"pods/eviction"}, []string{"create"}),
		// Graceful disruption leaves alone a node with a pod whose
		// eviction a budget refuses now (pkg/disruption).
		rule([]string{"policy"}, []string{"poddisruptionbudgets"}, list),
		rule(core, []string{"pods"}, []string{"delete"}),
		// The instance is ended only once the drained pods' volumes are
		// detached.
		rule([]string{"storage.k8s.io"}, []string{"volumeattachments"}, list),
		rule(core, []string{"persistentvolumes"}, []string{"get"}),
	}
}

// events lets a function explain itself (core/v1 Events: a repeat is a
// patch of the count).
func events() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{rule(core, []string{"events"}, []string{"create", "patch"})}
}

// Rules are a function's cluster-wide rules (the Lease is apart, see
// LeaseRules) with no Features.
func Rules(function string) ([]rbacv1.PolicyRule, error) {
	return RulesWith(function, Features{})
}

// RulesWith are a function's cluster-wide rules for the features on: the
// planning functions (provisioner, reaper, interruption) get the reads of
// each feature they plan with.
func RulesWith(function string, f Features) ([]rbacv1.PolicyRule, error) {
	var r []rbacv1.PolicyRule
	switch function {
	case iampolicy.Provisioner:
		r = append(r, planning()...)
		r = append(r, binding()...)
		r = append(r, events()...)
	case iampolicy.Reaper:
		r = append(r, planning()...)
		r = append(r, binding()...)
		r = append(r, retiring()...)
		r = append(r, events()...)
	case iampolicy.Binder:
		r = append(r, binding()...)
		r = append(r, events()...)
	case iampolicy.Interruption:
		// The replacement is a provisioning pass; an interrupted node's
		// retirement is begun (the termination engine marks it — an
		// update conditional on its version — and deletes it, held by its
		// finalizer; the reaper drains it); a node whose instance is gone
		// is deleted at once.
		r = append(r, planning()...)
		r = append(r, binding()...)
		r = append(r, events()...)
		r = append(r, rule(core, []string{"nodes"}, []string{"update", "delete"}))
	default:
		return nil, fmt.Errorf("rbac: unknown function %q", function)
	}
	if f.DefaultSpread && function != iampolicy.Binder {
		r = append(r, defaultSpread()...)
	}
	return merge(r), nil
}

// Decides says whether the function takes the decider Lease.
func Decides(function string) bool {
	return function == iampolicy.Provisioner || function == iampolicy.Reaper || function == iampolicy.Interruption
}

// LeaseRules are the deciders' rules in the Lease's namespace: create (RBAC
// cannot name what does not exist yet) and get/update of that one Lease,
// and get of the teardown marker (every spec read looks for it).
func LeaseRules(cluster string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule([]string{"coordination.k8s.io"}, []string{"leases"}, []string{"create"}),
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			ResourceNames: []string{LeaseName(cluster)}, Verbs: []string{"get", "update"}},
		{APIGroups: core, Resources: []string{"configmaps"},
			ResourceNames: []string{TeardownName(cluster)}, Verbs: []string{"get"}},
	}
}

// ForwarderRules are the forwarder's: it watches, and changes nothing.
func ForwarderRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{rule(core, []string{"pods", "nodes"}, []string{"list", "watch"})}
}

// merge joins rules of the same API group and resource (no resource
// names), keeping verbs in first-seen order, so each (group, resource)
// appears once.
func merge(in []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type key struct{ group, resource string }
	var order []key
	verbs := map[key][]string{}
	for _, r := range in {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				k := key{g, res}
				if _, ok := verbs[k]; !ok {
					order = append(order, k)
				}
				for _, v := range r.Verbs {
					if !contains(verbs[k], v) {
						verbs[k] = append(verbs[k], v)
					}
				}
			}
		}
	}
	out := make([]rbacv1.PolicyRule, 0, len(order))
	for _, k := range order {
		out = append(out, rule([]string{k.group}, []string{k.resource}, verbs[k]))
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

var labels = map[string]string{"app.kubernetes.io/name": "joist"}

func meta(name, namespace, component string) metav1.ObjectMeta {
	l := map[string]string{"app.kubernetes.io/component": component}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: l}
}

// Objects are the functions' RBAC objects for one cluster: per function a
// ClusterRole bound to its group, and for the deciders a Role and
// RoleBinding on the Lease in leaseNamespace (DefaultLeaseNamespace when
// empty). The forwarder's are in ForwarderObjects.
func Objects(cluster, leaseNamespace string) ([]runtime.Object, error) {
	return ObjectsWith(cluster, leaseNamespace, Features{})
}

// ObjectsWith are Objects with the rules of the features on.
func ObjectsWith(cluster, leaseNamespace string, f Features) ([]runtime.Object, error) {
	if cluster == "" {
		return nil, fmt.Errorf("rbac: cluster name is empty")
	}
	if leaseNamespace == "" {
		leaseNamespace = DefaultLeaseNamespace
	}
	var out []runtime.Object
	var deciders []rbacv1.Subject
	for _, fn := range Functions {
		rules, err := RulesWith(fn, f)
		if err != nil {
			return nil, err
		}
		name := "joist-" + fn
		subject := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: Group(fn)}
		out = append(out,
			&rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: meta(name, "", fn), Rules: rules},
			&rbacv1.ClusterRoleBinding{
				TypeMeta: typeMeta("ClusterRoleBinding"), ObjectMeta: meta(name, "", fn),
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects: []rbacv1.Subject{subject},
			})
		if Decides(fn) {
			deciders = append(deciders, subject)
		}
	}
	name := LeaseName(cluster) // one per cluster, like the Lease
	out = append(out,
		&rbacv1.Role{TypeMeta: typeMeta("Role"), ObjectMeta: meta(name, leaseNamespace, "lease"), Rules: LeaseRules(cluster)},
		&rbacv1.RoleBinding{
			TypeMeta: typeMeta("RoleBinding"), ObjectMeta: meta(name, leaseNamespace, "lease"),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: deciders,
		})
	return out, nil
}

// ForwarderObjects are the forwarder's ClusterRole and its binding to the
// forwarder's service account (infra/k8s/forwarder.yaml holds the same).
func ForwarderObjects() []runtime.Object {
	name := "joist-forwarder"
	return []runtime.Object{
		&rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: meta(name, "", "forwarder"), Rules: ForwarderRules()},
		&rbacv1.ClusterRoleBinding{
			TypeMeta: typeMeta("ClusterRoleBinding"), ObjectMeta: meta(name, "", "forwarder"),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ForwarderServiceAccount, Namespace: ForwarderNamespace}},
		},
	}
}

func typeMeta(kind string) metav1.TypeMeta {
	return typeMetaOf(rbacv1.SchemeGroupVersion.String(), kind)
}

func typeMetaOf(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

const metav1StatusReasonForbidden = metav1.StatusReasonForbidden
