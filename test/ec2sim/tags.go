package ec2sim

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// EC2's tag limits.
const (
	maxTagsPerResource = 50
	maxTagKeyLen       = 128
	maxTagValueLen     = 256
)

// tagMap validates caller-supplied tags as EC2 does and returns them as a
// map. Keys starting with "aws:" are reserved for AWS itself.
func tagMap(ts []tag) (map[string]string, error) {
	m := map[string]string{}
	for _, t := range ts {
		if t.Key == "" || utf8.RuneCountInString(t.Key) > maxTagKeyLen {
			return nil, invalidParam("Tag key must be between 1 and %d characters: '%s'", maxTagKeyLen, t.Key)
		}
		if utf8.RuneCountInString(t.Value) > maxTagValueLen {
			return nil, invalidParam("Tag value for key '%s' exceeds %d characters", t.Key, maxTagValueLen)
		}
		if strings.HasPrefix(strings.ToLower(t.Key), "aws:") {
			return nil, invalidParam("Value ( %s ) for parameter key is invalid. Tag keys starting with 'aws:' are reserved for internal use", t.Key)
		}
		if _, dup := m[t.Key]; dup {
			return nil, invalidParam("Duplicate tag key '%s' specified.", t.Key)
		}
		m[t.Key] = t.Value
	}
	return m, nil
}

func mergeTags(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}

func copyTags(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return mergeTags(map[string]string{}, m)
}

// taggable is anything CreateTags can reach.
type taggable struct {
	id, resourceType string
	tags             *map[string]string
}

