package launch

import (
	"encoding/base64"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/kubeletsim"
)

// seedSpec is the seed's service Provisioner and AWSNodeTemplate (AL2,
// v0.20), plus a v1 pool allowing spot and on-demand on AL2023.
const seedSpec = `
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: service}
spec:
  taints: [{key: service, value: "true", effect: NoSchedule}]
  labels: {nodeType: service-2023}
  requirements:
  - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.large, t3.xlarge]}
  - {key: topology.kubernetes.io/zone, operator: In, values: [ap-northeast-2a, ap-northeast-2c]}
  - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  providerRef: {name: service-lt}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: service-lt}
spec:
  subnetSelector: {karpenter.sh/discovery/hoon-cluster: '*'}
  securityGroupSelector: {aws:eks:cluster-name: hoon-cluster}
  tags: {karpenter.sh/discovery: hoon-cluster, team: platform}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: batch}
spec:
  template:
    metadata:
      labels: {workload: batch}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: batch}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      taints: [{key: batch, effect: NoSchedule}]
      startupTaints: [{key: example.com/agent-not-ready, effect: NoExecute}]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: batch}
spec:
  role: KarpenterNodeRole-hoon-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: hoon-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: hoon-cluster}}]
  kubelet: {maxPods: 40}
  tags: {cost-center: "42"}
`

func serviceRequest(t *testing.T, token string) Request {
	t.Helper()
	s := spec(t, seedSpec)
	pool, nc := poolOf(t, s, "service")
	return Request{
		Pool: pool, Class: nc, Token: token,
		Options: options(t, []string{"t3.large", "t3.xlarge"}, []string{zoneA, zoneC}, []string{model.CapacityTypeOnDemand}),
		Labels:  map[string]string{"nodeType": "service-2023", "karpenter.sh/provisioner-name": "service", "node.kubernetes.io/instance-type": "t3.large"},
	}
}

func batchRequest(t *testing.T, token string, types ...string) Request {
	t.Helper()
	s := spec(t, seedSpec)
	pool, nc := poolOf(t, s, "batch")
	return Request{
		Pool: pool, Class: nc, Token: token,
		Options: options(t, types, []string{zoneA, zoneB, zoneC}, []string{model.CapacityTypeOnDemand, model.CapacityTypeSpot}),
		Labels:  map[string]string{"workload": "batch", "karpenter.sh/nodepool": "batch"},
	}
}

