package garbage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
)

type fakeEC2 struct {
	instances  []launch.Instance
	templates  []launch.Template
	failFor    string
	terminated []string
}

// Instances lists the pending and running ones of Tagged.
func (f *fakeEC2) Instances(ctx context.Context) ([]launch.Instance, error) {
	all, _ := f.Tagged(ctx)
	var live []launch.Instance
	for _, i := range all {
		if i.Live() {
			live = append(live, i)
		}
	}
	return live, nil
}

// Tagged lists the instances as tagged for cluster "c" (unless a case gives
// other tags) and running (unless a case gives a state).
func (f *fakeEC2) Tagged(context.Context) ([]launch.Instance, error) {
	out := slices.Clone(f.instances)
	for i := range out {
		if out[i].State == "" {
			out[i].State = "running"
		}
		if out[i].Tags == nil {
			out[i].Tags = map[string]string{launch.TagCluster: "c"}
		}
	}
	return out, nil
}

func (f *fakeEC2) Templates(context.Context) ([]launch.Template, error) { return f.templates, nil }
func (f *fakeEC2) Terminate(_ context.Context, ids ...string) error {
	for _, id := range ids {
		if id == f.failFor {
			return errors.New("UnauthorizedOperation")
		}
		f.terminated = append(f.terminated, id)
	}
	return nil
}

type nodeList []*corev1.Node

func (n nodeList) Nodes(context.Context) ([]*corev1.Node, error) { return n, nil }

