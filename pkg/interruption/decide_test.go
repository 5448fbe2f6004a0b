package interruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/pkg/catalog"
)

func msg(t *testing.T, file string) *Message {
	t.Helper()
	m, err := Parse(sample(t, file))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDecide(t *testing.T) {
	ours := &Instance{ID: "i-1234567890abcdef0", InstanceType: "m5.large", Zone: "us-east-2a", CapacityType: "spot", State: "running", Tags: map[string]string{TagCluster: "c1"}}
	onDemand := *ours
	onDemand.CapacityType = "on-demand"
	reserved := *ours
	reserved.CapacityType = "reserved"
	gone := *ours
	gone.State = "terminated"
	stopping := *ours
	stopping.State = "stopping"
	foreign := *ours
	foreign.Tags = map[string]string{TagCluster: "other"}
	untagged := *ours
	untagged.Tags = nil
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-2a/i-1234567890abcdef0"}}
	const (
		spot        = "ec2-spot-instance-interruption-warning.json"
		rebalance   = "ec2-instance-rebalance-recommendation.json"
		capres      = "ec2-capacity-reservation-instance-interruption-warning.json"
		health      = "aws-health-event-ec2-scheduled-change.json"
		pending     = "ec2-instance-state-change-notification.json"
		stoppingMsg = "ec2-instance-state-change-notification-stopping.json"
		stopped     = "ec2-instance-state-change-notification-stopped.json"
		shutting    = "ec2-instance-state-change-notification-shutting-down.json"
		goneMsg     = "ec2-instance-state-change-notification-terminated.json"
	)
	for _, tc := range []struct {
		name        string
		file        string
		facts       Facts
		want        Action
		unavailable *catalog.OfferingKey
	}{
		{"spot warning replaces and avoids the spot offering", spot, Facts{Cluster: "c1", Instance: ours, Node: node}, ActionReplace, &catalog.OfferingKey{InstanceType: "m5.large", Zone: "us-east-2a", CapacityType: "spot"}},
		{"capacity reservation warning replaces and avoids the offering", capres, Facts{Cluster: "c1", Instance: &onDemand, Node: node}, ActionReplace, &catalog.OfferingKey{InstanceType: "m5.large", Zone: "us-east-2a", CapacityType: "on-demand"}},
		{"capacity reservation warning for a reserved instance avoids the reserved offering", capres, Facts{Cluster: "c1", Instance: &reserved, Node: node}, ActionReplace, &catalog.OfferingKey{InstanceType: "m5.large", Zone: "us-east-2a", CapacityType: "reserved"}},
		{"scheduled change replaces", health, Facts{Cluster: "c1", Instance: ours, Node: node}, ActionReplace, nil},
		{"stopping replaces", stoppingMsg, Facts{Cluster: "c1", Instance: &stopping, Node: node}, ActionReplace, nil},
		{"stopped replaces", stopped, Facts{Cluster: "c1", Instance: &stopping, Node: node}, ActionReplace, nil},
		{"shutting-down deletes the node", shutting, Facts{Cluster: "c1", Instance: &gone, Node: node}, ActionDelete, nil},
		{"terminated deletes the node", goneMsg, Facts{Cluster: "c1", Instance: &gone, Node: node}, ActionDelete, nil},
		{"terminated without a node does nothing", goneMsg, Facts{Cluster: "c1", Instance: &gone}, ActionNone, nil},
		{"terminated while EC2 says running is stale: the node stays", goneMsg, Facts{Cluster: "c1", Instance: ours, Node: node}, ActionNone, nil},
		{"stopping while EC2 says running is stale", stoppingMsg, Facts{Cluster: "c1", Instance: ours, Node: node}, ActionNone, nil},
		{"rebalance only notifies", rebalance, Facts{Cluster: "c1", Instance: ours, Node: node}, ActionNotify, nil},
		{"rebalance replaces when the pool opts in", rebalance, Facts{Cluster: "c1", Instance: ours, Node: node, RebalanceReplace: true}, ActionReplace, nil},
		{"pending is a no-op", pending, Facts{Cluster: "c1", Instance: ours, Node: node}, ActionNone, nil},
		{"another cluster's instance is a no-op", spot, Facts{Cluster: "c1", Instance: &foreign, Node: node}, ActionNone, nil},
		{"an untagged instance is a no-op", goneMsg, Facts{Cluster: "c1", Instance: &untagged, Node: node}, ActionNone, nil},
		{"an instance EC2 does not know is a no-op", spot, Facts{Cluster: "c1", Node: node}, ActionNone, nil},
		{"spot warning for an unregistered instance still avoids the offering", spot, Facts{Cluster: "c1", Instance: ours}, ActionNone, &catalog.OfferingKey{InstanceType: "m5.large", Zone: "us-east-2a", CapacityType: "spot"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(msg(t, tc.file), tc.facts)
			if d.Action != tc.want {
				t.Fatalf("action %s (%s), want %s", d.Action, d.Reason, tc.want)
			}
			if (d.Unavailable == nil) != (tc.unavailable == nil) || d.Unavailable != nil && *d.Unavailable != *tc.unavailable {
				t.Fatalf("unavailable %+v, want %+v", d.Unavailable, tc.unavailable)
			}
			if d.Reason == "" {
				t.Fatal("no reason")
			}
		})
	}
}
