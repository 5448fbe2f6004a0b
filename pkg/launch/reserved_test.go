package launch

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/test/ec2sim"
	"github.com/joist-dev/joist/test/kubeletsim"
)

// reservedOption is the option a plan hands over for a reservation.
func reservedOption(t *testing.T, typ, zone, id, rtype string) Option {
	t.Helper()
	it, ok := catalog.Lookup(typ)
	if !ok {
		t.Fatalf("no type %s", typ)
	}
	variant := VariantStandard
	if it.GPUCount > 0 {
		variant = VariantNvidia
	}
	return Option{InstanceType: typ, Arch: it.Arch, Variant: variant, Zone: zone, CapacityType: model.CapacityTypeReserved,
		Price: it.OnDemandPrice[testRegion], ReservationID: id, ReservationType: rtype}
}

// reservedRequest is a node of the batch pool whose class selects
// reservations, with the caller's labels claiming on-demand (which the
// launch must correct).
func reservedRequest(t *testing.T, token string, opts ...Option) Request {
	t.Helper()
	s := spec(t, seedSpec)
	pool, nc := poolOf(t, s, "batch")
	nc.CapacityReservationSelector = []model.CapacityReservationTerm{{Tags: map[string]string{"team": "ml"}}}
	return Request{Pool: pool, Class: nc, Token: token, Options: opts,
		Labels: map[string]string{"workload": "batch", "karpenter.sh/nodepool": "batch", model.LabelCapacityType: model.CapacityTypeOnDemand}}
}

// templateData reads back the launch template a fleet config names.
func (e *env) templateData(name string) *ec2types.ResponseLaunchTemplateData {
	e.t.Helper()
	v, err := e.ec2.DescribeLaunchTemplateVersions(e.ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String(name), Versions: []string{"$Latest"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return v.LaunchTemplateVersions[0].LaunchTemplateData
}

func TestLaunchIntoReservation(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rtype      string
		typ        string
		wantTarget string
		wantMarket ec2types.MarketType
		wantODOpts string
		wantConfig int // launch templates in the fleet
	}{
		// Two ODCRs, one per zone: a template each, the fleet picks.
		{name: "ODCR", rtype: ReservationTypeDefault, typ: "t3.large", wantTarget: "on-demand", wantODOpts: "lowest-price", wantConfig: 2},
		// Capacity blocks: the market type, the fleet's capacity-block
		// target, and only the cheapest block tried (as Karpenter).
		{name: "capacity block", rtype: ReservationTypeCapacityBlock, typ: "g5.xlarge", wantTarget: "capacity-block", wantMarket: ec2types.MarketTypeCapacityBlock, wantConfig: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "1.32")
			simType := ec2sim.ReservationDefault
			if tc.rtype == ReservationTypeCapacityBlock {
				simType = ec2sim.ReservationCapacityBlock
			}
			crA := e.sim.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: tc.typ, Zone: zoneA, Total: 1, Type: simType, MatchCriteria: ec2sim.MatchTargeted})
			crC := e.sim.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: tc.typ, Zone: zoneC, Total: 1, Type: simType, MatchCriteria: ec2sim.MatchTargeted})
			req := reservedRequest(t, "reserved-1", reservedOption(t, tc.typ, zoneA, crA, tc.rtype), reservedOption(t, tc.typ, zoneC, crC, tc.rtype))
			inst, err := e.l.Launch(e.ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			c := e.sim.CreateFleetCalls()[0]
			if c.DefaultTargetCapacityType != tc.wantTarget || c.OnDemandAllocationStrategy != tc.wantODOpts || c.SpotAllocationStrategy != "" || len(c.LaunchTemplateConfigs) != tc.wantConfig {
				t.Errorf("fleet target %s, od %q, spot %q, %d configs; want %s, %q, none, %d", c.DefaultTargetCapacityType, c.OnDemandAllocationStrategy,
					c.SpotAllocationStrategy, len(c.LaunchTemplateConfigs), tc.wantTarget, tc.wantODOpts, tc.wantConfig)
			}
			// Each template targets the reservation of its overrides'
			// zone, and nothing else.
			byZone := map[string]string{zoneA: crA, zoneC: crC}
			names := map[string]bool{}
			for _, cfg := range c.LaunchTemplateConfigs {
				names[cfg.LaunchTemplateName] = true
				d := e.templateData(cfg.LaunchTemplateName)
				spec := d.CapacityReservationSpecification
				if len(cfg.Overrides) != 1 || spec == nil || spec.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly ||
					spec.CapacityReservationTarget == nil || aws.ToString(spec.CapacityReservationTarget.CapacityReservationId) != byZone[cfg.Overrides[0].AvailabilityZone] {
					t.Errorf("template %s with overrides %+v targets %+v", cfg.LaunchTemplateName, cfg.Overrides, spec)
				}
				var market ec2types.MarketType
				if d.InstanceMarketOptions != nil {
					market = d.InstanceMarketOptions.MarketType
				}
				if market != tc.wantMarket {
					t.Errorf("template %s market type %q, want %q", cfg.LaunchTemplateName, market, tc.wantMarket)
				}
			}
			if len(names) != len(c.LaunchTemplateConfigs) {
				t.Errorf("reservations share a template: %v", names)
			}

			if inst.CapacityType != model.CapacityTypeReserved || inst.ReservationID != byZone[inst.Zone] || inst.InstanceType != tc.typ {
				t.Errorf("instance = %s %s in %s, reservation %q; want reserved in %s", inst.InstanceType, inst.CapacityType, inst.Zone, inst.ReservationID, byZone[inst.Zone])
			}
			if avail, _ := e.sim.CapacityReservationAvailable(inst.ReservationID); avail != 0 {
				t.Errorf("reservation %s has %d left, want 0", inst.ReservationID, avail)
			}
			simInst, _ := e.sim.Instance(inst.ID)
			reg, err := kubeletsim.ParseUserData(simInst.UserData)
			if err != nil {
				t.Fatal(err)
			}
			wantLabels := map[string]string{"workload": "batch", "karpenter.sh/nodepool": "batch", model.LabelCapacityType: model.CapacityTypeReserved,
				model.LabelReservationID: inst.ReservationID, model.LabelReservationType: tc.rtype}
			if !reflect.DeepEqual(reg.Labels, wantLabels) {
				t.Errorf("node registers with %v, want %v", reg.Labels, wantLabels)
			}

			// Read back from EC2, in flight and by id, it is reserved in
			// the same reservation.
			live, err := e.l.Instances(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			byID, err := e.l.Describe(e.ctx, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range append(live, byID...) {
				if got.CapacityType != model.CapacityTypeReserved || got.ReservationID != inst.ReservationID {
					t.Errorf("read back as %s in %q, want reserved in %s", got.CapacityType, got.ReservationID, inst.ReservationID)
				}
			}
		})
	}
}