func TestCollect(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	old, young := now.Add(-20*time.Minute), now.Add(-time.Minute)
	own := []launch.Template{{ID: "lt-own", Name: "joist-c-abc"}}
	node := &corev1.Node{Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/i-registered"}}
	cases := []struct {
		name           string
		instances      []launch.Instance
		failFor        string
		wantTerminated []string
		wantForeign    []string
		wantErr        bool
	}{
		{name: "unregistered past the timeout from the cluster's template is terminated",
			instances: []launch.Instance{{ID: "i-stuck", LaunchTime: old, LaunchTemplateID: "lt-own"}}, wantTerminated: []string{"i-stuck"}},
		{name: "young instance is kept",
			instances: []launch.Instance{{ID: "i-new", LaunchTime: young, LaunchTemplateID: "lt-own"}}},
		{name: "registered instance is kept",
			instances: []launch.Instance{{ID: "i-registered", LaunchTime: old, LaunchTemplateID: "lt-own"}}},
		{name: "instance someone tagged for the cluster is never terminated",
			instances:   []launch.Instance{{ID: "i-foreign", LaunchTime: old, LaunchTemplateID: "lt-someone-elses"}, {ID: "i-untemplated", LaunchTime: old}},
			wantForeign: []string{"i-foreign", "i-untemplated"}},
		{name: "a failed terminate does not stop the others",
			instances: []launch.Instance{{ID: "i-a", LaunchTime: old, LaunchTemplateID: "lt-own"}, {ID: "i-b", LaunchTime: old, LaunchTemplateID: "lt-own"}},
			failFor:   "i-a", wantTerminated: []string{"i-b"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ec2 := &fakeEC2{instances: tc.instances, templates: own, failFor: tc.failFor}
			c := &Collector{EC2: ec2, Nodes: nodeList{node}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clocktesting.NewFakePassiveClock(now)}
			res, err := c.Collect(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !slices.Equal(res.Terminated, tc.wantTerminated) || !slices.Equal(ec2.terminated, tc.wantTerminated) {
				t.Errorf("terminated = %v (EC2 saw %v), want %v", res.Terminated, ec2.terminated, tc.wantTerminated)
			}
			if !slices.Equal(res.Foreign, tc.wantForeign) {
				t.Errorf("foreign = %v, want %v", res.Foreign, tc.wantForeign)
			}
		})
	}
}

type releaser struct{ released []string }

func (r *releaser) Release(_ context.Context, name string) error {
	r.released = append(r.released, name)
	return nil
}

func TestCollectDeletesJoistNodesWhoseInstanceIsGone(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	mk := func(name, id string, age time.Duration) *corev1.Node {
		n := &corev1.Node{Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/" + id}}
		n.Name, n.Labels = name, map[string]string{"karpenter.sh/provisioner-name": "service"}
		n.CreationTimestamp.Time = now.Add(-age)
		return n
	}
	nodes := nodeList{
		mk("gone", "i-gone", 10*time.Minute),
		mk("shutting", "i-shutting", 10*time.Minute),
		mk("young", "i-young", 10*time.Second),
		mk("alive", "i-alive", 10*time.Minute),
		// Karpenter's node of the same labels, during a migration: its
		// instance is not tagged for the cluster (EC2 may not show it
		// in Joist's listing at all), so it is not Joist's to delete.
		mk("karpenters", "i-karpenter", 10*time.Minute),
		mk("other-clusters", "i-other", 10*time.Minute),
	}
	ec2 := &fakeEC2{instances: []launch.Instance{
		{ID: "i-alive", LaunchTime: now.Add(-time.Hour)},
		{ID: "i-gone", State: "terminated"},
		{ID: "i-shutting", State: "shutting-down"},
		{ID: "i-young", State: "terminated"},
		{ID: "i-other", State: "terminated", Tags: map[string]string{launch.TagCluster: "another"}},
	}}
	r := &releaser{}
	c := &Collector{EC2: ec2, Cluster: "c", Nodes: nodes, Release: r, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clocktesting.NewFakePassiveClock(now)}
	res, err := c.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gone", "shutting"}
	if !slices.Equal(r.released, want) || !slices.Equal(res.NodesDeleted, want) {
		t.Fatalf("released %v (result %v), want only the old Joist nodes whose instance is ending or gone, %v", r.released, res.NodesDeleted, want)
	}
}

// cleaner records what DeleteUnusedTemplates was given, and whether the
// lease was held then.
type cleaner struct {
	locked    *bool
	live      []string
	minAge    time.Duration
	calls     int
	underLock bool
}

func (c *cleaner) DeleteUnusedTemplates(_ context.Context, live []launch.Instance, minAge time.Duration) ([]string, error) {
	c.calls++
	c.underLock = *c.locked
	c.live = nil
	for _, i := range live {
		c.live = append(c.live, i.ID)
	}
	c.minAge = minAge
	return []string{"joist/c/old"}, nil
}

// listAfter is an EC2 whose instance listing changes after the first call:
// a launch that happened while the collection waited for the lease.
type listAfter struct {
	fakeEC2
	lists int
	later []launch.Instance
}

func (f *listAfter) Tagged(ctx context.Context) ([]launch.Instance, error) {
	f.lists++
	if f.lists > 1 {
		return f.later, nil
	}
	return f.fakeEC2.Tagged(ctx)
}

func (f *listAfter) Instances(ctx context.Context) ([]launch.Instance, error) { return f.Tagged(ctx) }

// TestCollectDeletesUnusedTemplatesUnderTheLease: the cleanup runs with
// the decider lease held, on the instances listed inside it (not the
// listing the collection began with), with the default minimum age; a
// lease held elsewhere skips it without an error.
func TestCollectDeletesUnusedTemplatesUnderTheLease(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	locked := false
	lock := func(context.Context) (func(), error) {
		locked = true
		return func() { locked = false }, nil
	}
	ec2 := &listAfter{fakeEC2: fakeEC2{instances: []launch.Instance{{ID: "i-a", LaunchTime: now}}},
		later: []launch.Instance{{ID: "i-a", LaunchTime: now}, {ID: "i-just-launched", LaunchTime: now}}}
	cl := &cleaner{locked: &locked}
	c := &Collector{EC2: ec2, Nodes: nodeList{}, Log: log, Clock: clocktesting.NewFakePassiveClock(now), Templates: cl, Lock: lock}
	res, err := c.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cl.calls != 1 || !cl.underLock || locked {
		t.Fatalf("cleanup calls %d, under the lease %v, lease still held %v; want one call under the lease, released after", cl.calls, cl.underLock, locked)
	}
	if !slices.Equal(cl.live, []string{"i-a", "i-just-launched"}) {
		t.Errorf("cleanup saw live instances %v, want the listing made under the lease", cl.live)
	}
	if cl.minAge != DefaultTemplateMinAge {
		t.Errorf("min age %s, want the default %s", cl.minAge, DefaultTemplateMinAge)
	}
	if !slices.Equal(res.TemplatesDeleted, []string{"joist/c/old"}) {
		t.Errorf("TemplatesDeleted = %v", res.TemplatesDeleted)
	}

	held := func(context.Context) (func(), error) { return nil, fmt.Errorf("lease: %w", kube.ErrLeaseHeld) }
	cl = &cleaner{locked: &locked}
	c = &Collector{EC2: &fakeEC2{}, Nodes: nodeList{}, Log: log, Templates: cl, Lock: held, TemplateMinAge: time.Hour}
	if _, err := c.Collect(context.Background()); err != nil || cl.calls != 0 {
		t.Fatalf("lease held elsewhere: err %v, cleanup calls %d; want no error and no cleanup", err, cl.calls)
	}
}
