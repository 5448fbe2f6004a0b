package ec2sim

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/joist-dev/joist/pkg/iampolicy"
	"github.com/joist-dev/joist/test/iamsim"
)

// IAM: with EnforceIAM, every call is made by a principal known by its
// SigV4 access key id, and is evaluated against that principal's identity
// policy before it acts, the way EC2 authorizes a call: the action on each
// resource it touches or creates, with the request's tags
// (aws:RequestTag/*, aws:TagKeys), the resources' tags
// (aws:ResourceTag/*), ec2:CreateAction for tags applied at creation,
// aws:RequestedRegion, and iam:PassRole (iam:PassedToService) for the
// instance profile's role. What the policy does not allow is refused with
// EC2's own UnauthorizedOperation, and nothing happens.

// AuthRecord is one authorization the simulator decided, for tests that
// check which statements a function really needs.
type AuthRecord struct {
	// Principal is the policy's principal (iampolicy.Provisioner, ...).
	Principal string
	Request   iamsim.Request
	Decision  iamsim.Decision
}

type authState struct {
	enforce bool
	// principals maps an access key id to its policy; a nil policy is an
	// administrator (the test harness itself).
	principals map[string]*iampolicy.Policy
	// profiles maps an instance profile name to its role's ARN.
	profiles map[string]string
	observe  func(AuthRecord)
}

// EnforceIAM turns authorization on: from now on only callers registered
// with SetPrincipal may call, each within its policy.
func (s *Sim) EnforceIAM() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth.enforce = true
}

// SetPrincipal registers an access key id. A nil policy makes it an
// administrator, allowed everything (the harness, the kubelet simulator).
func (s *Sim) SetPrincipal(accessKey string, p *iampolicy.Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth.principals == nil {
		s.auth.principals = map[string]*iampolicy.Policy{}
	}
	s.auth.principals[accessKey] = p
}

// AddInstanceProfile makes an instance profile known, with the ARN of the
// role it holds: launching with it passes that role (iam:PassRole).
func (s *Sim) AddInstanceProfile(name, roleARN string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth.profiles == nil {
		s.auth.profiles = map[string]string{}
	}
	s.auth.profiles[name] = roleARN
}

// OnAuthorize hears every decision about a registered (non-administrator)
// principal's request.
func (s *Sim) OnAuthorize(f func(AuthRecord)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth.observe = f
}

// AccessKeyOf reads the access key id from a SigV4 Authorization header
// ("AWS4-HMAC-SHA256 Credential=AKID/date/region/service/aws4_request, ...").
func AccessKeyOf(r *http.Request) string {
	h := r.Header.Get("Authorization")
	i := strings.Index(h, "Credential=")
	if i < 0 {
		return ""
	}
	rest := h[i+len("Credential="):]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// authorizer is implemented by requests that touch or create resources;
// other actions (the Describe calls) are authorized on "*".
type authorizer interface {
	authRequests(s *Sim, action string) ([]iamsim.Request, *apiError)
}

// authorize decides a parsed request; the caller holds s.mu.
func (s *Sim) authorize(accessKey, action string, req any) *apiError {
	if !s.auth.enforce {
		return nil
	}
	pol, known := s.auth.principals[accessKey]
	if !known {
		return errorf(http.StatusUnauthorized, "AuthFailure", "AWS was not able to validate the provided access credentials (ec2sim knows no principal with access key %q)", accessKey)
	}
	if pol == nil {
		return nil
	}
	var reqs []iamsim.Request
	if a, ok := req.(authorizer); ok {
		var err *apiError
		if reqs, err = a.authRequests(s, action); err != nil {
			return err
		}
	} else {
		reqs = []iamsim.Request{{Action: "ec2:" + action, Resource: "*"}}
	}
	for _, r := range reqs {
		if r.Keys == nil {
			r.Keys = map[string][]string{}
		}
		r.Keys["aws:RequestedRegion"] = []string{s.opts.Region}
		d := iamsim.Evaluate(*pol, r)
		if s.auth.observe != nil {
			s.auth.observe(AuthRecord{Principal: pol.Principal, Request: r, Decision: d})
		}
		if !d.Allowed {
			why := "no identity-based policy allows the " + r.Action + " action"
			if d.ExplicitDeny {
				why = "an explicit deny in an identity-based policy"
			}
			return errorf(http.StatusForbidden, "UnauthorizedOperation",
				"You are not authorized to perform this operation. User: arn:aws:sts::%s:assumed-role/joist-%s/ec2sim is not authorized to perform: %s on resource: %s because %s (context: %s)",
				s.opts.AccountID, pol.Principal, r.Action, r.Resource, why, describeKeys(r.Keys))
		}
	}
	return nil
}

func describeKeys(keys map[string][]string) string {
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + "=" + strings.Join(keys[k], "|")
	}
	return strings.Join(parts, ", ")
}

