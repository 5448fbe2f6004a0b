package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
)

// maxTemplateConfigs is CreateFleet's limit on launch template
// configurations in one request.
const maxTemplateConfigs = 50

// templateConfigs resolves AMIs and kubelet max pods for the options and
// returns one launch template configuration per (AMI, max pods), creating
// the templates as needed, each with its options as overrides.
func (l *Launcher) templateConfigs(ctx context.Context, cluster Cluster, req Request, opts []Option, subnets map[string]Subnet, labels map[string]string, taints []corev1.Taint, pg *PlacementGroup) ([]ec2types.FleetLaunchTemplateConfigRequest, error) {
	pool, nc := req.Pool, req.Class
	fam := family(nc)
	keySet := map[ImageKey]bool{}
	var keys []ImageKey
	for _, o := range opts {
		k := ImageKey{Arch: o.Arch, Variant: o.Variant}
		if !keySet[k] {
			keySet[k] = true
			keys = append(keys, k)
		}
	}
	amis, err := l.ResolveAMIs(ctx, nc, cluster.Version, keys)
	if err != nil {
		return nil, err
	}
	sgs, err := l.SecurityGroups(ctx, nc)
	if err != nil {
		return nil, err
	}
	profile := nc.InstanceProfile
	if profile == "" {
		profile = l.Cluster.InstanceProfile
	}
	md := model.MetadataOptions{HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 2, HTTPTokens: "required"}
	if nc.MetadataOptions != nil {
		md = *nc.MetadataOptions
	}
	kubelet := pool.Kubelet
	if kubelet == nil {
		kubelet = nc.Kubelet
	}
	if _, dropped := KubeletLabels(labels); len(dropped) > 0 {
		l.log().Debug("labels the kubelet sets itself or may not set are left out of the user data", "pool", pool.Name, "labels", dropped)
	}

	type group struct {
		ami                            AMI
		maxPods                        int64
		kubelet                        *model.Kubelet
		reservationID, reservationType string
		opts                           []Option
	}
	var groups []*group
	index := map[string]*group{}
	var unserved []string
	for _, o := range opts {
		ami, ok := amis[ImageKey{Arch: o.Arch, Variant: o.Variant}]
		if !ok {
			unserved = append(unserved, o.InstanceType)
			continue
		}
		mp := maxPodsFor(req, o, kubelet, nc)
		if fam == FamilyCustom {
			mp = 0 // the user's own bootstrap decides
		}
		kt, ok := kubeletFor(o, kubelet, nc)
		if !ok {
			unserved = append(unserved, o.InstanceType)
			continue
		}
		// A reserved option's template targets its reservation, so each
		// reservation gets a template (and a group) of its own; types
		// whose kubelet settings differ (CEL expressions) get their own.
		gk := ami.ID + "/" + strconv.FormatInt(mp, 10) + "/" + o.ReservationID + "/" + reservedKey(kt)
		g := index[gk]
		if g == nil {
			if len(groups) == maxTemplateConfigs {
				unserved = append(unserved, o.InstanceType)
				continue
			}
			g = &group{ami: ami, maxPods: mp, kubelet: kt, reservationID: o.ReservationID, reservationType: o.ReservationType}
			index[gk] = g
			groups = append(groups, g)
		}
		g.opts = append(g.opts, o)
	}
	if len(unserved) > 0 {
		l.log().Info("instance types left out of the launch: no AMI for their architecture or accelerator, kubelet expressions not evaluated for them, or over CreateFleet's template limit", "pool", pool.Name, "types", dedupe(unserved))
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("node class %q: no AMI serves any instance-type option (%s)", nc.Name, strings.Join(dedupe(unserved), ", "))
	}
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, g := range groups {
		nodeLabels := reservationLabels(labels, g.reservationID, g.reservationType)
		userData, err := UserData(fam, cluster, Node{Labels: nodeLabels, Taints: taints, MaxPods: g.maxPods, Kubelet: g.kubelet, InstanceStorePolicy: nc.InstanceStorePolicy}, nc.UserData)
		if err != nil {
			return nil, fmt.Errorf("node class %q: user data: %w", nc.Name, err)
		}
		name, _, err := l.EnsureTemplate(ctx, TemplateContent{
			ImageID: g.ami.ID, UserData: userData, SecurityGroups: sgs, InstanceProfile: profile,
			Metadata: md, BlockDevices: nc.BlockDeviceMappings, AssociatePublicIP: nc.AssociatePublicIP,
			DetailedMonitoring: nc.DetailedMonitoring, Tags: l.templateTags(nc),
			ReservationID: g.reservationID, ReservationType: g.reservationType,
			AvoidReservations: g.reservationID == "" && len(nc.CapacityReservationSelector) > 0,
			PlacementGroupID:  pg.id(), PlacementPartition: pg.partition(labels),
		})
		if err != nil {
			return nil, fmt.Errorf("node class %q: %w", nc.Name, err)
		}
		cfg := ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
		}
		for _, o := range g.opts {
			cfg.Overrides = append(cfg.Overrides, override(o, subnets[o.Zone].ID, g.ami.ID))
		}
		configs = append(configs, cfg)
	}
	return configs, nil
}

