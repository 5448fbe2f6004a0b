package ec2sim

import (
	"net/http"
	"sort"
	"strings"
	"time"
)

// handler serves one EC2 action.
type handler func(s *Sim, p *params) (response, error)

// op builds a handler from a parser and an executor, in that order, so no
// action can act before its whole request was read: parse, reject unknown
// parameters, honour DryRun, then run under the simulator's lock.
func op[R any](parse func(*params) (R, error), run func(*Sim, R) (response, error)) handler {
	return func(s *Sim, p *params) (response, error) {
		dry, err := p.boolean("DryRun")
		if err != nil {
			return nil, err
		}
		req, err := parse(p)
		if err != nil {
			return nil, err
		}
		if err := p.unknown(); err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		// EC2 authorizes before anything else, DryRun included (that is
		// what DryRun is for).
		if err := s.authorize(p.caller, p.action, req); err != nil {
			return nil, err
		}
		if dry {
			return nil, dryRunError()
		}
		return run(s, req)
	}
}

// actions are exactly the EC2 calls Joist makes; anything else is refused
// with UnsupportedOperation naming the action, so a missing call is obvious.
var actions = map[string]handler{
	"CreateFleet":                    op(parseCreateFleet, (*Sim).createFleet),
	"DescribeInstances":              op(parseDescribeInstances, (*Sim).describeInstances),
	"DescribeInstanceStatus":         op(parseDescribeInstanceStatus, (*Sim).describeInstanceStatus),
	"TerminateInstances":             op(parseTerminateInstances, (*Sim).terminateInstances),
	"CreateTags":                     op(parseCreateTags, (*Sim).createTags),
	"DeleteTags":                     op(parseDeleteTags, (*Sim).deleteTags),
	"DescribeTags":                   op(parseDescribeTags, (*Sim).describeTags),
	"DescribeSubnets":                op(parseDescribeSubnets, (*Sim).describeSubnets),
	"DescribeSecurityGroups":         op(parseDescribeSecurityGroups, (*Sim).describeSecurityGroups),
	"DescribeAvailabilityZones":      op(parseDescribeAvailabilityZones, (*Sim).describeAvailabilityZones),
	"DescribeInstanceTypes":          op(parseDescribeInstanceTypes, (*Sim).describeInstanceTypes),
	"DescribeInstanceTypeOfferings":  op(parseDescribeInstanceTypeOfferings, (*Sim).describeInstanceTypeOfferings),
	"DescribeSpotPriceHistory":       op(parseDescribeSpotPriceHistory, (*Sim).describeSpotPriceHistory),
	"CreateLaunchTemplate":           op(parseCreateLaunchTemplate, (*Sim).createLaunchTemplate),
	"DescribeLaunchTemplates":        op(parseDescribeLaunchTemplates, (*Sim).describeLaunchTemplates),
	"DeleteLaunchTemplate":           op(parseDeleteLaunchTemplate, (*Sim).deleteLaunchTemplate),
	"DescribeLaunchTemplateVersions": op(parseDescribeLaunchTemplateVersions, (*Sim).describeLaunchTemplateVersions),
	"DescribeImages":                 op(parseDescribeImages, (*Sim).describeImages),
	"DescribeCapacityReservations":   op(parseDescribeCapacityReservations, (*Sim).describeCapacityReservations),
	"DescribePlacementGroups":        op(parseDescribePlacementGroups, (*Sim).describePlacementGroups),
}

// SupportedActions lists the EC2 actions the simulator implements, sorted.
func SupportedActions() []string {
	out := make([]string, 0, len(actions))
	for a := range actions {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// ServeHTTP answers EC2 Query API requests (form-encoded POST, or GET with
// the same parameters in the query string) and, under /_ec2sim/, the small
// control surface of admin.go.
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, adminPrefix) {
		s.serveAdmin(w, r)
		return
	}
	requestID := newRequestID()
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		writeError(w, requestID, errorf(http.StatusMethodNotAllowed, "UnsupportedHttpVerb", "The HTTP verb %s is not supported", r.Method))
		return
	}
	if err := r.ParseForm(); err != nil {
		writeError(w, requestID, clientErr("MalformedQueryString", "ec2sim: reading the form body: %v", err))
		return
	}
	action := r.Form.Get("Action")
	if action == "" {
		writeError(w, requestID, clientErr("MissingAction", "The request must contain the parameter Action"))
		return
	}
	s.countCall(action, firstAttempt(r))
	if d := s.opts.CallLatency[action]; d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if e := s.faults.takeFailure(action); e != nil {
		writeError(w, requestID, e)
		return
	}
	h, ok := actions[action]
	if !ok {
		writeError(w, requestID, clientErr("UnsupportedOperation",
			"ec2sim does not implement the EC2 action %s; it implements %s", action, strings.Join(SupportedActions(), ", ")))
		return
	}
	p := newParams(r.Form)
	p.caller, p.action = AccessKeyOf(r), action
	p.invocation = r.Header.Get("Amz-Sdk-Invocation-Id")
	resp, err := h(s, p)
	if err != nil {
		e, ok := err.(*apiError)
		if !ok {
			e = errorf(http.StatusInternalServerError, "InternalError", "ec2sim: %s: %v", action, err)
		}
		writeError(w, requestID, e)
		return
	}
	if hook := s.afterHook(action); hook != nil {
		hook()
	}
	if s.faults.takeDrop(action) {
		writeError(w, requestID, errorf(http.StatusInternalServerError, "InternalError",
			"An internal error has occurred (ec2sim dropped the response after %s took effect)", action))
		return
	}
	writeResponse(w, action, requestID, resp)
}

func (s *Sim) countCall(action string, first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[action]++
	if first {
		s.invocations[action]++
	}
}

// firstAttempt reports whether a request is an operation's first attempt.
// The SDKs say which attempt a request is in the amz-sdk-request header
// ("attempt=2; max=8"); a request without it (curl, another client) counts
// as a first attempt.
func firstAttempt(r *http.Request) bool {
	h := r.Header.Get("Amz-Sdk-Request")
	for _, f := range strings.Split(h, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(f), "attempt="); ok {
			return v == "1"
		}
	}
	return true
}