// TestLaunchSendsKarpentersCreateFleet checks the request the simulator
// received for the seed's service pool: instant, one instance, on-demand
// lowest-price, overrides = instance types × the zones' subnets with the
// AMI, one launch template per (AMI, max pods), the tags on instance,
// volumes and fleet, the plan's client token.
func TestLaunchSendsKarpentersCreateFleet(t *testing.T) {
	e := newEnv(t, "1.32")
	req := serviceRequest(t, "joist-token-1")
	inst, err := e.l.Launch(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	calls := e.sim.CreateFleetCalls()
	if len(calls) != 1 {
		t.Fatalf("CreateFleet calls = %d, want 1", len(calls))
	}
	c := calls[0]
	if c.Type != "instant" || c.TotalTargetCapacity != 1 || c.DefaultTargetCapacityType != "on-demand" ||
		c.OnDemandAllocationStrategy != "lowest-price" || c.SpotAllocationStrategy != "" || c.ClientToken != "joist-token-1" {
		t.Errorf("fleet = type %s, capacity %d %s, strategies od=%q spot=%q, token %q", c.Type, c.TotalTargetCapacity, c.DefaultTargetCapacityType,
			c.OnDemandAllocationStrategy, c.SpotAllocationStrategy, c.ClientToken)
	}
	al2 := e.images["/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id"]
	var got []string
	for _, cfg := range c.LaunchTemplateConfigs {
		if cfg.Version != "$Latest" || !strings.HasPrefix(cfg.LaunchTemplateName, "joist/hoon-cluster/") {
			t.Errorf("template spec %+v", cfg)
		}
		for _, o := range cfg.Overrides {
			got = append(got, o.InstanceType+"@"+o.AvailabilityZone+"/"+o.SubnetID+"/"+o.ImageID)
		}
	}
	want := []string{
		"t3.large@" + zoneA + "/" + e.seeded.SubnetIDs[zoneA] + "/" + al2,
		"t3.large@" + zoneC + "/" + e.seeded.SubnetIDs[zoneC] + "/" + al2,
		"t3.xlarge@" + zoneA + "/" + e.seeded.SubnetIDs[zoneA] + "/" + al2,
		"t3.xlarge@" + zoneC + "/" + e.seeded.SubnetIDs[zoneC] + "/" + al2,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("overrides =\n%v\nwant\n%v", got, want)
	}
	if len(c.LaunchTemplateConfigs) != 2 {
		t.Errorf("launch template configs = %d, want 2 (t3.large and t3.xlarge differ in max pods)", len(c.LaunchTemplateConfigs))
	}
	wantTags := map[string]string{
		TagCluster: testCluster, TagNodePool: "service", TagNodeClass: "service-lt", "Name": "joist/hoon-cluster/service",
		"kubernetes.io/cluster/hoon-cluster": "owned", "karpenter.sh/discovery": testCluster, "team": "platform",
		TagSpecHash: model.SpecHash(req.Pool, req.Class),
	}
	var resources []string
	for _, ts := range c.TagSpecifications {
		resources = append(resources, ts.ResourceType)
		if !reflect.DeepEqual(ts.Tags, wantTags) {
			t.Errorf("%s tags = %v, want %v", ts.ResourceType, ts.Tags, wantTags)
		}
	}
	sort.Strings(resources)
	if !reflect.DeepEqual(resources, []string{"fleet", "instance", "volume"}) {
		t.Errorf("tagged resources = %v", resources)
	}

	simInst, ok := e.sim.Instance(inst.ID)
	if !ok {
		t.Fatalf("instance %s not in the simulator", inst.ID)
	}
	if inst.InstanceType != "t3.large" || inst.Zone != zoneA || inst.CapacityType != "on-demand" || inst.SubnetID != e.seeded.SubnetIDs[zoneA] || inst.LaunchTemplateID != simInst.LaunchTemplateID {
		t.Errorf("instance = %+v, want the cheapest t3.large in %s from template %s", inst, zoneA, simInst.LaunchTemplateID)
	}
	for k, v := range wantTags {
		if simInst.Tags[k] != v || simInst.VolumeTags[k] != v {
			t.Errorf("instance tag %s = %q, volume tag %q, want %q", k, simInst.Tags[k], simInst.VolumeTags[k], v)
		}
	}
	if simInst.IAMInstanceProfileARN != "arn:aws:iam::000000000000:instance-profile/KarpenterNodeInstanceProfile-hoon-cluster" {
		t.Errorf("instance profile = %s, want the cluster default", simInst.IAMInstanceProfileARN)
	}
	if !reflect.DeepEqual(simInst.SecurityGroupIDs, []string{e.seeded.SecurityGroupID}) {
		t.Errorf("groups = %v", simInst.SecurityGroupIDs)
	}
	reg, err := kubeletsim.ParseUserData(simInst.UserData)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"nodeType": "service-2023", "karpenter.sh/provisioner-name": "service", "karpenter.sh/capacity-type": "on-demand"}
	if reg.Format != "AL2" || !reflect.DeepEqual(reg.Labels, wantLabels) || reg.MaxPods != 35 {
		t.Errorf("node registers as %s with labels %v, max pods %d; want AL2, %v, 35", reg.Format, reg.Labels, reg.MaxPods, wantLabels)
	}
	if len(reg.Taints) != 1 || reg.Taints[0] != taint("service", "true", "NoSchedule") {
		t.Errorf("taints = %v", reg.Taints)
	}

	// The template: IMDSv2 required (hop limit 2 as v0.20), the family's
	// root volume, tagged for the cluster.
	v, err := e.ec2.DescribeLaunchTemplateVersions(e.ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(simInst.LaunchTemplateID), Versions: []string{"$Latest"}})
	if err != nil {
		t.Fatal(err)
	}
	d := v.LaunchTemplateVersions[0].LaunchTemplateData
	if d.MetadataOptions.HttpTokens != "required" || aws.ToInt32(d.MetadataOptions.HttpPutResponseHopLimit) != 2 || d.MetadataOptions.HttpEndpoint != "enabled" {
		t.Errorf("metadata options = %+v", d.MetadataOptions)
	}
	if len(d.BlockDeviceMappings) != 1 {
		t.Fatalf("block devices = %+v", d.BlockDeviceMappings)
	}
	bd := d.BlockDeviceMappings[0]
	if aws.ToString(bd.DeviceName) != "/dev/xvda" || aws.ToInt32(bd.Ebs.VolumeSize) != 20 || bd.Ebs.VolumeType != "gp3" || !aws.ToBool(bd.Ebs.Encrypted) {
		t.Errorf("root volume = %s %+v, want /dev/xvda 20 GiB gp3 encrypted", aws.ToString(bd.DeviceName), *bd.Ebs)
	}
	lts, err := e.ec2.DescribeLaunchTemplates(e.ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{simInst.LaunchTemplateID}})
	if err != nil {
		t.Fatal(err)
	}
	ltTags := map[string]string{}
	for _, tg := range lts.LaunchTemplates[0].Tags {
		ltTags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if ltTags[TagCluster] != testCluster || ltTags[TagNodeClass] != "service-lt" || ltTags["kubernetes.io/cluster/hoon-cluster"] != "owned" {
		t.Errorf("template tags = %v", ltTags)
	}
}

