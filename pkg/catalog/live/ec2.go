package live

import (
	"context"
	"fmt"
	"time"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/catalog/internal/awsdata"
)

// refreshTypes returns the instance types, asking EC2 when the cache is
// stale. On failure it keeps the last answer (stale) or returns nil so the
// embedded types stand in.
func (p *Provider) refreshTypes(ctx context.Context, now time.Time) (*typeSet, Source, error) {
	p.mu.Lock()
	c := p.types
	p.mu.Unlock()
	if c.fresh(now, p.opts.TypesTTL) {
		return &c.value, SourceAWS, nil
	}
	ts, err := p.fetchTypes(ctx)
	if err != nil {
		if c.ok {
			return &c.value, SourceStale, err
		}
		return nil, SourceEmbedded, err
	}
	p.mu.Lock()
	p.types = cached[typeSet]{value: *ts, fetched: now, ok: true}
	p.mu.Unlock()
	return ts, SourceAWS, nil
}

func (p *Provider) fetchTypes(ctx context.Context) (*typeSet, error) {
	types, err := awsdata.FetchTypes(ctx, p.ec2)
	if err != nil {
		return nil, err
	}
	ts := &typeSet{types: map[string]*catalog.InstanceType{}, usage: map[string]usageClasses{}}
	for i := range types {
		a := &types[i]
		t, ok := fromAWS(a)
		if !ok {
			continue
		}
		ts.types[t.Name] = t
		ts.usage[t.Name] = usageClasses{onDemand: a.OnDemand, spot: a.Spot}
	}
	if len(ts.types) == 0 {
		return nil, fmt.Errorf("DescribeInstanceTypes returned no instance types")
	}
	return ts, nil
}

// fromAWS turns DescribeInstanceTypes' answer into a catalog type. It
// starts from the embedded type when there is one, for what EC2 does not
// say (network bandwidth and branch interfaces come from Karpenter's
// generated tables, not from the API; prices), and takes every spec EC2
// states over it. A type with an architecture Kubernetes cannot run
// (i386 only), or left without vCPUs or memory, is skipped.
func fromAWS(a *awsdata.Type) (*catalog.InstanceType, bool) {
	r, st := &a.Type, a.Stated
	var t *catalog.InstanceType
	if e, found := catalog.Lookup(r.Name); found {
		t = e.Clone()
	} else {
		t = &catalog.InstanceType{Name: r.Name, Family: r.Family, Size: r.Size, Category: r.Category, Generation: r.Generation, CurrentGeneration: true}
	}
	set(st.Arch, &t.Arch, r.Arch)
	set(st.CPUManufacturer, &t.CPUManufacturer, r.CPUManufacturer)
	if t.Arch == "" {
		return nil, false
	}
	set(st.VCPU, &t.VCPU, r.VCPU)
	set(st.MemoryMiB, &t.MemoryMiB, r.MemoryMiB)
	if t.VCPU <= 0 || t.MemoryMiB <= 0 {
		return nil, false
	}
	if st.GPUs {
		t.GPUCount, t.GPUName, t.GPUManufacturer, t.GPUMemoryMiB, t.HabanaGaudiCount = r.GPUCount, r.GPUName, r.GPUManufacturer, r.GPUMemoryMiB, r.HabanaGaudiCount
	}
	if st.Accelerators {
		t.AcceleratorName, t.AcceleratorManufacturer, t.AcceleratorCount, t.NeuronCoreCount = r.AcceleratorName, r.AcceleratorManufacturer, r.AcceleratorCount, r.NeuronCoreCount
	}
	set(st.LocalNVMe, &t.LocalNVMeGB, r.LocalNVMeGB)
	set(st.EBS, &t.EBSBandwidthMbps, r.EBSBandwidthMbps)
	set(st.MaxENIs, &t.MaxENIs, r.MaxENIs)
	set(st.IPv4PerENI, &t.IPv4PerENI, r.IPv4PerENI)
	set(st.MaxENIsDefaultCard, &t.MaxENIsDefaultCard, r.MaxENIsDefaultCard)
	set(st.EFA, &t.EFACount, r.EFACount)
	if st.Hypervisor {
		t.Hypervisor, t.HypervisorKnown = *r.Hypervisor, true
	}
	set(st.BareMetal, &t.BareMetal, r.BareMetal)
	set(st.Burstable, &t.Burstable, r.Burstable)
	set(st.CurrentGeneration, &t.CurrentGeneration, r.CurrentGeneration)
	set(st.SpotSupported, &t.SpotSupported, r.SpotSupported)
	return t, true
}

// set overrides *dst with v when EC2 stated it.
func set[T any](stated bool, dst *T, v T) {
	if stated {
		*dst = v
	}
}

// refreshOfferings returns, per type, the zones EC2 offers it in.
func (p *Provider) refreshOfferings(ctx context.Context, now time.Time) (map[string][]string, Source, error) {
	p.mu.Lock()
	c := p.offerings
	p.mu.Unlock()
	if c.fresh(now, p.opts.OfferingsTTL) {
		return c.value, SourceAWS, nil
	}
	zones, err := awsdata.FetchOfferings(ctx, p.ec2)
	if err != nil {
		if c.ok {
			return c.value, SourceStale, err
		}
		return nil, SourceEmbedded, err
	}
	p.mu.Lock()
	p.offerings = cached[map[string][]string]{value: zones, fetched: now, ok: true}
	p.mu.Unlock()
	return zones, SourceAWS, nil
}

// refreshSpot returns the current spot price per type and zone.
func (p *Provider) refreshSpot(ctx context.Context, now time.Time) (map[string]map[string]float64, Source, error) {
	p.mu.Lock()
	c := p.spot
	p.mu.Unlock()
	if c.fresh(now, p.opts.SpotTTL) {
		return c.value, SourceAWS, nil
	}
	prices, err := awsdata.FetchSpot(ctx, p.ec2, now)
	if err != nil {
		if c.ok {
			return c.value, SourceStale, err
		}
		return nil, SourceEmbedded, err
	}
	p.mu.Lock()
	p.spot = cached[map[string]map[string]float64]{value: prices, fetched: now, ok: true}
	p.mu.Unlock()
	return prices, SourceAWS, nil
}