// TestLaunchIntoFullReservationIsCapacityError: EC2's
// ReservationCapacityExceeded names the reserved offering, which the
// provisioner marks before planning again.
func TestLaunchIntoFullReservationIsCapacityError(t *testing.T) {
	e := newEnv(t, "1.32")
	cr := e.sim.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 0, MatchCriteria: ec2sim.MatchTargeted})
	_, err := e.l.Launch(e.ctx, reservedRequest(t, "full", reservedOption(t, "t3.large", zoneA, cr, ReservationTypeDefault)))
	var ce *CapacityError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a CapacityError", err)
	}
	want := []catalog.OfferingKey{{InstanceType: "t3.large", Zone: zoneA, CapacityType: model.CapacityTypeReserved}}
	if !reflect.DeepEqual(ce.Offerings, want) || !reflect.DeepEqual(ce.Codes, []string{"ReservationCapacityExceeded"}) {
		t.Errorf("offerings %v codes %v; want %v [ReservationCapacityExceeded]", ce.Offerings, ce.Codes, want)
	}
}

func TestLaunchRefusesBadReservedRequests(t *testing.T) {
	od := Option{InstanceType: "t3.large", Arch: "amd64", Zone: zoneA, CapacityType: model.CapacityTypeOnDemand, Price: 0.1}
	for _, tc := range []struct {
		name string
		opts func(t *testing.T) []Option
		want string
	}{
		{name: "mixed with on-demand", want: "mix reserved capacity", opts: func(t *testing.T) []Option {
			return []Option{reservedOption(t, "t3.large", zoneA, "cr-0123456789abcdef0", ReservationTypeDefault), od}
		}},
		{name: "no reservation id", want: "names no capacity reservation", opts: func(t *testing.T) []Option {
			return []Option{reservedOption(t, "t3.large", zoneA, "", ReservationTypeDefault)}
		}},
		{name: "unknown reservation type", want: `type "odcr"`, opts: func(t *testing.T) []Option {
			return []Option{reservedOption(t, "t3.large", zoneA, "cr-0123456789abcdef0", "odcr")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "1.32")
			_, err := e.l.Launch(e.ctx, reservedRequest(t, "bad", tc.opts(t)...))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `pool "batch"`) {
				t.Errorf("err = %v, want one naming the pool and %q", err, tc.want)
			}
			if n := len(e.sim.CreateFleetCalls()); n != 0 {
				t.Errorf("CreateFleet called %d times", n)
			}
		})
	}
}