// TestLaunchPrefersSpotWhenThePoolAllowsIt: a pool allowing spot and
// on-demand launches spot with price-capacity-optimized, and its AL2023
// node carries the pool's labels, taints, startup taints and max pods.
func TestLaunchPrefersSpotWhenThePoolAllowsIt(t *testing.T) {
	e := newEnv(t, "1.32")
	inst, err := e.l.Launch(e.ctx, batchRequest(t, "joist-batch", "m5.large", "t3.large", "c6g.large"))
	if err != nil {
		t.Fatal(err)
	}
	c := e.sim.CreateFleetCalls()[0]
	if c.DefaultTargetCapacityType != "spot" || c.SpotAllocationStrategy != "price-capacity-optimized" || c.OnDemandAllocationStrategy != "" {
		t.Errorf("fleet capacity %s, spot %q, od %q; want spot with price-capacity-optimized", c.DefaultTargetCapacityType, c.SpotAllocationStrategy, c.OnDemandAllocationStrategy)
	}
	if inst.CapacityType != "spot" {
		t.Errorf("instance capacity type = %s, want spot", inst.CapacityType)
	}
	images := map[string]bool{}
	for _, cfg := range c.LaunchTemplateConfigs {
		for _, o := range cfg.Overrides {
			images[o.InstanceType+"="+o.ImageID] = true
		}
	}
	x86 := e.images["/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/standard/recommended/image_id"]
	arm := e.images["/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/arm64/standard/recommended/image_id"]
	for _, want := range []string{"m5.large=" + x86, "t3.large=" + x86, "c6g.large=" + arm} {
		if !images[want] {
			t.Errorf("overrides lack %s: %v", want, images)
		}
	}
	if len(c.LaunchTemplateConfigs) != 2 {
		t.Errorf("configs = %d, want 2 (one per architecture; maxPods is fixed at 40)", len(c.LaunchTemplateConfigs))
	}
	simInst, _ := e.sim.Instance(inst.ID)
	reg, err := kubeletsim.ParseUserData(simInst.UserData)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"workload": "batch", "karpenter.sh/nodepool": "batch", "karpenter.sh/capacity-type": "spot"}
	wantTaints := []string{"batch:NoSchedule", "example.com/agent-not-ready:NoExecute"}
	var taints []string
	for _, tn := range reg.Taints {
		taints = append(taints, taintString(tn))
	}
	if reg.Format != "AL2023" || !reflect.DeepEqual(reg.Labels, wantLabels) || !reflect.DeepEqual(taints, wantTaints) || reg.MaxPods != 40 {
		t.Errorf("registers as %s with %v, taints %v, max pods %d; want AL2023, %v, %v, 40", reg.Format, reg.Labels, taints, reg.MaxPods, wantLabels, wantTaints)
	}
}

