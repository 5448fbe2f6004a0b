package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/joist-dev/joist/pkg/model"
)

// TemplateContent is everything a launch template fixes. Its hash names
// the template, so equal content shares one template and changed content
// (a new AMI, an edited node class) gets a new one; the old one stays
// until DeleteUnusedTemplates finds no instance using it.
type TemplateContent struct {
	ImageID         string                     `json:"imageID"`
	UserData        string                     `json:"userData"`
	SecurityGroups  []string                   `json:"securityGroups"`
	InstanceProfile string                     `json:"instanceProfile,omitempty"`
	Metadata        model.MetadataOptions      `json:"metadata"`
	BlockDevices    []model.BlockDeviceMapping `json:"blockDevices,omitempty"`
	// AssociatePublicIP, when set, puts the groups on a primary network
	// interface that asks for (or refuses) a public address.
	AssociatePublicIP  *bool `json:"associatePublicIP,omitempty"`
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	// Tags go on the template itself.
	Tags map[string]string `json:"tags,omitempty"`
	// ReservationID is the capacity reservation the template launches
	// into (only there: capacity-reservations-only), ReservationType its
	// type; a capacity block also needs the capacity-block market. Being
	// content, two reservations never share a template.
	ReservationID   string `json:"reservationID,omitempty"`
	ReservationType string `json:"reservationType,omitempty"`
	// AvoidReservations keeps an on-demand launch out of open
	// reservations (preference none): for node classes that select
	// reservations, whose room the plan counts, so an ordinary launch
	// must not silently use it up (Karpenter does the same once reserved
	// capacity is on).
	AvoidReservations bool `json:"avoidReservations,omitempty"`
	// PlacementGroupID is the placement group the template launches into
	// (the node class's placementGroupSelector), PlacementPartition the
	// partition of a partition group (0: EC2 picks).
	PlacementGroupID   string `json:"placementGroupID,omitempty"`
	PlacementPartition int32  `json:"placementPartition,omitempty"`
}

// TemplatePrefix starts the name of every launch template Joist makes for
// the cluster, so they can be listed and told apart from anyone else's.
func TemplatePrefix(cluster string) string {
	// Template names hold at most 128 characters: a very long cluster
	// name is replaced by its hash.
	if len(cluster) > 80 {
		sum := sha256.Sum256([]byte(cluster))
		cluster = hex.EncodeToString(sum[:8])
	}
	return "joist/" + cluster + "/"
}

// Name is the template's content-addressed name.
func (c TemplateContent) Name(cluster string) string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return TemplatePrefix(cluster) + hex.EncodeToString(sum[:12])
}

// isTemplateNotFound tells whether err is EC2 saying a launch template
// does not exist (by name or by id; note the inconsistent suffixes).
func isTemplateNotFound(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound", "InvalidLaunchTemplateId.NotFoundException":
		return true
	}
	return false
}

// EnsureTemplate returns the name and id of the launch template for
// content, creating it when it does not exist yet. Safe to call
// concurrently and repeatedly: a lost creation race reads the winner's
// template. The first call lists the cluster's existing templates once,
// so a cold start does not ask about each template separately.
func (l *Launcher) EnsureTemplate(ctx context.Context, c TemplateContent) (string, string, error) {
	name := c.Name(l.Cluster.Name)
	if err := l.hydrate(ctx); err != nil {
		return "", "", err
	}
	l.mu.Lock()
	id, ok := l.templates[name]
	l.mu.Unlock()
	if ok {
		return name, id, nil
	}
	id, err := l.createTemplate(ctx, name, c)
	if err != nil {
		return "", "", err
	}
	l.rememberTemplate(name, id)
	return name, id, nil
}

func (l *Launcher) rememberTemplate(name, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.templates == nil {
		l.templates = map[string]string{}
	}
	l.templates[name] = id
}

// forgetTemplate drops a template from the cache, after EC2 said it is
// gone (the reaper deleted it, or someone did by hand).
func (l *Launcher) forgetTemplate(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.templates, name)
}

