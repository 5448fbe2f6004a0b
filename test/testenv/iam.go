package testenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/joist-dev/joist/pkg/iampolicy"
	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/iamsim"
)

// IAM on the test ground: every function calls AWS with its own access key
// (AccessKey), registered with the policy iampolicy.For gives it. The EC2
// simulator evaluates EC2 calls itself; calls to kumo (SSM, SQS,
// EventBridge), which checks no permissions, pass through an IAM front
// that evaluates them the same way and answers AccessDeniedException as
// those services do. The harness and the kubelet simulator keep the
// administrator's key ("test").

// HarnessKey is the access key of the test harness: an administrator.
const HarnessKey = "test"

// AccessKey is the access key id a principal's calls carry on the ground.
func AccessKey(principal string) string { return "joist-" + principal }

// NodeRoleARN is the role the cluster's node instance profile holds.
func NodeRoleARN(cluster string) string {
	return "arn:aws:iam::" + Account + ":role/KarpenterNodeRole-" + cluster
}

// IAMParams are the iampolicy parameters of a cluster on the ground.
func IAMParams(cluster string) iampolicy.Params {
	return iampolicy.Params{
		Partition: "aws", Region: Region, Account: Account, Cluster: cluster,
		NodeRoleARN: NodeRoleARN(cluster),
		EventBusARN: "arn:aws:events:" + Region + ":" + Account + ":event-bus/" + BusName(cluster),
	}
}

// Grant is one allowed request and the statements that allowed it.
type Grant struct {
	Principal string
	Action    string
	Resource  string
	// AllowedBy are the Sids of every statement that allowed it.
	AllowedBy []string
}

var (
	ledgerMu sync.Mutex
	ledger   = map[string]Grant{}
	refused  []string
)

// recordAuth adds a decision to the package's ledger of grants.
func recordAuth(principal string, r iamsim.Request, d iamsim.Decision) {
	ledgerMu.Lock()
	defer ledgerMu.Unlock()
	if !d.Allowed {
		refused = append(refused, fmt.Sprintf("%s: %s on %s", principal, r.Action, r.Resource))
		return
	}
	by := slices.Clone(d.AllowedBy)
	sort.Strings(by)
	g := Grant{Principal: principal, Action: r.Action, Resource: r.Resource, AllowedBy: by}
	ledger[principal+"|"+r.Action+"|"+r.Resource+"|"+strings.Join(by, ",")] = g
}

// Grants is every allowed request of a principal's own (non-administrator)
// calls the package's grounds saw so far.
func Grants() []Grant {
	ledgerMu.Lock()
	defer ledgerMu.Unlock()
	out := make([]Grant, 0, len(ledger))
	for _, g := range ledger {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Principal+a.Action+a.Resource < b.Principal+b.Action+b.Resource
	})
	return out
}

// Refused lists the requests IAM refused so far ("principal: action on
// resource").
func Refused() []string {
	ledgerMu.Lock()
	defer ledgerMu.Unlock()
	return slices.Clone(refused)
}

