package ec2sim

import (
	"regexp"
	"strings"
	"time"
)

// ImageSpec describes an AMI to seed. Joist picks AMIs by name, tags, owner
// and architecture and prefers non-deprecated, newer ones, so those are the
// fields that matter.
type ImageSpec struct {
	// ID is the AMI ID; empty means the simulator makes one up.
	ID          string
	Name        string
	Description string
	// Architecture is x86_64 or arm64 (amd64 is accepted as x86_64).
	Architecture string
	// OwnerID defaults to the simulator's account ("self").
	OwnerID string
	// OwnerAlias is "amazon" for AMIs AWS publishes (the EKS optimized
	// ones), which Owners=["amazon"] selects.
	OwnerAlias string
	// CreationDate defaults to when the simulator started.
	CreationDate time.Time
	// DeprecationTime, if set, is when the AMI becomes deprecated; after it,
	// DescribeImages leaves it out unless IncludeDeprecated is true, the
	// caller owns it, or asks for it by ID.
	DeprecationTime time.Time
	Tags            map[string]string
	// State defaults to "available".
	State  string
	Public bool
}

type image struct {
	id, name, description, arch string
	ownerID, ownerAlias, state  string
	creationDate, deprecation   time.Time
	tags                        map[string]string
	public                      bool
}

func (im *image) deprecatedAt(now time.Time) bool {
	return !im.deprecation.IsZero() && !now.Before(im.deprecation)
}

var imageIDPattern = regexp.MustCompile(`^ami-([0-9a-f]{8}|[0-9a-f]{17})$`)

// ---- DescribeImages ----

type describeImagesRequest struct {
	ids, owners       []string
	includeDeprecated bool
	filters           []filter
	page              pageRequest
}

func parseDescribeImages(p *params) (describeImagesRequest, error) {
	var r describeImagesRequest
	var err error
	r.ids = p.strList("ImageId")
	r.owners = p.strList("Owner")
	// Launch permissions are not simulated: every image is usable by the
	// account, so ExecutableBy narrows nothing.
	p.strList("ExecutableBy")
	if r.includeDeprecated, err = p.boolean("IncludeDeprecated"); err != nil {
		return r, err
	}
	if _, err = p.boolean("IncludeDisabled"); err != nil {
		return r, err
	}
	if r.filters, err = p.filters(); err != nil {
		return r, err
	}
	r.page, err = readPage(p, "DescribeImages", pageLimits{min: 5, max: 1000})
	return r, err
}

var imageFilters = filterSpec[*image]{
	fields: map[string]func(*image) []string{
		"image-id":            func(im *image) []string { return one(im.id) },
		"name":                func(im *image) []string { return one(im.name) },
		"description":         func(im *image) []string { return one(im.description) },
		"architecture":        func(im *image) []string { return one(im.arch) },
		"owner-id":            func(im *image) []string { return one(im.ownerID) },
		"owner-alias":         func(im *image) []string { return one(im.ownerAlias) },
		"state":               func(im *image) []string { return one(im.state) },
		"is-public":           func(im *image) []string { return boolStr(im.public) },
		"image-type":          func(*image) []string { return one("machine") },
		"virtualization-type": func(*image) []string { return one("hvm") },
		"root-device-type":    func(*image) []string { return one("ebs") },
		"hypervisor":          func(*image) []string { return one("xen") },
		"creation-date":       func(im *image) []string { return one(ec2Time(im.creationDate)) },
	},
	tags: func(im *image) map[string]string { return im.tags },
}

type imageXML struct {
	ImageID            string            `xml:"imageId"`
	ImageLocation      string            `xml:"imageLocation"`
	ImageState         string            `xml:"imageState"`
	ImageOwnerID       string            `xml:"imageOwnerId"`
	CreationDate       string            `xml:"creationDate"`
	IsPublic           bool              `xml:"isPublic"`
	Architecture       string            `xml:"architecture"`
	ImageType          string            `xml:"imageType"`
	ImageOwnerAlias    string            `xml:"imageOwnerAlias,omitempty"`
	Name               string            `xml:"name"`
	Description        string            `xml:"description,omitempty"`
	RootDeviceType     string            `xml:"rootDeviceType"`
	RootDeviceName     string            `xml:"rootDeviceName"`
	VirtualizationType string            `xml:"virtualizationType"`
	Hypervisor         string            `xml:"hypervisor"`
	EnaSupport         bool              `xml:"enaSupport"`
	SriovNetSupport    string            `xml:"sriovNetSupport"`
	PlatformDetails    string            `xml:"platformDetails"`
	UsageOperation     string            `xml:"usageOperation"`
	DeprecationTime    string            `xml:"deprecationTime,omitempty"`
	TagSet             *itemList[tagXML] `xml:"tagSet,omitempty"`
}

type describeImagesResponse struct {
	responseMeta
	Images    itemList[imageXML] `xml:"imagesSet"`
	NextToken string             `xml:"nextToken,omitempty"`
}

func (s *Sim) describeImages(r describeImagesRequest) (response, error) {
	match, err := imageFilters.compile(r.filters)
	if err != nil {
		return nil, err
	}
	now := s.now()
	explicit := map[string]bool{}
	var candidates []*image
	if len(r.ids) > 0 {
		var missing []string
		for _, id := range r.ids {
			if !imageIDPattern.MatchString(id) {
				return nil, clientErr("InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", id)
			}
			im, ok := s.images[id]
			if !ok {
				missing = append(missing, id)
				continue
			}
			explicit[id] = true
			candidates = append(candidates, im)
		}
		if len(missing) > 0 {
			return nil, notFound("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", strings.Join(missing, ", "))
		}
	} else {
		for _, id := range s.imageOrder {
			candidates = append(candidates, s.images[id])
		}
	}
	var out []imageXML
	for _, im := range candidates {
		if !s.ownedBy(im, r.owners) || !match(im) {
			continue
		}
		if im.deprecatedAt(now) && !r.includeDeprecated && !explicit[im.id] && im.ownerID != s.opts.AccountID {
			continue
		}
		x := imageXML{
			ImageID: im.id, ImageLocation: im.ownerID + "/" + im.name, ImageState: im.state, ImageOwnerID: im.ownerID,
			CreationDate: ec2Time(im.creationDate), IsPublic: im.public, Architecture: im.arch, ImageType: "machine",
			ImageOwnerAlias: im.ownerAlias, Name: im.name, Description: im.description, RootDeviceType: "ebs",
			RootDeviceName: "/dev/xvda", VirtualizationType: "hvm", Hypervisor: "xen", EnaSupport: true, SriovNetSupport: "simple",
			PlatformDetails: "Linux/UNIX", UsageOperation: "RunInstances", TagSet: optItems(tagsXML(im.tags)),
		}
		if !im.deprecation.IsZero() {
			x.DeprecationTime = ec2Time(im.deprecation)
		}
		out = append(out, x)
	}
	page, next := paginate(out, r.page)
	return &describeImagesResponse{Images: items(page), NextToken: next}, nil
}

// ownedBy applies DescribeImages' Owners: "self", an owner alias such as
// "amazon", or an account ID; several are ORed, none means any owner.
func (s *Sim) ownedBy(im *image, owners []string) bool {
	if len(owners) == 0 {
		return true
	}
	for _, o := range owners {
		switch {
		case o == "self" && im.ownerID == s.opts.AccountID:
			return true
		case o != "self" && (o == im.ownerID || (im.ownerAlias != "" && o == im.ownerAlias)):
			return true
		}
	}
	return false
}
