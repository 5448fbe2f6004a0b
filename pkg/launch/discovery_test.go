package launch

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joist-dev/joist/pkg/model"
)

// TestSubnetsSelectorsAsTheyArriveFromSpecs reads node classes through
// pkg/specs (v1alpha1 maps with `*` and aws-ids, v1 terms) and checks the
// subnets discovery keeps: one per zone, the one with the most free
// addresses.
func TestSubnetsSelectorsAsTheyArriveFromSpecs(t *testing.T) {
	e := newEnv(t, "1.32")
	// A second subnet in zone a with fewer free addresses than the seeded
	// one, and one in zone b with more.
	extraA := e.sim.AddSubnet(zoneA, "10.0.128.0/24", map[string]string{"karpenter.sh/discovery": testCluster, "tier": "private-small"})
	extraB := e.sim.AddSubnet(zoneB, "10.0.130.0/20", map[string]string{"karpenter.sh/discovery": testCluster, "tier": "private-big"})
	if err := e.sim.SetSubnetFreeIPs(e.seeded.SubnetIDs[zoneB], 1000); err != nil {
		t.Fatal(err)
	}
	seeded := e.seeded.SubnetIDs
	s := spec(t, `
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: wildcard}
spec:
  subnetSelector: {karpenter.sh/discovery/hoon-cluster: '*'}
  securityGroupSelector: {aws:eks:cluster-name: hoon-cluster}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: discovery-tag}
spec:
  subnetSelector: {karpenter.sh/discovery: hoon-cluster}
  securityGroupSelector: {aws:eks:cluster-name: hoon-cluster}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: ids}
spec:
  subnetSelector: {aws-ids: "`+seeded[zoneA]+`,`+extraB+`"}
  securityGroupSelector: {aws-ids: "`+e.seeded.SecurityGroupID+`"}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: pattern}
spec:
  subnetSelector: {tier: "private-*"}
  securityGroupSelector: {Name: "eks-cluster-sg-*"}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: commas}
spec:
  subnetSelector: {tier: "private-small,private-big"}
  securityGroupSelector: {aws:eks:cluster-name: hoon-cluster}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: terms}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms:
  - tags: {karpenter.sh/discovery: hoon-cluster, tier: private-small}
  - id: `+seeded[zoneC]+`
  securityGroupSelectorTerms:
  - name: eks-cluster-sg-hoon-cluster
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: and-nothing}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms:
  - tags: {karpenter.sh/discovery: hoon-cluster, tier: public}
  securityGroupSelectorTerms:
  - tags: {karpenter.sh/discovery: hoon-cluster}
`)
	tests := []struct {
		class string
		want  map[string]string // zone → subnet
	}{
		{"wildcard", map[string]string{zoneA: seeded[zoneA], zoneB: seeded[zoneB], zoneC: seeded[zoneC]}},
		{"discovery-tag", map[string]string{zoneA: seeded[zoneA], zoneB: extraB, zoneC: seeded[zoneC]}},
		{"ids", map[string]string{zoneA: seeded[zoneA], zoneB: extraB}},
		{"pattern", map[string]string{zoneA: extraA, zoneB: extraB}},
		{"commas", map[string]string{zoneA: extraA, zoneB: extraB}},
		{"terms", map[string]string{zoneA: extraA, zoneC: seeded[zoneC]}},
	}
	for _, tc := range tests {
		t.Run(tc.class, func(t *testing.T) {
			got, err := e.l.Subnets(e.ctx, s.NodeClasses[tc.class])
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]string{}
			for z, sn := range got {
				ids[z] = sn.ID
				if sn.Zone != z {
					t.Errorf("subnet %s listed under %s is in %s", sn.ID, z, sn.Zone)
				}
			}
			if !reflect.DeepEqual(ids, tc.want) {
				t.Errorf("subnets = %v, want %v", ids, tc.want)
			}
		})
	}
	t.Run("fields of a term are AND'ed", func(t *testing.T) {
		_, err := e.l.Subnets(e.ctx, s.NodeClasses["and-nothing"])
		if err == nil || !strings.Contains(err.Error(), `node class "and-nothing": no subnet matches spec.subnetSelectorTerms {tag karpenter.sh/discovery=hoon-cluster, tag tier=public}`) {
			t.Fatalf("err = %v, want a clear empty-selector error", err)
		}
	})
	t.Run("security groups by tag, id, name and wildcard", func(t *testing.T) {
		for _, class := range []string{"wildcard", "ids", "pattern", "terms"} {
			got, err := e.l.SecurityGroups(e.ctx, s.NodeClasses[class])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, []string{e.seeded.SecurityGroupID}) {
				t.Errorf("%s: groups = %v, want [%s]", class, got, e.seeded.SecurityGroupID)
			}
		}
		_, err := e.l.SecurityGroups(e.ctx, s.NodeClasses["and-nothing"])
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestSubnetsAreCachedAndRefreshed(t *testing.T) {
	e := newEnv(t, "1.32")
	nc := &model.NodeClass{Name: "c", API: model.APIV1, SubnetSelector: []model.SelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": testCluster}}}}
	for i := 0; i < 3; i++ {
		if _, err := e.l.Subnets(e.ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.sim.Invocations("DescribeSubnets"); n != 1 {
		t.Errorf("DescribeSubnets calls = %d, want 1 within the cache TTL", n)
	}
	e.clock.Step(DefaultCacheTTL + time.Second)
	if _, err := e.l.Subnets(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.Invocations("DescribeSubnets"); n != 2 {
		t.Errorf("DescribeSubnets calls = %d, want 2 after the TTL", n)
	}
	// An edited selector is not served from the cache of the old one.
	edited := *nc
	edited.SubnetSelector = []model.SelectorTerm{{ID: e.seeded.SubnetIDs[zoneA]}}
	got, err := e.l.Subnets(e.ctx, &edited)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Errorf("edited selector gave %v, want only zone a", got)
	}
}

func TestSubnetsSkipFullSubnetsAndCountInFlightAddresses(t *testing.T) {
	e := newEnv(t, "1.32")
	second := e.sim.AddSubnet(zoneA, "10.0.128.0/24", map[string]string{"karpenter.sh/discovery": testCluster})
	if err := e.sim.SetSubnetFreeIPs(e.seeded.SubnetIDs[zoneA], 100); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.SetSubnetFreeIPs(second, 99); err != nil {
		t.Fatal(err)
	}
	nc := &model.NodeClass{Name: "c", API: model.APIV1, SubnetSelector: []model.SelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": testCluster}}}}
	pick := func() string {
		t.Helper()
		got, err := e.l.Subnets(e.ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		return got[zoneA].ID
	}
	if got := pick(); got != e.seeded.SubnetIDs[zoneA] {
		t.Fatalf("zone a subnet = %s, want the one with 100 free", got)
	}
	e.l.tookAddress(e.seeded.SubnetIDs[zoneA])
	e.l.tookAddress(e.seeded.SubnetIDs[zoneA])
	if got := pick(); got != second {
		t.Errorf("after two launches took addresses, zone a subnet = %s, want %s (99 free beats 98)", got, second)
	}
	e.l.MarkSubnetFull(second)
	if got := pick(); got != e.seeded.SubnetIDs[zoneA] {
		t.Errorf("with %s marked full, zone a subnet = %s", second, got)
	}
	e.l.MarkSubnetFull(e.seeded.SubnetIDs[zoneA])
	got, err := e.l.Subnets(e.ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got[zoneA]; ok {
		t.Errorf("zone a still offered with both its subnets full: %v", got)
	}
	e.clock.Step(4 * time.Minute)
	if got := pick(); got == "" {
		t.Error("zone a not offered again after the marks expired")
	}
}

func TestSelectorErrorsNameTheField(t *testing.T) {
	e := newEnv(t, "1.32")
	tests := []struct {
		name    string
		nc      *model.NodeClass
		call    func(*model.NodeClass) error
		wantErr string
	}{
		{"v1alpha1 empty subnet selector", &model.NodeClass{Name: "a", API: model.APIV1Alpha5},
			func(nc *model.NodeClass) error { _, err := e.l.Subnets(e.ctx, nc); return err }, `node class "a": spec.subnetSelector is empty`},
		{"v1 security groups matching nothing", &model.NodeClass{Name: "b", API: model.APIV1, SecurityGroupSelector: []model.SelectorTerm{{Name: "nope"}}},
			func(nc *model.NodeClass) error { _, err := e.l.SecurityGroups(e.ctx, nc); return err },
			`node class "b": no security group matches spec.securityGroupSelectorTerms {name nope}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(tc.nc)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestDesiredZonesAreTheSubnetsZones: a node class resolves to the zones
// its subnets are in, once each and sorted (two subnets in zone b, none
// in zone a), which are the only zones its nodes can be launched in, and
// to those zones' IDs.
func TestDesiredZonesAreTheSubnetsZones(t *testing.T) {
	e := newEnv(t, "1.32")
	e.sim.AddSubnet(zoneC, "10.0.140.0/24", map[string]string{"team": "batch"})
	e.sim.AddSubnet(zoneB, "10.0.141.0/24", map[string]string{"team": "batch"})
	e.sim.AddSubnet(zoneB, "10.0.142.0/24", map[string]string{"team": "batch"})
	nc := &model.NodeClass{Name: "batch", API: model.APIV1, AMIFamily: FamilyAL2023,
		SubnetSelector:        []model.SelectorTerm{{Tags: map[string]string{"team": "batch"}}},
		SecurityGroupSelector: []model.SelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": testCluster}}}}
	d, err := e.l.Desired(e.ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{zoneB, zoneC}; !slices.Equal(d.Zones, want) {
		t.Errorf("zones %v, want %v", d.Zones, want)
	}
	if len(d.ZoneIDs) != 2 || d.ZoneIDs[zoneB] == "" || d.ZoneIDs[zoneC] == "" || d.ZoneIDs[zoneB] == d.ZoneIDs[zoneC] {
		t.Errorf("zone IDs %v, want one for each of %s and %s", d.ZoneIDs, zoneB, zoneC)
	}
	if len(d.SubnetIDs) != 3 {
		t.Errorf("subnets %v, want the three tagged", d.SubnetIDs)
	}
}