// hydrate lists the cluster's templates once per Launcher.
func (l *Launcher) hydrate(ctx context.Context) error {
	l.mu.Lock()
	done := l.hydrated
	l.mu.Unlock()
	if done {
		return nil
	}
	ts, err := l.listTemplates(ctx)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.templates == nil {
		l.templates = map[string]string{}
	}
	for _, t := range ts {
		l.templates[t.Name] = t.ID
	}
	l.hydrated = true
	return nil
}

// Template is one of the cluster's launch templates.
type Template struct {
	ID, Name string
	Created  time.Time
}

// Templates lists the launch templates Joist made for this cluster:
// tagged for it and named under its prefix.
func (l *Launcher) Templates(ctx context.Context) ([]Template, error) { return l.listTemplates(ctx) }

// listTemplates lists the launch templates Joist made for this cluster:
// tagged for it and named under its prefix.
func (l *Launcher) listTemplates(ctx context.Context) ([]Template, error) {
	p := ec2.NewDescribeLaunchTemplatesPaginator(l.EC2, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + TagCluster), Values: []string{l.Cluster.Name}},
		{Name: aws.String("launch-template-name"), Values: []string{TemplatePrefix(l.Cluster.Name) + "*"}},
	}})
	var out []Template
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the cluster's launch templates: %w", err)
		}
		for _, t := range page.LaunchTemplates {
			out = append(out, Template{ID: aws.ToString(t.LaunchTemplateId), Name: aws.ToString(t.LaunchTemplateName), Created: aws.ToTime(t.CreateTime)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (l *Launcher) findTemplate(ctx context.Context, name string) (string, error) {
	out, err := l.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	if err != nil {
		if isTemplateNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("describe launch template %s: %w", name, err)
	}
	for _, t := range out.LaunchTemplates {
		return aws.ToString(t.LaunchTemplateId), nil
	}
	return "", nil
}

func (l *Launcher) createTemplate(ctx context.Context, name string, c TemplateContent) (string, error) {
	md := c.Metadata
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:  aws.String(c.ImageID),
		UserData: aws.String(c.UserData),
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(orDefault(md.HTTPEndpoint, "enabled")),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(orDefault(md.HTTPProtocolIPv6, "disabled")),
			HttpPutResponseHopLimit: aws.Int32(max(md.HTTPPutResponseHopLimit, 1)),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(orDefault(md.HTTPTokens, "required")),
		},
	}
	if c.UserData == "" {
		data.UserData = nil
	}
	// What CreateFleet creates beside the instance and its volumes (which
	// the fleet request tags) carries the cluster's tags too: the network
	// interface, and for spot the spot request. The policy allows creating
	// only resources tagged with the cluster, so an untagged one would be
	// refused, and untagged ones could not be found again.
	for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeNetworkInterface, ec2types.ResourceTypeSpotInstancesRequest} {
		data.TagSpecifications = append(data.TagSpecifications, ec2types.LaunchTemplateTagSpecificationRequest{ResourceType: rt, Tags: ec2Tags(c.Tags)})
	}
	if c.AssociatePublicIP != nil {
		// EC2 takes the groups on the interface when an interface is
		// given, never both.
		data.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: c.AssociatePublicIP, Groups: c.SecurityGroups,
		}}
	} else {
		data.SecurityGroupIds = c.SecurityGroups
	}
	if c.DetailedMonitoring != nil {
		data.Monitoring = &ec2types.LaunchTemplatesMonitoringRequest{Enabled: c.DetailedMonitoring}
	}
	switch {
	case c.ReservationID != "":
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(c.ReservationID)},
		}
		if c.ReservationType == ReservationTypeCapacityBlock {
			data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
		}
	case c.AvoidReservations:
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceNone,
		}
	}
	if c.PlacementGroupID != "" {
		data.Placement = &ec2types.LaunchTemplatePlacementRequest{GroupId: aws.String(c.PlacementGroupID)}
		if c.PlacementPartition > 0 {
			data.Placement.PartitionNumber = aws.Int32(c.PlacementPartition)
		}
	}
	if c.InstanceProfile != "" {
		data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(c.InstanceProfile)}
	}
	for _, bd := range c.BlockDevices {
		m, err := blockDevice(bd)
		if err != nil {
			return "", fmt.Errorf("launch template %s: %w", name, err)
		}
		data.BlockDeviceMappings = append(data.BlockDeviceMappings, m)
	}
	out, err := l.EC2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags:         ec2Tags(c.Tags),
		}},
	})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "InvalidLaunchTemplateName.AlreadyExistsException" {
			id, ferr := l.findTemplate(ctx, name)
			if ferr == nil && id == "" {
				ferr = fmt.Errorf("launch template %s: EC2 says it exists but cannot describe it", name)
			}
			return id, ferr
		}
		return "", fmt.Errorf("create launch template %s: %w", name, err)
	}
	l.log().Info("created launch template", "name", name, "id", aws.ToString(out.LaunchTemplate.LaunchTemplateId), "image", c.ImageID)
	return aws.ToString(out.LaunchTemplate.LaunchTemplateId), nil
}