// arn is the ARN of a resource of this account and region; images and
// snapshots have no account in their ARN.
func (s *Sim) arn(resourceType, id string) string {
	acct := s.opts.AccountID
	if resourceType == "image" || resourceType == "snapshot" {
		acct = ""
	}
	return fmt.Sprintf("arn:aws:ec2:%s:%s:%s/%s", s.opts.Region, acct, resourceType, id)
}

func resourceTagKeys(tags map[string]string) map[string][]string {
	keys := map[string][]string{}
	for k, v := range tags {
		keys["aws:ResourceTag/"+k] = []string{v}
		keys["ec2:ResourceTag/"+k] = []string{v}
	}
	return keys
}

// requestTagKeys are the keys of a request that tags a resource; with
// createAction set, it is tagging on creation.
func requestTagKeys(tags map[string]string, createAction string) map[string][]string {
	keys := map[string][]string{}
	var names []string
	for k, v := range tags {
		keys["aws:RequestTag/"+k] = []string{v}
		names = append(names, k)
	}
	if len(names) > 0 {
		sort.Strings(names)
		keys["aws:TagKeys"] = names
	}
	if createAction != "" {
		keys["ec2:CreateAction"] = []string{createAction}
	}
	return keys
}

// created are the requests for creating one resource of a type with tags:
// the actions themselves, and CreateTags for its tags (tag on create).
func created(actions []string, resourceType, arn string, tags map[string]string, createAction string) []iamsim.Request {
	var out []iamsim.Request
	for _, a := range actions {
		out = append(out, iamsim.Request{Action: a, Resource: arn, Keys: requestTagKeys(tags, "")})
	}
	if len(tags) > 0 {
		out = append(out, iamsim.Request{Action: "ec2:CreateTags", Resource: arn, Keys: requestTagKeys(tags, createAction)})
	}
	return out
}

