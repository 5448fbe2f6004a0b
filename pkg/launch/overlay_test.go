package launch

import (
	"testing"

	"github.com/joist-dev/joist/pkg/model"
)

// TestLaunchByPriorityWhenAnOverlaySetsPrices: when a NodeOverlay set the
// options' prices, EC2's own prices are not the plan's, so the fleet
// launches by the overrides' priorities (the overlaid prices): on-demand
// prioritized, spot capacity-optimized-prioritized, as Karpenter does.
// Here the overlay makes t3.xlarge cheaper than t3.large, and the fleet
// launches a t3.xlarge; without the overlay it launches EC2's cheapest.
func TestLaunchByPriorityWhenAnOverlaySetsPrices(t *testing.T) {
	overlay := func(req Request) Request {
		for i := range req.Options {
			o := &req.Options[i]
			o.PriceOverlaid = true
			o.Price = 1
			if o.InstanceType == "t3.xlarge" {
				o.Price = 0.01
			}
		}
		return req
	}
	t.Run("on-demand", func(t *testing.T) {
		e := newEnv(t, "1.32")
		inst, err := e.l.Launch(e.ctx, overlay(serviceRequest(t, "overlaid")))
		if err != nil {
			t.Fatal(err)
		}
		c := e.sim.CreateFleetCalls()[0]
		if c.OnDemandAllocationStrategy != "prioritized" || c.SpotAllocationStrategy != "" {
			t.Errorf("strategies od=%q spot=%q, want od prioritized", c.OnDemandAllocationStrategy, c.SpotAllocationStrategy)
		}
		if inst.InstanceType != "t3.xlarge" {
			t.Errorf("launched %s, want the overlay's cheapest t3.xlarge", inst.InstanceType)
		}
	})
	t.Run("spot", func(t *testing.T) {
		e := newEnv(t, "1.32")
		if _, err := e.l.Launch(e.ctx, overlay(batchRequest(t, "overlaid-spot", "t3.large", "t3.xlarge"))); err != nil {
			t.Fatal(err)
		}
		c := e.sim.CreateFleetCalls()[0]
		if c.DefaultTargetCapacityType != model.CapacityTypeSpot || c.SpotAllocationStrategy != "capacity-optimized-prioritized" {
			t.Errorf("fleet %s with spot %q, want spot capacity-optimized-prioritized", c.DefaultTargetCapacityType, c.SpotAllocationStrategy)
		}
	})
	t.Run("no overlay", func(t *testing.T) {
		e := newEnv(t, "1.32")
		inst, err := e.l.Launch(e.ctx, serviceRequest(t, "plain"))
		if err != nil {
			t.Fatal(err)
		}
		if c := e.sim.CreateFleetCalls()[0]; c.OnDemandAllocationStrategy != "lowest-price" || inst.InstanceType != "t3.large" {
			t.Errorf("od %q launched %s, want lowest-price and t3.large", c.OnDemandAllocationStrategy, inst.InstanceType)
		}
	})
}
