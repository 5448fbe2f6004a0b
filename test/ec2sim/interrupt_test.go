package ec2sim

import (
	"sync"
	"testing"
	"time"
)

func TestInterruptSpot_WarnsThenTerminatesWithStateChanges(t *testing.T) {
	s := New(Options{Region: testRegion, InstanceTypes: testTypes()})
	id, err := s.AddRunningInstance("t3.large", zoneA, map[string]string{"joist.sh/cluster": testCluster})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []Event
	third := make(chan struct{})
	s.SetEventSink(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if got = append(got, e); len(got) == 3 {
			close(third)
		}
	})
	done, err := s.InterruptSpot(id, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(got) != 1 || got[0].DetailType != "EC2 Spot Instance Interruption Warning" || got[0].Detail["instance-id"] != id || got[0].Detail["instance-action"] != "terminate" {
		t.Fatalf("events at the warning: %+v", got)
	}
	if want := "arn:aws:ec2:" + zoneA + ":instance/" + id; got[0].Resources[0] != want {
		t.Errorf("warning resource %s, want %s (AWS names the zone)", got[0].Resources[0], want)
	}
	mu.Unlock()
	if inst, _ := s.Instance(id); inst.State != stateRunning {
		t.Fatalf("instance %s during the notice, want running", inst.State)
	}
	<-done
	select {
	case <-third:
	case <-time.After(5 * time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[1].Detail["state"] != stateShuttingDown || got[2].Detail["state"] != stateTerminated {
		t.Fatalf("events after the notice: %+v, want shutting-down then terminated", got[1:])
	}
	if inst, _ := s.Instance(id); inst.State != stateTerminated || inst.StateReason != "Server.SpotInstanceTermination" {
		t.Fatalf("instance %s (%s), want terminated by a spot termination", inst.State, inst.StateReason)
	}
}

func TestRecommendRebalance_OnlyEmits(t *testing.T) {
	s := New(Options{Region: testRegion, InstanceTypes: testTypes()})
	id, _ := s.AddRunningInstance("t3.large", zoneA, nil)
	var got []Event
	s.SetEventSink(func(e Event) { got = append(got, e) })
	if err := s.RecommendRebalance(id); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].DetailType != "EC2 Instance Rebalance Recommendation" || got[0].Detail["instance-id"] != id {
		t.Fatalf("events %+v", got)
	}
	if inst, _ := s.Instance(id); inst.State != stateRunning {
		t.Fatalf("instance %s, want running", inst.State)
	}
	if err := s.RecommendRebalance("i-0000000000000ffff"); err == nil {
		t.Fatal("a rebalance for an unknown instance was emitted")
	}
}