// reservationLabels are the labels of a node launched into the
// reservation (none: not reserved): the reservation's id and type, as
// Karpenter labels a reserved node; a node outside reservations carries
// neither, whatever the caller's labels said.
func reservationLabels(labels map[string]string, id, typ string) map[string]string {
	out := make(map[string]string, len(labels)+2)
	for k, v := range labels {
		if k != model.LabelReservationID && k != model.LabelReservationType {
			out[k] = v
		}
	}
	if id != "" {
		out[model.LabelReservationID] = id
		out[model.LabelReservationType] = typ
	}
	return out
}

// maxPodsFor is the pod capacity a node of the option's type gets.
func maxPodsFor(req Request, o Option, k *model.Kubelet, nc *model.NodeClass) int64 {
	if req.MaxPods > 0 {
		return req.MaxPods
	}
	if o.MaxPods > 0 {
		return o.MaxPods
	}
	if t, ok := catalog.Lookup(o.InstanceType); ok {
		return t.MaxPodsFor(k, nc)
	}
	return 0
}

// kubeletFor is the kubelet settings a node of the option's type boots
// with: the plan's (Option.Kubelet), else k evaluated for the type by the
// embedded catalog (catalog.InstanceType.KubeletFor). False when CEL
// expressions are left unevaluated (a type the embedded catalog does not
// know): written into the node's configuration they would keep it from
// starting.
func kubeletFor(o Option, k *model.Kubelet, nc *model.NodeClass) (*model.Kubelet, bool) {
	if o.Kubelet != nil {
		k = o.Kubelet
	} else if t, ok := catalog.Lookup(o.InstanceType); ok {
		k = t.KubeletFor(k, nc)
	}
	return k, k == nil || !k.EvaluateCEL || len(k.Expressions()) == 0
}

// reservedKey tells apart kubelet settings whose reservations differ
// (maxPods is in the group's key already).
func reservedKey(k *model.Kubelet) string {
	if k == nil || (len(k.KubeReserved) == 0 && len(k.SystemReserved) == 0) {
		return ""
	}
	b, _ := json.Marshal([]map[string]string{k.KubeReserved, k.SystemReserved})
	return string(b)
}

// userTemplateConfig launches from a user-managed template by name.
func userTemplateConfig(name string, opts []Option, subnets map[string]Subnet) []ec2types.FleetLaunchTemplateConfigRequest {
	cfg := ec2types.FleetLaunchTemplateConfigRequest{
		LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
	}
	for _, o := range opts {
		cfg.Overrides = append(cfg.Overrides, override(o, subnets[o.Zone].ID, ""))
	}
	return []ec2types.FleetLaunchTemplateConfigRequest{cfg}
}

func override(o Option, subnetID, imageID string) ec2types.FleetLaunchTemplateOverridesRequest {
	ov := ec2types.FleetLaunchTemplateOverridesRequest{
		InstanceType:     ec2types.InstanceType(o.InstanceType),
		SubnetId:         aws.String(subnetID),
		AvailabilityZone: aws.String(o.Zone),
		Priority:         aws.Float64(o.Price),
	}
	if imageID != "" {
		ov.ImageId = aws.String(imageID)
	}
	return ov
}
