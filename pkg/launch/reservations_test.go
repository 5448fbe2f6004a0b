package launch

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/test/ec2sim"
)

// TestReservationsResolveTerms resolves selector terms against the
// simulator's reservations, as Karpenter v1.15 does.
func TestReservationsResolveTerms(t *testing.T) {
	e := newEnv(t, "1.32")
	now := e.clock.Now()
	added := map[string]ec2sim.CapacityReservation{
		"ml-a": {InstanceType: "t3.large", Zone: zoneA, Total: 2, MatchCriteria: ec2sim.MatchTargeted, Tags: map[string]string{"team": "ml", "env": "prod"}},
		"ml-b": {InstanceType: "m5.large", Zone: zoneB, Total: 1, Tags: map[string]string{"team": "ml"}},
		"block": {InstanceType: "g5.xlarge", Zone: zoneA, Total: 1, Type: ec2sim.ReservationCapacityBlock, MatchCriteria: ec2sim.MatchTargeted,
			EndAt: now.Add(24 * time.Hour), Tags: map[string]string{"team": "research"}},
		"shared":  {InstanceType: "t3.large", Zone: zoneC, Total: 3, OwnerID: "111122223333", Tags: map[string]string{"team": "ml"}},
		"expired": {InstanceType: "t3.large", Zone: zoneA, Total: 1, State: "expired", Tags: map[string]string{"team": "ml"}},
		"ended":   {InstanceType: "t3.large", Zone: zoneA, Total: 1, EndAt: now.Add(-time.Minute), Tags: map[string]string{"team": "ml"}},
	}
	ids := map[string]string{}
	for _, name := range []string{"ml-a", "ml-b", "block", "shared", "expired", "ended"} {
		ids[name] = e.sim.AddCapacityReservation(added[name])
	}
	// expect is what Reservations says of an added reservation: its
	// fields, the simulator's defaults (this account, an open ODCR) and
	// all of it available.
	expect := func(name string) Reservation {
		a := added[name]
		r := Reservation{ID: ids[name], InstanceType: a.InstanceType, Zone: a.Zone, OwnerID: a.OwnerID, Type: a.Type, MatchCriteria: a.MatchCriteria, Available: a.Total, End: a.EndAt}
		if r.OwnerID == "" {
			r.OwnerID = ec2sim.DefaultAccountID
		}
		if r.Type == "" {
			r.Type = "default"
		}
		if r.MatchCriteria == "" {
			r.MatchCriteria = "open"
		}
		return r
	}
	for _, tc := range []struct {
		name  string
		terms []model.CapacityReservationTerm
		want  []string
		calls int
	}{
		{name: "no terms, no call", calls: 0},
		{name: "by id", terms: []model.CapacityReservationTerm{{ID: ids["ml-b"]}}, want: []string{"ml-b"}, calls: 1},
		{name: "by id, inactive", terms: []model.CapacityReservationTerm{{ID: ids["expired"]}}, calls: 1},
		{name: "by id, ended", terms: []model.CapacityReservationTerm{{ID: ids["ended"]}}, calls: 1},
		{name: "by id, unknown", terms: []model.CapacityReservationTerm{{ID: "cr-0123456789abcdef0"}}, calls: 1},
		{name: "by tags, AND'ed", terms: []model.CapacityReservationTerm{{Tags: map[string]string{"team": "ml", "env": "prod"}}}, want: []string{"ml-a"}, calls: 1},
		{name: "by tag, active and not ended only", terms: []model.CapacityReservationTerm{{Tags: map[string]string{"team": "ml"}}}, want: []string{"ml-a", "ml-b", "shared"}, calls: 1},
		{name: "tag value * means the key exists", terms: []model.CapacityReservationTerm{{Tags: map[string]string{"env": "*"}}}, want: []string{"ml-a"}, calls: 1},
		{name: "owner narrows tags", terms: []model.CapacityReservationTerm{{Tags: map[string]string{"team": "ml"}, OwnerID: "111122223333"}}, want: []string{"shared"}, calls: 1},
		{name: "match criteria alone", terms: []model.CapacityReservationTerm{{InstanceMatchCriteria: "targeted"}}, want: []string{"ml-a", "block"}, calls: 1},
		{name: "match criteria narrows tags", terms: []model.CapacityReservationTerm{{Tags: map[string]string{"team": "ml"}, InstanceMatchCriteria: "open"}}, want: []string{"ml-b", "shared"}, calls: 1},
		{name: "owner alone selects nothing", terms: []model.CapacityReservationTerm{{OwnerID: "111122223333"}}, calls: 0},
		{name: "terms OR'ed, deduplicated", terms: []model.CapacityReservationTerm{{ID: ids["ml-a"]}, {Tags: map[string]string{"team": "ml", "env": "prod"}}, {Tags: map[string]string{"team": "research"}}},
			want: []string{"ml-a", "block"}, calls: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.sim.Invocations("DescribeCapacityReservations")
			got, err := e.l.Reservations(e.ctx, &model.NodeClass{Name: "gpu", API: model.APIV1, CapacityReservationSelector: tc.terms})
			if err != nil {
				t.Fatal(err)
			}
			if calls := e.sim.Invocations("DescribeCapacityReservations") - before; calls != tc.calls {
				t.Errorf("DescribeCapacityReservations calls = %d, want %d", calls, tc.calls)
			}
			want := []Reservation{}
			for _, name := range tc.want {
				want = append(want, expect(name))
			}
			sort.Slice(want, func(i, j int) bool { return want[i].ID < want[j].ID })
			if got == nil {
				got = []Reservation{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("reservations =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestReservationsErrorNamesTheClass(t *testing.T) {
	e := newEnv(t, "1.32")
	e.sim.FailNext("DescribeCapacityReservations", "UnauthorizedOperation", 403, 1)
	_, err := e.l.Reservations(e.ctx, &model.NodeClass{Name: "gpu", API: model.APIV1,
		CapacityReservationSelector: []model.CapacityReservationTerm{{Tags: map[string]string{"team": "ml"}}}})
	if err == nil || !strings.Contains(err.Error(), `node class "gpu"`) || !strings.Contains(err.Error(), "capacityReservationSelectorTerms[0]") || !strings.Contains(err.Error(), "UnauthorizedOperation") {
		t.Errorf("err = %v", err)
	}
}

// TestReservationEnding: only a capacity block ends its instances, so
// only one within CapacityBlockEndNotice of its end counts as ending.
func TestReservationEnding(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    Reservation
		want bool
	}{
		{"an ODCR ending soon", Reservation{Type: ReservationTypeDefault, End: now.Add(time.Minute)}, false},
		{"a capacity block 41 minutes from its end", Reservation{Type: ReservationTypeCapacityBlock, End: now.Add(41 * time.Minute)}, false},
		{"a capacity block 40 minutes from its end", Reservation{Type: ReservationTypeCapacityBlock, End: now.Add(40 * time.Minute)}, true},
		{"a capacity block 10 minutes from its end", Reservation{Type: ReservationTypeCapacityBlock, End: now.Add(10 * time.Minute)}, true},
		{"a capacity block without an end", Reservation{Type: ReservationTypeCapacityBlock}, false},
	} {
		if got := tc.r.Ending(now); got != tc.want {
			t.Errorf("%s: Ending = %v, want %v", tc.name, got, tc.want)
		}
	}
}