func (r createFleetRequest) authRequests(s *Sim, _ string) ([]iamsim.Request, *apiError) {
	cands, err := s.resolveCandidates(r.rec.LaunchTemplateConfigs)
	if err != nil {
		// An invalid request fails on its own merits when it runs.
		return nil, nil
	}
	requestTags := map[string]map[string]string{}
	for _, ts := range r.rec.TagSpecifications {
		requestTags[ts.ResourceType] = mergeTags(requestTags[ts.ResourceType], ts.Tags)
	}
	launch := []string{"ec2:CreateFleet", "ec2:RunInstances"}
	out := created([]string{"ec2:CreateFleet"}, "fleet", s.arn("fleet", "*"), requestTags["fleet"], "CreateFleet")
	targets := splitTargets(&r.rec)
	seen := map[string]bool{}
	use := func(reqs ...iamsim.Request) {
		for _, q := range reqs {
			k := q.Action + " " + q.Resource + " " + describeKeys(q.Keys)
			if !seen[k] {
				seen[k] = true
				out = append(out, q)
			}
		}
	}
	existing := func(arn string, tags map[string]string) {
		for _, a := range launch {
			use(iamsim.Request{Action: a, Resource: arn, Keys: resourceTagKeys(tags)})
		}
	}
	for _, c := range cands {
		d := c.ver.data
		existing(s.arn("launch-template", c.lt.id), c.lt.tags)
		var imageTags map[string]string
		if im, ok := s.images[c.imageID]; ok {
			imageTags = im.tags
		}
		existing(s.arn("image", c.imageID), imageTags)
		existing(s.arn("subnet", c.subnet.id), c.subnet.tags)
		if groups, gerr := s.securityGroupsFor(c); gerr == nil {
			for _, g := range groups {
				existing(s.arn("security-group", g), s.groups[g].tags)
			}
		}
		for _, bd := range d.blockDevices {
			if bd.ebs != nil && bd.ebs.snapshotID != "" {
				existing(s.arn("snapshot", bd.ebs.snapshotID), nil)
			}
		}
		if cr, _ := s.reservationTargetOf(d); cr != nil {
			// Launching into a reservation uses it: EC2 authorizes the
			// launch on the reservation's ARN (in its owner's account).
			existing(s.reservationARN(cr), cr.Tags)
		}
		if g := s.placementGroupOf(d.placement); g != nil {
			// So does launching into a placement group: EC2 authorizes
			// the launch on the group's ARN (by its name).
			existing(g.arn, g.Tags)
		}
		templateTags := map[string]map[string]string{}
		for _, ts := range d.tagSpecs {
			templateTags[ts.ResourceType] = mergeTags(templateTags[ts.ResourceType], ts.Tags)
		}
		createdTypes := []string{"instance", "volume", "network-interface"}
		if targets[Spot] > 0 {
			createdTypes = append(createdTypes, "spot-instances-request")
		}
		for _, rt := range createdTypes {
			tags := mergeTags(copyTags(templateTags[rt]), requestTags[rt])
			use(created(launch, rt, s.arn(rt, "*"), tags, "CreateFleet")...)
		}
		profile := d.iamProfileName
		if d.iamProfileArn != "" {
			profile = d.iamProfileArn[strings.LastIndex(d.iamProfileArn, "/")+1:]
		}
		if profile != "" {
			role, ok := s.auth.profiles[profile]
			if !ok {
				return nil, invalidParam("Value (%s) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name", profile)
			}
			use(iamsim.Request{Action: "iam:PassRole", Resource: role, Keys: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}})
		}
	}
	return out, nil
}

func (r createLaunchTemplateRequest) authRequests(s *Sim, _ string) ([]iamsim.Request, *apiError) {
	return created([]string{"ec2:CreateLaunchTemplate"}, "launch-template", s.arn("launch-template", "*"), r.tags, "CreateLaunchTemplate"), nil
}

func (r deleteLaunchTemplateRequest) authRequests(s *Sim, action string) ([]iamsim.Request, *apiError) {
	lt, err := s.templateByRef(r.id, r.name)
	if err != nil {
		return nil, nil // fails as not found when it runs
	}
	return []iamsim.Request{{Action: "ec2:" + action, Resource: s.arn("launch-template", lt.id), Keys: resourceTagKeys(lt.tags)}}, nil
}

func (r terminateInstancesRequest) authRequests(s *Sim, action string) ([]iamsim.Request, *apiError) {
	var out []iamsim.Request
	for _, id := range r.ids {
		var tags map[string]string
		if in, ok := s.instances[id]; ok {
			tags = in.tags
		}
		out = append(out, iamsim.Request{Action: "ec2:" + action, Resource: s.arn("instance", id), Keys: resourceTagKeys(tags)})
	}
	return out, nil
}

func (s *Sim) taggingRequests(action string, ids []string, tags map[string]string) []iamsim.Request {
	var out []iamsim.Request
	for _, id := range ids {
		t, err := s.resource(id)
		if err != nil {
			continue // fails as not found when it runs
		}
		keys := resourceTagKeys(*t.tags)
		for k, v := range requestTagKeys(tags, "") {
			keys[k] = v
		}
		out = append(out, iamsim.Request{Action: "ec2:" + action, Resource: s.arn(t.resourceType, id), Keys: keys})
	}
	return out
}

func (r createTagsRequest) authRequests(s *Sim, action string) ([]iamsim.Request, *apiError) {
	return s.taggingRequests(action, r.resources, r.tags), nil
}

func (r deleteTagsRequest) authRequests(s *Sim, action string) ([]iamsim.Request, *apiError) {
	tags := map[string]string{}
	for _, t := range r.tags {
		tags[t.Key] = t.Value
	}
	return s.taggingRequests(action, r.resources, tags), nil
}
