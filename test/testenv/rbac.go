package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/joist-dev/joist/pkg/install"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/rbac"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// RBAC on the test ground: the API server authorizes with RBAC (envtest's
// default), the ground installs pkg/rbac's objects, and each function and
// the forwarder reach the API server as the identity EKS would give them
// (rbac.User and rbac.Group; the forwarder's service account), never as an
// administrator. The audit log records their requests, so a refused verb
// shows (RBACRefused) and so does a rule no request needed (RBACUnneeded).

// rbacAuditPolicy records, at Metadata level, only the requests of
// Joist's identities.
var rbacAuditPolicy = func() string {
	groups := []string{`"system:serviceaccounts:` + rbac.ForwarderNamespace + `"`}
	for _, fn := range rbac.Functions {
		groups = append(groups, `"`+rbac.Group(fn)+`"`)
	}
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    userGroups: [` + strings.Join(groups, ", ") + `]
  - level: None
`
}()

// FunctionKubeconfig is the kubeconfig of a function's own identity.
func (k *KubeEnv) FunctionKubeconfig(function string) (string, error) {
	return k.Identity(rbac.User(function), rbac.Group(function), "system:authenticated")
}

// ForwarderConfig is the forwarder's identity: its service account.
func (k *KubeEnv) ForwarderConfig() (*rest.Config, error) {
	return k.IdentityConfig(rbac.ForwarderUser(), "system:serviceaccounts", "system:serviceaccounts:"+rbac.ForwarderNamespace, "system:authenticated")
}

// Apply server-side applies objects as the test ground (an administrator).
func (k *KubeEnv) Apply(ctx context.Context, objs ...runtime.Object) error {
	dyn, err := dynamic.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(k.Config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return kube.Apply(ctx, dyn, mapper, "joist-test-ground", objs...)
}

// installRBAC installs what the stack's installer installs in a cluster
// (pkg/install, without the forwarder's Deployment: the ground runs the
// forwarder as a program): the functions' and the forwarder's RBAC and
// the pod admission policy.
//
// With default spread constraints in the functions' environment
// (JOIST_SCHEDULER_CONFIG) it installs what the stack's installer does
// then (install.Params.DefaultSpread), and the run's RBACUnneeded checks
// those rules too.
func (k *KubeEnv) installRBAC(ctx context.Context, cluster string, f rbac.Features) error {
	if f.DefaultSpread {
		featuresMu.Lock()
		featuresUsed.DefaultSpread = true
		featuresMu.Unlock()
	}
	objs, err := install.Objects(install.Params{Cluster: cluster, DefaultSpread: f.DefaultSpread})
	if err != nil {
		return err
	}
	if err := k.Apply(ctx, objs...); err != nil {
		return fmt.Errorf("install rbac: %w", err)
	}
	return nil
}

// featuresUsed are the rbac.Features some ground of the run installed.
var (
	featuresMu   sync.Mutex
	featuresUsed rbac.Features
)

// AuditRequest is one request of a Joist identity, from the audit log.
type AuditRequest struct {
	User      string
	Verb      string
	APIGroup  string
	Resource  string // with "/subresource" when there is one
	Namespace string
	Name      string
	Code      int
	At        time.Time // when the API server received it
	// Forbidden: RBAC refused it (an admission policy's refusal is also a
	// 403, but RBAC allowed it).
	Forbidden bool
}

func (r AuditRequest) String() string {
	return fmt.Sprintf("%s: %s %s %s/%s (%d)", r.User, r.Verb, r.Resource, r.Namespace, r.Name, r.Code)
}

// AuditRequests reads the audit log so far.
func (k *KubeEnv) AuditRequests() ([]AuditRequest, error) {
	f, err := os.Open(k.AuditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Stage    string    `json:"stage"`
			Received time.Time `json:"requestReceivedTimestamp"`
			Verb     string    `json:"verb"`
			User     struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
				Namespace   string `json:"namespace"`
				Name        string `json:"name"`
				APIGroup    string `json:"apiGroup"`
			} `json:"objectRef"`
			ResponseStatus *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			Annotations map[string]string `json:"annotations"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", k.AuditLog, err)
		}
		if ev.ObjectRef == nil || ev.ResponseStatus == nil || (ev.Stage != "ResponseComplete" && ev.Stage != "Panic") {
			continue
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		out = append(out, AuditRequest{
			User: ev.User.Username, Verb: ev.Verb, APIGroup: ev.ObjectRef.APIGroup, Resource: res,
			Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name, Code: ev.ResponseStatus.Code, At: ev.Received,
			Forbidden: ev.Annotations["authorization.k8s.io/decision"] == "forbid",
		})
	}
	return out, sc.Err()
}

// RBACRefused lists the requests of Joist's identities that RBAC refused.
func RBACRefused(reqs []AuditRequest) []string {
	var out []string
	for _, r := range reqs {
		if r.Forbidden {
			out = append(out, r.String())
		}
	}
	return out
}

// RBACUnneeded lists each identity's rule verbs that no allowed request
// used ("user: verb group/resource"). The Lease rules are checked for every
// cluster the run had. exempt names entries the ground cannot exercise,
// with the reason as value; sameAs maps a user to another whose requests
// count for it too (the reaper runs the provisioner's very pass). The
// rules of the features some ground installed (installRBAC) are checked
// with the others.
func RBACUnneeded(reqs []AuditRequest, exempt map[string]string, sameAs map[string]string) []string {
	type identity struct {
		user  string
		rules []rbacv1.PolicyRule
	}
	var ids []identity
	featuresMu.Lock()
	features := featuresUsed
	featuresMu.Unlock()
	for _, fn := range rbac.Functions {
		rules, _ := rbac.RulesWith(fn, features)
		if rbac.Decides(fn) {
			rules = append(rules, rbac.LeaseRules("*")...)
		}
		ids = append(ids, identity{rbac.User(fn), rules})
	}
	ids = append(ids, identity{rbac.ForwarderUser(), rbac.ForwarderRules()})
	var out []string
	for _, id := range ids {
		users := []string{id.user}
		if other, ok := sameAs[id.user]; ok {
			users = append(users, other)
		}
		for _, rule := range id.rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, verb := range rule.Verbs {
						key := fmt.Sprintf("%s: %s %s/%s", id.user, verb, g, res)
						if _, ok := exempt[key]; ok {
							continue
						}
						used := slices.ContainsFunc(reqs, func(r AuditRequest) bool {
							return slices.Contains(users, r.User) && !r.Forbidden && r.Verb == verb && r.APIGroup == g && r.Resource == res &&
								(len(rule.ResourceNames) == 0 || slices.ContainsFunc(rule.ResourceNames, func(pattern string) bool {
									ok, _ := path.Match(pattern, r.Name)
									return ok
								}))
						})
						if !used {
							out = append(out, key)
						}
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}