// resource finds a taggable resource by ID. Unknown IDs get the not-found
// code of their kind, as EC2 answers per prefix.
func (s *Sim) resource(id string) (taggable, error) {
	switch {
	case strings.HasPrefix(id, "i-"):
		if in, ok := s.instances[id]; ok && s.visible(in) {
			return taggable{id, "instance", &in.tags}, nil
		}
		return taggable{}, notFound("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
	case strings.HasPrefix(id, "subnet-"):
		if sn, ok := s.subnets[id]; ok {
			return taggable{id, "subnet", &sn.tags}, nil
		}
		return taggable{}, notFound("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
	case strings.HasPrefix(id, "sg-"):
		if g, ok := s.groups[id]; ok {
			return taggable{id, "security-group", &g.tags}, nil
		}
		return taggable{}, notFound("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	case strings.HasPrefix(id, "vpc-"):
		if v, ok := s.vpcs[id]; ok {
			return taggable{id, "vpc", &v.tags}, nil
		}
		return taggable{}, notFound("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", id)
	case strings.HasPrefix(id, "ami-"):
		if im, ok := s.images[id]; ok {
			return taggable{id, "image", &im.tags}, nil
		}
		return taggable{}, notFound("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
	case strings.HasPrefix(id, "lt-"):
		if lt, ok := s.templates[id]; ok {
			return taggable{id, "launch-template", &lt.tags}, nil
		}
		return taggable{}, notFound("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
	case strings.HasPrefix(id, "fleet-"):
		if f, ok := s.fleets[id]; ok {
			return taggable{id, "fleet", &f.tags}, nil
		}
		return taggable{}, notFound("InvalidFleetId.NotFound", "The fleet ID '%s' does not exist", id)
	}
	return taggable{}, clientErr("InvalidID", "The ID '%s' is not valid", id)
}

// ---- CreateTags ----

type createTagsRequest struct {
	resources []string
	tags      map[string]string
}

func parseCreateTags(p *params) (createTagsRequest, error) {
	var r createTagsRequest
	r.resources = p.strList("ResourceId")
	if len(r.resources) == 0 {
		return r, missingParam("ResourceId.1")
	}
	ts, err := p.tags("Tag")
	if err != nil {
		return r, err
	}
	if len(ts) == 0 {
		return r, missingParam("Tag.1")
	}
	r.tags, err = tagMap(ts)
	return r, err
}

type returnResponse struct {
	responseMeta
	Return bool `xml:"return"`
}

// createTags is all or nothing: every resource must exist and stay under
// the tag limit before any is changed.
func (s *Sim) createTags(r createTagsRequest) (response, error) {
	var targets []taggable
	for _, id := range r.resources {
		t, err := s.resource(id)
		if err != nil {
			return nil, err
		}
		n := len(*t.tags)
		for k := range r.tags {
			if _, ok := (*t.tags)[k]; !ok {
				n++
			}
		}
		if n > maxTagsPerResource {
			return nil, clientErr("TagLimitExceeded", "The maximum number of Tags for a resource has been reached (%d) on %s", maxTagsPerResource, id)
		}
		targets = append(targets, t)
	}
	for _, t := range targets {
		*t.tags = mergeTags(*t.tags, r.tags)
	}
	return &returnResponse{Return: true}, nil
}

// ---- DeleteTags ----

type deleteTagsRequest struct {
	resources []string
	tags      []tag // empty: delete every (non-aws:) tag
}

func parseDeleteTags(p *params) (deleteTagsRequest, error) {
	var r deleteTagsRequest
	r.resources = p.strList("ResourceId")
	if len(r.resources) == 0 {
		return r, missingParam("ResourceId.1")
	}
	var err error
	r.tags, err = p.tags("Tag")
	for _, t := range r.tags {
		if strings.HasPrefix(strings.ToLower(t.Key), "aws:") {
			return r, invalidParam("Value ( %s ) for parameter key is invalid. Tag keys starting with 'aws:' are reserved for internal use", t.Key)
		}
	}
	return r, err
}

// deleteTags removes a key when no value is given, and only on a matching
// value when one is (an empty value matches only an empty value), as EC2
// does. Deleting tags that are not there is not an error.
func (s *Sim) deleteTags(r deleteTagsRequest) (response, error) {
	var targets []taggable
	for _, id := range r.resources {
		t, err := s.resource(id)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}
	for _, t := range targets {
		if len(r.tags) == 0 {
			for k := range *t.tags {
				if !strings.HasPrefix(k, "aws:") {
					delete(*t.tags, k)
				}
			}
			continue
		}
		for _, tg := range r.tags {
			v, ok := (*t.tags)[tg.Key]
			if ok && (!tg.HasValue || v == tg.Value) {
				delete(*t.tags, tg.Key)
			}
		}
	}
	return &returnResponse{Return: true}, nil
}

// ---- DescribeTags ----

type describeTagsRequest struct {
	filters []filter
	page    pageRequest
}

func parseDescribeTags(p *params) (describeTagsRequest, error) {
	var r describeTagsRequest
	var err error
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	r.page, err = readPage(p, "DescribeTags", pageLimits{min: 5, max: 1000})
	return r, err
}

type tagDescriptionXML struct {
	ResourceID   string `xml:"resourceId"`
	ResourceType string `xml:"resourceType"`
	Key          string `xml:"key"`
	Value        string `xml:"value"`
}

type describeTagsResponse struct {
	responseMeta
	Tags      itemList[tagDescriptionXML] `xml:"tagSet"`
	NextToken string                      `xml:"nextToken,omitempty"`
}

var tagFilters = filterSpec[tagDescriptionXML]{fields: map[string]func(tagDescriptionXML) []string{
	"resource-id":   func(t tagDescriptionXML) []string { return one(t.ResourceID) },
	"resource-type": func(t tagDescriptionXML) []string { return one(t.ResourceType) },
	"key":           func(t tagDescriptionXML) []string { return one(t.Key) },
	"value":         func(t tagDescriptionXML) []string { return []string{t.Value} },
}}

func (s *Sim) describeTags(r describeTagsRequest) (response, error) {
	match, err := tagFilters.compile(r.filters)
	if err != nil {
		return nil, err
	}
	var all []tagDescriptionXML
	add := func(id, rt string, tags map[string]string) {
		for _, k := range sortedKeys(tags) {
			all = append(all, tagDescriptionXML{ResourceID: id, ResourceType: rt, Key: k, Value: tags[k]})
		}
	}
	s.advanceAll()
	for _, id := range s.instanceOrder {
		if in, ok := s.instances[id]; ok && s.visible(in) {
			add(id, "instance", in.tags)
		}
	}
	for _, id := range s.subnetOrder {
		add(id, "subnet", s.subnets[id].tags)
	}
	for _, id := range s.groupOrder {
		add(id, "security-group", s.groups[id].tags)
	}
	for _, id := range s.vpcOrder {
		add(id, "vpc", s.vpcs[id].tags)
	}
	for _, id := range s.imageOrder {
		add(id, "image", s.images[id].tags)
	}
	for _, id := range s.templateOrder {
		add(id, "launch-template", s.templates[id].tags)
	}
	fleetIDs := make([]string, 0, len(s.fleets))
	for id := range s.fleets {
		fleetIDs = append(fleetIDs, id)
	}
	sort.Strings(fleetIDs)
	for _, id := range fleetIDs {
		add(id, "fleet", s.fleets[id].tags)
	}
	var out []tagDescriptionXML
	for _, t := range all {
		if match(t) {
			out = append(out, t)
		}
	}
	page, next := paginate(out, r.page)
	return &describeTagsResponse{Tags: items(page), NextToken: next}, nil
}
