package interruption

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCheckHealth(t *testing.T) {
	at := time.Date(2026, 12, 16, 10, 0, 0, 0, time.UTC)
	ok := func(id string) Status {
		return Status{ID: id, State: "running", InstanceStatus: StatusOK, SystemStatus: StatusOK}
	}
	with := func(s Status, f func(*Status)) Status { f(&s); return s }
	for _, tc := range []struct {
		name     string
		statuses []Status
		want     []Finding
	}{
		{"healthy instances: nothing", []Status{ok("i-01"), ok("i-02")}, nil},
		{"instance status impaired", []Status{ok("i-01"), with(ok("i-02"), func(s *Status) { s.InstanceStatus = StatusImpaired })},
			[]Finding{{ID: "i-02", Kind: KindInstanceStatus, Reason: "instance status check impaired"}}},
		{"system status impaired", []Status{with(ok("i-01"), func(s *Status) { s.SystemStatus = StatusImpaired })},
			[]Finding{{ID: "i-01", Kind: KindSystemStatus, Reason: "system status check impaired"}}},
		{"both impaired and an event: one finding, the host's fault", []Status{with(ok("i-01"), func(s *Status) {
			s.SystemStatus, s.InstanceStatus = StatusImpaired, StatusImpaired
			s.Events = []ScheduledEvent{{Code: "instance-retirement", NotBefore: at}}
		})}, []Finding{{ID: "i-01", Kind: KindSystemStatus, Reason: "system status check impaired"}}},
		{"a scheduled retirement", []Status{with(ok("i-01"), func(s *Status) {
			s.Events = []ScheduledEvent{{Code: "instance-retirement", Description: "The instance is running on degraded hardware", NotBefore: at}}
		})}, []Finding{{ID: "i-01", Kind: KindScheduledEvent, Reason: "scheduled event instance-retirement not before 2026-12-16T10:00:00Z"}}},
		{"a scheduled system reboot", []Status{with(ok("i-01"), func(s *Status) {
			s.Events = []ScheduledEvent{{Code: "system-reboot"}}
		})}, []Finding{{ID: "i-01", Kind: KindScheduledEvent, Reason: "scheduled event system-reboot"}}},
		{"completed and canceled events are over", []Status{with(ok("i-01"), func(s *Status) {
			s.Events = []ScheduledEvent{
				{Code: "system-reboot", Description: "[Completed] Scheduled reboot", NotBefore: at},
				{Code: "instance-stop", Description: "[Canceled] The instance is running on degraded hardware", NotBefore: at},
			}
		})}, nil},
		{"a live event after an old one", []Status{with(ok("i-01"), func(s *Status) {
			s.Events = []ScheduledEvent{{Code: "system-reboot", Description: "[Completed] x"}, {Code: "instance-stop"}}
		})}, []Finding{{ID: "i-01", Kind: KindScheduledEvent, Reason: "scheduled event instance-stop"}}},
		{"insufficient data and initializing are not impaired", []Status{
			with(ok("i-01"), func(s *Status) { s.InstanceStatus = "insufficient-data" }),
			with(ok("i-02"), func(s *Status) { s.SystemStatus, s.InstanceStatus = "initializing", "initializing" }),
		}, nil},
		{"only running instances count", []Status{
			{ID: "i-01", State: "pending", InstanceStatus: StatusImpaired, SystemStatus: StatusImpaired},
			{ID: "i-02", State: "stopping", InstanceStatus: StatusImpaired},
			{ID: "i-03", State: "terminated", Events: []ScheduledEvent{{Code: "instance-stop"}}},
		}, nil},
		{"sorted by id", []Status{
			with(ok("i-09"), func(s *Status) { s.InstanceStatus = StatusImpaired }),
			with(ok("i-01"), func(s *Status) { s.InstanceStatus = StatusImpaired }),
		}, []Finding{{ID: "i-01", Kind: KindInstanceStatus, Reason: "instance status check impaired"}, {ID: "i-09", Kind: KindInstanceStatus, Reason: "instance status check impaired"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CheckHealth(tc.statuses); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDecideHealthFindings(t *testing.T) {
	ours := &Instance{ID: "i-1234567890abcdef0", InstanceType: "m5.large", Zone: "us-east-2a", CapacityType: "on-demand", State: "running", Tags: map[string]string{TagCluster: "c1"}}
	stopped := *ours
	stopped.State = "stopped"
	foreign := *ours
	foreign.Tags = map[string]string{TagCluster: "other"}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-2a/i-1234567890abcdef0"}}
	deleting := node.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name  string
		kind  Kind
		facts Facts
		want  Action
	}{
		{"impaired instance replaces", KindInstanceStatus, Facts{Cluster: "c1", Instance: ours, Node: node}, ActionReplace},
		{"impaired system replaces", KindSystemStatus, Facts{Cluster: "c1", Instance: ours, Node: node}, ActionReplace},
		{"scheduled event replaces", KindScheduledEvent, Facts{Cluster: "c1", Instance: ours, Node: node}, ActionReplace},
		{"a node already being retired: nothing more", KindInstanceStatus, Facts{Cluster: "c1", Instance: ours, Node: deleting}, ActionNone},
		{"no node: nothing", KindScheduledEvent, Facts{Cluster: "c1", Instance: ours}, ActionNone},
		{"EC2 says it stopped since: nothing", KindSystemStatus, Facts{Cluster: "c1", Instance: &stopped, Node: node}, ActionNone},
		{"another cluster's: nothing", KindInstanceStatus, Facts{Cluster: "c1", Instance: &foreign, Node: node}, ActionNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := HealthMessage(Finding{ID: ours.ID, Kind: tc.kind, Reason: "why " + string(tc.kind)})
			d := Decide(m, tc.facts)
			if d.Action != tc.want {
				t.Fatalf("action %s (%s), want %s", d.Action, d.Reason, tc.want)
			}
			if d.Unavailable != nil {
				t.Fatalf("unavailable %+v: a sick host is not a sick pool", d.Unavailable)
			}
			if !strings.Contains(d.Reason, "why "+string(tc.kind)) && tc.want == ActionReplace {
				t.Fatalf("reason %q does not say the finding's", d.Reason)
			}
		})
	}
}