func blockDevice(bd model.BlockDeviceMapping) (ec2types.LaunchTemplateBlockDeviceMappingRequest, error) {
	m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: aws.String(bd.DeviceName)}
	if bd.VirtualName != "" {
		m.VirtualName = aws.String(bd.VirtualName)
	}
	e := bd.EBS
	if e == nil {
		return m, nil
	}
	m.Ebs = &ec2types.LaunchTemplateEbsBlockDeviceRequest{
		DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted,
		VolumeType: ec2types.VolumeType(e.VolumeType),
	}
	if e.IOPS != nil {
		m.Ebs.Iops = aws.Int32(int32(*e.IOPS))
	}
	if e.Throughput != nil {
		m.Ebs.Throughput = aws.Int32(int32(*e.Throughput))
	}
	if e.KMSKeyID != "" {
		m.Ebs.KmsKeyId = aws.String(e.KMSKeyID)
	}
	if e.SnapshotID != "" {
		m.Ebs.SnapshotId = aws.String(e.SnapshotID)
	}
	if e.VolumeSize != "" {
		gib, ok := volumeGiB(e.VolumeSize)
		if !ok {
			return m, fmt.Errorf("block device %s: volumeSize %q is not a size", bd.DeviceName, e.VolumeSize)
		}
		m.Ebs.VolumeSize = aws.Int32(gib)
	}
	return m, nil
}

// DeleteUnusedTemplates deletes the cluster's launch templates that no
// live instance was launched from, keeping any younger than minAge (a
// concurrent launch may be about to use a template it just made; a launch
// that loses the race anyway recreates it). live is the cluster's
// instances as Instances lists them. It returns the names deleted.
func (l *Launcher) DeleteUnusedTemplates(ctx context.Context, live []Instance, minAge time.Duration) ([]string, error) {
	inUse := map[string]bool{}
	for _, i := range live {
		if i.LaunchTemplateID != "" {
			inUse[i.LaunchTemplateID] = true
		}
	}
	ts, err := l.listTemplates(ctx)
	if err != nil {
		return nil, err
	}
	now := l.now()
	var deleted []string
	var errs []error
	for _, t := range ts {
		if inUse[t.ID] || now.Sub(t.Created) < minAge {
			continue
		}
		l.forgetTemplate(t.Name)
		_, err := l.EC2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(t.ID)})
		if err != nil && !isTemplateNotFound(err) {
			errs = append(errs, fmt.Errorf("delete launch template %s: %w", t.Name, err))
			continue
		}
		deleted = append(deleted, t.Name)
	}
	if len(deleted) > 0 {
		l.log().Info("deleted unused launch templates", "count", len(deleted), "names", deleted)
	}
	return deleted, errors.Join(errs...)
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func ec2Tags(m map[string]string) []ec2types.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tags := make([]ec2types.Tag, len(keys))
	for i, k := range keys {
		tags[i] = ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])}
	}
	return tags
}