// TestLaunchTriesAtMostSixtyTypesCheapestFirst hands the launcher more
// types than CreateFleet should try.
func TestLaunchTriesAtMostSixtyTypesCheapestFirst(t *testing.T) {
	var names []string
	for _, it := range catalog.All() {
		if it.Arch == "amd64" && it.GPUCount == 0 && it.AcceleratorCount == 0 && it.OnDemandPrice[testRegion] > 0 && it.MaxENIs > 0 {
			names = append(names, it.Name)
		}
		if len(names) == 70 {
			break
		}
	}
	e := newEnv(t, "1.32", func(o *ec2sim.Options) { o.InstanceTypes = simTypes(t, names...) })
	s := spec(t, seedSpec)
	pool, nc := poolOf(t, s, "service")
	opts := options(t, names, []string{zoneA}, []string{model.CapacityTypeOnDemand})
	if _, err := e.l.Launch(e.ctx, Request{Pool: pool, Class: nc, Options: opts, Token: "many"}); err != nil {
		t.Fatal(err)
	}
	sort.Slice(opts, func(i, j int) bool {
		if opts[i].Price != opts[j].Price {
			return opts[i].Price < opts[j].Price
		}
		return opts[i].InstanceType < opts[j].InstanceType
	})
	want := map[string]bool{}
	for _, o := range opts[:MaxInstanceTypes] {
		want[o.InstanceType] = true
	}
	got := map[string]bool{}
	for _, cfg := range e.sim.CreateFleetCalls()[0].LaunchTemplateConfigs {
		for _, o := range cfg.Overrides {
			got[o.InstanceType] = true
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tried %d types, want the %d cheapest", len(got), MaxInstanceTypes)
	}
}

// TestLaunchFallsBackWithinOneFleet: with the cheapest type out of
// capacity in both zones, the same CreateFleet launches the next option.
func TestLaunchFallsBackWithinOneFleet(t *testing.T) {
	e := newEnv(t, "1.32")
	e.sim.SetInsufficientCapacity("t3.large", "", "on-demand", true)
	inst, err := e.l.Launch(e.ctx, serviceRequest(t, "fallback"))
	if err != nil {
		t.Fatal(err)
	}
	if inst.InstanceType != "t3.xlarge" {
		t.Errorf("launched %s, want t3.xlarge", inst.InstanceType)
	}
	calls := e.sim.CreateFleetCalls()
	if len(calls) != 1 || len(calls[0].Errors) != 2 {
		t.Fatalf("CreateFleet calls = %d, errors %v; want one call reporting both t3.large pools", len(calls), calls[0].Errors)
	}
}

// TestLaunchOutOfCapacityEverywhere: every option out of capacity is a
// CapacityError listing the offerings; when the plan comes back later
// with the same token, the launcher sends a fresh client token (EC2
// would replay the failure) and launches once capacity is back.
func TestLaunchOutOfCapacityEverywhere(t *testing.T) {
	e := newEnv(t, "1.32")
	e.sim.SetInsufficientCapacity("", "", "on-demand", true)
	_, err := e.l.Launch(e.ctx, serviceRequest(t, "plan-1"))
	var ce *CapacityError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a CapacityError", err)
	}
	var offs []string
	for _, o := range ce.Offerings {
		offs = append(offs, o.InstanceType+"/"+o.Zone+"/"+o.CapacityType)
	}
	sort.Strings(offs)
	want := []string{"t3.large/ap-northeast-2a/on-demand", "t3.large/ap-northeast-2c/on-demand", "t3.xlarge/ap-northeast-2a/on-demand", "t3.xlarge/ap-northeast-2c/on-demand"}
	if !reflect.DeepEqual(offs, want) || !reflect.DeepEqual(ce.Codes, []string{"InsufficientInstanceCapacity"}) || ce.Pool != "service" {
		t.Errorf("capacity error = pool %s, codes %v, offerings %v", ce.Pool, ce.Codes, offs)
	}
	e.sim.SetInsufficientCapacity("", "", "on-demand", false)
	inst, err := e.l.Launch(e.ctx, serviceRequest(t, "plan-1"))
	if err != nil {
		t.Fatalf("relaunch after capacity returned: %v", err)
	}
	calls := e.sim.CreateFleetCalls()
	if len(calls) != 2 || calls[1].ClientToken == "plan-1" || calls[1].Replayed {
		t.Errorf("second call token %q replayed=%t; want a fresh token, not the failed plan-1", calls[1].ClientToken, calls[1].Replayed)
	}
	// That token now stands for this instance: a retry of the same plan
	// finds it instead of launching another.
	again, err := e.l.Launch(e.ctx, serviceRequest(t, "plan-1"))
	if err != nil || again.ID != inst.ID {
		t.Errorf("retry of the launched plan = %v, %v; want instance %s again", again, err, inst.ID)
	}
	if n := len(e.sim.Instances()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

// TestLaunchMovesToAnotherSubnetWhenOneIsFull: a subnet out of addresses
// is marked and the zone's other subnet used in the same launch.
func TestLaunchMovesToAnotherSubnetWhenOneIsFull(t *testing.T) {
	e := newEnv(t, "1.32")
	spare := e.sim.AddSubnet(zoneA, "10.0.128.0/24", map[string]string{"karpenter.sh/discovery/hoon-cluster": testCluster})
	// The launcher believes the listing it cached before the addresses ran out.
	req := serviceRequest(t, "full")
	if _, err := e.l.Subnets(e.ctx, req.Class); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.SetSubnetFreeIPs(e.seeded.SubnetIDs[zoneA], 0); err != nil {
		t.Fatal(err)
	}
	e.sim.SetInsufficientCapacity("", zoneC, "", true)
	inst, err := e.l.Launch(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if inst.SubnetID != spare || inst.Zone != zoneA {
		t.Errorf("launched in %s/%s, want the spare subnet %s", inst.Zone, inst.SubnetID, spare)
	}
	calls := e.sim.CreateFleetCalls()
	if len(calls) != 2 || calls[1].ClientToken == calls[0].ClientToken {
		t.Fatalf("calls = %d (tokens %q); want a retry with its own token", len(calls), calls[0].ClientToken)
	}
	got, _ := e.l.Subnets(e.ctx, req.Class)
	if got[zoneA].ID != spare {
		t.Errorf("after the failure zone a's subnet = %s, want %s (the full one is skipped)", got[zoneA].ID, spare)
	}
}

func TestLaunchFullSubnetWithoutAlternativeIsCapacityError(t *testing.T) {
	e := newEnv(t, "1.32")
	for _, z := range []string{zoneA, zoneC} {
		if err := e.sim.SetSubnetFreeIPs(e.seeded.SubnetIDs[z], 0); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.l.Launch(e.ctx, serviceRequest(t, "nowhere"))
	var ce *CapacityError
	if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Codes, []string{"InsufficientFreeAddressesInSubnet"}) || len(ce.Subnets) != 2 {
		t.Fatalf("err = %v, want a CapacityError naming both full subnets", err)
	}
}

// TestLaunchRetriesThrottlingAndLostResponses: throttling and 5xx are
// retried by the SDK (launch.Retryer's policy, shortened here); a
// response lost after EC2 acted is retried with the same token and gives
// back the instance rather than a second one.
func TestLaunchRetriesThrottlingAndLostResponses(t *testing.T) {
	e := newEnv(t, "1.32")
	e.sim.FailNext("CreateFleet", "RequestLimitExceeded", 503, 2)
	e.sim.FailNext("DescribeSubnets", "InternalError", 500, 1)
	if _, err := e.l.Launch(e.ctx, serviceRequest(t, "throttled")); err != nil {
		t.Fatalf("throttled launch: %v", err)
	}
	// At least: a connection the transport closed under a request is
	// retried too (see ec2sim.Sim.Invocations).
	if n, ops := e.sim.Calls("CreateFleet"), e.sim.Invocations("CreateFleet"); n < 3 || ops != 1 {
		t.Errorf("CreateFleet requests = %d in %d operations, want one operation of at least 3 requests (two throttled)", n, ops)
	}
	e.sim.DropNextResponses("CreateFleet", 1)
	inst, err := e.l.Launch(e.ctx, serviceRequest(t, "lost-response"))
	if err != nil {
		t.Fatalf("launch with a lost response: %v", err)
	}
	if n := len(e.sim.Instances()); n != 2 {
		t.Errorf("%d instances, want 2 (the lost response must not launch a third)", n)
	}
	var replayed bool
	for _, c := range e.sim.CreateFleetCalls() {
		replayed = replayed || (c.Replayed && c.InstanceIDs[0] == inst.ID)
	}
	if !replayed {
		t.Error("the retry after the lost response was not a replay of the same token")
	}
}

// TestLaunchFailuresNameThePoolAndCause: failures other than capacity
// fail the node's launch with the pool and EC2's words.
func TestLaunchFailuresNameThePoolAndCause(t *testing.T) {
	t.Run("a whole-call error", func(t *testing.T) {
		e := newEnv(t, "1.32")
		e.sim.FailNext("CreateFleet", "UnauthorizedOperation", 403, 1)
		_, err := e.l.Launch(e.ctx, serviceRequest(t, "denied"))
		if err == nil || !strings.Contains(err.Error(), `pool "service"`) || !strings.Contains(err.Error(), "UnauthorizedOperation") {
			t.Fatalf("err = %v", err)
		}
		var ce *CapacityError
		if errors.As(err, &ce) {
			t.Error("an authorization failure is not a capacity error")
		}
	})
	t.Run("every override refused", func(t *testing.T) {
		e := newEnv(t, "1.32")
		// A subnet in another VPC than the security group.
		vpc := e.sim.AddVPC("10.1.0.0/16", nil)
		e.sim.AddSubnetInVPC(vpc, zoneB, "10.1.0.0/20", map[string]string{"elsewhere": "yes"})
		s := spec(t, seedSpec)
		pool, nc := poolOf(t, s, "service")
		nc.SubnetSelector = []model.SelectorTerm{{Tags: map[string]string{"elsewhere": "yes"}}}
		_, err := e.l.Launch(e.ctx, Request{Pool: pool, Class: nc, Token: "vpc", Options: options(t, []string{"t3.large"}, []string{zoneB}, []string{"on-demand"})})
		var le *LaunchError
		if !errors.As(err, &le) || le.Pool != "service" || !strings.Contains(err.Error(), "InvalidGroup.NotFound") || !strings.Contains(err.Error(), "t3.large in ap-northeast-2b") {
			t.Fatalf("err = %v, want a LaunchError naming the pool, the code and the override", err)
		}
	})
	t.Run("AL2 on Kubernetes 1.33", func(t *testing.T) {
		e := newEnv(t, "1.33")
		_, err := e.l.Launch(e.ctx, serviceRequest(t, "old"))
		if err == nil || !strings.Contains(err.Error(), `pool "service"`) || !strings.Contains(err.Error(), "AL2 is not published for Kubernetes 1.33") {
			t.Fatalf("err = %v", err)
		}
		if n := e.sim.Calls("CreateFleet"); n != 0 {
			t.Errorf("CreateFleet called %d times for an unlaunchable family", n)
		}
	})
	t.Run("no option in a zone with a subnet", func(t *testing.T) {
		e := newEnv(t, "1.32")
		req := serviceRequest(t, "zones")
		req.Options = options(t, []string{"t3.large"}, []string{"ap-northeast-2d"}, []string{"on-demand"})
		_, err := e.l.Launch(e.ctx, req)
		if err == nil || !strings.Contains(err.Error(), `pool "service": no instance-type option is in a zone the node class "service-lt" has a subnet in`) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestLaunchAMIsFollowArchitectureAndAccelerator: a GPU type gets the
// nvidia image and its own template; types without an image for their
// architecture (AL2 has no arm64 GPU image) are left out, not fatal.
func TestLaunchAMIsFollowArchitectureAndAccelerator(t *testing.T) {
	e := newEnv(t, "1.32")
	req := batchRequest(t, "gpu", "g5.xlarge", "m5.large")
	if _, err := e.l.Launch(e.ctx, req); err != nil {
		t.Fatal(err)
	}
	nvidia := e.images["/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/nvidia/recommended/image_id"]
	found := false
	for _, cfg := range e.sim.CreateFleetCalls()[0].LaunchTemplateConfigs {
		for _, o := range cfg.Overrides {
			if o.InstanceType == "g5.xlarge" {
				found = true
				if o.ImageID != nvidia {
					t.Errorf("g5.xlarge image = %s, want the nvidia one %s", o.ImageID, nvidia)
				}
			}
		}
	}
	if !found {
		t.Error("g5.xlarge not among the overrides")
	}
}

// TestLaunchTemplatesAreReusedAndRecreated: equal content shares one
// template, also across a cold start; a template deleted behind the
// launcher's back is recreated and the launch goes on.
func TestLaunchTemplatesAreReusedAndRecreated(t *testing.T) {
	e := newEnv(t, "1.32")
	for _, tok := range []string{"a", "b"} {
		if _, err := e.l.Launch(e.ctx, serviceRequest(t, tok)); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.sim.Invocations("CreateLaunchTemplate"); n != 2 {
		t.Errorf("CreateLaunchTemplate calls = %d, want 2 (one per max pods) for two equal launches", n)
	}
	cold := &Launcher{EC2: e.l.EC2, SSM: e.l.SSM, Cluster: e.l.Cluster, Clock: e.l.Clock, Log: testLogger()}
	if _, err := cold.Launch(e.ctx, serviceRequest(t, "c")); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.Invocations("CreateLaunchTemplate"); n != 2 {
		t.Errorf("a cold launcher created templates again (calls = %d)", n)
	}
	if n := e.sim.Invocations("DescribeLaunchTemplates"); n != 2 {
		t.Errorf("DescribeLaunchTemplates calls = %d, want one listing per launcher", n)
	}
	for _, name := range e.sim.LaunchTemplateNames() {
		if _, err := e.ec2.DeleteLaunchTemplate(e.ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.l.Launch(e.ctx, serviceRequest(t, "d")); err != nil {
		t.Fatalf("launch after the templates were deleted: %v", err)
	}
	if n := len(e.sim.LaunchTemplateNames()); n != 2 {
		t.Errorf("templates after recreation = %d, want 2", n)
	}
}

func TestTokenIsStableAndBounded(t *testing.T) {
	a, b := Token("cluster", "pool", "uid-1"), Token("cluster", "pool", "uid-1")
	if a != b || len(a) > 64 || !strings.HasPrefix(a, "joist-") {
		t.Errorf("Token = %q, %q", a, b)
	}
	if Token("cluster", "pool", "uid-1") == Token("cluster", "pooluid-1") {
		t.Error("parts run together give the same token")
	}
}

// TestLaunchEvaluatesKubeletExpressionsPerType: with the NodeClassCEL gate
// on, a node class's kubelet expressions are evaluated for each option's
// type: a node boots with the maxPods and reservations its type gives
// (what the plan sized it with), and types that differ get launch
// templates of their own.
func TestLaunchEvaluatesKubeletExpressionsPerType(t *testing.T) {
	manifest := strings.Replace(seedSpec, "kubelet: {maxPods: 40}", `kubelet: {maxPods: "vcpus * 8", kubeReserved: {cpu: "vcpus * 100"}}`, 1)
	s := spec(t, manifest).WithNodeClassCEL(true)
	pool, nc := poolOf(t, s, "batch")
	request := func(token string, types ...string) Request {
		return Request{Pool: pool, Class: nc, Token: token,
			Options: options(t, types, []string{zoneA}, []string{model.CapacityTypeOnDemand}),
			Labels:  map[string]string{"workload": "batch", "karpenter.sh/nodepool": "batch"}}
	}
	e := newEnv(t, "1.32")
	for _, tc := range []struct {
		typ      string
		maxPods  int64
		reserved string
	}{{"m5.large", 16, "kubeReserved:\n        cpu: 200m\n"}, {"t3.xlarge", 32, "kubeReserved:\n        cpu: 400m\n"}} {
		inst, err := e.l.Launch(e.ctx, request("joist-cel-"+tc.typ, tc.typ))
		if err != nil {
			t.Fatal(err)
		}
		simInst, _ := e.sim.Instance(inst.ID)
		reg, err := kubeletsim.ParseUserData(simInst.UserData)
		if err != nil {
			t.Fatal(err)
		}
		ud, err := base64.StdEncoding.DecodeString(simInst.UserData)
		if err != nil {
			t.Fatal(err)
		}
		if reg.MaxPods != tc.maxPods || !strings.Contains(string(ud), tc.reserved) || strings.Contains(string(ud), "vcpus") {
			t.Errorf("%s boots with max pods %d, user data\n%s\nwant %d pods and %q, no expression left", tc.typ, reg.MaxPods, ud, tc.maxPods, tc.reserved)
		}
	}
	if _, err := e.l.Launch(e.ctx, request("joist-cel-both", "m5.large", "t3.xlarge")); err != nil {
		t.Fatal(err)
	}
	calls := e.sim.CreateFleetCalls()
	if c := calls[len(calls)-1]; len(c.LaunchTemplateConfigs) != 2 {
		t.Errorf("configs = %d, want one per type (their kubelet settings differ)", len(c.LaunchTemplateConfigs))
	}
}