// TestOrdinaryLaunchesAndOpenReservations: an on-demand node of a class
// that selects reservations stays out of open ones (their room is the
// plan's); one of a class that selects none may be absorbed by an open
// ODCR, as on AWS, and still reads as on-demand (Karpenter's reading) with
// no reservation labels even if the caller passed some.
func TestOrdinaryLaunchesAndOpenReservations(t *testing.T) {
	for _, tc := range []struct {
		name       string
		selects    bool
		wantInside bool
	}{
		{name: "class selecting reservations", selects: true, wantInside: false},
		{name: "class selecting none", selects: false, wantInside: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "1.32")
			cr := e.sim.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "t3.large", Zone: zoneA, Total: 1})
			req := reservedRequest(t, "od", Option{InstanceType: "t3.large", Arch: "amd64", Zone: zoneA, CapacityType: model.CapacityTypeOnDemand, Price: 0.1})
			req.Labels[model.LabelReservationID] = cr
			req.Labels[model.LabelReservationType] = "default"
			if !tc.selects {
				req.Class.CapacityReservationSelector = nil
			}
			inst, err := e.l.Launch(e.ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			simInst, _ := e.sim.Instance(inst.ID)
			if inside := simInst.CapacityReservationID == cr; inside != tc.wantInside {
				t.Errorf("instance in the open reservation: %v, want %v", inside, tc.wantInside)
			}
			got, err := e.l.Describe(e.ctx, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got[0].CapacityType != model.CapacityTypeOnDemand || got[0].ReservationID != "" {
				t.Errorf("read back as %s in %q, want on-demand", got[0].CapacityType, got[0].ReservationID)
			}
			reg, err := kubeletsim.ParseUserData(simInst.UserData)
			if err != nil {
				t.Fatal(err)
			}
			if reg.Labels[model.LabelCapacityType] != model.CapacityTypeOnDemand || reg.Labels[model.LabelReservationID] != "" || reg.Labels[model.LabelReservationType] != "" {
				t.Errorf("node labels %v", reg.Labels)
			}
		})
	}
}

func TestChooseReservedOptions(t *testing.T) {
	subnets := map[string]Subnet{zoneA: {ID: "subnet-a", Zone: zoneA}, zoneB: {ID: "subnet-b", Zone: zoneB}}
	res := func(typ, zone, id, rtype string, price float64) Option {
		return Option{InstanceType: typ, Zone: zone, CapacityType: model.CapacityTypeReserved, ReservationID: id, ReservationType: rtype, Price: price}
	}
	for _, tc := range []struct {
		name string
		opts []Option
		want []string // reservation ids, in fleet order
	}{
		{name: "ODCRs cheapest first, zones without subnet dropped",
			opts: []Option{res("m5.large", zoneA, "cr-m5", "default", 0.2), res("t3.large", zoneB, "cr-t3", "default", 0.1), res("t3.large", zoneC, "cr-c", "default", 0.01)},
			want: []string{"cr-t3", "cr-m5"}},
		{name: "one reservation per type and zone, the caller's first",
			opts: []Option{res("t3.large", zoneA, "cr-1", "default", 0.1), res("t3.large", zoneA, "cr-2", "default", 0.1)},
			want: []string{"cr-1"}},
		{name: "the cheapest option's kind wins: ODCR",
			opts: []Option{res("g5.xlarge", zoneA, "cr-block", "capacity-block", 0.5), res("t3.large", zoneA, "cr-odcr", "default", 0.1)},
			want: []string{"cr-odcr"}},
		{name: "the cheapest option's kind wins: one capacity block",
			opts: []Option{res("g5.xlarge", zoneA, "cr-b1", "capacity-block", 0.05), res("g5.xlarge", zoneB, "cr-b2", "capacity-block", 0.06), res("t3.large", zoneA, "cr-odcr", "default", 0.1)},
			want: []string{"cr-b1"}},
		{name: "a price tie goes to the ODCR",
			opts: []Option{res("g5.xlarge", zoneA, "cr-block", "capacity-block", 0.1), res("t3.large", zoneA, "cr-odcr", "default", 0.1)},
			want: []string{"cr-odcr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, opts := chooseOptions(tc.opts, subnets)
			var got []string
			for _, o := range opts {
				got = append(got, o.ReservationID)
			}
			if ct != model.CapacityTypeReserved || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("chose %s %v, want reserved %v", ct, got, tc.want)
			}
		})
	}
}