// Unneeded lists, for each principal's policy, the statement actions no
// request needed: an action of a statement is needed when some allowed
// request for that action was allowed by that statement alone, so that
// without the statement the request would have been refused. exempt names
// "principal/Sid" or "principal/Sid/action" entries the ground cannot
// exercise (documented by the caller).
//
// sameAs maps a principal to another whose needs count for it too (the
// reaper runs the provisioner's very pass).
func Unneeded(policies []iampolicy.Policy, grants []Grant, exempt map[string]string, sameAs map[string]string) []string {
	needed := map[string]bool{}
	for _, g := range grants {
		if len(g.AllowedBy) == 1 {
			needed[g.Principal+"/"+g.AllowedBy[0]+"/"+g.Action] = true
			for p, other := range sameAs {
				if other == g.Principal {
					needed[p+"/"+g.AllowedBy[0]+"/"+g.Action] = true
				}
			}
		}
	}
	var out []string
	for _, p := range policies {
		for _, s := range p.Statements {
			if _, ok := exempt[p.Principal+"/"+s.Sid]; ok {
				continue
			}
			for _, a := range s.Actions {
				key := p.Principal + "/" + s.Sid + "/" + a
				if _, ok := exempt[key]; ok || needed[key] {
					continue
				}
				out = append(out, key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// iamFront is a reverse proxy before kumo that authorizes the calls of
// registered principals against their policies (AWS JSON protocol:
// SSM, SQS, EventBridge), and passes everything else through.
type iamFront struct {
	proxy      *httputil.ReverseProxy
	mu         sync.Mutex
	principals map[string]*iampolicy.Policy
	record     func(principal string, r iamsim.Request, d iamsim.Decision)
}

func newIAMFront(kumo string) (*iamFront, error) {
	u, err := url.Parse(kumo)
	if err != nil {
		return nil, err
	}
	return &iamFront{proxy: httputil.NewSingleHostReverseProxy(u), principals: map[string]*iampolicy.Policy{}, record: recordAuth}, nil
}

func (f *iamFront) setPrincipal(key string, p *iampolicy.Policy) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.principals[key] = p
}

func (f *iamFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := ec2sim.AccessKeyOf(r)
	f.mu.Lock()
	pol, known := f.principals[key]
	f.mu.Unlock()
	if !known || pol == nil {
		// The harness (an administrator); unknown keys are refused.
		if !known && key != HarnessKey {
			denyJSON(w, http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid (no principal with access key "+key+")")
			return
		}
		f.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	reqs, err := jsonRequests(r.Header.Get("X-Amz-Target"), body)
	if err != nil {
		denyJSON(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	for _, q := range reqs {
		if q.Keys == nil {
			q.Keys = map[string][]string{}
		}
		q.Keys["aws:RequestedRegion"] = []string{Region}
		d := iamsim.Evaluate(*pol, q)
		f.record(pol.Principal, q, d)
		if !d.Allowed {
			denyJSON(w, http.StatusBadRequest, "AccessDeniedException", fmt.Sprintf(
				"User: arn:aws:sts::%s:assumed-role/joist-%s/test is not authorized to perform: %s on resource: %s because no identity-based policy allows the %s action",
				Account, pol.Principal, q.Action, q.Resource, q.Action))
			return
		}
	}
	f.proxy.ServeHTTP(w, r)
}

func denyJSON(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg, "Message": msg})
}

// jsonRequests turns one AWS JSON-protocol call into the IAM requests AWS
// evaluates: the action on each resource the call names.
func jsonRequests(target string, body []byte) ([]iamsim.Request, error) {
	svc, op, ok := strings.Cut(target, ".")
	if !ok {
		return nil, fmt.Errorf("IAM front: request without X-Amz-Target (%q)", target)
	}
	var in struct {
		Name, Path, QueueUrl string
		Names                []string
		Entries              []struct{ EventBusName string }
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, fmt.Errorf("IAM front: %s: %w", target, err)
		}
	}
	arn := func(service, account, resource string) string {
		return "arn:aws:" + service + ":" + Region + ":" + account + ":" + resource
	}
	param := func(name string) string {
		name = "/" + strings.TrimPrefix(name, "/")
		account := Account
		if strings.HasPrefix(name, "/aws/service/") {
			account = "" // AWS's public parameters
		}
		return arn("ssm", account, "parameter"+name)
	}
	var out []iamsim.Request
	add := func(action, resource string) { out = append(out, iamsim.Request{Action: action, Resource: resource}) }
	switch svc {
	case "AmazonSSM":
		action := "ssm:" + op
		switch {
		case in.Name != "":
			add(action, param(in.Name))
		case in.Path != "":
			add(action, param(strings.TrimSuffix(in.Path, "/")))
		case len(in.Names) > 0:
			for _, n := range in.Names {
				add(action, param(n))
			}
		default:
			add(action, "*")
		}
	case "AWSEvents":
		action := "events:" + op
		if op == "PutEvents" {
			for _, e := range in.Entries {
				bus := e.EventBusName
				if bus == "" {
					bus = "default"
				}
				if !strings.HasPrefix(bus, "arn:") {
					bus = arn("events", Account, "event-bus/"+bus)
				}
				add(action, bus)
			}
		} else {
			add(action, "*")
		}
	case "AmazonSQS":
		action := "sqs:" + op
		if in.QueueUrl != "" {
			add(action, arn("sqs", Account, in.QueueUrl[strings.LastIndex(in.QueueUrl, "/")+1:]))
		} else {
			add(action, "*")
		}
	default:
		add(strings.ToLower(svc)+":"+op, "*")
	}
	return out, nil
}
