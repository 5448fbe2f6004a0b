package ec2sim

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

type launchTemplate struct {
	id, name   string
	createTime time.Time
	tags       map[string]string
	versions   []ltVersion // version n is versions[n-1]
	defaultVer int
}

type ltVersion struct {
	number      int
	description string
	createTime  time.Time
	data        launchTemplateData
}

func (lt *launchTemplate) latest() int { return len(lt.versions) }

// resolveVersion understands "$Latest", "$Default" and version numbers; an
// empty version means $Default, as EC2 takes it.
func (lt *launchTemplate) resolveVersion(v string) (*ltVersion, error) {
	n := 0
	switch v {
	case "$Latest":
		n = lt.latest()
	case "$Default", "":
		n = lt.defaultVer
	default:
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			return nil, clientErr("InvalidLaunchTemplateId.VersionNotFound", "Version '%s' of launch template %s is not a version number, $Latest or $Default", v, lt.id)
		}
	}
	if n < 1 || n > len(lt.versions) {
		return nil, clientErr("InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for launch template %s", v, lt.id)
	}
	return &lt.versions[n-1], nil
}

// templateByRef finds a template by ID or name, with EC2's two different
// not-found codes (note the inconsistent "Exception" suffix, which callers
// such as Karpenter match on exactly).
func (s *Sim) templateByRef(id, name string) (*launchTemplate, error) {
	if id != "" {
		if lt, ok := s.templates[id]; ok {
			return lt, nil
		}
		return nil, notFound("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
	}
	if lt, ok := s.templates[s.templateByName[name]]; ok && name != "" {
		return lt, nil
	}
	return nil, notFound("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
}

var launchTemplateNamePattern = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)

// maxUserDataBytes is EC2's limit on decoded user data.
const maxUserDataBytes = 16 * 1024

// ---- CreateLaunchTemplate ----

type createLaunchTemplateRequest struct {
	name, description, clientToken string
	data                           launchTemplateData
	tags                           map[string]string
	canonical                      string
}

func parseCreateLaunchTemplate(p *params) (createLaunchTemplateRequest, error) {
	var r createLaunchTemplateRequest
	var err error
	r.canonical = p.canonical()
	r.name = p.str("LaunchTemplateName")
	if r.name == "" {
		return r, missingParam("LaunchTemplateName")
	}
	if !launchTemplateNamePattern.MatchString(r.name) {
		return r, clientErr("InvalidLaunchTemplateName.MalformedException",
			"A launch template name must be between 3 and 128 characters, and may contain letters, numbers, and the following characters: - ( ) . / _.")
	}
	r.description = p.str("VersionDescription")
	r.clientToken = p.str("ClientToken")
	p.ignorePrefix("Operator.")
	if r.data, err = parseLaunchTemplateData(p, "LaunchTemplateData."); err != nil {
		return r, err
	}
	specs, err := p.tagSpecs("TagSpecification")
	if err != nil {
		return r, err
	}
	for _, ts := range specs {
		if ts.ResourceType != "launch-template" {
			return r, invalidParam("'%s' is not a valid taggable resource type for this operation.", ts.ResourceType)
		}
		r.tags = mergeTags(r.tags, ts.Tags)
	}
	return r, nil
}

type launchTemplateXML struct {
	LaunchTemplateID     string            `xml:"launchTemplateId"`
	LaunchTemplateName   string            `xml:"launchTemplateName"`
	CreateTime           string            `xml:"createTime"`
	CreatedBy            string            `xml:"createdBy"`
	DefaultVersionNumber int               `xml:"defaultVersionNumber"`
	LatestVersionNumber  int               `xml:"latestVersionNumber"`
	TagSet               *itemList[tagXML] `xml:"tagSet,omitempty"`
}

func (s *Sim) templateToXML(lt *launchTemplate) launchTemplateXML {
	return launchTemplateXML{
		LaunchTemplateID: lt.id, LaunchTemplateName: lt.name, CreateTime: ec2Time(lt.createTime),
		CreatedBy: s.createdBy(), DefaultVersionNumber: lt.defaultVer, LatestVersionNumber: lt.latest(),
		TagSet: optItems(tagsXML(lt.tags)),
	}
}

func (s *Sim) createdBy() string { return fmt.Sprintf("arn:aws:iam::%s:root", s.opts.AccountID) }

type launchTemplateResponse struct {
	responseMeta
	LaunchTemplate launchTemplateXML `xml:"launchTemplate"`
}

func (s *Sim) createLaunchTemplate(r createLaunchTemplateRequest) (response, error) {
	if r.clientToken != "" {
		if prev, ok := s.templateTokens[r.clientToken]; ok {
			if prev.paramsHash != r.canonical {
				return nil, clientErr("IdempotentParameterMismatch", "Arguments on this idempotent request are inconsistent with arguments used in previous request(s).")
			}
			if lt, ok := s.templates[prev.resourceID]; ok {
				return &launchTemplateResponse{LaunchTemplate: s.templateToXML(lt)}, nil
			}
		}
	}
	if _, taken := s.templateByName[r.name]; taken {
		return nil, clientErr("InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
	}
	now := s.now()
	lt := &launchTemplate{
		id: s.newID("lt"), name: r.name, createTime: now, tags: copyTags(r.tags), defaultVer: 1,
		versions: []ltVersion{{number: 1, description: r.description, createTime: now, data: r.data}},
	}
	s.templates[lt.id] = lt
	s.templateOrder = append(s.templateOrder, lt.id)
	s.templateByName[lt.name] = lt.id
	if r.clientToken != "" {
		s.templateTokens[r.clientToken] = idempotent{paramsHash: r.canonical, resourceID: lt.id}
	}
	return &launchTemplateResponse{LaunchTemplate: s.templateToXML(lt)}, nil
}

// ---- DescribeLaunchTemplates ----

type describeLaunchTemplatesRequest struct {
	ids, names []string
	filters    []filter
	page       pageRequest
}

func parseDescribeLaunchTemplates(p *params) (describeLaunchTemplatesRequest, error) {
	var r describeLaunchTemplatesRequest
	var err error
	r.ids = p.strList("LaunchTemplateId")
	r.names = p.strList("LaunchTemplateName")
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	r.page, err = readPage(p, "DescribeLaunchTemplates", pageLimits{min: 1, max: 200})
	return r, err
}

var launchTemplateFilters = filterSpec[*launchTemplate]{
	fields: map[string]func(*launchTemplate) []string{
		"launch-template-name": func(lt *launchTemplate) []string { return one(lt.name) },
		"create-time":          func(lt *launchTemplate) []string { return one(ec2Time(lt.createTime)) },
	},
	tags: func(lt *launchTemplate) map[string]string { return lt.tags },
}

type describeLaunchTemplatesResponse struct {
	responseMeta
	LaunchTemplates itemList[launchTemplateXML] `xml:"launchTemplates"`
	NextToken       string                      `xml:"nextToken,omitempty"`
}

// describeLaunchTemplates fails when an explicitly named template does not
// exist (InvalidLaunchTemplateName.NotFoundException), which is how callers
// such as Karpenter learn they must create it; filters that match nothing
// just return nothing.
func (s *Sim) describeLaunchTemplates(r describeLaunchTemplatesRequest) (response, error) {
	match, err := launchTemplateFilters.compile(r.filters)
	if err != nil {
		return nil, err
	}
	var candidates []*launchTemplate
	if len(r.ids) == 0 && len(r.names) == 0 {
		for _, id := range s.templateOrder {
			candidates = append(candidates, s.templates[id])
		}
	}
	for _, id := range r.ids {
		lt, ok := s.templates[id]
		if !ok {
			return nil, notFound("InvalidLaunchTemplateId.NotFound", "At least one of the launch templates specified in the request does not exist.")
		}
		candidates = append(candidates, lt)
	}
	for _, name := range r.names {
		lt, ok := s.templates[s.templateByName[name]]
		if !ok {
			return nil, notFound("InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
		}
		candidates = append(candidates, lt)
	}
	var out []launchTemplateXML
	for _, lt := range candidates {
		if match(lt) {
			out = append(out, s.templateToXML(lt))
		}
	}
	page, next := paginate(out, r.page)
	return &describeLaunchTemplatesResponse{LaunchTemplates: items(page), NextToken: next}, nil
}

// ---- DeleteLaunchTemplate ----

type deleteLaunchTemplateRequest struct{ id, name string }

func parseDeleteLaunchTemplate(p *params) (deleteLaunchTemplateRequest, error) {
	r := deleteLaunchTemplateRequest{id: p.str("LaunchTemplateId"), name: p.str("LaunchTemplateName")}
	if r.id == "" && r.name == "" {
		return r, missingParam("LaunchTemplateId or LaunchTemplateName")
	}
	return r, nil
}

func (s *Sim) deleteLaunchTemplate(r deleteLaunchTemplateRequest) (response, error) {
	lt, err := s.templateByRef(r.id, r.name)
	if err != nil {
		return nil, err
	}
	if r.id != "" && r.name != "" && lt.name != r.name {
		return nil, invalidParam("The launch template ID %s and name %s do not refer to the same launch template.", r.id, r.name)
	}
	delete(s.templates, lt.id)
	delete(s.templateByName, lt.name)
	for i, id := range s.templateOrder {
		if id == lt.id {
			s.templateOrder = append(s.templateOrder[:i], s.templateOrder[i+1:]...)
			break
		}
	}
	return &launchTemplateResponse{LaunchTemplate: s.templateToXML(lt)}, nil
}

// ---- DescribeLaunchTemplateVersions ----

type describeLaunchTemplateVersionsRequest struct {
	id, name, min, max string
	versions           []string
	filters            []filter
	page               pageRequest
}

func parseDescribeLaunchTemplateVersions(p *params) (describeLaunchTemplateVersionsRequest, error) {
	var r describeLaunchTemplateVersionsRequest
	var err error
	r.id, r.name = p.str("LaunchTemplateId"), p.str("LaunchTemplateName")
	r.versions = p.strList("LaunchTemplateVersion")
	r.min, r.max = p.str("MinVersion"), p.str("MaxVersion")
	if _, err = p.boolean("ResolveAlias"); err != nil {
		return r, err
	}
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	r.page, err = readPage(p, "DescribeLaunchTemplateVersions", pageLimits{min: 1, max: 200})
	return r, err
}

type launchTemplateVersionXML struct {
	LaunchTemplateID   string                `xml:"launchTemplateId"`
	LaunchTemplateName string                `xml:"launchTemplateName"`
	VersionNumber      int                   `xml:"versionNumber"`
	VersionDescription string                `xml:"versionDescription,omitempty"`
	CreateTime         string                `xml:"createTime"`
	CreatedBy          string                `xml:"createdBy"`
	DefaultVersion     bool                  `xml:"defaultVersion"`
	LaunchTemplateData launchTemplateDataXML `xml:"launchTemplateData"`
}

type describeLaunchTemplateVersionsResponse struct {
	responseMeta
	Versions  itemList[launchTemplateVersionXML] `xml:"launchTemplateVersionSet"`
	NextToken string                             `xml:"nextToken,omitempty"`
}

func (s *Sim) describeLaunchTemplateVersions(r describeLaunchTemplateVersionsRequest) (response, error) {
	spec := filterSpec[*ltVersion]{fields: map[string]func(*ltVersion) []string{
		"image-id":      func(v *ltVersion) []string { return one(v.data.imageID) },
		"instance-type": func(v *ltVersion) []string { return one(v.data.instanceType) },
	}}
	match, err := spec.compile(r.filters)
	if err != nil {
		return nil, err
	}
	var templates []*launchTemplate
	if r.id == "" && r.name == "" {
		// Across every template EC2 only accepts $Latest and $Default.
		for _, v := range r.versions {
			if v != "$Latest" && v != "$Default" {
				return nil, invalidParam("Only $Latest and $Default may be described across all launch templates, not version %s", v)
			}
		}
		for _, id := range s.templateOrder {
			templates = append(templates, s.templates[id])
		}
	} else {
		lt, err := s.templateByRef(r.id, r.name)
		if err != nil {
			return nil, err
		}
		templates = []*launchTemplate{lt}
	}
	minV, maxV := 0, 0
	if r.min != "" {
		if minV, err = strconv.Atoi(r.min); err != nil {
			return nil, invalidParam("Value (%s) for parameter MinVersion is invalid.", r.min)
		}
	}
	if r.max != "" {
		if maxV, err = strconv.Atoi(r.max); err != nil {
			return nil, invalidParam("Value (%s) for parameter MaxVersion is invalid.", r.max)
		}
	}
	var out []launchTemplateVersionXML
	for _, lt := range templates {
		var vs []*ltVersion
		if len(r.versions) > 0 {
			for _, want := range r.versions {
				v, err := lt.resolveVersion(want)
				if err != nil {
					return nil, err
				}
				vs = append(vs, v)
			}
		} else {
			for i := range lt.versions {
				vs = append(vs, &lt.versions[i])
			}
		}
		for _, v := range vs {
			if (minV > 0 && v.number < minV) || (maxV > 0 && v.number > maxV) || !match(v) {
				continue
			}
			out = append(out, launchTemplateVersionXML{
				LaunchTemplateID: lt.id, LaunchTemplateName: lt.name, VersionNumber: v.number, VersionDescription: v.description,
				CreateTime: ec2Time(v.createTime), CreatedBy: s.createdBy(), DefaultVersion: v.number == lt.defaultVer,
				LaunchTemplateData: launchTemplateDataToXML(v.data),
			})
		}
	}
	page, next := paginate(out, r.page)
	return &describeLaunchTemplateVersionsResponse{Versions: items(page), NextToken: next}, nil
}
